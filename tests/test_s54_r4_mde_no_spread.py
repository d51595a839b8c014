"""The minimum-detectable-difference line where no comparison's paired differences have any spread (s54 r4, review of
b132d08, u3 F5). It read "no method differs from another on any question" whenever every pair's sd was 0, but sd 0 also
means every question differs by the same amount: 12 of 12 questions right for one method and wrong for the other
(answer match), printed beside that very pair's "+1.000 (every question differs by the same amount) p<0.001 (12+/0−)".
The line now says the differences have no spread and names each comparison with its reason; where no question differs
in any pair it is unchanged. Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs."""

from __future__ import annotations

from leaderboards.report import compute, mde_lines, render_markdown
from tests.s51_f4_synthetic import synthetic


def _data(tmp_path, values):
    spec, loaded = synthetic(tmp_path, values)
    return compute(spec, loaded, timings=False)


def test_every_question_differing_one_way_is_not_called_no_difference(tmp_path):
    data = _data(tmp_path, {"standard": {"answer_match": [1] * 12}, "none": {"answer_match": [0] * 12}})
    (x,) = data["mde"]
    assert (x["mde"], x["sd"], x["sd_comparisons"], x["comparisons"]) == (None, 0.0, 0, 1)
    assert x["sd_left_out"] == ["none vs standard: every question differs by the same amount"]
    (line,) = mde_lines(data, None)
    assert line == ("toy_qa: n = 12 questions; the paired differences in answer match have no spread in any comparison "
                    "(none vs standard: every question differs by the same amount): the minimum detectable difference "
                    "cannot be estimated from these runs")
    md = render_markdown(data)
    assert "no method differs from another on any question" not in md
    assert "-1.000 (every question differs by the same amount) p<0.001 (0+/12−)" in md


def test_identical_answers_everywhere_keep_their_line(tmp_path):
    same = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
    data = _data(tmp_path, {"standard": {"answer_match": same}, "none": {"answer_match": list(same)},
                            "other": {"answer_match": list(same)}})
    (x,) = data["mde"]
    assert (x["mde"], x["sd_comparisons"], x["comparisons"]) == (None, 0, 2) and "sd_left_out" not in x
    assert mde_lines(data, None) == ["toy_qa: n = 12 questions; no method differs from another on any question in answer "
                                     "match: the minimum detectable difference cannot be estimated from these runs"]


def test_a_mixed_family_without_spread_names_both_reasons(tmp_path):
    """Against the reference standard: other answers every question right where standard answers none (answer match
    +1 each), none answers as standard does."""
    f1 = [0.5, 0.25, 0.75, 0.0, 0.5, 0.25, 0.5, 0.0, 0.75, 0.5, 0.25, 0.5]
    data = _data(tmp_path, {"standard": {"f1": f1, "answer_match": [0] * 12},
                            "none": {"f1": list(f1), "answer_match": [0] * 12},
                            "other": {"f1": [v + 0.25 for v in f1], "answer_match": [1] * 12}})
    (x,) = data["mde"]
    assert x["metric"] == "answer_match" and x["sd_comparisons"] == 0 and x["comparisons"] == 2
    assert sorted(x["sd_left_out"]) == ["none vs standard: no question differs",
                                        "other vs standard: every question differs by the same amount"]
    (line,) = mde_lines(data, None)
    assert line.startswith("toy_qa: n = 12 questions; the paired differences in answer match have no spread in any comparison (")
