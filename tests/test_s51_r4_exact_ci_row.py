"""A row's exact interval depends on that row alone (s51 r4, review of 0079b17).

0079b17 gave the exact Clopper-Pearson interval to a row whose questions all score 0 (or all 1) only for a metric whose
every value in the whole report is 0 or 1: so the same run folders (rag-none, F1 0 on every question) read
``0.000 [0.000, 0.308] ‡`` in a report of them alone and ``0.000 [0.000, 0.000]`` in a report where another row got
partial F1 credit, against the README's "the same run folders give the same CI in any report that holds them". A mean
of values in [0, 1] is at most the share of questions above 0, so the exact interval of that share bounds F1's mean
too: every metric in [0, 1] now gets it. And one question whose two seeds disagree on a 0/1 metric (mean 0.5) kept
the zero-width ``0.500 [0.500, 0.500]`` that 0079b17 removed for a graded metric over one question.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from leaderboard_helpers import TOY, write_spec
from leaderboards.report import compute, render_markdown
from leaderboards.spec import load_spec

METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
           {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
           {"name": "other", "model": TOY, "model_args": {"mode": "first"}}]
BASE = {"standard": {"em": [1.0] * 10, "f1": [1.0] * 10}, "none": {"em": [0.0] * 10, "f1": [0.0] * 10}}


def _report(tmp: Path, values: dict, seeds=(1,)) -> dict:
    """compute() over the toy spec's cells with per-question ``values``: {method: {metric: [...]}}, or
    {method: {seed: {metric: [...]}}} for several seeds; each cell's key is its method and seed (as run folders)."""
    spec = load_spec(write_spec(tmp, tasks=["toy_qa"], methods=[m for m in METHODS if m["name"] in values], seeds=seeds))
    loaded = {}
    for cell in spec.cells():
        vals = values[cell.method.name]
        vals = vals.get(cell.seed, vals)
        n = len(next(iter(vals.values())))
        samples = [{"doc_id": i, "doc": {"qid": f"q{i}"}, "filter": "none", "metrics": list(vals),
                    **{k: v[i] for k, v in vals.items()}} for i in range(n)]
        results = {"results": {"toy_qa": {f"{k},none": float(np.mean(v)) for k, v in vals.items()}},
                   "configs": {"toy_qa": {"metric_list": [{"metric": k, "aggregation": "mean"} for k in vals]}},
                   "higher_is_better": {"toy_qa": {k: True for k in vals}}}
        loaded[cell.cell_id] = (cell, f"key-{cell.method.name}-{cell.seed}",
                                {"samples": {"toy_qa": samples}, "results": results, "provenance": {}, "config": {},
                                 "cost": {"forward_passes": n, "generated_tokens": n, "n_samples": n}})
    return compute(spec, loaded, timings=False)


def _metric(data: dict, method: str, name: str) -> dict:
    return next(r for r in data["rows"] if r["method"] == method)["metrics"][name]


def _md_row(data: dict, method: str) -> str:
    return next(x for x in render_markdown(data).split("## Results")[1].splitlines() if x.startswith(f"| {method} |"))


def test_the_same_runs_get_the_same_interval_in_any_report(tmp_path):
    alone = _report(tmp_path / "a", BASE)
    mixed = _report(tmp_path / "b", {**BASE, "other": {"em": [0.0] * 10, "f1": [0.5] + [0.0] * 9}})  # partial credit
    for data in (alone, mixed):
        f1 = _metric(data, "none", "f1")
        assert (f1["lo"], f1["ci"]) == (0.0, "clopper-pearson") and math.isclose(f1["hi"], 1 - 0.025 ** (1 / 10))
        assert _md_row(data, "none") == "| none | toy_qa | - | 10 | 0.000 [0.000, 0.308] ‡ | 0.000 [0.000, 0.308] ‡ |"
        f1 = _metric(data, "standard", "f1")  # every question 1
        assert math.isclose(f1["lo"], 0.025 ** (1 / 10)) and f1["hi"] == 1.0
    assert "the share of questions above 0, or below 1, which bounds the mean" in render_markdown(mixed)
    # the row with partial credit keeps its bootstrap interval
    assert "ci" not in _metric(mixed, "other", "f1") and _metric(mixed, "other", "f1")["hi"] > 0.0


def test_a_metric_outside_0_1_keeps_the_bootstrap(tmp_path):
    """A bring-your-own metric with a value outside [0, 1] in the report: no exact interval applies to its mean."""
    data = _report(tmp_path, {"standard": {"score": [2.0] * 5 + [0.0] * 5}, "none": {"score": [0.0] * 10}})
    m = _metric(data, "none", "score")
    # s59 s1: 0 on every question is the bootstrap's zero-width [0, 0], no 95% interval: no CI (was (0.0, 0.0))
    assert (m["lo"], m["hi"]) == (None, None) and "ci" not in m
    s = _metric(data, "standard", "score")  # with spread: the bootstrap's interval
    assert "ci" not in s and s["lo"] < 1.0 < s["hi"]


def test_one_question_whose_seeds_disagree_has_no_ci(tmp_path):
    data = _report(tmp_path, {"standard": {1: {"em": [1.0]}, 2: {"em": [0.0]}}, "none": {1: {"em": [0.0]}, 2: {"em": [0.0]}}},
                   seeds=(1, 2))
    em = _metric(data, "standard", "em")
    assert (em["mean"], em["lo"], em["hi"], em["n"]) == (0.5, None, None, 1)  # was [0.500, 0.500]
    assert _md_row(data, "standard") == "| standard | toy_qa | - | 1 | 0.500 |"
    assert _metric(data, "none", "em")["ci"] == "clopper-pearson"  # both seeds 0 of 1: [0, 0.975]
