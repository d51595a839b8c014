"""MultiContextDecoder.embed is the model's current input embedding table (detached): it follows the model when the
model is converted or given new parameters after the decoder was built, and Tok-RAG's scores are taken from it."""

from __future__ import annotations

import torch


def _tiny():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).eval()


def _scores(dec):
    from tokrag_model.methods.tokrag import TokRAGParams, TokRAGScorer

    torch.manual_seed(1)
    lp_rag, lp_pure = torch.log_softmax(torch.randn(2, 97), -1)
    scorer = TokRAGScorer(dec, TokRAGParams(), lambda t: False, lambda t: False)
    return scorer.scores_at(lp_rag, lp_pure, list(range(10, 20)), (2, 8), torch.rand(10))


def test_embed_follows_a_dtype_conversion_after_the_build():
    from tokrag_model.decoder import MultiContextDecoder

    model = _tiny()
    dec = MultiContextDecoder(model, {})
    float32_scores = _scores(dec)
    model.to(torch.bfloat16)  # nn.Module._apply sets the Parameter's .data to a new bfloat16 tensor
    weight = model.get_input_embeddings().weight
    # 847bb99 kept a detached view of the float32 storage from the build: float32, the old values
    assert dec.embed.dtype == torch.bfloat16 and dec.embed.data_ptr() == weight.data_ptr()
    assert not dec.embed.requires_grad and weight.requires_grad
    got = _scores(dec)
    # the bfloat16 table's cosines (847bb99: the float32 ones, 0.230845 and 0.024837, as before the conversion)
    assert [round(s, 6) for s in float32_scores] == [0.230845, 0.024837]
    assert [round(s, 6) for s in got] == [0.230377, 0.024609]


def test_embed_follows_new_parameters_given_after_the_build():
    from tokrag_model.decoder import MultiContextDecoder

    model = _tiny()
    dec = MultiContextDecoder(model, {})
    new = {k: v * 2.0 for k, v in model.state_dict().items()}
    model.load_state_dict(new, assign=True)  # new Parameter objects
    assert torch.equal(dec.embed, new["model.embed_tokens.weight"])
    assert dec.embed.data_ptr() == model.get_input_embeddings().weight.data_ptr()
