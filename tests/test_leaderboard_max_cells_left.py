"""``tokrag leaderboard run --max-cells N`` says when it stopped with cells of its selection unrun: the JSON summary
holds ``stopped_by_max_cells`` and ``left`` (their count), and one stderr line names the command that runs them. It
used to stop silently, its summary listing only the cells run and skipped (toy model, fast)."""

from __future__ import annotations

import json

from leaderboard_helpers import pin_cell_keys, subprocess_env, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec


def test_run_max_cells_says_how_many_cells_it_left_and_how_to_run_them(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec = write_spec(tmp_path, limit=2)  # 2 methods x 2 tasks
    runs = tmp_path / "runs"
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--max-cells", "1"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])
    assert len(summary["ran"]) == 1 and summary["stopped_by_max_cells"] is True and summary["left"] == 3
    assert (f"stopped after 1 cell (--max-cells 1); 3 cells remain: tokrag leaderboard run {spec} --runs-dir {runs} "
            "--no-progress\n" in err)
    # a selection: the cells of the selection only, and its command
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--max-cells", "1",
                    "--tasks", "toy_qa_noise67"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])
    assert summary["left"] == 1 and len(summary["ran"]) == 1
    assert (f"1 cell remains: tokrag leaderboard run {spec} --runs-dir {runs} --tasks toy_qa_noise67 "
            "--no-progress\n") in err
    # the rest fit: no such field, no such line
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--max-cells", "5"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])
    assert len(summary["ran"]) == 2 and "left" not in summary and "stopped_by_max_cells" not in summary
    assert "stopped after" not in err


def test_run_jobs_max_cells_counts_what_every_process_left(tmp_path, monkeypatch):
    """With ``--jobs 2`` the cells left are those no process of the run started (the helper's cells are not)."""
    spec = load_spec(write_spec(tmp_path, limit=2))
    monkeypatch.setenv("PYTHONPATH", subprocess_env(tmp_path / "cache")["PYTHONPATH"])
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=2, max_cells=3).as_dict()
    assert len(summary["ran"]) == 3 and summary["left"] == 1 and summary["stopped_by_max_cells"] is True
