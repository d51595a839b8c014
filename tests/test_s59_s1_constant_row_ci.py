"""A row whose questions all score the same value, other than 0 or 1 of a [0, 1] metric, prints no CI (s59 s1).

The percentile bootstrap of equal values is ``[v, v]``: F1 0.5 on each of 10 questions printed ``0.500 [0.500,
0.500]``, a 95% interval of zero width, a certainty 10 questions do not give (the paired comparisons already refuse
that interval: ``no_ci``). The exact Clopper-Pearson interval covers only 0 of n and n of n of a [0, 1] metric; any
other constant row over more than one question now has no CI (JSON ``lo``/``hi`` null), as a row over one question.

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs. Values are hand-computable.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from leaderboards.report import compute, json_report, render_csv, render_markdown
from tests.s51_f4_synthetic import synthetic

N = 10


@pytest.fixture
def data(tmp_path):
    values = {"standard": {"em": [1, 0] * 5, "f1": [0.5] * N, "score": [3.0] * N},
              "none": {"em": [0] * N, "f1": [0.0] * N, "score": [1.0, 2.0] * 5}}
    return compute(*synthetic(tmp_path, values), timings=False)


def _metrics(data, method):
    return next(r for r in data["rows"] if r["method"] == method)["metrics"]


def test_a_constant_graded_row_has_no_zero_width_ci(data):
    f1 = _metrics(data, "standard")["f1"]
    assert (f1["mean"], f1["n"]) == (0.5, N)
    assert (f1["lo"], f1["hi"]) == (None, None)  # was (0.5, 0.5)
    assert "ci" not in f1


def test_a_constant_metric_outside_the_unit_interval_has_no_ci(data):
    score = _metrics(data, "standard")["score"]  # 3.0 on every question: not a proportion, no exact interval
    assert (score["mean"], score["n"], score["lo"], score["hi"]) == (3.0, N, None, None)  # was (3.0, 3.0)


def test_the_written_report_prints_the_mean_alone(data):
    row = next(r for r in json.loads(json.dumps(json_report(data)))["rows"] if r["method"] == "standard")
    assert (row["metrics"]["f1"]["lo"], row["metrics"]["f1"]["hi"]) == (None, None)
    md = render_markdown(data)
    assert "[0.500, 0.500]" not in md and "[3.000, 3.000]" not in md
    line = {r["method"]: r for r in csv.DictReader(io.StringIO(render_csv(data)))}["standard"]
    assert float(line["f1"]) == 0.5 and (line["f1_ci_low"], line["f1_ci_high"]) == ("", "")  # was 0.5, 0.5
    assert "| standard | toy_qa | - | 10 | 0.500 [0.200, 0.800] | 0.500 |" in md


def test_other_rows_keep_their_intervals(data):
    none = _metrics(data, "none")
    # F1 0 on all 10 questions: the exact interval of 0 of 10, [0, 1 - 0.025^(1/10)] = [0, 0.30850]
    assert none["f1"]["ci"] == "clopper-pearson"
    assert none["f1"]["lo"] == 0.0 and none["f1"]["hi"] == pytest.approx(1 - 0.025 ** (1 / N), abs=1e-12)
    assert none["f1"]["hi"] == pytest.approx(0.3084971078, abs=1e-9)
    # values with spread keep a bootstrap interval of non-zero width around their mean
    for m, mean in ((_metrics(data, "standard")["em"], 0.5), (none["score"], 1.5)):
        assert m["mean"] == mean and m["lo"] < mean < m["hi"]


def test_two_seeds_that_disagree_on_every_question_give_no_ci(tmp_path):
    from tests.test_s51_r4_exact_ci_row import _report  # several seeds per row

    data = _report(tmp_path, {"standard": {1: {"em": [1.0, 0.0, 1.0, 0.0]}, 2: {"em": [0.0, 1.0, 0.0, 1.0]}},
                              "none": {1: {"em": [0.0] * 4}, 2: {"em": [0.0] * 4}}}, seeds=(1, 2))
    em = next(r for r in data["rows"] if r["method"] == "standard")["metrics"]["em"]
    assert (em["mean"], em["n"], em["lo"], em["hi"]) == (0.5, 4, None, None)  # was (0.5, 0.5): 0.5 on each question
    none = next(r for r in data["rows"] if r["method"] == "none")["metrics"]["em"]
    assert none["ci"] == "clopper-pearson" and none["hi"] == pytest.approx(1 - 0.025 ** (1 / 4), abs=1e-12)  # [0, 0.6024]
