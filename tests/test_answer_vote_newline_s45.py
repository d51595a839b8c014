"""REPLUG ``answer_vote``'s answer probability (and ``rag-selfrag-filter`` ``selection=rank``'s, the same tokens)
averages the scored line's tokens only: whitespace-only tokens before the line (a leading ``"\\n"``) are left out,
as the official ``qa_final.py`` ``call_api`` skips ``"\\n"`` tokens. Before s45 they were averaged in: a toy
``["\\n", "Paris"]`` at (-5.0, -0.1) had mean -2.55 (official -0.1), and SmolLM2's answer on the 5th passage of the
3rd ``nq_oracle_bm25`` question (8 tokens, a leading ``"\\n"`` at -1.647) had mean -0.4814 over 8 tokens, its vote
weight ~15% too low (official: -0.3148 over 7)."""

from __future__ import annotations

import math

import pytest

from tokrag_model.methods.replug import ReplugLM, answer_mean_logprob, answer_token_span


class ToyTokenizer:
    """Token ids 0..3 decoding to a newline, a space, "Paris" and a stop-string piece."""

    PIECES = {0: "\n", 1: " ", 2: "Paris", 3: "\n\nQuestion"}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(self.PIECES[i] for i in ids)


def test_leading_whitespace_tokens_are_not_averaged() -> None:
    tok = ToyTokenizer()
    assert answer_mean_logprob(tok, [0, 2], [-5.0, -0.1], "\nParis") == (pytest.approx(-0.1), 1)
    assert answer_token_span(tok, [0, 2], "\nParis") == (1, 2)
    # newline and space tokens before the line, the stop string after it: only "Paris" is averaged
    assert answer_mean_logprob(tok, [0, 1, 0, 2, 3], [-5.0, -4.0, -3.0, -0.2, -7.0], "\n \nParis") == (
        pytest.approx(-0.2), 1)
    # nothing but whitespace: no line, nothing averaged
    assert answer_mean_logprob(tok, [0, 1], [-1.0, -1.0], "\n ") == (-math.inf, 0)
    assert answer_token_span(tok, [0, 1], "\n ") == (0, 0)


def test_selfrag_rank_averages_the_same_tokens() -> None:
    from types import SimpleNamespace

    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

    stub = SimpleNamespace(tokenizer=ToyTokenizer())
    assert SelfRAGFilterLM.answer_prob(stub, [0, 2], [-5.0, -0.1], "\nParis") == (pytest.approx(math.exp(-0.1)), 1)
    assert SelfRAGFilterLM.answer_prob(stub, [0, 1], [-1.0, -1.0], "\n ") == (0.0, 0)


GEN = {"until": ["\n\n", "Question:"], "max_gen_toks": 8, "do_sample": False, "temperature": 0.0}


@pytest.mark.slow
def test_a_real_answer_with_a_leading_newline(backbone) -> None:
    # SmolLM2-135M-Instruct, nq_oracle_bm25 (test split, 3rd question, BM25 top-5, zero-shot), 8 tokens: passage 5's
    # greedy answer is "\nThe south west wind blows across Nigeria" ('\n' at -1.647, then 7 tokens)
    from lm_eval.api.instance import Instance

    from tasks.analyze import nq_samples
    from tokrag_model.decoder import generate
    from tokrag_model.methods.replug import ScoredBranch
    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

    doc, ctx, _ = nq_samples(3, k=5)[2]
    lm = ReplugLM.with_backbone(backbone, replug_mode="answer_vote")
    req = Instance("generate_until", doc, (ctx, dict(GEN)), 0)
    lm.generate_until([req], disable_tqdm=True)
    vote = req.args[-1]["tokrag_trace"]["votes"][4]
    assert vote["answer"] == "\nThe south west wind blows across Nigeria"
    # the branch's tokens and recorded log-probs, decoded again
    encs, _, _ = lm._branches(doc, ctx, lm.max_length - GEN["max_gen_toks"])
    rule = ScoredBranch(encs[4].ids)
    (toks,) = generate(lm.decoder, lm.tokenizer, [rule], GEN["until"], GEN["max_gen_toks"], lm.eos_ids)
    assert lm.tokenizer.decode(toks[:1]) == "\n" and len(toks) == 8
    assert rule.logprobs[0] == pytest.approx(-1.647, abs=1e-3)
    mean, n = answer_mean_logprob(lm.tokenizer, toks, rule.logprobs, vote["answer"])
    assert n == 7 and mean == pytest.approx(math.fsum(rule.logprobs[1:]) / 7)
    # -0.4814 over 8 tokens before s45. The golden value is checked on ``mean`` to 2e-5, not as the trace's 4-decimal
    # rounding: -0.31481893 lies 3.1e-5 from the point where it would round to -0.3149, and the same test moves by
    # ~8e-6 between an AVX2 and an AVX-512 CPU (log_softmax's lane width), so a third CPU could cross it.
    assert vote["mean_logprob"] == round(mean, 4) and mean == pytest.approx(-0.314819, abs=2e-5)
    rank = SelfRAGFilterLM.answer_prob(lm, toks, rule.logprobs, vote["answer"])  # same tokenizer, same rule
    assert rank == (pytest.approx(math.exp(mean)), 7)
