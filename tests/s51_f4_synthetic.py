"""A report's input without running a model: the toy spec's cells (tests/leaderboard_helpers.write_spec) with
per-question values written by the test, as :func:`leaderboards.report.collect` would load them from run folders."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from leaderboard_helpers import TOY, write_spec

METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
           {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
           {"name": "other", "model": TOY, "model_args": {"mode": "first"}}]


def synthetic(tmp_path: Path, values: dict[str, dict[str, list]], *, task: str = "toy_qa", extra: dict | None = None):
    """``(spec, loaded)`` of the toy spec on ``task`` with the methods of ``values`` (``{method: {metric: [value per
    question, in doc-id order]}}``; a value None leaves the metric out of that sample, as lm-eval does for a metric a
    question has no gold for). results.json holds each metric's mean over the samples that carry it."""
    from leaderboards.spec import load_spec

    methods = [m for m in METHODS if m["name"] in values]
    spec = load_spec(write_spec(tmp_path, tasks=[task], methods=methods, extra=extra))
    loaded = {}
    for cell in spec.cells():
        vals = values[cell.method.name]
        n = len(next(iter(vals.values())))
        samples = []
        for i in range(n):
            s = {"doc_id": i, "doc": {"qid": f"q{i}", "question": f"question {i}"}, "filter": "none", "metrics": []}
            for name, lst in vals.items():
                if lst[i] is not None:
                    s[name] = lst[i]
                    s["metrics"].append(name)
            samples.append(s)
        res = {}
        for name, lst in vals.items():
            present = [v for v in lst if v is not None]
            res[f"{name},none"] = float(np.mean(present)) if present else None
        results = {"results": {task: res},
                   "configs": {task: {"metric_list": [{"metric": m, "aggregation": "mean"} for m in vals]}},
                   "higher_is_better": {task: {m: True for m in vals}}}
        data = {"samples": {task: samples}, "results": results, "provenance": {}, "config": {},
                "cost": {"forward_passes": 2 * n, "generated_tokens": n, "prompt_tokens": 10 * n, "n_samples": n,
                         "wall_s": 1.0, "model_s": 0.5, "peak_rss_mib": 100.0}}
        loaded[cell.cell_id] = (cell, f"key-{cell.method.name}", data)
    return spec, loaded
