"""``rag-replug`` with ``replug_mode=answer_vote``: the official REPLUG QA path (``swj0419/REPLUG``,
``downstream_eval/qa_final.py``; docs/baselines.md Appendix A): one greedy answer per passage, weight
softmax(score/τ)_i · exp(mean token log-prob), weights of the same answer (first non-empty line) summed, argmax.
The vote by hand on toy inputs, then the real SmolLM2-135M-Instruct on two ``nq_oracle_bm25`` questions (k=3):
golden answers, chosen passages and stats; each branch's answer is ``rag-standard``'s with that one passage and its
recorded log-probs are the teacher-forced ones; batch 2 == batch 1; scoring requests refused."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from retrieval.errors import ConfigError, DataError
from tasks.utils import answer_line as answer_key  # the scored answer of a generation, the vote's key
from tokrag_model.methods.replug import ReplugLM, answer_mean_logprob, answer_vote

REFUSED = (r"^--model rag-replug: replug_mode=answer_vote only generates \(one answer per passage, then a vote\) and "
           r"cannot score loglikelihood / loglikelihood_rolling requests \(multiple-choice, perplexity tasks\): use "
           r"replug_mode=mixture or replug_mode=uniform for scoring tasks$")


# ------------------------------------------------------------------------------------------ by hand
def test_two_passages_with_the_same_answer_outvote_a_heavier_single_one() -> None:
    # retriever weights 0.45 / 0.30 / 0.25, every answer certain (mean log-prob 0: factor 1)
    best, key, total, v = answer_vote([" Paris", " Lyon", "Lyon\nThe answer is Lyon."], [0.45, 0.30, 0.25], [0.0, 0.0, 0.0])
    assert v == [0.45, 0.30, 0.25]
    assert key == "Lyon" and total == pytest.approx(0.55)  # 0.30 + 0.25 > 0.45
    assert best == 1  # the heavier of the two Lyon generations is the one returned


def test_the_answer_probability_factor_reorders_passages() -> None:
    # w = (0.6, 0.4); per-token probabilities 0.5 and 0.9: v = (0.6·0.5, 0.4·0.9) = (0.30, 0.36)
    best, key, total, v = answer_vote([" Rome", " Milan"], [0.6, 0.4], [math.log(0.5), math.log(0.9)])
    assert v == pytest.approx([0.30, 0.36])
    assert (best, key, total) == (1, "Milan", pytest.approx(0.36))
    # the factor is exp of the *mean* log-prob: a 3-token answer at 0.9, 0.9, 0.5 has exp((2 ln .9 + ln .5)/3)
    mean = (2 * math.log(0.9) + math.log(0.5)) / 3
    _, _, _, v = answer_vote([" a b c"], [1.0], [mean])
    assert v[0] == pytest.approx((0.9 * 0.9 * 0.5) ** (1 / 3))
    # ties go to the answer first seen in passage order (the official max over an insertion-ordered dict)
    assert answer_vote([" x", " y"], [0.5, 0.5], [0.0, 0.0])[:2] == (0, "x")
    with pytest.raises(ValueError, match="one weight and one mean log-prob per answer"):
        answer_vote([" x"], [0.5, 0.5], [0.0])


def test_answers_are_compared_by_their_first_non_empty_line() -> None:
    assert answer_key("\n Paris\nMore text") == "Paris" == answer_key(" Paris ")
    assert answer_key(" \n\n ") == "" == answer_key("")
    # the key is case- and punctuation-sensitive (no SQuAD normalisation: the model does not know the metric)
    best, key, total, _ = answer_vote([" 1.5", "15", " 1.5\nbecause"], [0.2, 0.5, 0.3], [0.0, 0.0, 0.0])
    assert (key, total, best) == ("1.5", pytest.approx(0.5), 2)
    # an empty answer has no tokens to average: mean -inf, weight 0, it never outvotes an answer
    assert answer_mean_logprob(None, [], [], "") == (-math.inf, 0)
    best, key, total, v = answer_vote(["", " Rome"], [0.9, 0.1], [-math.inf, math.log(0.5)])
    assert v == [0.0, pytest.approx(0.05)] and (best, key) == (1, "Rome")
    assert answer_vote(["", "\n"], [0.7, 0.3], [-math.inf, -math.inf])[:3] == (0, "", 0.0)  # all empty: the first


def test_the_mean_covers_the_answer_line_only(backbone) -> None:
    tok = backbone.tokenizer
    toks = tok.encode(" Paris\n\nQuestion", add_special_tokens=False)  # [' Paris', '\n', '\n', 'Question']
    assert len(toks) == 4
    assert answer_mean_logprob(tok, toks, [-0.2, -1.0, -3.0, -4.0], " Paris\n\n") == (pytest.approx(-0.2), 1)
    toks = tok.encode(" Wilhelm Röntgen.\nMore", add_special_tokens=False)  # 'ö' is its own token after ' R'
    chosen = [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -5.0, -5.0]
    mean, n = answer_mean_logprob(tok, toks, chosen, " Wilhelm Röntgen.\nMore")
    assert (n, mean) == (6, pytest.approx(-2.1 / 6))  # ' Wilhelm', ' R', 'ö', 'nt', 'gen', '.'
    toks = tok.encode("\n\n Rome", add_special_tokens=False)  # ['\n\n', ' Rome']: the leading blank line is left
    assert answer_mean_logprob(tok, toks, [-1.0, -0.5, -9.0], "\n\n Rome") == (pytest.approx(-0.5), 1)  # out (official)


# ------------------------------------------------------------------------------------------ arguments
def test_the_mode_is_in_the_schema_and_the_preflight_accepts_it() -> None:
    from leaderboards.runner import resolved_model_args
    from tokrag_model.args import COMMON_ARGS, parse_args

    schema = {**COMMON_ARGS, **ReplugLM.EXTRA_ARGS}
    cfg = parse_args("rag-replug", schema, {"replug_mode": "Answer_Vote", "replug_temperature": "0.5"})
    assert (cfg["replug_mode"], cfg["replug_temperature"]) == ("answer_vote", 0.5)
    cell = SimpleNamespace(method=SimpleNamespace(model="rag-replug"))
    got = resolved_model_args(cell, {"replug_mode": "answer_vote", "replug_temperature": 2.0})
    assert (got["replug_mode"], got["replug_temperature"]) == ("answer_vote", 2.0)
    with pytest.raises(ConfigError, match=r"^--model rag-replug: model argument replug_temperature=0.5 has no effect with "
                                          r"replug_mode='uniform'; add replug_mode=mixture or replug_mode=answer_vote to use it, "
                                          r"or drop replug_temperature$"):
        resolved_model_args(cell, {"replug_mode": "uniform", "replug_temperature": 0.5})
    with pytest.raises(ConfigError, match=r"replug_mode.*expected one of \['mixture', 'uniform', 'answer_vote'\]"):
        parse_args("rag-replug", schema, {"replug_mode": "vote"})


# ------------------------------------------------------------------------------------------ real model
GEN = {"until": ["\n\n", "Question:"], "max_gen_toks": 32, "do_sample": False, "temperature": 0.0}  # the QA tasks'

# SmolLM2-135M-Instruct, float32, CPU, nq_oracle_bm25 (test split, first 2 questions, BM25 top-3 over nq-wiki-12k,
# prompt=instruct, zero-shot), τ = 1 (bm25). Q2's gold passage (rank 1, weight 0.918) gave an empty answer
# ("\n\n" first), which weighs 0: the rank-2 passage's answer wins.
GOLDEN = [
    {"out": " The first Nobel Prize in Physics was awarded to John Bardeen, John Bardeen, and John Bardeen, who won "
            "the prize in 1971",
     "docid": "nq-ad268f41306d486e",
     "weights": [0.6613, 0.2197, 0.119],
     "means": [-0.6673, -0.5431, -0.4917]},
    {"out": " The next deadpool movie is scheduled to be released in 2014.\nThe answer is: 2014\nThe next deadpool",
     "docid": "nq-b5d92f1e5c2941f6",
     "weights": [0.9182, 0.0513, 0.0305],
     "means": [None, -0.7884, -0.6831]},
]
# generated_tokens: the 2 answers returned (32 tokens each); branch_tokens: the 6 branches' answers (all were counted
# in generated_tokens before s44, so a k-branch vote read k times cheaper per token than it is)
GOLDEN_STATS = {"forward_passes": 192, "generated_tokens": 64, "prompt_tokens": 1130, "branch_tokens": 160}


@pytest.fixture(scope="module")
def samples():
    from tasks.analyze import nq_samples

    return nq_samples(2, k=3)  # lm-eval's nq_oracle_bm25 docs and zero-shot contexts


def requests(samples):
    from lm_eval.api.instance import Instance

    return [Instance("generate_until", d, (c, dict(GEN)), i) for i, (d, c, _) in enumerate(samples)]


@pytest.fixture(scope="module")
def voted(backbone, samples):
    lm = ReplugLM.with_backbone(backbone, replug_mode="answer_vote")
    reqs = requests(samples)
    out = lm.generate_until(reqs, disable_tqdm=True)
    return {"lm": lm, "out": out, "traces": [r.args[-1]["tokrag_trace"] for r in reqs], "stats": dict(lm.stats)}


@pytest.mark.slow
def test_golden_answers_chosen_passages_and_stats(samples, voted) -> None:
    assert [d["scored_by"] for d, _, _ in samples] == ["bm25", "bm25"]
    for g, out, tr, (doc, ctx, _) in zip(GOLDEN, voted["out"], voted["traces"], samples):
        assert out == g["out"]
        assert tr["mode"] == "answer_vote" and tr["tau"] == 1.0
        assert tr["passages"] == [c["docid"] for c in doc["ctxs"]] == [v["docid"] for v in tr["votes"]]
        assert tr["weights"] == g["weights"]
        assert [v["mean_logprob"] for v in tr["votes"]] == g["means"]
        # v_i = softmax(score)_i · exp(mean log-prob), from the doc's own scores (τ = 1)
        s = [c["score"] for c in doc["ctxs"]]
        w = [math.exp(x - max(s)) / sum(math.exp(y - max(s)) for y in s) for x in s]
        for wi, vote in zip(w, tr["votes"]):
            m = vote["mean_logprob"]
            assert vote["weight"] == pytest.approx(0.0 if m is None else wi * math.exp(m), abs=2e-5)
        assert tr["chosen"]["docid"] == g["docid"] and tr["chosen"]["answer"] == answer_key(g["out"])
        assert tr["chosen"]["weight"] == max(v["weight"] for v in tr["votes"])  # no two answers agree here
    assert voted["stats"] == GOLDEN_STATS
    # honest costs: prompt tokens = every branch's prompt prefilled once; 3 rows per question, stepped together
    lm = voted["lm"]
    branches = [lm._branches(d, c, lm.max_length - GEN["max_gen_toks"])[0] for d, c, _ in samples]
    assert sum(len(e.ids) for encs in branches for e in encs) == GOLDEN_STATS["prompt_tokens"]


@pytest.mark.slow
def test_each_answer_is_rag_standard_with_that_passage_and_its_logprobs_are_teacher_forced(backbone, samples, voted):
    from lm_eval.api.instance import Instance

    from tokrag_model.base import branch_logprobs
    from tokrag_model.decoder import generate
    from tokrag_model.methods import MODELS
    from tokrag_model.methods.replug import ScoredBranch

    std = MODELS["rag-standard"].with_backbone(backbone)
    lm = voted["lm"]
    doc, ctx, _ = samples[0]
    for c, vote in zip(doc["ctxs"], voted["traces"][0]["votes"]):
        (alone,) = std.generate_until([Instance("generate_until", {**doc, "ctxs": [c]}, (ctx, dict(GEN)), 0)],
                                      disable_tqdm=True)
        assert vote["answer"] == alone
    # the log-probs recorded while decoding are those of teacher-forcing the answer after its prompt
    (enc, *_), _, _ = lm._branches(doc, ctx, lm.max_length - GEN["max_gen_toks"])
    rule = ScoredBranch(enc.ids)
    (toks,) = generate(lm.decoder, lm.tokenizer, [rule], GEN["until"], GEN["max_gen_toks"], lm.eos_ids)
    mean, n = answer_mean_logprob(lm.tokenizer, toks, rule.logprobs, voted["traces"][0]["votes"][0]["answer"])
    lp, _, _ = branch_logprobs(lm.decoder, enc.ids, toks[:n])
    forced = sum(float(lp[i, t]) for i, t in enumerate(toks[:n])) / n
    assert n == len(toks) == 32 and mean == pytest.approx(forced, abs=1e-4)
    assert round(mean, 4) == GOLDEN[0]["means"][0]


@pytest.mark.slow
def test_batch_2_equals_batch_1(backbone, samples, voted) -> None:
    lm = ReplugLM.with_backbone(backbone, replug_mode="answer_vote", batch_size=2)
    reqs = requests(samples)
    assert lm.generate_until(reqs, disable_tqdm=True) == voted["out"]
    assert [r.args[-1]["tokrag_trace"] for r in reqs] == voted["traces"]
    assert lm.stats == voted["stats"]


@pytest.mark.slow
def test_scoring_requests_are_refused_in_one_line(backbone, samples, voted) -> None:
    from lm_eval.api.instance import Instance

    lm = voted["lm"]
    doc, ctx, gold = samples[0]
    before = dict(lm.stats)
    with pytest.raises(ConfigError, match=REFUSED):
        lm.loglikelihood([Instance("loglikelihood", doc, (ctx, gold), 0)], disable_tqdm=True)
    with pytest.raises(ConfigError, match=REFUSED):
        lm.loglikelihood_rolling([Instance("loglikelihood_rolling", doc, ("Some text to score.",), 0)], disable_tqdm=True)
    assert lm.stats == before  # refused before any forward pass
    with pytest.raises(ConfigError, match=r"^--model rag-replug: replug_mode=answer_vote decodes one answer per passage"):
        lm.make_rule(doc, ctx, 1000)
    # the mixture still scores (the mode, not the method, is generation only)
    mix = ReplugLM.with_backbone(backbone)
    ((ll, _),) = mix.loglikelihood([Instance("loglikelihood", doc, (ctx, gold), 0)], disable_tqdm=True)
    assert math.isfinite(ll) and ll < 0


@pytest.mark.slow
def test_missing_scores_are_the_mixture_error_and_tau_is_read_as_the_mixture_reads_it(backbone, samples) -> None:
    from lm_eval.api.instance import Instance

    doc, ctx, _ = samples[0]
    lm = ReplugLM.with_backbone(backbone, replug_mode="answer_vote")
    bad = {**doc, "ctxs": [doc["ctxs"][0], {**doc["ctxs"][1], "score": None}]}
    with pytest.raises(DataError, match=r"^--model rag-replug \(replug_mode=answer_vote\): doc 'nq-dev-1763', passage "
                                        r"'wiki-Nobel_Prize' \(rank 2\) has no retriever score"):
        lm.generate_until([Instance("generate_until", bad, (ctx, dict(GEN)), 0)], disable_tqdm=True)
    assert lm.stats["forward_passes"] == 0
    with pytest.raises(ConfigError, match=r"doc 'nq-dev-1763' does not record which retriever scored its passages"):
        lm.generate_until([Instance("generate_until", {k: v for k, v in doc.items() if k != "scored_by"},
                                    (ctx, dict(GEN)), 0)], disable_tqdm=True)
    hot = ReplugLM.with_backbone(backbone, replug_mode="answer_vote", replug_temperature=4.0)
    _, w, trace = hot._branches(doc, ctx, 1000)
    s = [c["score"] for c in doc["ctxs"]]
    assert trace["tau"] == 4.0 and [float(x) for x in w] == pytest.approx(
        [math.exp(x / 4) / sum(math.exp(y / 4) for y in s) for x in s])
    assert hot.resolved_values() == {"replug_temperature_resolved": 4.0}
