"""``tokrag leaderboard run --estimate --jobs N`` divided the cell-hours by N whatever the cells: 4 cells of 277.78 h
each (limit 10**6 at the fallback 1 s per question) with ``--jobs 1000`` printed "about 1.11 h wall", a thousandth of
the 277.78 h the longest cell alone takes, since a cell runs in one process (s58 b2). The wall time is now
``max(total / min(jobs, cells), longest cell)``; ``--jobs`` at most the number of equal cells is unchanged. ToyLM
spec, no cell run."""

from __future__ import annotations

import pytest

from leaderboards.estimate import estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


@pytest.fixture
def spec(tmp_path):
    return load_spec(write_spec(tmp_path, limit=10**6))  # 2 methods x 2 tasks; toy task sizes unknown: limit counted


@pytest.mark.parametrize("jobs, wall", [(1, 1111.11), (2, 555.56), (4, 277.78), (1000, 277.78)])
def test_wall_hours_count_at_most_one_process_per_cell(spec, tmp_path, jobs, wall):
    est = estimate(spec, tmp_path / "runs", jobs=jobs, fallback=1.0)
    assert (est["cells_todo"], est["cell_hours"], est["wall_hours"]) == (4, 1111.11, wall)
    assert f"about {wall:.2f} h wall with --jobs {jobs}" in render(est)


def test_one_long_cell_bounds_the_wall_time(tmp_path):
    """Two cells of 10**6 s and two of 3 s on 3 jobs: the two long cells take 10**6 s side by side (it said the total
    over 3 jobs, 185.19 h)."""
    spec = load_spec(write_spec(tmp_path, limit=3, tasks=["toy_qa", {"task": "toy_qa_noise67", "limit": 10**6}]))
    est = estimate(spec, tmp_path / "runs", jobs=3, fallback=1.0)
    assert sorted(c["seconds"] for c in est["cells"]) == [3, 3, 10**6, 10**6]
    assert (est["cell_hours"], est["wall_hours"]) == (round((2 * 10**6 + 6) / 3600, 2), 277.78)
