"""``tokrag leaderboard run --estimate --jobs N`` gave the wall time as ``max(cell-hours / min(N, cells), longest
cell)`` (s58 b2, f2), which under-reports when the cells do not divide evenly over the processes: 4 cells of 277.78 h
on ``--jobs 3`` printed "about 370.37 h wall", but a cell is never split, so the 4th starts when one of the first three
ends: 555.56 h (s58 n2, finding 2). The runner's processes each take the next unfinished cell in spec order when free
(leaderboards.runner's cell loop: a cell another process holds is skipped), so the wall time is now the makespan of
that greedy list schedule over ``min(N, cells)`` processes (s58 f4). The makespans below are computed by hand. ToyLM
spec, no cell run; the toy tasks' sizes are unknown, so a cell's questions are its limit (fallback 1 s each)."""

from __future__ import annotations

import pytest

from leaderboards.estimate import _wall_seconds, estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


@pytest.mark.parametrize("jobs, wall", [(3, 555.56), (1, 1111.11), (2, 555.56), (4, 277.78), (1000, 277.78)])
def test_four_equal_cells(tmp_path, jobs, wall):
    """4 cells of 10**6 s (277.78 h): on 3 processes one process runs two of them one after the other (2 x 277.78 h);
    the old formula said 4/3 of a cell (370.37 h). 1, 2, 4 and 1000 jobs are as before."""
    spec = load_spec(write_spec(tmp_path, limit=10**6))  # 2 methods x 2 tasks
    est = estimate(spec, tmp_path / "runs", jobs=jobs, fallback=1.0)
    assert [c["seconds"] for c in est["cells"]] == [10**6] * 4
    assert (est["cells_todo"], est["cell_hours"], est["wall_hours"]) == (4, 1111.11, wall)
    assert f"about {wall:.2f} h wall with --jobs {jobs}" in render(est)


def _uneven(tmp_path):
    """Spec order standard/toy_qa (1 h), standard/toy_qa_noise67 (3 h), none/toy_qa (1 h), none/toy_qa_noise67 (3 h)."""
    return load_spec(write_spec(tmp_path, limit=3600, tasks=["toy_qa", {"task": "toy_qa_noise67", "limit": 3 * 3600}]))


@pytest.mark.parametrize("jobs, wall", [
    # 2 processes: A takes 1 h, B 3 h; A (free at 1 h) takes the 3rd cell (1 h) and, free at 2 h, the 4th (3 h): 5 h.
    # The old formula: max(8 h / 2, 3 h) = 4 h (a split the runner never makes: spec order, not longest first).
    (2, 5.0),
    # 3 processes: 1 h, 3 h, 1 h; the 4th (3 h) starts at 1 h: 4 h (old: max(8 / 3, 3) = 3 h).
    (3, 4.0),
    (1, 8.0), (4, 3.0), (1000, 3.0),
])
def test_uneven_cells_in_spec_order(tmp_path, jobs, wall):
    est = estimate(_uneven(tmp_path), tmp_path / "runs", jobs=jobs, fallback=1.0)
    assert [(c["cell"], c["seconds"]) for c in est["cells"]] == [
        ("standard/toy_qa/seed1", 3600), ("standard/toy_qa_noise67/seed1", 3 * 3600),
        ("none/toy_qa/seed1", 3600), ("none/toy_qa_noise67/seed1", 3 * 3600)]
    assert (est["cell_hours"], est["wall_hours"]) == (8.0, wall)
    assert f"about {wall:.2f} h wall with --jobs {jobs}" in render(est)


@pytest.mark.parametrize("seconds, jobs, wall", [
    ([5, 3, 3, 3], 2, 8),  # A 5, B 3; B takes the 3rd (free at 6), A (free at 5) the 4th: 8 (old: max(14 / 2, 5) = 7)
    ([2, 2, 2, 2, 2], 3, 4),  # 5 equal cells on 3: two rounds (old: 10 / 3)
    ([1, 1, 1, 1, 1, 1], 3, 2),  # a multiple of the processes: the total over them, as before
    ([7, 1, 1, 1], 2, 7),  # the longest cell bounds it: B runs the three short ones meanwhile
    ([1, 7, 1, 1], 1000, 7),  # processes above the cells: one per cell
    ([], 3, 0.0),
])
def test_wall_seconds_is_the_makespan_of_the_runners_order(seconds, jobs, wall):
    assert _wall_seconds([{"seconds": float(s)} for s in seconds], jobs) == wall
