"""A NaN or infinite per-question metric value is refused, naming the cell and the doc id (s51 a2 M5).

It was accepted end to end: ``verify`` found nothing (the invariant ``abs(nan - v) > tol`` is never true, and
results.json's mean is NaN too), the row printed ``- [-, -]`` and the paired test ``+nan [+nan, +nan] p=1.000``
(a graded metric's Monte Carlo path: ``p≤0.001``), ``holm([nan, 0.01, 0.04])`` gave ``[1.0, 1.0, 1.0]`` (NaN broke
the sort) and ``paired_test`` of differences with a NaN gave p 0.0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboards.invariants import InvariantError, cell_violations
from leaderboards.report import build_report, compute, verify
from leaderboards.stats import bootstrap_ci, holm, paired_test
from s51_f4_synthetic import synthetic

NAN, INF = float("nan"), float("inf")
BASE = [1.0] * 10 + [0.0] * 30
LINE = ("FAIL other/toy_qa/seed1 doc_id 3  invariant: em = nan is not a finite number (a per-question metric must be one: "
        "its mean, CI and paired tests cannot be computed; the task's metric function returned it)")


def _with(value, at: int = 3) -> list:
    out = list(BASE)
    out[at] = value
    return out


@pytest.fixture
def nan_cell(tmp_path):
    return synthetic(tmp_path, {"standard": {"em": BASE}, "none": {"em": [0.0] * 40}, "other": {"em": _with(NAN)}})


def test_verify_names_the_cell_and_the_doc_id(nan_cell):
    _spec, loaded = nan_cell
    assert [v.render() for v in verify(loaded)] == [LINE]


def test_the_report_is_refused_with_that_line(nan_cell, tmp_path):
    spec, loaded = nan_cell
    with pytest.raises(InvariantError) as exc:
        build_report(spec, tmp_path / "runs", tmp_path / "out", loaded=loaded, questions=False)
    assert str(exc.value).splitlines() == ["1 invariant violation(s) in the run folders of toy; no report written:", LINE]
    assert not (tmp_path / "out" / "leaderboard.md").exists()
    # compute, called without verify, refuses it too (it printed "- [-, -]" and "+nan [+nan, +nan] p=1.000")
    with pytest.raises(InvariantError, match="^FAIL other/toy_qa/seed1 doc_id 3  invariant: em = nan is not"):
        compute(spec, loaded, timings=False)


def test_infinity_and_a_ratio_metrics_list_are_refused_too():
    samples = [{"doc_id": 0, "metrics": ["f1"], "f1": 0.5}, {"doc_id": 7, "metrics": ["f1"], "f1": -INF},
               {"doc_id": 8, "metrics": ["word_perplexity"], "word_perplexity": [NAN, 12]}]
    got = [(v.sample, v.message.split(" is ")[0]) for v in cell_violations("c", "t", samples, {})]
    assert got == [(7, "f1 = -inf"), (8, "word_perplexity = [nan, 12]")]
    # results.json's own NaN mean is named (the samples' mean 0.5 never differed from it)
    res = {"results": {"t": {"f1,none": NAN}}, "configs": {"t": {"metric_list": [{"metric": "f1", "aggregation": "mean"}]}}}
    got = [v.render() for v in cell_violations("c", "t", samples[:1], res)]
    assert got == ["FAIL c  invariant: results.json f1,none = nan is not a finite number"]


def test_finite_cells_pass_as_before(tmp_path):
    _spec, loaded = synthetic(tmp_path, {"standard": {"em": BASE}, "none": {"em": [0.0] * 40}, "other": {"em": _with(1.0)}})
    assert verify(loaded) == []


def test_the_statistics_refuse_nan_rather_than_sort_it():
    with pytest.raises(ValueError, match=r"^holm: 1 of 3 p-values are not finite numbers \(first: index 0, nan\)$"):
        holm([NAN, 0.01, 0.04])
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    with pytest.raises(ValueError, match=r"^paired_test: 1 of 5 per-question differences are not finite numbers \(first: "
                                         r"index 2, nan\)$"):
        paired_test(np.array([0.1, -0.2, NAN, 0.3, 0.05]), 500, 0.95, 0)  # gave p 0.0
    with pytest.raises(ValueError, match="^paired_test: 1 of 300 per-question differences"):
        paired_test(np.r_[np.zeros(299), INF], 500, 0.95, 0)
    with pytest.raises(ValueError, match="^bootstrap_ci: 1 of 3 per-question values"):
        bootstrap_ci(np.array([0.1, NAN, 0.3]), 500, 0.95, 0)  # gave (nan, nan)
    res = paired_test(np.array([0.1, -0.2, 0.4, 0.3, 0.05]), 500, 0.95, 0)
    assert math.isclose(res["diff"], 0.13) and 0 < res["p"] <= 1
