"""rag-cad (context-aware decoding, Shi et al. 2024): hand-computed contrasts on toy distributions, then the
real SmolLM2 model (α = 0 is rag-standard; golden outputs and scores at the paper's α = 1)."""

from __future__ import annotations

import math

import pytest
import torch
from method_helpers import chat_rule, scores
from test_model_smollm2 import docs, gen_requests  # noqa: F401  (docs: a fixture; backbone: tests/conftest.py)

from tokrag_model.methods.cad import CAD_ALPHA, CADLM, CADRule, cad_logprobs

P_CTX = torch.tensor([0.5, 0.3, 0.2]).log()
P_NOCTX = torch.tensor([0.6, 0.1, 0.3]).log()


def test_cad_is_the_normalised_product_of_rag_and_pmi():
    # α = 1: p_ctx² / p_noctx = (.25/.6, .09/.1, .04/.3) = (.41667, .9, .13333), sum 1.45
    got = cad_logprobs(P_CTX, P_NOCTX, 1.0).exp()
    assert got.tolist() == pytest.approx([0.25 / 0.6 / 1.45, 0.9 / 1.45, 0.04 / 0.3 / 1.45], abs=1e-6)  # .2874 .6207 .0920
    # both branches put token 0 first; CAD emits token 1, whose probability the passages tripled
    assert int(P_CTX.argmax()) == int(P_NOCTX.argmax()) == 0 and int(got.argmax()) == 1
    # α = 0.5: p^1.5 / q^0.5
    u = [0.5**1.5 / 0.6**0.5, 0.3**1.5 / 0.1**0.5, 0.2**1.5 / 0.3**0.5]  # .45644 .51962 .16330
    assert cad_logprobs(P_CTX, P_NOCTX, 0.5).exp().tolist() == pytest.approx([x / sum(u) for x in u], abs=1e-6)
    # α = 0 is the RAG distribution; the paper's default for QA is α = 1
    assert cad_logprobs(P_CTX, P_NOCTX, 0.0).tolist() == pytest.approx(P_CTX.tolist(), abs=1e-6)
    assert CAD_ALPHA == 1.0


def test_cad_per_position_alpha_and_impossible_tokens():
    lp_c = torch.stack([P_CTX, P_CTX])  # (2, V): two positions, α = 0 then 1
    out = cad_logprobs(lp_c, torch.stack([P_NOCTX, P_NOCTX]), torch.tensor([0.0, 1.0]))
    assert out[0].tolist() == pytest.approx(P_CTX.tolist(), abs=1e-6)
    assert out[1].exp().tolist() == pytest.approx(cad_logprobs(P_CTX, P_NOCTX, 1.0).exp().tolist(), abs=1e-6)
    # a token impossible without the passages stays impossible (−inf, never NaN) and the rest renormalises
    q = torch.tensor([0.5, 0.5, 0.0]).log()
    got = cad_logprobs(P_CTX, q, 1.0)
    assert not torch.isnan(got).any() and got[2] == -math.inf
    assert got.exp().tolist() == pytest.approx([0.5 / 0.68, 0.18 / 0.68, 0.0], abs=1e-6)  # .25/.5, .09/.5


def test_cad_rule_emits_the_contrast_argmax_and_records_alpha():
    class B:  # a decoder batch with two rows
        logprobs = torch.stack([P_CTX, P_NOCTX])

    rule = CADRule([1, 2], [2], lambda lr, lp: 1.0)
    assert rule.rows() == [[1, 2], [2]]
    assert rule.choose(None, B(), [0, 1], 0) == 1 and rule.alphas == [1.0]
    assert CADRule([1], [2], lambda lr, lp: 0.0).choose(None, B(), [0, 1], 0) == 0


def test_negative_alpha_is_a_one_line_config_error_before_any_model_is_loaded():
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--model rag-cad: model argument alpha=-1 is invalid: expected a number >= 0"):
        CADLM(alpha=-1)


# ------------------------------------------------------------------------------------------- real model
# recorded with this code on CPU (float32, torch 2.13.0, transformers 5.24.0), like tests/test_model_smollm2.py
GOLDEN_OUT = ["The first Nobel Prize in", "Deadpool 2 is", "The south west wind blows", "The World War II poster",
              "The first declaration of human"]
GOLDEN_LL = (-15.442, -12.029)  # (rolling: passages after the prefix token, 2966232; was -47.429) loglikelihood of docs[0]'s answer; loglikelihood_rolling of the text


@pytest.mark.slow
def test_cad_alpha_zero_is_rag_standard_and_default_alpha_goldens(backbone, docs, smollm2_standard):  # noqa: F811
    from tokrag_model.methods.standard import RagStandardLM

    std = RagStandardLM.with_backbone(backbone)
    cad0 = CADLM.with_backbone(backbone, alpha=0.0)
    cad = CADLM.with_backbone(backbone)
    out_std = smollm2_standard["out"]  # rag-standard's generate_until on the same requests (tests/conftest.py)
    assert cad0.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True) == out_std
    reqs = gen_requests(backbone.tokenizer, docs)
    out = cad.generate_until(reqs, disable_tqdm=True)
    tr = reqs[0].args[-1]["tokrag_trace"]
    assert tr["method"] == "rag-cad" and tr["alpha"] == 1.0 and tr["passages"] == ["gold-0", "dpr-0"]
    assert cad.stats["forward_passes"] % 2 == 0  # two branches per request, one batched pass per step
    # batching: 4 requests per batch (8 rows) give the same tokens
    batched = CADLM.with_backbone(backbone, batch_size="4")
    assert batched.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True) == out

    ll_std, r_std, _ = scores(std, docs[0])
    ll0, r0, _ = scores(cad0, docs[0])
    assert ll0 == pytest.approx(ll_std, abs=1e-4) and r0 == pytest.approx(r_std, abs=1e-3) and r0 < 0
    ll, r1, roll = scores(cad, docs[0])
    assert roll.args[-1]["tokrag_trace"]["windows"][0]["alpha"] == 1.0
    assert out == GOLDEN_OUT
    assert (round(ll, 3), round(r1, 3)) == pytest.approx(GOLDEN_LL, abs=1e-2)


@pytest.mark.slow
def test_cad_branches_under_a_chat_template(backbone):  # noqa: F811
    """--apply_chat_template: the RAG branch has the passages inside the first user turn, the pure branch is the
    same chat without them (tests/test_prompt_chat.py's golden ids)."""
    from test_prompt_chat import PURE_IDS, RAG_IDS

    rule, trace = chat_rule(CADLM.with_backbone(backbone))
    assert rule.rows() == [RAG_IDS, PURE_IDS] and trace["passages"] == ["p1", "p2"]
