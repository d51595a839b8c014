"""One limit for the held-out ids named by lm-eval's INFO line and by the report, and the split-dev line (s57 f1).

Before, the INFO line of a bring-your-own task's build (:func:`tasks.rag._byo_note`) named at most 5 held-out ids per
part (``tasks.rag.HELD_OUT_NAMED``) and the report's ``questions.<task>`` contract line at most 10 (its own
``HELD_OUT_SHOWN``): the two named different ids of one run. Both now read ``tasks.rag.HELD_OUT_NAMED`` (10), at each
call. And a cell scored with task metadata ``split: dev`` gave the pool's counts only (``by hash: 21 test, 2 dev, 1
few-shot``) where the test line names the ids: it now names them by the same rule and limit (``by hash: 21 test; 2
dev: q05, q21; 1 few-shot: q10``); a run that recorded no ids (before s55) reads as before.
"""

from __future__ import annotations

import json
import logging
import re

import pytest

import tasks.rag
from leaderboards.report import questions_text

N = 260
# which questions go to the pool depends on the question text only (tasks.data.qa_split_of): 27 dev and 2 few-shot of
# these 260 (as test_s56_r2_held_out_report_end_to_end reads them)
DEV = [f"q{i:03d}" for i in (3, 6, 11, 20, 22, 26, 28, 54, 55, 63, 67, 72, 89, 131, 150, 158, 159, 166, 170, 180, 181,
                             194, 198, 217, 226, 235, 255)]
SHOT = ["q113", "q165"]


@pytest.fixture
def questions(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i:03d}", "question": f"who founded the town number {i}",
                                        "answers": [f"Founder{i}"]}) + "\n" for i in range(N)), encoding="utf-8")
    return path


def _info(questions, split: str = "test") -> str:
    """The INFO line :func:`tasks.rag._byo_note` logs for the file ``questions``."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler, log = Keep(level=logging.INFO), logging.getLogger("tasks.rag")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        tasks.rag._byo_note(str(questions), None, split)
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    (line,) = [r for r in records if r.startswith("questions ")]
    return line


def _meta(split: str, ids: bool = True) -> dict:
    rec = {"split": split, "in_split": N - 29 if split == "test" else 27, "total": N, "dev": 27, "fewshot": 2}
    if ids:
        rec["held_out"] = {"dev": DEV, "fewshot": SHOT}
    return {"dataset": "byo", "questions": "q.jsonl", "split": split,
            "tokrag_data": {"questions": rec, "files": {"questions": {"path": "/data/q.jsonl", "sha256": "3bb3dd8a"}}}}


def _named(text: str) -> list[list[str]]:
    """The ids a line names per part (dev, few-shot), from ``27 dev: a, b and 17 more; 2 few-shot: c, d``."""
    found = re.search(r"\d+ dev: (.*?)(?: and \d+ more)?; \d+ few-shot: (.*?)(?: and \d+ more)?\)", text)
    assert found, text
    return [found.group(1).split(", "), found.group(2).split(", ")]


def test_the_info_line_and_the_report_name_the_same_ten(questions):
    assert tasks.rag.HELD_OUT_NAMED == 10
    info = _info(questions)
    assert f"(27 dev: {', '.join(DEV[:10])} and 17 more; 2 few-shot: {', '.join(SHOT)})" in info
    line = questions_text(_meta("test"), 3, N - 29)
    assert line == ("questions /data/q.jsonl, 231 of 260 in split test (29 held out by hash: 27 dev: "
                    f"{', '.join(DEV[:10])} and 17 more; 2 few-shot: {', '.join(SHOT)}), first 3 of 231 scored")
    assert _named(line) == _named(info) == [DEV[:10], SHOT]


def test_both_read_one_constant(questions, monkeypatch):
    monkeypatch.setattr(tasks.rag, "HELD_OUT_NAMED", 3)
    info = _info(questions)
    line = questions_text(_meta("test"), 3, N - 29)
    assert "(27 dev: q003, q006, q011 and 24 more; 2 few-shot: q113, q165)" in info
    assert "(29 held out by hash: 27 dev: q003, q006, q011 and 24 more; 2 few-shot: q113, q165)" in line
    assert _named(line) == _named(info) == [DEV[:3], SHOT]


def test_the_split_dev_line_names_the_ids_as_the_test_line_does():
    line = questions_text(_meta("dev"), 27, 27)
    assert line == ("questions /data/q.jsonl, 27 of 260 in split dev (by hash: 231 test; 27 dev: "
                    f"{', '.join(DEV[:10])} and 17 more; 2 few-shot: {', '.join(SHOT)}), all 27 scored")
    test_line = questions_text(_meta("test"), 3, N - 29)
    assert _named(line) == _named(test_line)
    # a run that recorded no ids (before s55): the counts, as before
    assert questions_text(_meta("dev", ids=False), 27, 27) == (
        "questions /data/q.jsonl, 27 of 260 in split dev (by hash: 231 test, 27 dev, 2 few-shot), all 27 scored")


def test_a_dev_split_cell_end_to_end(tmp_path, monkeypatch, questions):
    """A real ToyLM cell of the bring-your-own task with ``split: dev``: its results record the pool's ids and the
    report's Markdown, HTML and JSON contract line name the first ten, as for a test cell."""
    import html
    from pathlib import Path

    from leaderboard_helpers import TOY, write_spec

    from leaderboards.cli import main as lb_main
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)
    rag_qa = Path(__file__).resolve().parents[1] / "tasks" / "qa" / "rag_qa_bm25.yaml"
    (tmp_path / "passages.jsonl").write_text("".join(
        json.dumps({"id": f"p{i}", "title": f"Town {i}", "text": f"Town {i} was founded by Founder{i}."}) + "\n"
        for i in range(N)), encoding="utf-8")
    (tmp_path / "mytasks").mkdir()
    (tmp_path / "mytasks" / "towns.yaml").write_text(
        f"include: {rag_qa}\ntask: towns\nmetadata:\n  version: 1.0\n  dataset: byo\n  split: dev\n"
        f"  questions: {json.dumps(str(questions))}\n  corpus: {json.dumps(str(tmp_path / 'passages.jsonl'))}\n",
        encoding="utf-8")
    write_spec(tmp_path, tasks=["towns"], include=tmp_path / "mytasks", limit=3,
               methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    assert run_spec(load_spec(tmp_path / "toy.yaml"), tmp_path / "runs", progress=False).ran == ["standard/towns/seed1"]
    (results,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/results.json")]
    rec = results["configs"]["towns"]["metadata"]["tokrag_data"]["questions"]
    assert (rec["split"], rec["in_split"], rec["held_out"]) == ("dev", 27, {"dev": DEV, "fewshot": SHOT})
    out = tmp_path / "report"
    assert lb_main(["report", str(tmp_path / "toy.yaml"), "--runs-dir", str(tmp_path / "runs"), "--out", str(out),
                    "--no-timings", "--no-questions"]) == 0
    line = (f"questions.towns (as run, from the results): questions {questions}, 27 of 260 in split dev (by hash: "
            f"231 test; 27 dev: {', '.join(DEV[:10])} and 17 more; 2 few-shot: {', '.join(SHOT)}), first 3 of 27 scored")
    data = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert [x for x in data["models"][0]["contract"] if x.startswith("questions.")] == [line]
    assert f"\n- {line}\n" in (out / "leaderboard.md").read_text(encoding="utf-8")
    assert f"<li><code>{html.escape(line)}</code></li>" in (out / "index.html").read_text(encoding="utf-8")
    assert "held_out" not in data["models"][0]  # the JSON's held_out lists split-test cells only (held_out_record)
