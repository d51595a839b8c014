"""The held-out ids of a bring-your-own questions file, end to end (s56 r2, review of f2 2e22afa).

f2's tests give the report hand-written results metadata. Here a real ToyLM cell of a bring-your-own task runs
(``tasks.rag`` records the ids, lm_eval's INFO line names them) and ``tokrag leaderboard report`` renders it, as a
user would: the report's ``questions.<task>`` line, its Markdown, HTML and ``leaderboard.json`` must name the very
ids that the run's ``results.json`` records, in file order, the INFO line's first ones first (on a4b42e2 the line
gave counts only and the JSON had no ``held_out``). The folder's name holds
a space, and there are more dev ids than the line shows (27 dev: 10 named, ``and 17 more``).
"""

from __future__ import annotations

import html
import json
import logging
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

RAG_QA = Path(__file__).resolve().parents[1] / "tasks" / "qa" / "rag_qa_bm25.yaml"
N = 260
# which questions go to the pool depends on the question text only (tasks.data.qa_split_of); these were read from a
# run of this file (/work/scratch/s56/r2/probe dir/big): 27 dev and 2 few-shot of the 260
DEV = [f"q{i:03d}" for i in (3, 6, 11, 20, 22, 26, 28, 54, 55, 63, 67, 72, 89, 131, 150, 158, 159, 166, 170, 180, 181,
                             194, 198, 217, 226, 235, 255)]
SHOT = ["q113", "q165"]


@pytest.fixture
def finished(tmp_path, monkeypatch):
    """``<tmp>/my data``: 260 questions, their passages, a task YAML naming them by absolute path, and a one-cell
    ToyLM spec (limit 3) run into ``runs``; returns the folder."""
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)
    work = tmp_path / "my data"
    (work / "mytasks").mkdir(parents=True)
    (work / "q.jsonl").write_text("".join(
        json.dumps({"id": f"q{i:03d}", "question": f"who founded the town number {i}", "answers": [f"Founder{i}"]})
        + "\n" for i in range(N)), encoding="utf-8")
    (work / "passages.jsonl").write_text("".join(
        json.dumps({"id": f"p{i}", "title": f"Town {i}", "text": f"Town {i} was founded by Founder{i}."}) + "\n"
        for i in range(N)), encoding="utf-8")
    (work / "mytasks" / "towns.yaml").write_text(
        f"include: {RAG_QA}\ntask: towns\nmetadata:\n  version: 1.0\n  dataset: byo\n"
        f"  questions: {json.dumps(str(work / 'q.jsonl'))}\n  corpus: {json.dumps(str(work / 'passages.jsonl'))}\n",
        encoding="utf-8")
    write_spec(work, tasks=["towns"], include=work / "mytasks", limit=3,
               methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    summary = run_spec(load_spec(work / "toy.yaml"), work / "runs", progress=False)
    assert summary.ran == ["standard/towns/seed1"], summary
    return work


def _info_line(questions: str) -> str:
    """lm_eval's INFO line of the task build for ``questions`` (:func:`tasks.rag._byo_note`, as the cell's run wrote
    it), caught by a handler of our own at INFO (whatever level the run left the logger at)."""
    from tasks.rag import _byo_note

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler, log = Keep(level=logging.INFO), logging.getLogger("tasks.rag")
    old_level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        _byo_note(questions, None, "test")
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
    (line,) = [r for r in records if "held out as the dev/few-shot pool" in r]
    return line


def test_the_report_names_the_ids_the_run_recorded(finished):
    work = finished
    (results,) = [json.loads(p.read_text()) for p in (work / "runs").glob("*/results.json")]
    rec = results["configs"]["towns"]["metadata"]["tokrag_data"]["questions"]
    assert rec["held_out"] == {"dev": DEV, "fewshot": SHOT}  # the run's record: every id, in file order
    assert (rec["total"], rec["in_split"], rec["dev"], rec["fewshot"]) == (N, N - 29, 27, 2)
    # lm_eval's INFO line names the first 10 per part (tasks.rag.HELD_OUT_NAMED, 5 before s57): the report's too
    assert f"(27 dev: {', '.join(DEV[:10])} and 17 more; 2 few-shot: {', '.join(SHOT)})" in _info_line(
        str(work / "q.jsonl"))

    out = work / "report out"
    assert lb_main(["report", str(work / "toy.yaml"), "--runs-dir", str(work / "runs"), "--out", str(out),
                    "--no-timings", "--no-questions"]) == 0
    line = (f"questions.towns (as run, from the results): questions {work / 'q.jsonl'}, {N - 29} of {N} in split "
            f"test (29 held out by hash: 27 dev: {', '.join(DEV[:10])} and 17 more; 2 few-shot: {', '.join(SHOT)}), "
            f"first 3 of {N - 29} scored")
    assert f"\n- {line}\n" in (out / "leaderboard.md").read_text(encoding="utf-8")
    assert f"<li><code>{html.escape(line)}</code></li>" in (out / "index.html").read_text(encoding="utf-8")
    data = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert [x for x in data["models"][0]["contract"] if x.startswith("questions.")] == [line]
    assert data["models"][0]["held_out"] == {
        "towns": [{"questions": str(work / "q.jsonl"), "dev": DEV, "fewshot": SHOT, "methods": ["standard"]}]}
