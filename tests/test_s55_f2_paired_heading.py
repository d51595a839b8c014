"""The paired table's heading (s55 f2 C). It read "mean [95% paired percentile bootstrap CI, 500 resamples, the same
resample for both methods; none where no question differs]": "none" did not say what was missing, and a comparison
over one question or one whose questions all differ by the same amount has no CI either. The heading now names the
three reasons (leaderboards.report._no_paired_ci) and says the cell prints its reason in place of the CI; every
number of the heading is kept. Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs."""

from __future__ import annotations

import re

from leaderboards.report import compute, render_markdown, tables
from tests.s51_f4_synthetic import synthetic

STD = [1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0]
NONE = [0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
SENTENCE = ("(method - standard: mean [95% paired percentile bootstrap CI, 500 resamples, the same resample for both "
            "methods]; where no question differs, every question differs by the same amount, or there is only one "
            "question, the cell shows that reason in parentheses instead of a CI; p = two-sided paired sign-flip "
            "permutation test; ")
REASONS = ("no question differs", "every question differs by the same amount", "one question")


def _paired(tmp_path, values):
    data = compute(*synthetic(tmp_path, values), timings=False)
    (t,) = [t for t in tables(data) if t[0] == "paired-standard"]
    return data, t[1], t[3]


def test_the_heading_says_what_a_cell_without_a_ci_shows(tmp_path):
    data, title, body = _paired(tmp_path, {"standard": {"em": STD}, "none": {"em": NONE}, "other": {"em": list(STD)}})
    assert title.startswith("Paired difference against standard on the same questions " + SENTENCE)
    assert "; none where no question differs]" not in title  # the old wording
    assert title in render_markdown(data)
    # the numbers of the heading are kept: level, resamples, the Monte Carlo floor
    assert re.findall(r"\d+(?:\.\d+)?%?", title)[:2] == ["95%", "500"] and "p≤0.004 = at the Monte Carlo floor" in title
    # every cell without a CI shows one of the reasons the heading names, in parentheses where the CI would be
    cells = {row[0]: row[2] for row in body}
    assert cells["other"] == "+0.000 (no question differs) p=1.000 (0+/0−) holm=1.000"
    assert cells["none"].startswith("-0.333 [")  # a pair that differs keeps its CI


def test_each_reason_the_heading_names_is_what_a_cell_prints(tmp_path):
    seen = set()
    for i, values in enumerate([{"standard": {"em": STD}, "other": {"em": list(STD)}},
                                {"standard": {"f1": [0.5, 0.25, 0.75]}, "none": {"f1": [0.25, 0.0, 0.5]}},
                                {"standard": {"em": [1]}, "none": {"em": [0]}}]):
        _data, title, body = _paired(tmp_path / str(i), values)
        assert SENTENCE in title
        for row in body:
            m = re.fullmatch(r"[+-]\d\.\d{3} \(([^)]*)\) p=.*", row[2])
            assert m and m.group(1) in REASONS, row
            seen.add(m.group(1))
    assert seen == set(REASONS)
