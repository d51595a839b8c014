"""Plots of a leaderboard report (leaderboards/plots.py) from a report's data, without run folders."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from leaderboards.plots import make_plots

TASKS = ["qa_a", "qa_b", "qa_cf", "lm"]
METHODS = ["m1", "m2", "m3"]


def _metric(mean: float) -> dict:
    return {"mean": mean, "lo": mean - 0.05, "hi": mean + 0.05, "n": 20}


def _data() -> dict:
    """Two models' data as compute() gives it: "big" has m1 and m2 on qa_a and qa_b, m3 on qa_b only (no qa_a),
    qa_cf has no results yet, lm has only word perplexity; "small" has every method on qa_a and qa_b only."""
    rows = []
    for model, tasks in (("big", TASKS), ("small", ["qa_a", "qa_b"])):
        for m in METHODS:
            for t in tasks:
                row = {"model": model, "method": m, "task": t, "noise": None, "family": t, "seeds": [0], "missing": False}
                if t in ("qa_a", "qa_b") and not (model == "big" and m == "m3" and t == "qa_a"):
                    row["metrics"] = {k: _metric(0.1 * (1 + METHODS.index(m))) for k in ("answer_match", "em")}
                    row["cost"] = {"forward_passes": 100 * (1 + METHODS.index(m)), "generated_tokens": 50}
                elif t == "lm":
                    row["metrics"] = {"word_perplexity": {"mean": 30.0, "lo": 28.0, "hi": 33.0, "n": 10}}
                rows.append(row)
    pivot = []
    for model in ("big", "small"):
        body = []
        for m in METHODS:
            vals = {t: next((r["metrics"]["answer_match"] for r in rows if r["model"] == model and r["method"] == m
                             and r["task"] == t and "answer_match" in (r.get("metrics") or {})), None) for t in ("qa_a", "qa_b")}
            avg = sum(v["mean"] for v in vals.values()) / 2 if all(vals.values()) else None
            body.append({"method": m, "values": vals, "average": avg})
        pivot.append({"model": model, "label": model.title(), "rows": body, "average_over": ["qa_a", "qa_b"],
                      "average_metric": "answer_match"})
    return {"bootstrap": {"confidence": 0.95, "iters": 100, "seed": 0}, "primary_metric": "answer_match",
            "multi_model": True, "metrics": ["em", "answer_match", "word_perplexity"], "rows": rows, "pivot": pivot,
            "models": [{"name": "big", "label": "Big (chat)", "methods": METHODS, "tasks": TASKS},
                       {"name": "small", "label": "Small", "methods": METHODS, "tasks": ["qa_a", "qa_b"]}]}


def test_per_task_plot_shows_only_tasks_with_a_value(tmp_path: Path) -> None:
    caps = dict(make_plots(_data(), tmp_path))
    big = Image.open(tmp_path / "answer_match_per_task_big.png").size
    small = Image.open(tmp_path / "answer_match_per_task_small.png").size
    assert big == small  # the same two tasks and three methods shown: the same width (4 slots gave a wider one)
    cap = caps["answer_match_per_task_big.png"]
    assert cap.endswith("; no answer match (not shown) on: qa_cf, lm")
    assert caps["em_per_task_small.png"] == "EM per task with 95% bootstrap CIs (Small)"


def test_cost_plot_names_the_methods_left_out(tmp_path: Path) -> None:
    caps = dict(make_plots(_data(), tmp_path))
    assert caps["cost_accuracy_big.png"] == (
        "Cost vs accuracy (Big (chat)): forward passes per generated token against mean answer match over the 2 tasks "
        "qa_a, qa_b; 2 of 3 methods; left out (an average over fewer tasks would not compare): m3 (no results on qa_a)")
    assert caps["cost_accuracy_small.png"].endswith("over the 2 tasks qa_a, qa_b; 3 of 3 methods")


def test_robustness_caption_brackets_balance(tmp_path: Path) -> None:
    d = _data()
    for r in d["rows"]:
        if r["task"] == "qa_b":
            r["family"], r["noise"] = "qa_a", 0.6
        elif r["task"] == "qa_a":
            r["noise"] = 0.0
    caps = dict(make_plots(d, tmp_path))
    assert caps["robustness_qa_a_big.png"] == "answer match against noise ratio per method on qa_a (Big (chat)); bands: 95% CI"


def test_plot_captions_print_the_confidence_exactly(tmp_path: Path) -> None:
    # report.confidence_label, as the tables and the page: 0.975 was rounded to "98%" in captions and axes
    data = _data()
    data["bootstrap"]["confidence"] = 0.975
    caps = dict(make_plots(data, tmp_path))
    assert caps["em_per_task_small.png"] == "EM per task with 97.5% bootstrap CIs (Small)"
    assert not any("98%" in c for c in caps.values())
