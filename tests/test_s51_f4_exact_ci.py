"""A 0/1 metric whose questions all score the same gets the exact Clopper-Pearson CI, marked ‡ (s51 a2 M2); a graded
metric over one question gets no CI.

The percentile bootstrap of equal values has zero width: 0 of 30 right printed ``0.000 [0.000, 0.000]``, read as
certainty, while the exact 95% upper bound is 1 - 0.025^(1/30) = 0.116. Every other row keeps its bootstrap CI, byte
for byte.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboards.page import render_html
from leaderboards.report import _seed_for, _values_id, compute, render_csv, render_markdown
from leaderboards.stats import bootstrap_ci
from s51_f4_synthetic import synthetic

F1 = [0.5, 0.25, 1.0] + [0.0] * 27
NOTE = ("‡ = every question of the row scored 0 on this metric, or every one 1 (0 of n or n of n): the CI is the exact "
        "Clopper-Pearson interval of a proportion (the percentile bootstrap of equal values has zero width; for a graded "
        "metric such as F1, the interval of the share of questions above 0, or below 1, which bounds the mean)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    spec, loaded = synthetic(tmp_path_factory.mktemp("cp"), {
        "standard": {"em": [1.0] * 30, "f1": [1.0] * 30},
        "none": {"em": [0.0] * 30, "f1": [0.0] * 30},
        "other": {"em": [1.0] * 3 + [0.0] * 27, "f1": F1}})
    return compute(spec, loaded, timings=False)


def _row(data, method):
    return next(r for r in data["rows"] if r["method"] == method)


def _md_rows(md):
    """The Results table's rows by method."""
    table = md.split("## Results")[1].split("\n## ")[0]
    return {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| ") and "toy_qa" in line}


def test_0_of_n_and_n_of_n_get_the_exact_interval(data):
    em = _row(data, "none")["metrics"]["em"]
    assert em["ci"] == "clopper-pearson" and em["lo"] == 0.0
    assert math.isclose(em["hi"], 1 - 0.025 ** (1 / 30), rel_tol=1e-9) and round(em["hi"], 4) == 0.1157
    em = _row(data, "standard")["metrics"]["em"]
    assert em["hi"] == 1.0 and math.isclose(em["lo"], 0.025 ** (1 / 30), rel_tol=1e-9)  # 0.884
    md = render_markdown(data)
    rows = _md_rows(md)
    # F1 too (s51 r4): a mean of values in [0, 1] is bounded by the share above 0 (below 1)
    assert rows["none"] == "| none | toy_qa | - | 30 | 0.000 [0.000, 0.116] ‡ | 0.000 [0.000, 0.116] ‡ |"
    assert rows["standard"] == "| standard | toy_qa | - | 30 | 1.000 [0.884, 1.000] ‡ | 1.000 [0.884, 1.000] ‡ |"
    assert f"- {NOTE}" in md
    html = render_html(data, [])
    assert NOTE in html and "(exact Clopper-Pearson: every question scored the same)" in html
    # the CSV's bounds are the exact ones; the JSON names the method
    line = next(x for x in render_csv(data).splitlines() if x.startswith("none,"))
    assert ",0.000000,0.000000,0.115703," in line

    from leaderboards.stats import exact_binomial_ci  # new here

    assert exact_binomial_ci(0, 300, 0.95)[1] == pytest.approx(1 - 0.025 ** (1 / 300)) == pytest.approx(0.01222, abs=1e-5)


def test_every_other_row_keeps_its_bootstrap_ci_byte_for_byte(data):
    rows = _md_rows(render_markdown(data))
    # as the code before this change printed them, but F1's upper bound 0.133 -> 0.142: since s52 f5 a row's resamples
    # are seeded by the metric and its values, not its runs' config hashes (EM's bounds happen to be the same)
    assert rows["other"] == "| other | toy_qa | - | 30 | 0.100 [0.000, 0.233] | 0.058 [0.000, 0.142] |"
    for name, values in (("em", [1.0] * 3 + [0.0] * 27), ("f1", F1)):
        m = _row(data, "other")["metrics"][name]
        assert (m["lo"], m["hi"]) == bootstrap_ci(np.array(values), 500, 0.95, _seed_for(7, name, _values_id(values)))
        assert "ci" not in m
    # F1 has partial credit in 'other', but its all-0 / all-1 rows get the exact interval as in any report (s51 r4)
    assert _row(data, "none")["metrics"]["f1"]["ci"] == "clopper-pearson"


def test_no_note_without_such_a_row(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"em": [1.0] * 3 + [0.0] * 7}, "none": {"em": [0.0] * 9 + [1.0]}})
    md = render_markdown(compute(spec, loaded, timings=False))
    assert "‡" not in md and "Clopper" not in md


def test_one_question_of_a_graded_metric_has_no_ci(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"em": [1.0], "f1": [0.5]}, "none": {"em": [0.0], "f1": [0.25]}})
    data = compute(spec, loaded, timings=False)
    f1 = _row(data, "standard")["metrics"]["f1"]
    assert (f1["mean"], f1["lo"], f1["hi"], f1["n"]) == (0.5, None, None, 1)  # was [0.500, 0.500]
    md = render_markdown(data)
    assert _md_rows(md)["standard"] == "| standard | toy_qa | - | 1 | 1.000 [0.025, 1.000] ‡ | 0.500 |"
    assert "- a mean without a CI over n = 1 question: one value has no spread to estimate" in md
