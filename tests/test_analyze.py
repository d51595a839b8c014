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


# ----------------------------------------------------------------------------- with the real small model
@pytest.mark.slow
def test_analyze_matches_tokrag_token_scores_and_resumes(tmp_path, monkeypatch) -> None:
    """SmolLM2-135M on 2 wiki paragraphs: the batched per-policy scoring equals tokrag_model's own
    teacher-forced scorer, results/plot are written, and a rerun resumes from the records file."""
    import json

    from tasks import analyze
    from tokrag_model.methods.tokrag import TokRAGLM, tokrag_token_scores

    lm = TokRAGLM(pretrained="smollm2-135m-instruct")
    pols = analyze.parse_policies("dynamic,16", lm.decoder.n_layers)
    assert pols == ["dynamic", "layer16"]
    scorers = analyze.build_scorers(lm, pols)
    doc, context, cont = analyze.wiki_samples(1)[0]
    recs = analyze.score_sample(lm, scorers, doc, context, cont, doc["qid"], max_tokens=12)
    assert len(recs) == 12
    ctx = lm.tokenizer.decode([lm.eot_token_id], skip_special_tokens=False)
    ids = lm.cont_ids(ctx, cont)[:12]
    rag, pure = lm.encode_rag(doc, ctx, 4000), lm.encode_pure(ctx, 4000)
    for pol in pols:
        ref = tokrag_token_scores(lm.decoder, scorers[pol], rag.ids, rag.span, pure.ids, ids, score_all=True)
        for r, d in zip(recs, ref):
            assert r.scores[pol] == pytest.approx((d.s_r, d.s_l), abs=1e-5)
            assert r.layers[pol] == d.layer
            assert r.logp_rag == pytest.approx(d.logp_rag, abs=1e-5) and r.logp_pure == pytest.approx(d.logp_pure, abs=1e-5)
            assert r.label == int(d.logp_rag > d.logp_pure)

    monkeypatch.setattr("tokrag_model.methods.tokrag.TokRAGLM", lambda **kw: lm)
    out = tmp_path / "an"
    argv = ["--data", "wiki", "--n", "2", "--max-tokens", "8", "--layers", "dynamic,16", "--dynamic-stride", "2",
            "--out", str(out)]
    assert analyze.main(argv) == 0
    res = json.loads((out / "results.json").read_text())["wiki"]
    assert res["samples"] == 2 and res["tokens"] == 16
    dyn, fixed = res["policies"]["dynamic"]["all"], res["policies"]["layer16"]["all"]
    assert fixed["n"] == 16 and dyn["n"] == 8  # dynamic at every 2nd token
    assert fixed["benefit"] + fixed["detriment"] == 16 and fixed["tp"] + fixed["fn"] == fixed["benefit"]
    assert (out / "auc_by_layer.png").stat().st_size > 1000
    # resume: a second run must not score anything again
    monkeypatch.setattr(analyze, "score_sample", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed")))
    assert analyze.main(argv) == 0
    assert json.loads((out / "results.json").read_text())["wiki"]["policies"] == res["policies"]
