"""REPLUG's passage weights on a noise task, without a model (issue 11.1): how much weight the inserted
noise passages get, compared with the retrieved passages they replaced.

For the first ``--questions`` docs of a task (default ``nq_oracle_bm25_noise60``) and of the same task
without noise, computes the weights ``softmax(score/τ)`` exactly as ``rag-replug`` does
(:func:`tokrag_model.methods.replug.doc_temperature`, :func:`~tokrag_model.methods.replug.passage_scores`,
:func:`~tokrag_model.methods.replug.replug_weights`) and prints per question the scores and weights, then
the figures: noise passages, the largest and the median noise-passage weight, the median ratio of a noise
passage's weight to the weight the passage it replaced had in the clean doc, the median and mean top-1
weight and the median weight entropy (nats). ``--legacy`` reproduces the rule before the fix (noise
passages had no score and counted as score 0). The last output line is one JSON object. A bad ``--task`` or ``--questions``
(below 1) gets one ``replug_weights.py: error: ...`` line and exit 2.

    TOKRAG_DATA_DIR=../shared/data python benchmarks/replug_weights.py [--task nq_oracle_bm25_noise60] [--questions 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def task_docs(task: str, n: int, **override) -> list[dict]:
    """The first ``n`` docs of a QA task, built from its YAML metadata (``override`` replaces keys)."""
    import yaml

    from tasks.utils import load_qa

    meta = yaml.safe_load((_ROOT / "tasks" / "qa" / f"{task}.yaml").read_text(encoding="utf-8"))["metadata"]
    meta = {**meta, **override, "max_docs": n, "config_source": f"{task}.yaml"}
    return list(load_qa(**meta)["test"])


def weights_of(doc: dict, legacy: bool) -> tuple[list[float], list[float]]:
    """(scores, weights) of the doc's passages as rag-replug computes them (``legacy``: as before issue 11.1,
    noise passages had no score, read as 0, and τ came from the model argument retriever=bm25: 1.0)."""
    from tokrag_model.methods.replug import doc_temperature, passage_scores, replug_weights

    ctxs = sorted(doc["ctxs"], key=lambda c: c["rank"])
    if legacy:
        scores = [0.0 if c["source"] == "noise" else float(c["score"]) for c in ctxs]
        tau = 1.0
    else:
        scores, tau = passage_scores(doc, ctxs), doc_temperature(doc, None)
    return scores, [float(x) for x in replug_weights(scores, tau, "mixture")]


def check_args(a: argparse.Namespace) -> None:
    """Refuse bad options before any work (one line each).

    Raises:
        ConfigError: an unknown ``--task`` (no ``tasks/qa/<task>.yaml``), ``--questions`` below 1 (the loader reads
            0 as every question: refused rather than silently meaning all).
    """
    from benchmarks._cli import at_least
    from retrieval.errors import ConfigError, unknown_name

    tasks = [p.stem for p in (_ROOT / "tasks" / "qa").glob("*.yaml")]
    if a.task not in tasks:
        raise ConfigError("--task: " + unknown_name("QA task", a.task, tasks, hint="the tasks are tasks/qa/*.yaml"))
    at_least("--questions", a.questions, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="nq_oracle_bm25_noise60",
                    help="a QA task of tasks/qa/ (its YAML name without .yaml), compared with itself without noise "
                         "(default nq_oracle_bm25_noise60)")
    ap.add_argument("--questions", type=int, default=30,
                    help="the first N docs of the task (>= 1; default 30)")
    ap.add_argument("--legacy", action="store_true", help="the rule before issue 11.1: noise passages score 0")
    a = ap.parse_args(argv)
    check_args(a)
    from benchmarks._cli import checkout

    started = checkout()  # the code this run reads (the provenance's commit)
    from tokrag_model.methods.replug import weight_summary

    import torch

    noisy = task_docs(a.task, a.questions)
    clean = {d["qid"]: d for d in task_docs(a.task, a.questions, noise=0.0)}
    noise_w, ratios, top1, entropy, noise_scores, kept_scores = [], [], [], [], [], []
    for d in noisy:
        scores, w = weights_of(d, a.legacy)
        _, wc = weights_of(clean[d["qid"]], a.legacy)
        ctxs = sorted(d["ctxs"], key=lambda c: c["rank"])
        t1, ent = weight_summary(torch.tensor(w, dtype=torch.float64))
        top1.append(t1)
        entropy.append(ent)
        for pos, c in enumerate(ctxs):
            if c["source"] == "noise":
                noise_w.append(w[pos])
                ratios.append(w[pos] / wc[pos])
                noise_scores.append(scores[pos])
            else:
                kept_scores.append(scores[pos])
        print(f"{d['qid']:>12}  " + "  ".join(f"{c['source'][0]}:{s:.3f}->{x:.2e}" for c, s, x in zip(ctxs, scores, w)))
    out = {
        "task": a.task, "questions": len(noisy), "legacy": a.legacy, "scored_by": noisy[0].get("scored_by"),
        "noise_passages": len(noise_w),
        "max_noise_weight": round(max(noise_w), 6) if noise_w else None,
        "median_noise_weight": round(statistics.median(noise_w), 6) if noise_w else None,
        "median_noise_to_replaced_weight": round(statistics.median(ratios), 6) if ratios else None,
        "share_noise_score_zero": round(sum(s == 0.0 for s in noise_scores) / len(noise_scores), 4) if noise_scores else None,
        "median_noise_score": round(statistics.median(noise_scores), 4) if noise_scores else None,
        "median_other_score": round(statistics.median(kept_scores), 4) if kept_scores else None,
        "median_top1_weight": round(statistics.median(top1), 4),
        "mean_top1_weight": round(statistics.fmean(top1), 4),
        "median_weight_entropy": round(statistics.median(entropy), 4),
    }
    from benchmarks._cli import provenance

    # the retrieval runs the task's docs were built from (no model: device None)
    out["provenance"] = provenance(None, {"run": noisy[0].get("run_fingerprint"),
                                          "run_clean": next(iter(clean.values())).get("run_fingerprint")}, started)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    from benchmarks._cli import run

    sys.exit(run(main))
