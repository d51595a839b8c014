"""``tokrag leaderboard run --estimate --jobs 1000`` on a spec of 4 cells printed "with --jobs 1000 on 1000 free
cores": 617c8ab made the wall time count min(jobs, cells) processes (a cell runs in one process), but the line still
named the given --jobs as the cores used. It now names the processes that the figure counts (s58 f2). ToyLM spec, no
cell run (limit 10**6 at the fallback 1 s per question: 277.78 h a cell)."""

from __future__ import annotations

import json

import pytest

from leaderboards.cli import main as lb_main
from leaderboards.estimate import estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_spec(tmp_path, limit=10**6))  # 2 methods x 2 tasks = 4 cells


def _total(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("total"))


@pytest.mark.parametrize("jobs, wall, tail", [
    (1000, 277.78, "on 4 processes (4 cells, one process per cell) on 4 free cores"),
    (5, 277.78, "on 4 processes (4 cells, one process per cell) on 4 free cores"),
    (4, 277.78, "on 4 free cores"),  # --jobs at most the cells: as before
    (2, 555.56, "on 2 free cores"),
])
def test_the_total_line_names_the_processes_that_run(spec, tmp_path, jobs, wall, tail):
    line = _total(render(estimate(spec, tmp_path / "runs", jobs=jobs, fallback=1.0)))
    assert line == ("total: 4000000 questions (at most: 4 cells count their limit as their number of questions; a task's "
                    "size is known once a cell of that task finishes), 1111.11 cell-hours (CPU-hours, one process per "
                    f"cell); about {wall:.2f} h wall with --jobs {jobs} {tail}")


def test_the_command_prints_four_processes_for_jobs_1000(spec, tmp_path, capsys):
    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--estimate", "--jobs", "1000",
                    "--fallback-s-per-question", "1"]) == 0
    out = capsys.readouterr().out
    assert _total(out).endswith("about 277.78 h wall with --jobs 1000 on 4 processes (4 cells, one process per cell) "
                                "on 4 free cores")
    assert "1000 free cores" not in out
    est = json.loads(out.strip().splitlines()[-1])
    assert (est["jobs"], est["wall_hours"], est["cells_todo"]) == (1000, 277.78, 4)  # the JSON keeps the given --jobs


def test_with_cells_not_estimated_the_processes_are_the_estimated_cells():
    est = {"spec": "toy", "selection": None, "cells_done": 0, "cells_total": 3, "cells_todo": 3, "measurements": 3,
           "runs_dir": "runs", "by_method": [], "cells": [{"cell": f"c{i}", "questions": 10, "seconds": 30.0}
                                                        for i in range(2)],
           "unestimated": ["u0"], "first_runs": [], "questions": 20, "cell_hours": 0.02, "wall_hours": 0.01, "jobs": 8,
           "unregistered_models": []}
    assert render(est).splitlines()[1] == (
        "total of the 2 estimated cells (a lower bound: 1 cell not estimated): 20 questions, 1.2 cell-minutes "
        "(CPU-minutes, one process per cell); about 36 s wall with --jobs 8 on 2 processes (2 estimated cells, one "
        "process per cell) on 2 free cores")
