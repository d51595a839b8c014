"""Decode steps on the StaticCache that ``prefill(..., reserve=n)`` builds give bitwise the numbers of the same steps on
the DynamicCache prefill under SDPA too (tests/test_model_decoder.py checks the eager fixture), and the sliding window
of Gemma 3's local layers still holds there.

A plain ``transformers.StaticCache`` handed attention all its slots (the reserved ones masked) and the mask builder its
full length: on an AMD EPYC (AVX2) the steps' log-probs moved by up to 9.5e-7 against the DynamicCache's, with eager and
SDPA attention; with one unpadded row SDPA also got a mask where the DynamicCache step gets none. The decoder's cache
now hands attention only the filled slots (``tokrag_model.decoder.filled_static_cache``).
"""

from __future__ import annotations

import pytest
import torch
from test_model_decoder import tiny_gemma3

from tokrag_model.decoder import MultiContextDecoder

ROWS = ([[5, 9, 11, 3, 7, 21, 40, 2]], [[5, 9, 11, 3, 7, 21, 40, 2], [8, 1, 30]], [[4, 5], [8, 1, 30, 2, 6], [7, 7, 7]])


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                                        num_attention_heads=6, num_key_value_heads=2,
                                        max_position_embeddings=256)).eval()


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def tiny_sdpa(request):
    model = tiny_gemma3() if request.param == "gemma3" else _tiny_llama()
    model.set_attn_implementation("sdpa")
    return model


def _stats():
    return {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}


def test_static_cache_steps_equal_dynamic_cache_steps_under_sdpa(tiny_sdpa):
    """1, 2 and 3 rows (one unpadded row: no SDPA mask on either cache), three steps each: bitwise the same log-probs
    and hidden states; the StaticCache keeps its reserved slots; the model's attention implementation is untouched."""
    dec = MultiContextDecoder(tiny_sdpa, _stats())
    for rows in ROWS:
        dyn, sta = dec.prefill(rows, hidden=True), dec.prefill(rows, hidden=True, reserve=3)
        t = max(map(len, rows))
        for step, toks in enumerate(([13] * len(rows), [15] * len(rows), [17] * len(rows)), start=1):
            dec.step(dyn, toks, hidden=True)
            dec.step(sta, toks, hidden=True)
            assert torch.equal(dyn.logprobs, sta.logprobs) and torch.equal(dyn.hidden, sta.hidden)
            for a, b in zip(dyn.cache.layers, sta.cache.layers):
                assert a.keys.shape[2] == t + step and b.keys.shape[2] == t + 3
                assert b.get_seq_length() == t + step and torch.equal(a.keys, b.keys[:, :, :t + step])
    assert tiny_sdpa.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_static_cache_steps_keep_gemma3_sliding_window(impl):
    """A 6-token row decoded 5 steps on a StaticCache (reserve 5) of the tiny Gemma 3 (local layers: window 4) gives the
    log-probs of the model's own forward over the whole sequence; without the window (sliding_window=64, same weights)
    they are far from these, so the window really is applied on the trimmed key axis. Two rows (one left-padded): each
    row's steps equal its own single-row decoding."""
    model = tiny_gemma3()
    wide = tiny_gemma3(sliding_window=64)
    for m in (model, wide):
        m.set_attn_implementation(impl)
    ids = [5, 9, 11, 3, 7, 21, 40, 2, 13, 14, 30]
    with torch.no_grad():
        ref = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
        unwindowed = torch.log_softmax(wide(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
    dec = MultiContextDecoder(model, _stats())
    batch = dec.prefill([ids[:6]], reserve=5)
    for t in range(6, len(ids)):
        assert torch.allclose(batch.logprobs[0], ref[t - 1], atol=1e-5)
        assert (batch.logprobs[0] - unwindowed[t - 1]).abs().max() > 0.1  # 0.39-0.56 here: keys 4+ back are cut
        dec.step(batch, [ids[t]])
    assert torch.allclose(batch.logprobs[0], ref[-1], atol=1e-5)
    other = [8, 1, 30]
    both = dec.prefill([ids[:6], other], reserve=4)
    alone = [dec.prefill([ids[:6]], reserve=4), dec.prefill([other], reserve=4)]
    for step in range(4):
        toks = [ids[6 + step], 20 + step]
        dec.step(both, toks)
        for i in range(2):
            dec.step(alone[i], [toks[i]])
            assert torch.allclose(both.logprobs[i], alone[i].logprobs[0], atol=1e-5)
