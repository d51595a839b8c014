"""rag-ensemble-entropy (LeEns, Qiu et al., NAACL 2025): entropy weights and the weighted product of experts
by hand on toy distributions, then the real SmolLM2 model (uniform limit = the unweighted mean of log-probs;
golden outputs and scores)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from method_helpers import chat_rule, scores
from test_model_smollm2 import docs, gen_requests  # noqa: F401  (docs: a fixture; backbone: tests/conftest.py)

from tokrag_model.decoder import Forced
from tokrag_model.methods.ensemble_entropy import (
    LOGPROB_FLOOR,
    EntropyEnsembleLM,
    EntropyEnsembleRule,
    entropy,
    entropy_weights,
    product_of_experts_logprobs,
    weights_trace,
)
from tokrag_model.methods.replug import mixture_logprobs, weight_summary

# branch A is confident about token 0; branches B and C share their mass over tokens 1-3
A = torch.tensor([0.9, 0.1, 0.0, 0.0], dtype=torch.float64)
B = torch.tensor([0.0, 0.45, 0.3, 0.25], dtype=torch.float64)
LPS = torch.stack([A, B, B]).log()

# two branches over three tokens where the product of experts and a mixture disagree
TOY = torch.tensor([[0.8, 0.19, 0.01], [0.01, 0.4, 0.59]], dtype=torch.float64)
# a second position (for score_plan): A2 is confident about token 2, B2 is uniform
TOY2 = torch.tensor([[0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)


def by_hand(ps: list[list[float]], tau: float) -> tuple[list[float], list[float], list[float]]:
    """(H_j, w_j, normalised Π_j p_j^w_j) in plain floats, independent of the code under test."""
    h = [-sum(x * math.log(x) for x in p if x > 0) for p in ps]
    e = [math.exp(-x / tau) for x in h]
    w = [x / sum(e) for x in e]
    z = [sum(wj * math.log(p[v]) for wj, p in zip(w, ps)) for v in range(len(ps[0]))]
    q = [math.exp(x - max(z)) for x in z]
    return h, w, [x / sum(q) for x in q]


def test_entropy_and_weights_by_hand():
    h_a = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))  # .325083 (0·ln 0 = 0)
    h_b = -(0.45 * math.log(0.45) + 0.3 * math.log(0.3) + 0.25 * math.log(0.25))  # 1.067101
    assert entropy(LPS).tolist() == pytest.approx([h_a, h_b, h_b], abs=1e-9)
    assert float(entropy(torch.full((4,), 0.25).log())) == pytest.approx(math.log(4))
    z = math.exp(-h_a) + 2 * math.exp(-h_b)
    w = entropy_weights(LPS, tau=1.0)
    assert w.tolist() == pytest.approx([math.exp(-h_a) / z, math.exp(-h_b) / z, math.exp(-h_b) / z], abs=1e-9)
    assert w.tolist() == pytest.approx([0.512209, 0.243896, 0.243896], abs=1e-5)
    # τ → ∞: uniform; τ → 0: all mass on the lowest-entropy branch
    assert entropy_weights(LPS, tau=1e9).tolist() == pytest.approx([1 / 3] * 3, abs=1e-6)
    assert entropy_weights(LPS, tau=1e-3).tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-9)
    # per position: (k, C, V) log-probs -> (k, C) weights, each column that position's own weights
    both = entropy_weights(torch.stack([TOY, TOY2], dim=1).log(), tau=1.0)
    assert both.shape == (2, 2) and both[:, 1].tolist() == pytest.approx(entropy_weights(TOY2.log(), 1.0).tolist())
    with pytest.raises(ValueError):
        entropy_weights(LPS, tau=0.0)


@pytest.mark.parametrize("tau, w_hand, poe_hand", [
    (1.0, [0.545813, 0.454187], [0.248761, 0.606244, 0.144994]),
    (0.1, [0.862672, 0.137328], [0.657838, 0.315886, 0.026276]),
])
def test_product_of_experts_by_hand(tau, w_hand, poe_hand):
    """A = [.8, .19, .01], B = [.01, .4, .59]: H = [.540105, .723871] nats; w = softmax(−H/τ);
    normalised A^w_A·B^w_B. At τ = 1 the product picks token 1, where the mixture Σ_j w_j p_j picks token 0."""
    h, w, poe = by_hand(TOY.tolist(), tau)
    assert h == pytest.approx([0.540105, 0.723871], abs=1e-6)
    assert w == pytest.approx(w_hand, abs=1e-6) and poe == pytest.approx(poe_hand, abs=1e-6)
    lps = TOY.log()
    got_w = entropy_weights(lps, tau)
    got = product_of_experts_logprobs(lps, got_w)
    assert got.dtype == torch.float64 and got.shape == (3,)
    assert got_w.tolist() == pytest.approx(w, abs=1e-12) and got.exp().tolist() == pytest.approx(poe, abs=1e-12)
    # the authors' form, a weighted sum of raw logits, is the same distribution after normalisation
    logits = lps + torch.tensor([[3.0], [-7.5]], dtype=torch.float64)
    assert torch.log_softmax((got_w.unsqueeze(-1) * logits).sum(0), -1).tolist() == pytest.approx(got.tolist(), abs=1e-12)
    mix = mixture_logprobs(lps, got_w).exp()
    if tau == 1.0:
        assert int(got.argmax()) == 1 and int(mix.argmax()) == 0
        assert mix.tolist() == pytest.approx([0.441192, 0.285379, 0.273429], abs=1e-6)


def test_a_constant_per_branch_changes_nothing():
    """Logits shifted by a constant per branch: same entropies, same weights, same combined distribution."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 50, generator=g, dtype=torch.float64) * 3
    shifted = logits + torch.tensor([[10.0], [-4.0], [0.25]], dtype=torch.float64)
    for tau in (1.0, 0.1):
        w = entropy_weights(torch.log_softmax(logits, -1), tau)
        w2 = entropy_weights(torch.log_softmax(shifted, -1), tau)
        assert w2.tolist() == pytest.approx(w.tolist(), abs=1e-12)
        ref = product_of_experts_logprobs(torch.log_softmax(logits, -1), w)
        assert product_of_experts_logprobs(shifted, w2).tolist() == pytest.approx(ref.tolist(), abs=1e-9)


def test_uniform_limit_is_the_normalised_mean_of_logprobs():
    """τ → ∞: equal weights, so the rule is log_softmax of the unweighted mean of the branches' log-probs
    (not REPLUG's uniform mixture): on the toy [.202389, .623804, .173807]."""
    lps = TOY.log()
    w = entropy_weights(lps, tau=1e9)
    mean = torch.log_softmax(lps.mean(0), -1)
    assert product_of_experts_logprobs(lps, w).tolist() == pytest.approx(mean.tolist(), abs=1e-8)
    assert mean.exp().tolist() == pytest.approx([0.202389, 0.623804, 0.173807], abs=1e-6)


def test_veto_and_no_nans():
    """A token one weighted branch rules out (p = 0) is ruled out of the product; −inf never gives NaN."""
    # LPS: A rules out tokens 2-3, B and C rule out token 0 -> only token 1 survives at any finite τ
    out = product_of_experts_logprobs(LPS, entropy_weights(LPS, 1.0))
    assert not out.isnan().any() and out.exp().tolist() == pytest.approx([0.0, 1.0, 0.0, 0.0], abs=1e-12)
    # τ small enough that B's and C's weights underflow to exactly 0: A alone, no 0·(−inf) = NaN
    w = entropy_weights(LPS, 1e-4)
    assert w.tolist() == [1.0, 0.0, 0.0]
    out = product_of_experts_logprobs(LPS, w)
    assert not out.isnan().any() and out.exp().tolist() == pytest.approx(A.tolist(), abs=1e-12)
    # disjoint supports: every token vetoed by some branch; still finite, a proper distribution
    lps = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64).log()
    out = product_of_experts_logprobs(lps, torch.tensor([0.6, 0.4], dtype=torch.float64))
    assert torch.isfinite(out).all() and float(out.exp().sum()) == pytest.approx(1.0)
    assert int(out.argmax()) == 0  # token 0 is vetoed by the lighter branch (0.4·floor > 0.6·floor)
    assert LOGPROB_FLOOR == torch.finfo(torch.float32).min


def test_rule_chooses_the_product_of_experts_token():
    class Bt:
        logprobs = TOY.log()

    rule = EntropyEnsembleRule([[1], [2]], tau=1.0)
    assert rule.choose(None, Bt(), [0, 1], 0) == 1  # a mixture would pick token 0
    assert rule.weights[0].tolist() == pytest.approx([0.545813, 0.454187], abs=1e-6)
    rule = EntropyEnsembleRule([[1], [2]], tau=0.1)
    assert rule.choose(None, Bt(), [0, 1], 0) == 0


@pytest.mark.parametrize("tau, ll_hand, greedy", [(1.0, -0.944600, True), (0.1, -1.379709, False)])
def test_score_plan_on_a_two_position_toy(tau, ll_hand, greedy):
    """Continuation [1, 2] over positions TOY then TOY2: the log-likelihood is Σ_i ln PoE_i(cont_i) with each
    position's own weights (by hand: τ=1 ln .606244 + ln .641383; τ=0.1 ln .315886 + ln .796654)."""
    lm = object.__new__(EntropyEnsembleLM)  # no model: only the combination is exercised
    lm.resolved_config = {"entropy_temperature": tau}
    lm._branches = lambda doc, context, budget, kind=None: ([], {"passages": ["a", "b"]})
    plan = lm.score_plan(None, "", [1, 2], 100)
    forced = [Forced(torch.stack([TOY[j], TOY2[j]]).log().float()) for j in range(2)]
    ll, is_greedy, trace = plan.finish(forced)
    hand = sum(math.log(by_hand(p.tolist(), tau)[2][t]) for p, t in ((TOY, 1), (TOY2, 2)))
    assert ll == pytest.approx(hand, abs=1e-5) and ll == pytest.approx(ll_hand, abs=1e-5)
    assert is_greedy is greedy
    assert trace["passages"] == ["a", "b"] and len(trace["token_weights"]) == 2
    assert trace["token_weights"][1] == pytest.approx([round(x, 4) for x in by_hand(TOY2.tolist(), tau)[1]])


def test_weight_summary_and_trace():
    top1, ent = weight_summary(torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64))
    assert top1 == 0.5 and ent == pytest.approx(1.5 * math.log(2))  # .5 ln 2 + 2·.25 ln 4
    assert weight_summary(torch.tensor([1.0, 0.0], dtype=torch.float64)) == (1.0, 0.0)
    tr = weights_trace([torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64), torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)])
    assert tr["weights"] == [0.75, 0.125, 0.125] and tr["top1_weight"] == 0.75
    assert tr["weight_entropy"] == round(0.75 * math.log(2), 4) and tr["token_weights"][1] == [1.0, 0.0, 0.0]


def test_temperature_is_validated_before_any_model_is_loaded():
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"model argument entropy_temperature=0 is invalid: expected a number > 0"):
        EntropyEnsembleLM(entropy_temperature=0)


# ------------------------------------------------------------------------------------------- real model
# recorded with this code on CPU (float32, torch 2.13.0, transformers 5.24.0), like tests/test_model_smollm2.py
GOLDEN_OUT = ["The first Nobel Prize in", "The next deadpool movie", "The south west wind blows", "In World War II,",
              "The first declaration of human"]
GOLDEN_LL = (-15.968, -12.851)  # (rolling: passages after the prefix token, 2966232; was -28.569) loglikelihood of docs[0]'s answer; loglikelihood_rolling of the text


class MeanLogprobRule(EntropyEnsembleRule):
    """Reference for the τ → ∞ limit, written without the module's formulas: greedy on the unweighted mean of
    the branches' log-probs (normalising does not move the argmax)."""

    def choose(self, dec: Any, batch: Any, rows: list[int], step: int) -> int:
        return int(batch.logprobs[rows].double().mean(0).argmax())


class MeanLogprobLM(EntropyEnsembleLM):
    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        rule, trace = super().make_rule(doc, context, budget)
        return MeanLogprobRule(rule.prompts, rule.tau), trace


@pytest.mark.slow
def test_ensemble_entropy_uniform_limit_is_the_mean_of_logprobs_and_goldens(backbone, docs):  # noqa: F811
    flat = EntropyEnsembleLM.with_backbone(backbone, entropy_temperature=1e9)
    mean = MeanLogprobLM.with_backbone(backbone)
    assert flat.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True) == \
        mean.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True)

    lm = EntropyEnsembleLM.with_backbone(backbone)
    reqs = gen_requests(backbone.tokenizer, docs)
    out = lm.generate_until(reqs, disable_tqdm=True)
    for req, d in zip(reqs, docs):
        tr = req.args[-1]["tokrag_trace"]
        assert tr["method"] == "rag-ensemble-entropy" and tr["passages"] == [c["docid"] for c in d["ctxs"]]
        assert all(sum(row) == pytest.approx(1.0, abs=1e-3) for row in tr["token_weights"])
        assert 0.5 <= tr["top1_weight"] <= 1.0 and 0.0 <= tr["weight_entropy"] <= math.log(2) + 1e-4
        assert len(tr["weights"]) == 2
    batched = EntropyEnsembleLM.with_backbone(backbone, batch_size="4")
    assert batched.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True) == out

    ll, r, roll = scores(lm, docs[0])
    assert roll.args[-1]["tokrag_trace"]["windows"][0]["token_weights"]
    assert out == GOLDEN_OUT
    assert (round(ll, 3), round(r, 3)) == pytest.approx(GOLDEN_LL, abs=1e-2)


@pytest.mark.slow
def test_ensemble_branches_under_a_chat_template_are_replugs(backbone):  # noqa: F811
    """One branch per passage, each passage inside the first user turn: exactly REPLUG's rows."""
    from test_prompt_chat import USER_TURN

    from tokrag_model.methods.replug import ReplugLM

    rule, trace = chat_rule(EntropyEnsembleLM.with_backbone(backbone))
    assert rule.rows() == chat_rule(ReplugLM.with_backbone(backbone))[0].rows()
    assert len(rule.rows()) == 2 and all(row[14:17] == USER_TURN for row in rule.rows())
    assert trace["passages"] == ["p1", "p2"]
