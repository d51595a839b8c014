"""``rag-selfrag-filter`` with ``selection=rank`` (baselines.md, Appendix A, item 4): one answer per kept passage,
scored ``exp(mean log-prob) + w_rel·r + w_sup·s`` as Self-RAG's short-form inference (``run_short_form.py``) with
the base LLM as relevance and support critic. By hand on toy values, then golden values of the real
SmolLM2-135M-Instruct (tests/conftest.py) on the first 2 ``nq_oracle_bm25`` questions (nq-wiki-12k, BM25), k=3."""

from __future__ import annotations

import math

import pytest

from retrieval.errors import ConfigError
from tokrag_model.methods.selfrag_filter import (SUPPORT_PROMPT, SelfRAGFilterLM, pick_ranked, rank_score,
                                                sequence_prob)


# ------------------------------------------------------------------------------------------- by hand
def test_sequence_prob_is_exp_of_the_mean_token_logprob():
    assert sequence_prob([-0.5, -1.5]) == pytest.approx(math.exp(-1.0), abs=1e-15)
    assert sequence_prob([math.log(0.8)]) == pytest.approx(0.8, abs=1e-15)
    assert sequence_prob([]) == 1.0  # Self-RAG's cumulative / max(n, 1) with n = 0


def test_ranking_by_hand_on_toy_critic_and_logprob_values():
    # passage A: seq exp(-1) = .367879, r .40, s .90 -> 1.667879; B: seq .8, r .70, s .10 -> 1.60;
    # C: seq exp(-0.1) = .904837, r .20, s .50 -> 1.604837
    seq = [sequence_prob([-0.5, -1.5]), sequence_prob([math.log(0.8)] * 3), sequence_prob([-0.1])]
    rel, sup = [0.40, 0.70, 0.20], [0.90, 0.10, 0.50]
    scores = [rank_score(q, r, s) for q, r, s in zip(seq, rel, sup)]
    assert scores == pytest.approx([1.667879441, 1.60, 1.604837418], abs=1e-9)
    assert pick_ranked(["Paris", "Lyon", "paris."], scores) == (0, None)  # open set: A's answer
    # the weights: w_sup = 0 -> A 0.767879, B 1.50, C 1.104837: B; w_rel = 0 -> A 1.267879, B 0.90, C 1.404837: C
    assert pick_ranked(["a", "b", "c"], [rank_score(q, r, s, 1.0, 0.0) for q, r, s in zip(seq, rel, sup)])[0] == 1
    assert pick_ranked(["a", "b", "c"], [rank_score(q, r, s, 0.0, 1.0) for q, r, s in zip(seq, rel, sup)])[0] == 2
    # closed set: "Paris" and "paris." are one normalised answer: 1.667879 + 1.604837 = 3.272717 > 1.60; the
    # answer returned is the group's best-scoring candidate (A)
    best, sums = pick_ranked(["Paris", "Lyon", "paris."], scores, vote=True)
    assert best == 0 and sums == pytest.approx({"paris": 3.272716859, "lyon": 1.60}, abs=1e-9)
    # a vote that overturns the per-passage argmax: B alone 1.9 beats A 1.0 and C 1.2, but A+C = 2.2
    assert pick_ranked(["yes", "no", "Yes"], [1.0, 1.9, 1.2]) == (1, None)
    assert pick_ranked(["yes", "no", "Yes"], [1.0, 1.9, 1.2], vote=True)[0] == 2
    # ties: the better-ranked passage (Self-RAG's stable sort)
    assert pick_ranked(["x", "y"], [1.5, 1.5]) == (0, None)
    assert pick_ranked(["x", "y", "x"], [1.0, 2.0, 1.0], vote=True)[0] == 0
    with pytest.raises(ValueError, match="pick_ranked: 0 answers and 0 scores"):
        pick_ranked([], [])


def test_the_vote_key_is_the_scored_answer_line():
    # the tasks score the first non-empty line (tasks.utils.answer_line): A and C both answer "yes" (0.6 + 0.6 = 1.2)
    # and outvote B's "no" (0.9); keyed by the whole generation, A and C split and "no" won
    gens = ["yes\nThe passage says so.", "no", "\n Yes.\nIt is stated."]
    best, sums = pick_ranked(gens, [0.6, 0.9, 0.6], vote=True)
    assert best == 0 and sums == pytest.approx({"yes": 1.2, "no": 0.9}, abs=1e-12)
    assert pick_ranked(gens, [0.6, 0.9, 0.7], vote=True)[0] == 2  # the group's best-scoring generation


def test_the_support_critic_is_shown_the_scored_answer_line():
    from types import SimpleNamespace

    shown = []
    stub = SimpleNamespace(_yes_no_prompts=lambda texts: shown.extend(texts) or ([], [[0]] * len(texts)),
                           _yes_no_ratios=lambda prefix, suffixes: [0.5] * len(suffixes))
    passages = [{"title": "T", "text": "body"}, {"title": "", "text": "other"}]
    assert SelfRAGFilterLM.support(stub, "who?", passages, [" Paris\nMore text", "\n\n Lyon "]) == [0.5, 0.5]
    assert shown == [SUPPORT_PROMPT.format(question="who?", answer="Paris", title="T", text="body"),
                     SUPPORT_PROMPT.format(question="who?", answer="Lyon", title="", text="other")]
    assert SelfRAGFilterLM.support(stub, "who?", [], []) == []


def test_the_sequence_probability_covers_the_answer_line_tokens(backbone):
    lm = SelfRAGFilterLM.with_backbone(backbone, selection="rank", k=K)
    tok = backbone.tokenizer
    toks = tok.encode(" Paris\n\nQuestion", add_special_tokens=False)  # [' Paris', '\n', '\n', 'Question']
    assert lm.answer_prob(toks, [-0.2, -1.0, -3.0, -4.0], " Paris\n\n") == (pytest.approx(math.exp(-0.2)), 1)
    toks = tok.encode("\n\n Rome", add_special_tokens=False)  # the leading blank line left out, as answer_vote's
    assert lm.answer_prob(toks, [-1.0, -0.5, -9.0], "\n\n Rome") == (pytest.approx(math.exp(-0.5)), 1)
    assert lm.answer_prob(tok.encode(" \n", add_special_tokens=False), [-0.1, -0.1], " \n") == (0.0, 0)  # no line


def test_rank_arguments_are_checked_before_any_model_is_loaded():
    with pytest.raises(ConfigError, match=r"^--model rag-selfrag-filter: model argument w_rel=2 has no effect with "
                                          r"selection='threshold'; add selection=rank to use it, or drop w_rel$"):
        SelfRAGFilterLM(w_rel=2)
    with pytest.raises(ConfigError, match=r"model argument top_m=2 has no effect with selection='rank'"):
        SelfRAGFilterLM(selection="rank", top_m=2)
    with pytest.raises(ConfigError, match=r"rank_aggregate='vote' is invalid: expected one of \['passage', 'answer'\]"):
        SelfRAGFilterLM(selection="rank", rank_aggregate="vote")


def test_the_leaderboard_preflight_accepts_the_rank_mode(tmp_path):
    from leaderboard_helpers import TOY, write_spec

    from leaderboards.runner import check_cell_args
    from leaderboards.spec import load_spec

    def spec(folder, model_args):
        return load_spec(write_spec(tmp_path / folder, methods=[
            {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
            {"name": "rag-selfrag-rank", "model": "rag-selfrag-filter", "model_args": model_args,
             "specific": {"pretrained": "smollm2-135m-instruct"}}]))

    ok = spec("ok", {"selection": "rank", "relevance_threshold": 0.3, "w_rel": 1.0, "w_sup": 0.5,
                     "rank_aggregate": "answer"})
    check_cell_args(ok, ok.cells())
    bad = spec("bad", {"selection": "top_m", "relevance_threshold": 0.3})  # the threshold acts with rank, not top_m
    with pytest.raises(ConfigError, match=r"method rag-selfrag-rank: --model rag-selfrag-filter: model argument "
                                          r"relevance_threshold=0.3 has no effect with selection='top_m'"):
        check_cell_args(bad, bad.cells())


# ------------------------------------------------------------------------------------- real SmolLM2
N_Q, K, MAX_TOKS = 2, 3, 16


@pytest.fixture(scope="module")
def nq_requests():
    """The first 2 nq_oracle_bm25 questions (as lm-eval renders them, the task's generation kwargs with
    max_gen_toks=16), a fresh request list per call (the trace is attached to the request)."""
    from lm_eval.api.instance import Instance
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR

    task = TaskManager(include_path=str(TASK_DIR), include_defaults=False,
                       metadata={"max_docs": N_Q}).load(["nq_oracle_bm25"])["tasks"]["nq_oracle_bm25"]
    docs = [dict(d) for d in task.test_docs()]
    gen = {**task.config.generation_kwargs, "max_gen_toks": MAX_TOKS}
    return lambda: [Instance("generate_until", d, (task.fewshot_context(d, 0), dict(gen)), i, metadata=("t", i, 1))
                    for i, d in enumerate(docs)]


# per question: relevance r of the k=3 passages (r >= 0.3 kept), then per answered passage (support s,
# exp(mean log-prob) over the answer line's tokens, score = seq + r + s, tokens averaged), the chosen passage and the
# answer returned (16 tokens generated each, none stopped). The two answers ending in a space average 15 tokens, their
# trailing ' ' left out (it is not in the scored line): Nobel_Prize seq .529940 -> .508205, score 1.470968 -> 1.449232;
# nq-21d0672dde198b41 seq .488189 -> .465663, score 1.649865 -> 1.627339 (16 tokens before; same choices)
GOLDEN_CRITIC = [{"nq-ad268f41306d486e": 0.345054, "wiki-Nobel_Prize": 0.437397, "wiki-Albert_A._Michelson": 0.338642},
                 {"nq-d784ab4f28a73ad6": 0.1694, "nq-b5d92f1e5c2941f6": 0.380871, "nq-21d0672dde198b41": 0.526702}]
GOLDEN_CANDIDATES = [
    [("nq-ad268f41306d486e", 0.493455, 0.545764, 1.384272, 16,
      " The first Nobel Prize in Physics was awarded to John Bardeen, John Bardeen"),
     ("wiki-Nobel_Prize", 0.503630, 0.508205, 1.449232, 15,
      " The Nobel Prize in Physics was awarded to Alfred Nobel on 14 October "),
     ("wiki-Albert_A._Michelson", 0.287834, 0.546858, 1.173335, 16,
      " Albert Abraham Michelson was a physicist who was awarded the Nobel Prize in Physics in")],
    [("nq-b5d92f1e5c2941f6", 0.494244, 0.445424, 1.320538, 16,
      " The next deadpool movie is scheduled to be released in 2014"),
     ("nq-21d0672dde198b41", 0.634974, 0.465663, 1.627339, 15,
      " The next Deadpool movie is scheduled to be released on August 1, ")],
]
GOLDEN_CHOSEN = ["wiki-Nobel_Prize", "nq-21d0672dde198b41"]


@pytest.mark.slow
def test_golden_rank_on_two_nq_questions_and_batch_two_equals_batch_one(backbone, nq_requests):
    lm = SelfRAGFilterLM.with_backbone(backbone, selection="rank", k=K, relevance_threshold=0.3)
    cfg = lm.resolved_config  # recorded in the results' resolved config
    assert (cfg["selection"], cfg["w_rel"], cfg["w_sup"], cfg["rank_aggregate"]) == ("rank", 1.0, 1.0, "passage")
    support_passes = []
    judge = lm.support

    def counted(*args):  # the support critic's own forward passes
        before = lm.stats["forward_passes"]
        out = judge(*args)
        support_passes.append(lm.stats["forward_passes"] - before)
        return out

    lm.support = counted
    reqs = nq_requests()
    out = lm.generate_until(reqs, disable_tqdm=True)
    traces = [r.args[-1]["tokrag_trace"] for r in reqs]
    by_docid = [{c[0]: c for c in cands} for cands in GOLDEN_CANDIDATES]
    assert out == [by_docid[q][GOLDEN_CHOSEN[q]][5] for q in range(N_Q)]
    for q, t in enumerate(traces):
        assert t["selection"] == "rank" and t["chosen"] == GOLDEN_CHOSEN[q] and t["passages"] == [GOLDEN_CHOSEN[q]]
        assert not t["closed_book"] and t["dropped"] == []
        assert t["critic"] == pytest.approx(GOLDEN_CRITIC[q], abs=1e-4)
        assert [c["docid"] for c in t["candidates"]] == [c[0] for c in GOLDEN_CANDIDATES[q]]  # r >= 0.3, rank order
        for c, (docid, s, seq, score, n, answer) in zip(t["candidates"], GOLDEN_CANDIDATES[q]):
            assert c["answer"] == answer and c["n_tokens"] == n
            assert c["relevance"] == pytest.approx(GOLDEN_CRITIC[q][docid], abs=1e-4)
            assert (c["support"], c["seq_prob"], c["score"]) == pytest.approx((s, seq, score), abs=1e-4)
            assert t["support"][docid] == pytest.approx(s, abs=1e-4)
            # the logged score is the logged terms' sum (w_rel = w_sup = 1), the chosen one the largest
            assert c["score"] == pytest.approx(c["seq_prob"] + c["relevance"] + c["support"], abs=3e-6)
        assert max(t["candidates"], key=lambda c: c["score"])["docid"] == t["chosen"]
    assert traces[1]["kept_rate"] == pytest.approx(0.6667)  # the gold passage (r .17) is not answered
    # costs, every pass counted: relevance 2 x (1 prefix + 3 passages) = 8; support (1 prefix + 1 per answer)
    # 4 + 3 = 7;
    # generation, one request a batch: 3 rows prefilled + 15 steps x 3 rows = 48, and 2 + 15 x 2 = 32
    assert sorted(support_passes) == [3, 4]  # in the Collator's order (longest prompt first)
    # generated tokens: the 2 answers returned (every answer ends at max_gen_toks); branch tokens: all 5 answers
    assert dict(lm.stats) == {"forward_passes": 8 + 7 + 48 + 32, "generated_tokens": 2 * MAX_TOKS,
                              "prompt_tokens": 3387, "branch_tokens": 5 * MAX_TOKS}

    # batch_size=2: both questions' 5 answer rows decoded together, the same answers, critic values and choices
    lm2 = SelfRAGFilterLM.with_backbone(backbone, selection="rank", k=K, relevance_threshold=0.3, batch_size=2)
    reqs2 = nq_requests()
    assert lm2.generate_until(reqs2, disable_tqdm=True) == out
    assert [r.args[-1]["tokrag_trace"] for r in reqs2] == traces
    assert lm2.stats["generated_tokens"] == lm.stats["generated_tokens"]


@pytest.mark.slow
def test_no_passage_kept_answers_closed_book_as_the_filter(backbone, nq_requests):
    """At the default threshold .5 the first question keeps no passage (r <= .44): the filter's closed-book answer,
    no support critic; the second keeps one (r .53), whose answer is returned whatever its score."""
    rank = SelfRAGFilterLM.with_backbone(backbone, selection="rank", k=K)
    reqs = nq_requests()
    out = rank.generate_until(reqs, disable_tqdm=True)
    filt = SelfRAGFilterLM.with_backbone(backbone, k=K)
    freqs = nq_requests()
    assert out == filt.generate_until(freqs, disable_tqdm=True)  # one kept passage: the filter's prompt too
    t0, t1 = (r.args[-1]["tokrag_trace"] for r in reqs)
    assert (t0["closed_book"], t0["candidates"], t0["chosen"], t0["passages"]) == (True, [], None, [])
    assert t0["kept_rate"] == 0.0 and t0["support"] == {}
    assert freqs[0].args[-1]["tokrag_trace"]["closed_book"]
    assert t1["chosen"] == "nq-21d0672dde198b41" and [c["docid"] for c in t1["candidates"]] == ["nq-21d0672dde198b41"]
    assert t1["support"]["nq-21d0672dde198b41"] == pytest.approx(0.6350, abs=1e-4)


def test_scoring_requests_are_refused_in_rank_mode(backbone):
    from lm_eval.api.instance import Instance

    lm = SelfRAGFilterLM.with_backbone(backbone, selection="rank", k=K)
    doc = {"question": "q", "ctxs": [{"docid": "d", "title": "t", "text": "x"}]}
    msg = (r"^--model rag-selfrag-filter: selection=rank answers each passage by generation and cannot score {} "
           r"requests; use selection=threshold \(the filter\) or top_m for scoring tasks$")
    with pytest.raises(ConfigError, match=msg.format("loglikelihood")):
        lm.loglikelihood([Instance("loglikelihood", doc, ("Question: q\nAnswer:", " yes"), 0)], disable_tqdm=True)
    with pytest.raises(ConfigError, match=msg.format("loglikelihood_rolling")):
        lm.loglikelihood_rolling([Instance("loglikelihood_rolling", doc, ("some text",), 0)], disable_tqdm=True)
    assert lm.stats["forward_passes"] == 0  # refused before any work
