"""A 0/1 paired difference shows its discordant questions next to p (s51 a2 M1).

With few discordant questions the paired percentile CI is too narrow: 5 of 300 questions, all one way, printed
``+0.017 [+0.003, +0.033] p=0.062 holm=0.062``, a CI that excludes 0 beside an exact McNemar p = 2/2^5 = 0.0625. The
counts now follow p (``p=0.062 (5+/0−)``) in the Markdown and HTML tables and are recorded in leaderboard.json
(``n_plus`` / ``n_minus``) and the CSV; the CI and p are unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from leaderboards.page import render_html
from leaderboards.report import compute, render_csv, render_markdown
from leaderboards.stats import paired_test
from s51_f4_synthetic import synthetic

STD = [1.0] * 60 + [0.0] * 240
OTHER = STD[:100] + [1.0] * 5 + STD[105:]  # 5 questions right that the reference gets wrong, none the reverse


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    spec, loaded = synthetic(tmp_path_factory.mktemp("mc"), {"standard": {"em": STD, "f1": STD},
                                                            "none": {"em": [1.0] * 20 + [0.0] * 280, "f1": [0.5] * 150 + [0.25] * 150},
                                                            "other": {"em": OTHER, "f1": OTHER}})
    return compute(spec, loaded, timings=False)


def _paired_rows(md):
    table = md.split("## Paired")[1].split("\n## ")[0]
    return {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if " toy_qa " in line}


def test_the_counts_follow_p_and_the_ci_and_p_are_unchanged(data):
    rows = _paired_rows(render_markdown(data))
    # the CI's upper bound +0.033 -> +0.030 since s52 f5 (resamples seeded by the metric and the differences, not the
    # runs' config hashes); p is unchanged
    assert rows["other"].startswith("| other | toy_qa | +0.017 [+0.003, +0.030] p=0.062 (5+/0−) holm=0.062 | ")
    assert rows["none"].startswith("| none | toy_qa | -0.133 [-0.173, -0.097] p<0.001 (0+/40−) holm<0.001 | ")  # was [-0.177, -0.095]
    # a graded difference (F1 0.5 and 0.25 against 0 and 1: several sizes) has no counts: its p is not McNemar's
    assert rows["none"].endswith(" | +0.175 [+0.130, +0.212] p≤0.004 holm≤0.008 |")  # Monte Carlo, 500 resamples (was [+0.133, +0.216])
    p = next(r for r in data["rows"] if r["method"] == "other")["paired"]["standard"]["em"]
    assert (p["n_plus"], p["n_minus"], p["p"], p["n"]) == (5, 0, 0.0625, 300)
    assert round(p["lo"], 6) == 0.003333 and round(p["hi"], 6) == 0.03  # the CI excludes 0, as before (hi was 0.033333)
    assert "(k+/k−) after p = the questions where method - reference is positive / negative" in render_markdown(data)
    assert "p=0.062 (5+/0−) holm=0.062" in render_html(data, [])


def test_the_csv_records_them(data):
    head, *lines = render_csv(data).splitlines()
    cols = head.split(",")
    other = dict(zip(cols, next(x for x in lines if x.startswith("other,")).split(",")))
    assert (other["delta_em_vs_standard_p"], other["delta_em_vs_standard_n_plus"], other["delta_em_vs_standard_n_minus"]) \
        == ("0.062500", "5", "0")
    none = dict(zip(cols, next(x for x in lines if x.startswith("none,")).split(",")))
    assert (none["delta_f1_vs_standard_n_plus"], none["delta_f1_vs_standard_n_minus"]) == ("", "")
    assert cols.index("delta_em_vs_standard_n_plus") == cols.index("delta_em_vs_standard_p_holm_bound") + 1


def test_a_flipped_pair_flips_its_counts(tmp_path):
    """The test is stored once per pair (sorted names) and flipped for the other side: so are its counts."""
    spec, loaded = synthetic(tmp_path, {"standard": {"em": STD}, "none": {"em": [1.0] * 20 + [0.0] * 280}},
                             extra={"reference": "none"})
    data = compute(spec, loaded, timings=False)
    p = next(r for r in data["rows"] if r["method"] == "standard")["paired"]["none"]["em"]
    assert (round(p["diff"], 4), p["n_plus"], p["n_minus"]) == (0.1333, 40, 0)


def test_paired_test_counts_where_every_difference_has_one_size():
    assert {k: paired_test(np.array(d), 200, 0.95, 0).get(k) for d in [[1, -1, 1, 0, 1]] for k in ("n_plus", "n_minus")} \
        == {"n_plus": 3, "n_minus": 1}
    assert "n_plus" not in paired_test(np.array([0.5, -1.0, 1.0]), 200, 0.95, 0)
    res = paired_test(np.zeros(4), 200, 0.95, 0)
    assert (res["n_plus"], res["n_minus"], res["p"]) == (0, 0, 1.0)
