"""A spec's seeds seed lm-eval's random states and the tasks' random draws, not greedy decoding: on a task without
a random draw every seed gives the same answers, and a trial's 2-seed report averaged byte-identical cells as if they
were replicates. The report names the rows whose seeds gave the same per-question scores."""

from __future__ import annotations

import pytest

from leaderboards.report import cells_lines, collect, compute, identical_seed_lines
from tests.leaderboard_helpers import pin_cell_keys


@pytest.fixture(scope="module")
def data(two_seed_runs):  # the session's run of run_two_seed_spec (tests/conftest.py)
    spec, runs, frozen = two_seed_runs
    with pytest.MonkeyPatch.context() as mp:
        pin_cell_keys(mp, frozen=frozen)
        yield compute(spec, collect(spec, runs), timings=False)


def test_rows_whose_seeds_repeat_one_run_are_named(data):
    same = [r for r in data["rows"] if r.get("seeds_identical")]
    keys = {(r["method"], r["task"]) for r in same}
    # standard (first passage) on the clean task and none (closed book) answer alike in both seeds; sample draws with
    # the seed (standard on the noisy task depends on whether the seed redraws its noise passages)
    assert {("standard", "toy_qa"), ("none", "toy_qa"), ("none", "toy_qa_noise67")} <= keys
    assert not {k for k in keys if k[0] == "sample"}
    (line,) = identical_seed_lines(data)
    assert line.startswith(f"Seeds that repeat one run: {len(same)} of the 6 rows with several seeds gave the same "
                           "per-question scores in every seed")
    assert line.endswith(": " + ", ".join(f"{r['method']} on {r['task']}" for r in same))
    assert cells_lines(data) == ["Cells with results: 12 of 12 (all finished)", line]


def test_no_line_with_one_seed_or_differing_seeds(data):
    rows = [r for r in data["rows"] if r["method"] == "sample"]
    assert rows and not any(r.get("seeds_identical") for r in rows)
    assert identical_seed_lines({"rows": rows}) == []
