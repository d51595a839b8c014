"""A spec whose task names its data by a relative path, checked from another working directory: ``check`` said
"missing from the runs ... not run yet ... run the cell with ... tokrag leaderboard run", where the cell is finished
and only the directory is wrong (s52 u1 P16). Now the line says nothing needs re-running and gives this check's
command from the directory where the path names the file the run read; a file edited since the run is still a
changed input (its run command stays). Toy model, no real weights."""

from __future__ import annotations

import shutil
from pathlib import Path

from leaderboard_helpers import FIX, write_spec

from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.runner import NOTHING_TO_RERUN, run_spec
from leaderboards.spec import load_spec


def _setup(tmp_path: Path, monkeypatch):
    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, questions: data/q.jsonl}"))
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "q.jsonl").write_text('{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n')
    spec = load_spec(write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3))
    runs, base = tmp_path / "runs", tmp_path / "base.json"
    monkeypatch.chdir(work)
    run_spec(spec, runs, progress=False)
    write_baseline(spec, runs, base)
    monkeypatch.chdir(tmp_path)  # the same spec, runs and baseline, checked from the folder above
    return spec, runs, base, work


def test_a_finished_cell_checked_from_another_directory_needs_no_run(tmp_path, monkeypatch, capsys):
    spec, runs, base, work = _setup(tmp_path, monkeypatch)
    fails = [x.render() for x in check_against_baseline(spec, runs, base) if not x.ok]
    assert len(fails) == 2
    check = (f"cd {work.resolve()} && tokrag leaderboard check {spec.path} --runs-dir {runs} --baseline {base}")
    for line in fails:
        assert (f"from {work.resolve()} this path names the file that run read, unchanged: run this command from "
                f"{work.resolve()}") in line
        assert line.endswith(f"{NOTHING_TO_RERUN}; its metrics (answer_match, answer_recall, em, ...) are not compared "
                             f"until then; check from "
                             f"there: {check}"), line
        assert "tokrag leaderboard run" not in line and "run the cell with" not in line  # was: run the cell with ...
    monkeypatch.chdir(work.resolve())  # following it: every check passes
    capsys.readouterr()
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base)]) == 0


def test_a_file_edited_since_the_run_is_still_a_changed_input(tmp_path, monkeypatch):
    spec, runs, base, work = _setup(tmp_path, monkeypatch)
    (work / "data" / "q.jsonl").write_text('{"id": "q1", "question": "capital of austria", "answers": ["Vienna"]}\n')
    fails = [x.render() for x in check_against_baseline(spec, runs, base) if not x.ok]
    assert fails and all(NOTHING_TO_RERUN not in f and "run the cell with cd " in f for f in fails)
