"""A finished cell that scored only its limit still tells its task's size: lm-eval records the task's documents in
``results.json`` (``n-samples.<task>.original``), and ``tokrag leaderboard run --estimate`` reads it (s56 r2's finding:
a cell of 5 of 231 questions left the same task at ``limit: 10**9`` estimated as 10**9 questions, "size unknown until a
cell of it finishes", though one had finished)."""

from __future__ import annotations

import json

from leaderboards import estimate as lb_estimate
from leaderboards.spec import load_spec

from leaderboard_helpers import write_spec


def _finished(runs, name, *, limit, n, results):
    d = runs / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"method": "none", "model": "rag-none", "model_args": {"pretrained": "p"},
                                               "task": "toy_qa", "limit": limit}))
    (d / "cost.json").write_text(json.dumps({"n_samples": n, "wall_s": 2.0 * n}))
    (d / "results.json").write_text(json.dumps(results))
    (d / "DONE").write_text("{}")


def test_a_cell_that_scored_its_limit_caps_the_estimate_at_the_recorded_size(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=10**9))  # toy_qa: 24 documents, version 1.0
    runs = tmp_path / "runs"
    _finished(runs, "five", limit=5, n=5, results={"versions": {"toy_qa": 1.0},
                                                     "n-samples": {"toy_qa": {"effective": 5, "original": 24}}})
    ms = lb_estimate.measurements(runs, spec.include_path)
    assert [(m.n, m.size) for m in ms] == [(5, 24)]
    assert lb_estimate.task_size("toy_qa", ms) == 24
    est = lb_estimate.estimate(spec, runs, fallback=1.0)
    assert est["questions"] == 2 * 24  # two unfinished cells of 24 questions, not 2 x 10**9
    assert est["questions_upper_bound"] == 0 and est["cells_with_questions_upper_bound"] == 0
    assert not any(c["questions_upper_bound"] for c in est["cells"])
    assert "at most" not in lb_estimate.render(est)
    small = load_spec(write_spec(tmp_path / "s", tasks=["toy_qa"], limit=12))
    assert lb_estimate.estimate(small, runs, fallback=1.0)["questions"] == 2 * 12  # a limit under the size: the limit


def test_without_a_recorded_size_a_cell_at_its_limit_still_leaves_the_count_an_upper_bound(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=10**9))
    runs = tmp_path / "runs"
    _finished(runs, "five", limit=5, n=5, results={"versions": {"toy_qa": 1.0}})  # a run before n-samples, or damaged
    ms = lb_estimate.measurements(runs, spec.include_path)
    assert [(m.n, m.size) for m in ms] == [(5, None)]
    est = lb_estimate.estimate(spec, runs, fallback=1.0)
    assert est["questions"] == 2 * 10**9 and est["questions_upper_bound"] == 2
    for bad in ({"toy_qa": {"original": "24"}}, {"toy_qa": {"original": True}}, {"toy_qa": 24}, [1]):
        (runs / "five" / "results.json").write_text(json.dumps({"versions": {"toy_qa": 1.0}, "n-samples": bad}))
        assert [m.size for m in lb_estimate.measurements(runs, spec.include_path)] == [None], bad


def test_a_recorded_size_of_an_older_task_version_does_not_cap(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=10**9))
    runs = tmp_path / "runs"
    _finished(runs, "old", limit=5, n=5, results={"versions": {"toy_qa": 0.5},
                                                    "n-samples": {"toy_qa": {"effective": 5, "original": 30}}})
    est = lb_estimate.estimate(spec, runs, fallback=1.0)
    assert est["questions"] == 2 * 10**9 and est["questions_upper_bound"] == 2
