"""rag-adacad (Wang et al., NAACL 2025): the Jensen–Shannon α_t by hand on toy distributions, then the real
SmolLM2 model (α_t equals the JSD of the two teacher-forced branches; golden outputs and scores)."""

from __future__ import annotations

import math

import pytest
import torch
from method_helpers import chat_rule, scores
from test_model_smollm2 import context_of, docs, gen_requests  # noqa: F401  (docs: a fixture; backbone: tests/conftest.py)

from tokrag_model.methods.adacad import AdaCADLM, jensen_shannon
from tokrag_model.methods.cad import cad_logprobs

P_CTX = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64).log()
P_NOCTX = torch.tensor([0.6, 0.1, 0.3], dtype=torch.float64).log()


def test_jensen_shannon_by_hand():
    # p = (.5,.3,.2), q = (.6,.1,.3), m = (.55,.2,.25)
    kl_pm = 0.5 * math.log(0.5 / 0.55) + 0.3 * math.log(0.3 / 0.2) + 0.2 * math.log(0.2 / 0.25)  # .0293557
    kl_qm = 0.6 * math.log(0.6 / 0.55) + 0.1 * math.log(0.1 / 0.2) + 0.3 * math.log(0.3 / 0.25)  # .0375886
    assert float(jensen_shannon(P_CTX, P_NOCTX)) == pytest.approx(0.5 * (kl_pm + kl_qm), abs=1e-9)  # .0334722
    assert float(jensen_shannon(P_NOCTX, P_CTX)) == pytest.approx(0.0334722, abs=1e-6)  # symmetric
    assert float(jensen_shannon(P_CTX, P_CTX)) == pytest.approx(0.0, abs=1e-12)
    # partly disjoint supports: p = (.5,.5,0), q = (0,.5,.5): ½·(½ ln 2) + ½·(½ ln 2) = ½ ln 2
    p, q = torch.tensor([0.5, 0.5, 0.0]).log(), torch.tensor([0.0, 0.5, 0.5]).log()
    assert float(jensen_shannon(p, q)) == pytest.approx(0.5 * math.log(2), abs=1e-9)
    # disjoint: the bound ln 2 (nats)
    assert float(jensen_shannon(torch.tensor([1.0, 0.0]).log(), torch.tensor([0.0, 1.0]).log())) == pytest.approx(math.log(2))
    # batched over positions
    got = jensen_shannon(torch.stack([P_CTX, p]), torch.stack([P_NOCTX, q]))
    assert got.tolist() == pytest.approx([0.0334722, 0.5 * math.log(2)], abs=1e-6)


def test_adacad_adjusts_weakly_where_the_branches_agree():
    # CAD at α = 1 flips the emitted token to 1 (see test_method_cad); the branches barely disagree
    # (JSD .0335), so AdaCAD stays close to the RAG distribution and keeps token 0
    alpha = float(jensen_shannon(P_CTX, P_NOCTX))
    ada = cad_logprobs(P_CTX, P_NOCTX, alpha).exp()
    u = [0.5 ** (1 + alpha) / 0.6**alpha, 0.3 ** (1 + alpha) / 0.1**alpha, 0.2 ** (1 + alpha) / 0.3**alpha]
    assert ada.tolist() == pytest.approx([x / sum(u) for x in u], abs=1e-6)  # .4900 .3082 .2018
    assert int(ada.argmax()) == 0 and int(cad_logprobs(P_CTX, P_NOCTX, 1.0).argmax()) == 1


def test_alpha_floor_is_validated_before_any_model_is_loaded():
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--model rag-adacad: model argument alpha_floor=-0.1 is invalid"):
        AdaCADLM(alpha_floor=-0.1)
    with pytest.raises(ConfigError, match=r"unknown model argument\(s\) 'alpha'"):
        AdaCADLM(alpha=1.0)  # AdaCAD has no fixed α


# ------------------------------------------------------------------------------------------- real model
# recorded with this code on CPU (float32, torch 2.13.0, transformers 5.24.0), like tests/test_model_smollm2.py
GOLDEN_OUT = ["The first Nobel Prize in", "The next Deadpool movie", "The south west wind blows", "In World War II,",
              "The first declaration of human"]
GOLDEN_LL = (-16.804, -9.376)  # (rolling: passages after the prefix token, 2966232; was -38.282) loglikelihood of docs[0]'s answer; loglikelihood_rolling of the text


@pytest.mark.slow
def test_adacad_alphas_are_the_branch_divergence_and_goldens(backbone, docs):  # noqa: F811
    from tokrag_model.base import branch_logprobs
    from tokrag_model.decoder import generate

    lm = AdaCADLM.with_backbone(backbone)
    reqs = gen_requests(backbone.tokenizer, docs)
    out = lm.generate_until(reqs, disable_tqdm=True)
    for req in reqs:
        tr = req.args[-1]["tokrag_trace"]
        assert tr["method"] == "rag-adacad" and "alpha" not in tr and tr["alphas"]
        assert all(0.0 <= a <= math.log(2) for a in tr["alphas"])
    # α_t equals the JSD of the two branches teacher-forced on the emitted tokens (an independent path: one
    # full forward per branch instead of the batched, cached decode steps)
    for d in docs[:2]:
        ctx = context_of(backbone.tokenizer, d)
        rule, _ = lm.make_rule(d, ctx, lm.max_length - 8)
        toks = generate(lm.decoder, backbone.tokenizer, [rule], [], 8, set())[0]
        lp_r = branch_logprobs(lm.decoder, rule.rag_ids, toks)[0]
        lp_p = branch_logprobs(lm.decoder, rule.pure_ids, toks)[0]
        assert len(rule.alphas) == len(toks) == 8
        assert rule.alphas == pytest.approx(jensen_shannon(lp_r, lp_p).tolist(), abs=2e-4)
    batched = AdaCADLM.with_backbone(backbone, batch_size="4")
    assert batched.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True) == out

    ll, r, roll = scores(lm, docs[0])
    assert len(roll.args[-1]["tokrag_trace"]["windows"][0]["alphas"]) > 0
    assert out == GOLDEN_OUT
    assert (round(ll, 3), round(r, 3)) == pytest.approx(GOLDEN_LL, abs=1e-2)


@pytest.mark.slow
def test_adacad_branches_under_a_chat_template(backbone):  # noqa: F811
    from test_prompt_chat import PURE_IDS, RAG_IDS

    rule, _ = chat_rule(AdaCADLM.with_backbone(backbone))
    assert rule.rows() == [RAG_IDS, PURE_IDS]
