"""``tokrag analyze``: the token-level benefit/detriment experiment (Xu et al. 2025, §5.3 of
docs' tokrag_method.md; the authors' ``comparing_benefit_and_detriment.py``).

For each sample the gold text is teacher-forced twice through the same LM: a *pure* run (task
context only) and a *RAG* run (passages block + the same context). At each gold token ``x_i``:

* label: **benefit** (1) if ``p_RAG(x_i) > p_pure(x_i)`` else **detriment** (0);
* score: ``S_R − S_L`` of Tok-RAG (``tokrag_model``'s scorer: ``S_R`` = similarity of the RAG
  prediction to the matching information of the passages at the chosen layer, ``S_L`` = similarity
  of the RAG prediction to the pure prediction); the rule predicts benefit iff ``S_R > S_L``.

Per layer policy (``dynamic`` = the JS-gap rule, and fixed layers) it reports the rule's accuracy,
the ROC AUC of the score (``sklearn.metrics.roc_auc_score``) and the counts (tokens, benefit,
detriment, TP/FP/TN/FN with benefit as the positive class), on all tokens and on the paper's
*strict* subset (benefit: RAG top-1 = gold ≠ pure top-1; detriment: pure top-1 = gold ≠ RAG top-1;
other tokens dropped). Data: ``wiki_lm_bm25`` paragraphs (gold = the paragraph) and NQ-oracle
questions with BM25 passages (gold = the first gold answer after the QA prompt).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class TokenRecord:
    """One teacher-forced gold token.

    ``logp_rag`` / ``logp_pure``: log-probability (nats) of the gold token under each run;
    ``top1_rag`` / ``top1_pure`` / ``gold``: token ids; ``scores``: policy name -> ``(S_R, S_L)``
    (unitless cosines); ``layers``: policy name -> the decoder layer used (the dynamic policy varies).
    """

    sample: str
    position: int
    gold: int
    logp_rag: float
    logp_pure: float
    top1_rag: int
    top1_pure: int
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)

    @property
    def label(self) -> int:
        """1 = benefit (``p_RAG(gold) > p_pure(gold)``), 0 = detriment."""
        return int(self.logp_rag > self.logp_pure)

    @property
    def strict_label(self) -> int | None:
        """Paper's filtered label: 1 if RAG top-1 = gold ≠ pure top-1, 0 if pure top-1 = gold ≠ RAG top-1, else None."""
        if self.top1_rag == self.gold and self.top1_pure != self.gold:
            return 1
        if self.top1_pure == self.gold and self.top1_rag != self.gold:
            return 0
        return None


def summarize(labels: Sequence[int], scores: Sequence[float]) -> dict[str, Any]:
    """Accuracy of ``score > 0`` against ``labels`` (1 = benefit), ROC AUC of ``scores``, and counts.

    AUC is ``sklearn.metrics.roc_auc_score(labels, scores)``; it is NaN when only one class occurs.
    ``accuracy`` is NaN on an empty input.
    """
    from sklearn.metrics import roc_auc_score

    n = len(labels)
    if n != len(scores):
        raise ValueError(f"{n} labels but {len(scores)} scores")
    preds = [int(s > 0) for s in scores]
    tp = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 1)
    tn = sum(1 for y, p in zip(labels, preds) if y == 0 and p == 0)
    fp = sum(1 for y, p in zip(labels, preds) if y == 0 and p == 1)
    fn = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 0)
    n_pos = sum(1 for y in labels if y == 1)
    auc = float(roc_auc_score(list(labels), list(scores))) if 0 < n_pos < n else math.nan
    return {
        "n": n, "benefit": n_pos, "detriment": n - n_pos, "tp": tp, "tn": tn, "fp": fp, "fn": fn,
        "accuracy": (tp + tn) / n if n else math.nan, "auc": auc,
    }


def summarize_records(records: Sequence[TokenRecord], policies: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{policy: {"all": summarize(...), "strict": summarize(...), "mean_layer": float}}``."""
    out: dict[str, dict[str, Any]] = {}
    for pol in policies:
        recs = [r for r in records if pol in r.scores]
        scores = [r.scores[pol][0] - r.scores[pol][1] for r in recs]
        strict = [(r.strict_label, s) for r, s in zip(recs, scores) if r.strict_label is not None]
        layers = [r.layers[pol] for r in recs if pol in r.layers]
        out[pol] = {
            "all": summarize([r.label for r in recs], scores),
            "strict": summarize([y for y, _ in strict], [s for _, s in strict]),
            "mean_layer": sum(layers) / len(layers) if layers else math.nan,
        }
    return out
