"""tokrag analyze / calibrate: labels, policies, AUC and bootstrap CIs, calibration choices on
hand-computed toy records; the record pipeline against Tok-RAG's own scorer with the real small model."""

from __future__ import annotations

import math
import re

import pytest

from retrieval.errors import ConfigError
from tasks.analyze import Policy, TokenRecord, auc, bootstrap_indices, summarize, summarize_records
from tasks.utils import split_prefix


def rec(sample, gold, tr, tp, s_r=None, s_l=None, gaps=None, analysis=None, bypass=False, cr=-0.5, cp=-1.0, i=0):
    return TokenRecord(sample, i, gold, logp_rag=-1.0, logp_pure=-2.0, top1_rag=tr, top1_pure=tp, conf_rag=cr, conf_pure=cp,
                       bypass=bypass, s_l=s_l, s_r=s_r, gaps=gaps, analysis=analysis)


def test_summarize_hand_computed() -> None:
    # labels 1,1,0,0 ; scores 0.3,-0.1,0.2,-0.4 -> preds 1,0,1,0: TP=1 FN=1 FP=1 TN=1, acc 0.5
    # AUC: positive scores {0.3,-0.1}, negative {0.2,-0.4}: pairs (0.3>0.2),(0.3>-0.4),(-0.1<0.2),(-0.1>-0.4) -> 3/4
    s = summarize([1, 1, 0, 0], [0.3, -0.1, 0.2, -0.4])
    assert {k: s[k] for k in ("n", "benefit", "detriment", "tp", "tn", "fp", "fn", "accuracy", "auc")} == \
        {"n": 4, "benefit": 2, "detriment": 2, "tp": 1, "tn": 1, "fp": 1, "fn": 1, "accuracy": 0.5, "auc": 0.75}
    assert math.isnan(s["ci_low"])  # no resamples given
    assert math.isnan(summarize([1, 1], [0.5, -0.5])["auc"])


def test_auc_equals_sklearn_with_ties() -> None:
    import numpy as np
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.round(rng.normal(size=200) + 0.5 * y, 1)  # many ties
    assert auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_cluster_bootstrap_keeps_samples_whole_and_brackets_auc() -> None:
    groups = ["a", "a", "b", "b", "b", "c"]
    boot = bootstrap_indices(groups, 50, seed=1)
    assert len(boot) == 50 and [list(x) for x in boot] == [list(x) for x in bootstrap_indices(groups, 50, seed=1)]  # seeded
    members = {"a": {0, 1}, "b": {2, 3, 4}, "c": {5}}
    for ix in boot:
        draws = 0
        for m in members.values():  # a sample contributes all its tokens, once per draw
            counts = {i: list(ix).count(i) for i in m}
            assert len(set(counts.values())) == 1
            draws += next(iter(counts.values()))
        assert draws == 3  # as many draws as samples
    labels, scores = [1, 0, 1, 0, 1, 0], [0.9, 0.1, 0.8, 0.3, 0.2, 0.4]
    s = summarize(labels, scores, bootstrap_indices(groups, 400, seed=0))
    assert s["ci_low"] <= s["auc"] <= s["ci_high"] and s["ci_low"] < s["ci_high"]


def test_strict_relevant_and_policies_on_the_same_tokens() -> None:
    L = 4
    gaps = [None, None, 1e-6, 3e-6]  # scan from min_layer 1: pairs 2, 3
    recs = [
        # strict benefit: RAG top-1 = gold != pure top-1
        rec("a", 5, 5, 7, s_r=[0.1, 0.2, 0.9, 0.3], s_l=0.5, gaps=gaps, analysis=(0.75, 0.25), cr=-0.1, cp=-0.9),
        # strict detriment, but the RAG token is a function token: strict, not generation-relevant
        rec("a", 6, 9, 6, s_r=[0.7, 0.1, 0.2, 0.6], s_l=0.5, gaps=[None, None, 5e-6, 0.0], analysis=(0.1, 0.3),
            bypass=True, cr=-0.2, cp=-0.3, i=1),
        # both right: not strict (and not scored: greedy tokens agree)
        rec("b", 3, 3, 3),
        # strict detriment, relevant
        rec("b", 4, 8, 4, s_r=[0.2, 0.3, 0.1, 0.9], s_l=0.4, gaps=[None, None, 0.0, 0.0], analysis=(0.625, 0.125),
            cr=-1.0, cp=-0.5, i=1),
    ]
    assert [r.strict_label for r in recs] == [1, 0, None, 0]
    assert [r.relevant for r in recs] == [True, False, False, True]
    fixed2 = Policy("layer2", "fixed", 2)
    dyn = Policy("dyn", "dynamic", layer=3, threshold=2e-6, min_layer=1)
    # dynamic: rec0 first gap > 2e-6 at pair 3 -> layer 2; rec1 at pair 2 -> layer 1; rec3 none -> fallback 3
    assert [dyn.layer_of(r) for r in (recs[0], recs[1], recs[3])] == [2, 1, 3]
    assert [dyn.score(r) for r in (recs[0], recs[1], recs[3])] == pytest.approx([0.4, -0.4, 0.5])
    out = summarize_records(recs, [fixed2, dyn, Policy("analysis", "analysis"), Policy("confidence", "confidence")], n_boot=0)
    # fixed layer 2 scores 0.4, -0.3, -0.3 -> labels 1,0,0: AUC 1, acc 1
    assert out["layer2"]["strict"]["n"] == 3 and out["layer2"]["strict"]["auc"] == 1.0
    assert out["layer2"]["strict"]["accuracy"] == 1.0 and out["layer2"]["relevant"]["n"] == 2
    # dynamic 0.4, -0.4, 0.5: the positive ranks below one negative -> 1/2; mean layer (2+1+3)/3
    assert out["dyn"]["strict"]["auc"] == 0.5 and out["dyn"]["mean_layer"] == 2.0
    # analysis 0.5, -0.2, 0.5 -> tie with the negative 0.4: AUC (1 + 0.5)/2
    assert out["analysis"]["strict"]["auc"] == 0.75
    # confidence 0.8, 0.1, -0.5 -> AUC 1
    assert out["confidence"]["strict"]["auc"] == 1.0
    with pytest.raises(ValueError, match="no scores"):
        summarize_records([rec("c", 1, 1, 2)], [fixed2], n_boot=0)


def test_records_round_trip_json() -> None:
    r = rec("s", 5, 5, 7, s_r=[0.1, 0.2], s_l=0.5, gaps=[None, 1e-6], analysis=(0.6, 0.2), bypass=True)
    assert TokenRecord.from_json("s", r.to_json()) == r and "bl" not in r.to_json()
    r.blind = [0]
    assert TokenRecord.from_json("s", r.to_json()) == r and r.to_json()["bl"] == [0]


def test_layers_blind_to_the_span_are_skipped_and_never_calibrated() -> None:
    """Sliding-window layers that cannot see the retrieved span (``blind``): the dynamic policy skips them
    as the decoder does, calibration neither picks them as the fixed layer nor pools their gaps."""
    from tasks.calibrate import calibrate_records, gap_values

    L = 6
    recs = []
    for j in range(12):
        lab = j % 2
        s_r = [0.5] * L
        s_r[2] = 0.9 if lab else 0.1                  # perfect, but layer 2 cannot see the span (local)
        s_r[4] = 0.7 if lab or j % 4 == 0 else 0.3    # second best, a global layer
        gaps = [None, None, 1.0, 1.0, 1.0, 2e-6 * j]  # min layer 1: pairs 2..5
        tr, tp = (1, 2) if lab else (2, 1)
        recs.append(rec(f"q{j}", 1, tr, tp, s_r=s_r, s_l=0.5, gaps=gaps, analysis=(0.0, 0.0)))
        recs[-1].blind = [0, 1, 2, 3]
    dyn = Policy("dyn", "dynamic", layer=4, threshold=0.5, min_layer=1)
    # pairs 2-4 (layers 1-3) have gaps 1.0 > 0.5 but their layers are blind: skipped; pair 5 stays below
    assert {dyn.layer_of(r) for r in recs} == {4}
    recs[0].blind = None
    assert dyn.layer_of(recs[0]) == 1  # the same record on a full-attention model: pair 2 -> layer 1
    recs[0].blind = [0, 1, 2, 3]
    assert gap_values(recs, 1) == [2e-6 * j for j in range(12)]  # only pair 5 (layer 4) is pooled
    out = calibrate_records(recs, L, quantiles=(0.5,))
    cal = out["calibration"]
    assert cal["dev_auc_by_layer"][2] == 1.0 and cal["fixed"]["layer"] == 4
    assert cal["fixed"]["eligible_layers"] == [4, 5] and cal["fixed"]["excluded_layers"] == [0, 1, 2, 3]


def test_split_prefix_scores_only_the_continuation() -> None:
    text = " ".join(f"w{i}" for i in range(40)) + "  end."
    prefix, cont = split_prefix(text, 32)
    assert prefix.split() == [f"w{i}" for i in range(32)] and prefix + cont == text
    assert cont.startswith(" w32")
    assert split_prefix(" ".join(["x"] * 32), 32) is None


def test_nq_samples_are_the_tasks_prompts(data_dir) -> None:
    """nq samples come from lm-eval's nq_oracle_bm25 task (dev pool here), prompted as lm-eval prompts it:
    plain instruct / base formats, and the --apply_chat_template path (instruction = system turn)."""
    import json

    from tasks.analyze import nq_samples
    from tasks.data import load_qa_split

    plain = nq_samples(3, split="dev", corpus="nq-dpr-1k", data_dir=data_dir)
    dev = load_qa_split("nq_oracle", "dev", data_dir)[:3]
    assert [d["qid"] for d, _, _ in plain] == [r["qid"] for r in dev] and all(len(d["ctxs"]) == 5 for d, _, _ in plain)
    for d, ctx, gold in plain:
        assert ctx == f"Answer the question with a short answer.\nQuestion: {d['question']}\nAnswer:"
        assert gold == " " + d["answers"][0]
    base = nq_samples(1, split="dev", corpus="nq-dpr-1k", data_dir=data_dir, prompt="base")
    assert base[0][1] == f"Question: {base[0][0]['question']}\nAnswer:"

    def chat(messages, add_generation_prompt=True):
        return json.dumps([messages, add_generation_prompt])

    d, ctx, gold = nq_samples(1, split="dev", corpus="nq-dpr-1k", data_dir=data_dir, chat_template=chat)[0]
    assert json.loads(ctx) == [[{"role": "system", "content": "Answer the question with a short answer.\n"},
                                {"role": "user", "content": f"Question: {d['question']}\nAnswer:"}], True]
    assert gold == d["answers"][0]


def test_calibration_picks_on_dev_records() -> None:
    from tasks.calibrate import calibrate_records, gap_values

    # 8 layers: layer 3 separates the strict labels perfectly, the paper default round(0.625*8) = 5 is at chance
    L = 8
    recs = []
    for j in range(20):
        lab = j % 2
        s_r = [0.5] * L
        s_r[3] = 0.9 if lab else 0.1          # perfect at layer 3
        s_r[5] = 0.9 if j % 4 < 2 else 0.1    # chance at layer 5
        gaps = [None] * 3 + [float(j) * 1e-6] * (L - 3)
        tr, tp = (1, 2) if lab else (2, 1)
        recs.append(rec(f"q{j}", 1, tr, tp, s_r=s_r, s_l=0.5, gaps=gaps, analysis=(0.0, 0.0), i=0))
    out = calibrate_records(recs, L, quantiles=(0.5, 0.9))
    cal = out["calibration"]
    assert cal["fixed"]["layer"] == 3 and cal["fixed"]["dev_auc"] == 1.0
    assert cal["fixed"]["paper_default_layer"] == 5 and cal["fixed"]["paper_default_dev_auc"] == 0.5
    # min layer round(10/32*8) = 2 -> pairs 3..7, 5 values per token
    assert cal["dynamic"]["n_gaps"] == 100 and len(gap_values(recs, 2)) == 100
    # ties between the fixed layer (AUC 1) and a dynamic rule: the fixed layer wins
    assert out["params"] == {"layer": 3}
    forced = calibrate_records(recs, L, quantiles=(0.5, 0.9), policy="dynamic")
    assert forced["params"]["layer"] == "dynamic" and forced["params"]["layer_fallback"] == 3
    assert forced["params"]["js_min_layer"] == 2


def test_few_strict_tokens_are_flagged_in_tables_and_presets(capsys) -> None:
    """A new user's `analyze --n 3` printed 1.000 [1.000, 1.000] on 3 strict tokens and n/a without a word, and
    `calibrate --n 3` wrote a preset chosen on 14 strict tokens in silence."""
    from tasks.analyze import MIN_STRICT_TOKENS, small_sample_note
    from tasks.calibrate import print_preset

    assert small_sample_note(6, 6) == "note: the 6 strict token(s) are all benefit: an AUC needs both (n/a); raise --n"
    assert small_sample_note(6, 0).startswith("note: the 6 strict token(s) are all detriment")
    assert small_sample_note(3, 1) == ("note: only 3 strict tokens (1 benefit): below 200 an AUC's 95% CI is about ±0.08 "
                                       "or wider and a degenerate bootstrap CI is not certainty; raise --n")
    assert small_sample_note(MIN_STRICT_TOKENS, 90) is None and small_sample_note(1482, 700) is None
    assert small_sample_note(0, 0) == "note: no strict tokens (no token where exactly one branch's top-1 is the gold): raise --n"
    assert small_sample_note(14, None).startswith("note: only 14 strict tokens: below 200")  # a preset without the count
    assert small_sample_note(755, None) is None

    recs = []
    for j in range(14):
        lab = j % 2
        recs.append(rec(f"q{j}", 1, *((1, 2) if lab else (2, 1)), s_r=[0.9 if lab else 0.1] * 8, s_l=0.5,
                        gaps=[None] * 3 + [float(j) * 1e-6] * 5, analysis=(0.0, 0.0)))
    from tasks.calibrate import calibrate_records

    cal = calibrate_records(recs, 8, quantiles=(0.5,))
    print_preset({"calibration": cal["calibration"], "params": cal["params"]})
    out = capsys.readouterr().out
    assert "note: only 14 strict tokens (7 benefit)" in out and "this preset was chosen on them" in out


def test_calibrate_table_titles_are_not_wrapped_when_piped(capsys) -> None:
    """Each table title is one line: as rich Table titles they were wrapped to the narrow tables' width, mid-phrase
    (``dev fixed layers: strict AUC (34`` / ``strict tokens of 246, 10 samples)``)."""
    from tasks.calibrate import calibrate_records, print_preset

    recs = [rec(f"q{j}", 1, *((1, 2) if j % 2 else (2, 1)), s_r=[0.9 if j % 2 else 0.1] * 8, s_l=0.5,
                gaps=[None] * 3 + [float(j) * 1e-6] * 5, analysis=(0.0, 0.0)) for j in range(14)]
    cal = calibrate_records(recs, 8, quantiles=(0.5,))
    print_preset({"calibration": cal["calibration"], "params": cal["params"]})
    lines = capsys.readouterr().out.splitlines()
    assert "dev fixed layers: strict AUC (14 strict tokens of 14, 14 samples)" in lines
    q = cal["calibration"]["dynamic"]["uncalibrated_quantile"]
    assert f"dev dynamic rule: threshold = quantile of 70 gaps (uncalibrated 5e-7 sits at quantile {q:.3f})" in lines


# ----------------------------------------------------------------------------- with the real small model
@pytest.mark.slow
def test_records_match_the_scorer_and_cli_resumes(backbone, tmp_path, monkeypatch) -> None:
    """SmolLM2-135M on wiki paragraphs: the stored per-layer S_R/S_L, dynamic layer and analysis
    scores equal Tok-RAG's own scorer; analyze and calibrate write their files and resume.

    Over the session's SmolLM2 (``backbone``, tests/conftest.py), not a load of its own: ``Backbone.load`` of the same
    alias with the same defaults (float32, cpu, batch invariant): the analyze records of 3 wiki samples were identical
    either way, and the resolved config differs only in ``pretrained`` (the converted folder instead of the alias),
    which nothing here reads."""
    import json
    from dataclasses import replace

    from tasks import analyze, calibrate
    from tokrag_model.methods.tokrag import ANALYSIS_PARAMS, TeacherForced, TokRAGLM, TokRAGScorer

    lm = TokRAGLM.with_backbone(backbone)
    n = lm.decoder.n_layers
    doc, prefix, cont = analyze.wiki_samples(1)[0]
    assert doc["question"] == " ".join(prefix.split()) and not cont.strip().startswith(prefix.split()[-1] + " ")
    recs = analyze.score_sample(lm, doc, prefix, cont, "s", max_tokens=24)
    assert len(recs) == 24 and any(r.differ for r in recs)
    context, continuation = lm.split_context(prefix, cont)
    ids = lm.cont_ids(context, continuation)[:24]
    rag, pure = lm.encode_rag(doc, context, 4000), lm.encode_pure(context, 4000)
    tf = TeacherForced.run(lm.decoder, rag.ids, pure.ids, ids, hidden_pure=True)
    dyn = TokRAGScorer(lm.decoder, replace(lm.params, layer="dynamic"), lm.is_function, lm.is_skip)
    ana = TokRAGScorer(lm.decoder, ANALYSIS_PARAMS, lm.is_function, lm.is_skip)
    dyn_pol = analyze.policy_from_params("dynamic", {"layer": "dynamic"}, n)
    for i, r in enumerate(recs):
        assert r.gold == ids[i] and r.bypass == lm.is_function(r.top1_rag)
        if not r.differ:
            assert r.s_r is None
            continue
        for layer in (0, 9, 19, n - 1):
            d = tf.decide(TokRAGScorer(lm.decoder, replace(lm.params, layer=layer), lm.is_function, lm.is_skip),
                          i, rag.span, force_score=True)
            assert (r.s_r[layer], r.s_l) == pytest.approx((d.s_r, d.s_l), abs=1e-5)
        d = tf.decide(dyn, i, rag.span, force_score=True)
        assert dyn_pol.layer_of(r) == d.layer
        d = tf.decide(ana, i, rag.span, force_score=True)
        assert r.analysis == pytest.approx((d.s_r, d.s_l), abs=1e-5)

    monkeypatch.setattr(analyze, "load_lm", lambda args: lm)
    out = tmp_path / "an"
    argv = ["--data", "wiki", "--n", "3", "--max-tokens", "16", "--out", str(out), "--bootstrap", "50"]
    assert calibrate.main(argv + ["--split", "dev"]) == 0
    preset_path = out / "tokrag_preset.json"
    preset = json.loads(preset_path.read_text())
    assert preset["model"]["fingerprint"] == lm.fingerprint and preset["calibration"]["dev_counts"]["samples"] == 3
    assert analyze.main(argv + ["--preset", str(preset_path)]) == 0
    res = json.loads((out / "results.json").read_text())["results"]["wiki"]
    assert res["counts"]["tokens"] == 48 and set(res["policies"]) >= {"default", "dynamic", "calibrated", "analysis", "layer0"}
    n_strict = res["counts"]["strict"]
    assert all(v["strict"]["n"] == n_strict for v in res["policies"].values())  # every policy, the same tokens
    assert (out / "auc_by_layer.png").stat().st_size > 1000
    # resume: a second run must not score anything again
    monkeypatch.setattr(analyze, "score_sample", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed")))
    assert analyze.main(argv + ["--preset", str(preset_path)]) == 0
    assert json.loads((out / "results.json").read_text())["results"]["wiki"]["policies"] == res["policies"]
    with pytest.raises(Exception, match="dev"):
        calibrate.main(argv + ["--split", "test"])


def test_cli_accepts_lm_eval_spellings() -> None:
    """``--model_args`` / ``--apply_chat_template`` (as lm_eval and the v2 spec's comment write them) are
    the same options as the dashed forms, in both ``tokrag analyze`` and ``tokrag calibrate``."""
    from tasks import analyze, calibrate

    for parser in (analyze.build_parser(), calibrate.build_parser()):
        a = parser.parse_args(["--model_args", "pretrained=x,k=3", "--apply_chat_template"])
        b = parser.parse_args(["--model-args", "pretrained=x,k=3", "--apply-chat-template"])
        assert a.model_args == b.model_args == "pretrained=x,k=3" and a.apply_chat_template is b.apply_chat_template is True
        assert parser.parse_args([]).apply_chat_template is False


# ----------------------------------------------------------------------------- pooling data sets
def test_pooled_auc_compares_tokens_within_each_data_set_only() -> None:
    # wiki: benefit {-0.1, -0.3} vs detriment {0.0, -0.2}: pairs won 1 of 4 (-0.1 > -0.2)
    # nq:   benefit {0.5, 0.6, 0.7} vs detriment {0.65}: 1 of 3 (0.7 > 0.65)
    # within the data sets (1 + 1) / (4 + 3) = 2/7, below chance in both; plain pooling compares nq's high
    # benefit scores with wiki's detriment tokens too: 8 of 15 pairs, above chance
    labels = [1, 0, 1, 0, 1, 1, 1, 0]
    scores = [-0.1, 0.0, -0.3, -0.2, 0.5, 0.6, 0.7, 0.65]
    strata = ["wiki"] * 4 + ["nq"] * 4
    assert auc(labels, scores) == pytest.approx(8 / 15)
    assert auc(labels, scores, strata) == pytest.approx(2 / 7)
    assert auc(labels[:4], scores[:4]) == pytest.approx(1 / 4) and auc(labels[4:], scores[4:]) == pytest.approx(1 / 3)
    # a data set with one class adds no pair; none with both classes: NaN
    assert auc(labels + [1, 1], scores + [9.0, -9.0], strata + ["x", "x"]) == pytest.approx(2 / 7)
    assert math.isnan(auc([1, 0], [0.5, 0.1], ["a", "b"]))
    assert summarize(labels, scores, strata=strata)["auc"] == pytest.approx(2 / 7)


def test_stratified_bootstrap_keeps_each_data_set_size() -> None:
    groups = ["wiki:a", "wiki:a", "wiki:b", "nq:c", "nq:d", "nq:d", "nq:e"]
    strata = [g.split(":")[0] for g in groups]
    boot = bootstrap_indices(groups, 200, seed=2, strata=strata)
    assert [list(x) for x in boot] == [list(x) for x in bootstrap_indices(groups, 200, seed=2, strata=strata)]
    members = {"wiki:a": {0, 1}, "wiki:b": {2}, "nq:c": {3}, "nq:d": {4, 5}, "nq:e": {6}}
    for ix in boot:
        draws = {"wiki": 0, "nq": 0}
        for g, m in members.items():
            counts = {i: list(ix).count(i) for i in m}
            assert len(set(counts.values())) == 1  # samples stay whole
            draws[g.split(":")[0]] += next(iter(counts.values()))
        assert draws == {"wiki": 2, "nq": 3}  # each data set keeps its number of samples


def test_summaries_and_calibration_pool_data_sets_within_each() -> None:
    from tasks.analyze import analyze_records, standard_policies
    from tasks.calibrate import calibrate_records

    # 8 layers. Layer 2 ranks benefit above detriment inside each data set (AUC 1 within) but scores nq
    # tokens lower than wiki ones (plain pooling: 27 of 55 pairs); layer 6 only tells nq (mostly benefit,
    # 0.9) from wiki (0.1), at chance inside each data set (plain pooling: 39.5 of 55 pairs).
    L = 8
    recs = []
    for data, labs in (("wiki", [1, 0, 1, 0, 1, 0, 1, 0]), ("nq", [1, 1, 1, 1, 1, 1, 1, 0])):
        for j, lab in enumerate(labs):
            s_r = [0.5] * L
            base = 0.5 if data == "wiki" else 0.3
            s_r[2] = base + 0.02 + 0.01 * j if lab else base - 0.02 - 0.01 * j
            s_r[6] = 0.9 if data == "nq" else 0.1
            tr, tp = (1, 2) if lab else (2, 1)
            recs.append(rec(f"{data}:{j}", 1, tr, tp, s_r=s_r, s_l=0.5, gaps=[None] * 3 + [1e-6] * (L - 3),
                            analysis=(0.0, 0.0)))
    y = [r.strict_label for r in recs]
    assert auc(y, [r.s_r[6] for r in recs]) == pytest.approx(39.5 / 55)
    assert auc(y, [r.s_r[2] for r in recs]) == pytest.approx(27 / 55)
    cal = calibrate_records(recs, L, quantiles=(0.5,))["calibration"]
    assert cal["dev_auc_by_layer"][2] == 1.0 and cal["dev_auc_by_layer"][6] == 0.5
    assert cal["fixed"]["layer"] == 2
    res = analyze_records({"wiki": recs[:8], "nq": recs[8:]}, standard_policies(L), 100, 0)
    assert res["all"]["policies"]["layer6"]["strict"]["auc"] == 0.5
    assert res["all"]["policies"]["layer2"]["strict"]["auc"] == 1.0
    assert res["wiki"]["policies"]["layer6"]["strict"]["auc"] == 0.5  # one data set: a tie everywhere
    lo, hi = (res["all"]["policies"]["layer2"]["strict"][k] for k in ("ci_low", "ci_high"))
    assert lo == hi == 1.0


def test_strata_of_the_wrong_shape_are_refused() -> None:
    with pytest.raises(ValueError, match="3 labels but 2 strata"):
        auc([1, 0, 1], [0.1, 0.2, 0.3], ["wiki", "nq"])
    with pytest.raises(ValueError, match="sample 'x' has tokens in two strata"):
        bootstrap_indices(["x", "x", "y"], 5, strata=["wiki", "nq", "nq"])


@pytest.mark.parametrize("bad, message", [
    (["--seed", "-1"], "--seed -1: expected an integer >= 0"),  # numpy refused it after every record was collected
    (["--max-tokens", "-1"], "--max-tokens -1: expected an integer >= 0"),  # cont[:-1] dropped the last gold token
    (["--wiki-k", "0"], "--wiki-k 0: expected an integer >= 1"),
    (["--nq-k", "-2"], "--nq-k -2: expected an integer >= 1"),
    (["--bootstrap", "-1"], "--bootstrap -1: expected an integer >= 0"),  # 0 is valid: no resamples, NaN CIs
    (["--data", "wiki,trivia"], "--data 'wiki,trivia': use a comma list of"),
])
def test_bad_options_are_refused_before_the_model_loads(bad, message, monkeypatch) -> None:
    from tasks import analyze, calibrate

    def no_model(_args):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    for main, extra in ((analyze.main, []), (calibrate.main, ["--split", "dev"])):
        with pytest.raises(ConfigError, match=re.escape(message)):
            main(bad + extra)


@pytest.mark.parametrize("bad, message", [
    (["--policy", "foo"], "invalid choice: 'foo'"),  # was refused after every dev record was collected
    (["--preset-out", "{tmp}"], "a folder, or under a file"),  # IsADirectoryError at write time
    (["--preset-out", "{tmp}/afile/p.json"], "a folder, or under a file"),  # FileExistsError at write time
])
def test_calibrate_refuses_bad_policy_and_preset_path_before_the_model_loads(bad, message, monkeypatch, tmp_path,
                                                                             capsys) -> None:
    from tasks import calibrate

    def no_model(_args):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(calibrate, "load_lm", no_model)
    (tmp_path / "afile").write_text("x")
    with pytest.raises((ConfigError, SystemExit)) as exc:
        calibrate.main([b.format(tmp=tmp_path) for b in bad] + ["--split", "dev"])
    assert message in (str(exc.value) if exc.type is ConfigError else capsys.readouterr().err)


def test_chat_template_is_read_from_the_model_files_without_loading(tmp_path) -> None:
    """:func:`tokrag_model.loading.has_chat_template`: as transformers' tokenizer load finds a template (a
    ``chat_template.jinja``, an ``additional_chat_templates/*.jinja`` or ``tokenizer_config.json``'s
    ``chat_template``); None where the files do not tell it."""
    import json

    from tokrag_model.loading import has_chat_template

    def folder(name, config=None, files=()):
        f = tmp_path / name
        f.mkdir()
        (f / "config.json").write_text("{}")
        if config is not None:
            (f / "tokenizer_config.json").write_text(json.dumps(config))
        for rel in files:
            (f / rel).parent.mkdir(parents=True, exist_ok=True)
            (f / rel).write_text("{{ messages }}")
        return str(f)

    assert has_chat_template(folder("base", {"bos_token": "<bos>"})) is False
    assert has_chat_template(folder("empty", {"chat_template": ""})) is False
    assert has_chat_template(folder("in_config", {"chat_template": "{{ messages }}"})) is True
    assert has_chat_template(folder("jinja", {}, ["chat_template.jinja"])) is True
    assert has_chat_template(folder("extra", {}, ["additional_chat_templates/tool_use.jinja"])) is True
    assert has_chat_template(folder("no_tokenizer")) is None
    assert has_chat_template(str(tmp_path / "missing" / "x")) is None
    assert has_chat_template("nobody/not-in-the-cache-xyz") is None
    gemma = has_chat_template("gemma-3-270m")  # its converted folder, or before the conversion its pinned GGUF's answer
    assert gemma in (False, None)
    if gemma is None:
        pytest.skip("gemma-3-270m's package is not installed here")


def test_calibrate_refuses_the_chat_template_of_a_base_model_before_it_loads(tmp_path, monkeypatch) -> None:
    """``--apply-chat-template`` with a model whose files show no chat template (the ``gemma-3-270m`` base model
    loaded for ~35 s first) is refused before the load, in the command's own flags (not lm_eval's
    ``--apply_chat_template`` / task metadata); with ``--data wiki`` only the flag changes nothing and passes."""
    import json

    from tasks import analyze, calibrate

    base = tmp_path / "base-model"
    base.mkdir()
    (base / "config.json").write_text("{}")
    (base / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<bos>"}))
    loaded = []

    def no_model(args):
        loaded.append(args.model)
        raise RuntimeError("loaded")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    for main, extra in ((calibrate.main, ["--split", "dev"]), (analyze.main, [])):
        with pytest.raises(ConfigError) as exc:
            main(["--model", str(base), "--apply-chat-template", "--out", str(tmp_path / "out")] + extra)
        assert str(exc.value) == (f"--apply-chat-template: the tokenizer of {str(base)!r} has no chat template (a base "
                                  "model?); drop --apply-chat-template and pass --prompt base (the plain "
                                  "Question:/Answer: format for base models)")
    assert loaded == []
    with pytest.raises(RuntimeError, match="loaded"):  # wiki continuations are plain text: nothing to refuse
        calibrate.main(["--model", str(base), "--apply-chat-template", "--data", "wiki", "--split", "dev",
                        "--out", str(tmp_path / "out")])
    assert loaded == [str(base)]


def test_records_refuse_the_chat_template_of_a_loaded_base_model_in_the_commands_flags(tmp_path) -> None:
    """Where the files could not tell it before the load, the loaded tokenizer is checked, with the same message."""
    from types import SimpleNamespace

    from tasks.analyze import collect_records

    lm = SimpleNamespace(tokenizer=SimpleNamespace(chat_template=None), resolved_config={"pretrained": "gemma-3-270m"})
    with pytest.raises(ConfigError) as exc:
        collect_records(lm, "nq", "dev", 1, tmp_path, apply_chat_template=True)
    assert str(exc.value).startswith("--apply-chat-template: the tokenizer of 'gemma-3-270m' has no chat template")
    assert "--prompt base" in str(exc.value) and "--apply_chat_template" not in str(exc.value)
