"""The runs-elsewhere note (s55 f3) for a task YAML that names its own data by relative paths (s55 r3, review of f3).

u1's setup: ``lb/mytasks/velmora.yaml`` says ``questions: q.jsonl`` and ``corpus: passages.jsonl`` (files in ``lb``),
and ``cd lb && tokrag leaderboard run toy.yaml`` finishes the cells in ``lb/runs``. From ``lb``'s parent those files
do not exist (relative paths are read from the working directory), so every run key computed there differs, f3's
note (which compares the keys' DONE markers) said nothing, and the report listed the cell as "not run yet" with
"run: cd lb && tokrag leaderboard run ... --runs-dir <parent>/runs": compute it all again. Now the note also compares
the keys as computed from the directory where the data are (keys.command_directory) and says to run from there with
--runs-dir lb/runs; following it writes the report (fast: the toy model, one cell of 3 questions)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import IncompleteRunError, run_command, run_spec
from leaderboards.spec import load_spec

RAG_QA = Path(__file__).resolve().parents[1] / "tasks" / "qa" / "rag_qa_bm25.yaml"


@pytest.fixture
def work(tmp_path, monkeypatch):
    """``<tmp>/lb``: the task YAML, its questions and passages (relative paths), the toy spec (one cell), run from
    ``lb`` into ``lb/runs``; the working directory then ``<tmp>``."""
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)
    lb = tmp_path / "lb"
    (lb / "mytasks").mkdir(parents=True)
    (lb / "mytasks" / "velmora.yaml").write_text(
        f"include: {RAG_QA}\ntask: velmora\nmetadata:\n  version: 1.0\n  dataset: byo\n  questions: q.jsonl\n"
        "  corpus: passages.jsonl\n", encoding="utf-8")
    (lb / "q.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "question": f"what is the capital of land {i}",
                                                    "answers": [f"City{i}"]}) + "\n" for i in range(6)))
    (lb / "passages.jsonl").write_text("".join(json.dumps({"id": f"p{i}", "title": f"Land {i}",
                                                           "text": f"The capital of land {i} is City{i}."}) + "\n"
                                               for i in range(6)))
    write_spec(lb, tasks=["velmora"], include=lb / "mytasks", limit=3,
               methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    monkeypatch.chdir(lb)
    summary = run_spec(load_spec("toy.yaml"), None, progress=False)
    assert summary.ran == ["standard/velmora/seed1"], summary
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_note_names_the_folder_and_the_directory_to_run_from(work):
    lb, here = work.resolve() / "lb", work.resolve() / "runs"
    with pytest.raises(IncompleteRunError) as err:  # f3's code: "1 of 1 cells are not finished ... not run yet"
        lb_main(["report", "lb/toy.yaml"])
    assert str(err.value) == (
        f"the 1 cell of spec 'toy' is not finished in {here} (the default, ./runs of the working directory); "
        f"{lb / 'runs'} holds 1 of 1 finished: run from {lb} (the task data that the task YAML names by relative "
        f"paths are there, and the cells are keyed by them) and add --runs-dir {lb / 'runs'}; or, to compute it anew "
        f"in {here}: {run_command(load_spec('lb/toy.yaml'), here, cwd=lb)}")
    assert not here.exists()
    os.chdir(lb)  # the advice (the fixture's monkeypatch.chdir puts the working directory back)
    assert lb_main(["report", "toy.yaml", "--runs-dir", str(lb / "runs"), "--out", str(work / "rep")]) == 0
    assert (work / "rep" / "leaderboard.json").is_file()
