"""rag-ensemble-entropy (LeEns, Qiu et al., NAACL 2025): entropy weights and the mixture by hand on toy
distributions, then the real SmolLM2 model (uniform limit = REPLUG uniform; golden outputs and scores)."""

from __future__ import annotations

import math

import pytest
import torch
from method_helpers import chat_rule, scores
from test_model_smollm2 import backbone, docs, gen_requests  # noqa: F401  (fixtures)

from tokrag_model.methods.ensemble_entropy import (
    EntropyEnsembleLM,
    EntropyEnsembleRule,
    entropy,
    entropy_weights,
    weights_trace,
)
from tokrag_model.methods.replug import mixture_logprobs, weight_summary

# branch A is confident about token 0; branches B and C share their mass over tokens 1-3
A = torch.tensor([0.9, 0.1, 0.0, 0.0], dtype=torch.float64)
B = torch.tensor([0.0, 0.45, 0.3, 0.25], dtype=torch.float64)
LPS = torch.stack([A, B, B]).log()


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
    with pytest.raises(ValueError):
        entropy_weights(LPS, tau=0.0)


def test_low_entropy_weights_flip_the_uniform_ensemble():
    # uniform mixing: token 0 = .9/3 = .3, token 1 = (.1+.45+.45)/3 = .3333 -> token 1
    uni = mixture_logprobs(LPS, torch.full((3,), 1 / 3, dtype=torch.float64)).exp()
    assert uni[:2].tolist() == pytest.approx([0.3, 1 / 3], abs=1e-6) and int(uni.argmax()) == 1
    # LeEns: token 0 = .512209·.9 = .460988, token 1 = .512209·.1 + 2·.243896·.45 = .270727 -> token 0
    w = entropy_weights(LPS, tau=1.0)
    mix = mixture_logprobs(LPS, w).exp()
    assert mix[:2].tolist() == pytest.approx([0.460988, 0.270727], abs=1e-5) and int(mix.argmax()) == 0

    class Bt:
        logprobs = LPS

    rule = EntropyEnsembleRule([[1], [2], [3]], tau=1.0)
    assert rule.choose(None, Bt(), [0, 1, 2], 0) == 0 and rule.weights[0].tolist() == pytest.approx(w.tolist())


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
GOLDEN_LL = (-16.512, -27.81)  # loglikelihood of docs[0]'s answer; loglikelihood_rolling of the text


@pytest.mark.slow
def test_ensemble_entropy_uniform_limit_is_replug_uniform_and_goldens(backbone, docs):  # noqa: F811
    from tokrag_model.methods.replug import ReplugLM

    uni = ReplugLM.with_backbone(backbone, replug_mode="uniform")
    flat = EntropyEnsembleLM.with_backbone(backbone, entropy_temperature=1e9)
    assert flat.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True) == \
        uni.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True)

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
