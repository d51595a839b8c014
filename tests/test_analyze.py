"""tokrag analyze: labels, accuracy / ROC AUC / counts on hand-computed toy records."""

from __future__ import annotations

import math

import pytest

from tasks.analyze import TokenRecord, summarize, summarize_records


def test_summarize_hand_computed() -> None:
    # labels 1,1,0,0 ; scores 0.3,-0.1,0.2,-0.4 -> preds 1,0,1,0: TP=1 FN=1 FP=1 TN=1, acc 0.5
    # AUC: positive scores {0.3,-0.1}, negative {0.2,-0.4}: pairs (0.3>0.2),(0.3>-0.4),(-0.1<0.2),(-0.1>-0.4) -> 3/4
    s = summarize([1, 1, 0, 0], [0.3, -0.1, 0.2, -0.4])
    assert s == {"n": 4, "benefit": 2, "detriment": 2, "tp": 1, "tn": 1, "fp": 1, "fn": 1, "accuracy": 0.5, "auc": 0.75}


def test_summarize_one_class_auc_nan() -> None:
    s = summarize([1, 1], [0.5, -0.5])
    assert math.isnan(s["auc"]) and s["accuracy"] == 0.5


def test_records_labels_and_policies() -> None:
    recs = [
        # p_rag > p_pure -> benefit; RAG top-1 is gold, pure is not -> strict benefit
        TokenRecord("a", 0, gold=5, logp_rag=-0.1, logp_pure=-2.0, top1_rag=5, top1_pure=7,
                    scores={"dynamic": (0.9, 0.5), "layer8": (0.1, 0.3)}, layers={"dynamic": 10, "layer8": 8}),
        # detriment; pure top-1 is gold, RAG is not -> strict detriment
        TokenRecord("a", 1, gold=6, logp_rag=-3.0, logp_pure=-0.2, top1_rag=9, top1_pure=6,
                    scores={"dynamic": (0.2, 0.6), "layer8": (0.7, 0.1)}, layers={"dynamic": 14, "layer8": 8}),
        # equal probabilities -> detriment (not strictly greater); both top-1 gold -> dropped from strict
        TokenRecord("b", 0, gold=3, logp_rag=-1.0, logp_pure=-1.0, top1_rag=3, top1_pure=3,
                    scores={"dynamic": (0.5, 0.4), "layer8": (0.2, 0.1)}, layers={"dynamic": 12, "layer8": 8}),
    ]
    assert [r.label for r in recs] == [1, 0, 0]
    assert [r.strict_label for r in recs] == [1, 0, None]
    out = summarize_records(recs, ["dynamic", "layer8"])
    # dynamic scores 0.4, -0.4, 0.1 -> preds 1,0,1 vs labels 1,0,0: acc 2/3; AUC: pos 0.4 > both negatives -> 1.0
    assert out["dynamic"]["all"]["accuracy"] == pytest.approx(2 / 3)
    assert out["dynamic"]["all"]["auc"] == 1.0
    assert out["dynamic"]["strict"]["n"] == 2 and out["dynamic"]["strict"]["accuracy"] == 1.0
    assert out["dynamic"]["mean_layer"] == 12.0
    # layer8 scores -0.2, 0.6, 0.1 -> preds 0,1,1: acc 0; AUC: pos -0.2 below both negatives -> 0.0
    assert out["layer8"]["all"]["accuracy"] == 0.0 and out["layer8"]["all"]["auc"] == 0.0
