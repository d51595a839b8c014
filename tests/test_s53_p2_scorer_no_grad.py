"""The Tok-RAG scores read the decoder's embedding table as data: called outside inference mode (as
test_model_gemma.py's dynamic-rule check calls ``TokRAGScorer.decide``), they warn nothing and build no graph."""

from __future__ import annotations

import warnings

import torch


def test_scores_outside_inference_mode_warn_nothing_and_equal_the_inference_mode_scores():
    from transformers import LlamaConfig, LlamaForCausalLM

    from tokrag_model.decoder import MultiContextDecoder
    from tokrag_model.methods.tokrag import TokRAGParams, TokRAGScorer

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg).eval()
    weight = model.get_input_embeddings().weight
    dec = MultiContextDecoder(model, {})
    assert weight.requires_grad  # the model is left as loaded
    assert dec.embed.data_ptr() == weight.data_ptr()  # the same storage, no copy
    scorer = TokRAGScorer(dec, TokRAGParams(), lambda t: False, lambda t: False)
    lp_rag, lp_pure = torch.log_softmax(torch.randn(2, 97), -1)
    rag_ids, span, attn = list(range(10, 20)), (2, 8), torch.rand(10)
    with torch.inference_mode():
        want = scorer.scores_at(lp_rag, lp_pure, rag_ids, span, attn)
    with warnings.catch_warnings():
        # the old decoder kept the embedding Parameter: "Converting a tensor with requires_grad=True to a scalar
        # may lead to unexpected behavior" (tokrag.py's float(F.cosine_similarity(e_r, e_l)))
        warnings.simplefilter("error")
        got = scorer.scores_at(lp_rag, lp_pure, rag_ids, span, attn)
    assert got == want
    assert not dec.embed.requires_grad
    assert round(got[0], 6) == 0.236054 and round(got[1], 6) == -0.074492
