"""``loglikelihood`` with an empty context conditions on lm-eval's prefix token, as ``TemplateLM.loglikelihood`` does.

It used to condition on the EOT token's text (``<|im_end|>``, id 2 on SmolLM2) where lm-eval's ``hf`` uses its
``prefix_token_id`` (the BOS ``<|im_start|>``, id 1), the token this code's own rolling first window uses: rag-none
scored ``('', 'The cat sat.')`` at -35.8961 where ``hf`` gives -35.8588, and a RAG prompt was ``passages, <|im_end|>``.
Now: prefix token, passages block (RAG methods), the continuation's own tokens (``add_special_tokens=False``).
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from tokrag_model.methods import load

DOC = {"question": "Where is the Eiffel Tower?", "answers": ["Paris"],
       "ctxs": [{"docid": "d1", "title": "Paris", "text": "Paris is the capital of France.", "rank": 1, "score": 2.0}]}
CONTS = ["The cat sat.", " Paris is the capital of France.", "4"]


@pytest.fixture(scope="module")
def hf(backbone):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=backbone.model, tokenizer=backbone.tokenizer, batch_size=1, device="cpu", dtype="float32")


def _ll(lm, doc, context, cont):
    """The log-likelihood (nats) alone: ours is a LogLikelihood carrying n_tokens."""
    ((ll, _),) = lm.loglikelihood([Instance("loglikelihood", doc, (context, cont), 0)], disable_tqdm=True)
    return ll


def test_rag_none_empty_context_equals_lm_eval_hf(backbone, hf):
    lm = load("rag-none").with_backbone(backbone, device="cpu")
    assert hf.prefix_token_id == lm.rolling_prefix_token_id == 1
    for cont in CONTS:
        ours, ref = _ll(lm, DOC, "", cont), _ll(hf, DOC, "", cont)
        assert float(ours) == pytest.approx(float(ref), abs=1e-3), cont
        assert ours.n_tokens == len(backbone.tokenizer.encode(cont, add_special_tokens=False))
    assert float(_ll(lm, DOC, "", "The cat sat.")) == pytest.approx(-35.8588, abs=1e-3)  # hf's number (was -35.8961)


def test_empty_context_prompts_are_prefix_token_then_passages(backbone):
    tok = backbone.tokenizer
    block = tok.encode("[Reference]: Paris\nParis is the capital of France.\n")
    cont = tok.encode("The cat sat.", add_special_tokens=False)
    for name, prompt in (("rag-none", [1]), ("rag-standard", [1] + block)):
        lm = load(name).with_backbone(backbone, device="cpu")
        ctx, text = lm.split_context("", "The cat sat.")
        assert ctx == lm.first_window_context()
        ids = lm.cont_ids(ctx, text)
        plan = lm.score_plan(DOC, ctx, ids, lm.max_length)
        assert (plan.prompts, plan.cont) == ([prompt], cont), name
        assert 2 not in plan.prompts[0]  # no <|im_end|> (the EOT) in the prompt


def test_a_continuation_starting_with_the_prefix_token_moves_it_into_the_context(backbone, hf):
    lm = load("rag-none").with_backbone(backbone, device="cpu")
    ours, ref = _ll(lm, DOC, "", "<|im_start|>user"), _ll(hf, DOC, "", "<|im_start|>user")
    assert ours.n_tokens == 1 and float(ours) == pytest.approx(float(ref), abs=1e-3)
