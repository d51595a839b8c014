"""Counts in the text of ``tokrag leaderboard run --estimate`` (leaderboards/estimate.py ``render``)."""

from __future__ import annotations

from leaderboards.estimate import render


def _est(jobs: int, n_est: int, n_unest: int) -> dict:
    return {"spec": "toy", "selection": None, "cells_done": 0, "cells_total": n_est + n_unest, "cells_todo": n_est + n_unest,
            "measurements": 3, "runs_dir": "runs", "by_method": [],
            "cells": [{"cell": f"c{i}", "questions": 10, "seconds": 30.0} for i in range(n_est)],
            "unestimated": [f"u{i}" for i in range(n_unest)], "first_runs": [], "questions": 10 * n_est,
            "cell_hours": 0.02, "wall_hours": 0.02, "jobs": jobs, "unregistered_models": []}


def test_one_job_reads_one_free_core():
    """It said "on 1 free cores" (and "1 estimated cells", "1 cells are not estimated")."""
    lines = render(_est(1, 1, 1)).splitlines()
    assert lines[1] == ("total of the 1 estimated cell (a lower bound: 1 cell not estimated): 10 questions, 1.2 cell-minutes "
                        "(CPU-minutes, one process per cell); about 1.2 min wall with --jobs 1 on 1 free core")
    assert lines[2].startswith("not estimated (1 cell: no measurement of a similar cell;")
    assert render(_est(2, 2, 0)).splitlines()[1].endswith("with --jobs 2 on 2 free cores")
