"""Three LOW wordings of the report (s51 a2 L2, L3, L6).

* L2: over one question the MDE line said "no method differs from another on any question" while the two methods
  differed on it: the spread of the differences (sd, ddof=1) is not estimable from one question.
* L3: the pivot's bold is the best point estimate, not a test (a one-question lead of 300 was bold): the heading says so.
* L6: cost cells were ``str()`` of rounded floats: ``2.0`` forward passes / question and ``100.0`` MiB beside values of
  three decimals; each column has its decimals now (the JSON and CSV keep the values).
"""

from __future__ import annotations

from leaderboards.page import render_html
from leaderboards.report import compute, mde_lines, render_csv, render_markdown
from s51_f4_synthetic import synthetic

BOLD = "best value per column in bold (highest, or lowest where lower is better: a point estimate, not a test)"


def test_one_question_gives_the_real_reason_for_no_mde(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"answer_match": [1.0]}, "none": {"answer_match": [0.0]}})  # they differ on it
    data = compute(spec, loaded, timings=False)
    assert mde_lines(data, None) == ["toy_qa: n = 1 question; the spread of the paired differences in answer match cannot be "
                                     "estimated from fewer than 2 questions: no minimum detectable difference"]


def test_no_difference_on_any_question_keeps_its_line(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"answer_match": [1.0, 0.0, 1.0]}, "none": {"answer_match": [1.0, 0.0, 1.0]}})
    assert mde_lines(compute(spec, loaded, timings=False), None) == [
        "toy_qa: n = 3 questions; no method differs from another on any question in answer match: the minimum detectable "
        "difference cannot be estimated from these runs"]


def test_the_bold_heading_says_it_is_not_a_test(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"answer_match": [1.0] * 3 + [0.0] * 37}, "none": {"answer_match": [0.0] * 39 + [1.0]}})
    data = compute(spec, loaded)
    md = render_markdown(data)
    assert f"## Overview: answer match per task ({BOLD}; methods are compared only within a model)" in md
    assert f"Overview: answer match per task ({BOLD}; methods" in render_html(data, [])


def test_each_cost_column_has_its_decimals(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"answer_match": [1.0] * 3 + [0.0] * 37},
                                        "none": {"answer_match": [0.0] * 39 + [1.0]}})
    data = compute(spec, loaded)
    cost = render_markdown(data).split("## Cost")[1].split("\n## ")[0]
    # forward passes, generated, prompt tokens, fp/token, fp/question, wall s, model s, model s/question, peak RSS
    assert "| standard | toy_qa | 80 | 40 | 400 | 2.000 | 2.00 | 1.0 | 0.5 | 0.013 | 100 |" in cost  # was 2.0 | 2.0 | ... | 100.0
    line = next(x for x in render_csv(data).splitlines() if x.startswith("standard,"))
    assert line.endswith(",80,40,400,2.0,2.0,1.0,0.5,0.013,100.0")  # the CSV keeps the values as before
