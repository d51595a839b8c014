"""``tokrag leaderboard run --estimate`` over a finished cell whose ``cost.json`` or ``results.json`` is nested past
Python's recursion limit, or whose ``cost.json`` is JSON of another shape (s60 r1, j1's leftover in
leaderboards/estimate.py). Before (3e151fb's tree): a RecursionError traceback (either file) or an AttributeError
traceback (``cost.json`` holding ``[]``), exit 1. Now the folder is read as a malformed one already was: a cost that
cannot be read leaves the folder out of the measurements, a results file only its task version and size.
The toy spec (tests/leaderboard_fixtures, the toy LM)."""

from __future__ import annotations

import shutil

import pytest
from leaderboard_helpers import TOY, run_toy_spec

from leaderboards.estimate import measurements

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The toy spec (toy_qa, 3 questions, one cell) run once: its runs folder."""
    _spec, runs = run_toy_spec(tmp_path_factory.mktemp("s60r1e"), tasks=["toy_qa"], limit=3,
                               methods=[{"name": "standard", "model": TOY}])
    return runs


@pytest.fixture
def runs(finished, tmp_path):
    shutil.copytree(finished, tmp_path / "runs")
    return tmp_path / "runs"


def _cell(runs):
    return next(d for d in runs.iterdir() if (d / "DONE").is_file())


def test_the_finished_cell_is_measured(runs):
    [m] = measurements(runs, [])
    assert (m.method, m.task, m.n, m.limit) == ("standard", "toy_qa", 3, 3) and m.wall_s > 0 and m.size is not None


@pytest.mark.parametrize("text", [DEEP, "[]", "{"], ids=["deep", "list", "malformed"])
def test_an_unreadable_cost_leaves_the_folder_out(runs, text):
    (_cell(runs) / "cost.json").write_text(text, encoding="utf-8")
    assert measurements(runs, []) == []  # was: RecursionError / AttributeError (malformed: as now)


def test_a_deep_results_file_loses_only_the_version_and_size(runs):
    (_cell(runs) / "results.json").write_text(DEEP, encoding="utf-8")
    [m] = measurements(runs, [])  # was: RecursionError
    assert (m.method, m.task, m.n, m.version, m.size) == ("standard", "toy_qa", 3, None, None)
