"""A multi-seed row with a seed missing (``report --allow-missing``) is marked partial in the Markdown and HTML.

Its value, CI, paired tests and counts come from the finished seeds only; before, nothing but the JSON's
``"missing": true`` said so, and the header said the missing cells' "values show as -", false for such a row.

Toy run, 2 seeds, 12 questions; ``sample/toy_qa/seed2`` unfinished (its DONE removed). ``sample`` on toy_qa, seed 1:
9 of 12 right (0.750, as standard's); on toy_qa_noise67: 3 and 1 of 12 over the two seeds (0.167); average 0.458.
"""

from __future__ import annotations


import pytest

from leaderboards.report import build_report, collect, compute, render_markdown
from tests.leaderboard_helpers import pin_cell_keys, runs_without as _without


@pytest.fixture(scope="module")
def two_seeds(two_seed_runs):  # the session's run of run_two_seed_spec (tests/conftest.py); tests copy the runs
    spec, runs, frozen = two_seed_runs
    with pytest.MonkeyPatch.context() as mp:
        pin_cell_keys(mp, frozen=frozen)
        yield spec, runs


def test_a_row_with_one_of_two_seeds_is_marked_partial(two_seeds, tmp_path):
    spec, runs = two_seeds
    runs = _without(runs, tmp_path / "runs", "sample/toy_qa/seed2")
    data = compute(spec, collect(spec, runs, allow_missing=True), timings=False)
    row = next(r for r in data["rows"] if (r["method"], r["task"]) == ("sample", "toy_qa"))
    assert row["missing"] is True and row["seeds"] == [1] and row["seeds_expected"] == [1, 2]
    assert row["metrics"]["answer_match"]["mean"] == 0.75
    md = render_markdown(data)
    head = next(x for x in md.splitlines() if x.startswith("Cells with results"))
    assert head == ("Cells with results: 11 of 12; 1 missing (not finished in the run folders when this report was built; "
                    "a row none of whose seeds finished shows as -, a row with some of its seeds finished shows their "
                    "values marked †, listed below):")
    assert ("- † sample on toy_qa: 1 of 2 seeds (seed 2 not finished): its values, CIs, paired tests, helped/hurt and "
            "noise flips are over the finished seed only") in md
    assert "| sample | **0.750**† | 0.167 | 0.458† |" in md  # pivot: the value and the average it enters
    assert "| standard | **0.750** | **0.250** | **0.500** |" in md  # complete rows unmarked
    assert "| sample † | toy_qa | 0.00 | 12 | 0.750 [" in md  # results table
    assert "| sample † | toy_qa | +0.750 [" in md  # paired against none
    assert "| sample † | toy_qa_noise67 | 2 | 0 | 10 | 6/9 |" in md  # its noise flips use the partial clean twin
    assert "| sample | toy_qa_noise67 | 0.67 | 12 |" in md  # a complete row whose values do not involve the partial one
    assert md.count("- † = a row, or a row it is compared with, over only some of the spec's seeds") == 5
    out = build_report(spec, runs, tmp_path / "report", timings=False, allow_missing=True, questions=False)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "<b>0.750</b>†" in html and "0.458†" in html and "sample †" in html
    assert "† sample on toy_qa: 1 of 2 seeds (seed 2 not finished)" in html
    assert "their values show as -" not in html


def test_a_row_with_no_seed_finished_still_shows_as_dash(two_seeds, tmp_path):
    spec, runs = two_seeds
    runs = _without(runs, tmp_path / "runs", "sample/toy_qa/seed1", "sample/toy_qa/seed2")
    data = compute(spec, collect(spec, runs, allow_missing=True), timings=False)
    md = render_markdown(data)
    assert ("Cells with results: 10 of 12; 2 missing (not finished in the run folders when this report was built; "
            "their values show as -):") in md
    assert "| sample | - | 0.167 | - |" in md and "†" not in md
