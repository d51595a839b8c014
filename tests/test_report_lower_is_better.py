"""The direction of a lower-is-better primary metric (``cf_match``: the planted answer given) in the pivot's average
column, helped/hurt against the closed book, noise flips and the per-question marks: the rule of the task columns
(``report._lower_better``). Before, the average bolded the highest (the worst), helped counted the planted answer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from leaderboards.page import _question_page
from leaderboards.report import _diagnostics, _pivot, pivot_table
from leaderboards.stats import helped_hurt, noise_flips


def _cf_pivot_data(hib: bool | None = False) -> dict:
    def row(method, task, v):
        return {"model": None, "method": method, "task": task, "metrics": {"cf_match": {"mean": v, "lo": v - 0.05, "hi": v + 0.05}}}
    return {"models": [{"name": None, "label": "", "methods": ["good", "bad"], "tasks": ["t1", "t2"]}],
            "rows": [row("good", "t1", 0.1), row("good", "t2", 0.2), row("bad", "t1", 0.5), row("bad", "t2", 0.6)],
            "higher_is_better": {} if hib is None else {"t1": {"cf_match": hib}, "t2": {"cf_match": hib}},
            "specific_settings": {}}


@pytest.mark.parametrize("hib", [False, None])  # recorded by results.json, or the LOWER_IS_BETTER default
def test_pivot_average_bolds_the_lowest_for_a_lower_is_better_primary(hib):
    data = _cf_pivot_data(hib)
    (piv,) = _pivot(SimpleNamespace(primary_metric="cf_match"), data)
    assert piv["best"] == {"t1": ["good"], "t2": ["good"], "average": ["good"]}
    assert piv["average_lower_is_better"] is True
    head, body = pivot_table({**data, "pivot": [piv]}, piv)
    assert head[-1] == "average (cf match, 2 tasks, lower is better)"
    assert body[0][-1] == "**0.150**" and body[1][-1] == "0.550"


def test_pivot_average_of_a_higher_is_better_primary_is_unchanged():
    data = _cf_pivot_data(True)  # results.json says higher is better: the task columns and the average agree
    (piv,) = _pivot(SimpleNamespace(primary_metric="cf_match"), data)
    assert piv["best"] == {"t1": ["bad"], "t2": ["bad"], "average": ["bad"]}
    assert "average_lower_is_better" not in piv  # the JSON of higher-is-better pivots as before
    assert pivot_table({**data, "pivot": [piv]}, piv)[0][-1] == "average (cf match, 2 tasks)"


def test_pivot_average_of_disagreeing_columns_has_no_bold():
    data = _cf_pivot_data(False)
    data["higher_is_better"]["t2"]["cf_match"] = True
    (piv,) = _pivot(SimpleNamespace(primary_metric="cf_match"), data)
    assert piv["best"] == {"t1": ["good"], "t2": ["bad"]}


def test_helped_hurt_and_noise_flips_follow_the_direction():
    mine, cb = {0: 1.0, 1: 0.0, 2: 1.0}, {0: 0.0, 1: 1.0, 2: 1.0}
    assert helped_hurt(mine, cb) == {"helped": 1, "hurt": 1, "neutral": 1}
    assert helped_hurt({0: 1.0, 1: 1.0}, {0: 0.0, 1: 0.0}, lower_is_better=True) == {"helped": 0, "hurt": 2, "neutral": 0}
    assert helped_hurt({0: 0.0, 1: 0.5}, {0: 1.0, 1: 0.5}, lower_is_better=True) == {"helped": 1, "hurt": 0, "neutral": 1}
    clean, noisy = {"a": 0.0, "b": 0.0, "c": 1.0}, {"a": 1.0, "b": 0.0, "c": 1.0}
    assert noise_flips(clean, noisy) == {"flips": 0, "clean_correct": 1}
    assert noise_flips(clean, noisy, lower_is_better=True) == {"flips": 1, "clean_correct": 2}


def _diag_rows():
    return [{"model": None, "method": "m", "task": "t", "noise": 0.0, "family": "t"},
            {"model": None, "method": "rag-none", "task": "t", "noise": 0.0, "family": "t"},
            {"model": None, "method": "m", "task": "t_noise", "noise": 0.5, "family": "t"}]


def _per_seed(metric):
    return {(None, "m", "t"): {1: {metric: {0: 1.0, 1: 1.0, 2: 0.0}}},  # the planted answer on 0 and 1
            (None, "rag-none", "t"): {1: {metric: {0: 0.0, 1: 0.0, 2: 0.0}}},
            (None, "m", "t_noise"): {1: {metric: {0: 1.0, 1: 1.0, 2: 1.0}}}}


def test_diagnostics_of_cf_match_count_the_planted_answer_as_hurt():
    rows = _diag_rows()
    _diagnostics(SimpleNamespace(primary_metric="cf_match", closed_book="rag-none"), rows, _per_seed("cf_match"), {})
    assert rows[0]["closed_book"] == {"helped": 0, "hurt": 2, "neutral": 1}
    assert rows[2]["noise_sensitivity"] == {"flips": 1, "clean_correct": 1, "clean_task": "t"}
    # results.json's higher_is_better decides over the default, as for the task columns
    rows = _diag_rows()
    _diagnostics(SimpleNamespace(primary_metric="cf_match", closed_book="rag-none"), rows, _per_seed("cf_match"), {},
                 {"t": {"cf_match": True}})
    assert rows[0]["closed_book"] == {"helped": 2, "hurt": 0, "neutral": 1}


def test_diagnostics_of_a_higher_is_better_metric_are_unchanged():
    rows = _diag_rows()
    _diagnostics(SimpleNamespace(primary_metric="em", closed_book="rag-none"), rows, _per_seed("em"), {})
    assert rows[0]["closed_book"] == {"helped": 2, "hurt": 0, "neutral": 1}
    assert rows[2]["noise_sensitivity"] == {"flips": 0, "clean_correct": 2, "clean_task": "t"}


def _samples(v_m, v_cb):
    doc = {"qid": "q0", "question": "Q?", "answers": ["a"], "ctxs": []}
    return {"m": {0: {"doc": doc, "cf_match": v_m, "resps": [["x"]]}},
            "rag-none": {0: {"doc": doc, "cf_match": v_cb, "resps": [["y"]]}}}


def test_question_page_marks_follow_the_direction():
    data = {"primary_metric": "cf_match", "closed_book": "rag-none", "metrics": ["cf_match"], "models": [],
            "spec": "s", "higher_is_better": {}, "specific_settings": {}, "method_args": {}}
    html = _question_page(None, data, None, "t", _samples(1.0, 0.0))  # the method gave the planted answer
    assert '<span class="bad">&#9660; hurt</span>' in html and "helped</span>" not in html
    assert "cf match: 1/2 methods right (lower is better: right = 0)" in html
    assert "(cf match, lower is better)." in html
    html = _question_page(None, data, None, "t", _samples(0.0, 1.0))
    assert '<span class="ok">&#9650; helped</span>' in html
    em = _question_page(None, {**data, "primary_metric": "em"}, None, "t",
                        {k: {0: {**v[0], "em": v[0]["cf_match"]}} for k, v in _samples(1.0, 0.0).items()})
    assert '<span class="ok">&#9650; helped</span>' in em and "em: 1/2 methods</summary>" in em.replace("EM", "em")
