"""Fused packed products (tokrag_model/decoder.py FusedLinears): layers that read one input (q/k/v, gate/up) share
one oneDNN-packed product in batch-invariant decode steps. Fusing is speed only: every number must be bitwise what
the unfused packed products give, and where the load-time probe (_fused_linear_ok) says no, nothing is fused."""

from __future__ import annotations

import pytest
import torch

import tokrag_model.decoder as dec_mod
from tokrag_model.decoder import MultiContextDecoder

pytestmark = pytest.mark.skipif(not dec_mod._onednn_linear_ok(), reason="no row-invariant oneDNN packed products here")


def _stats():
    return {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}


def _packed(model, fused: bool, monkeypatch):
    """Pack ``model`` (pack_linear_weights) with the fusion probe's verdict forced to ``fused`` where that is True
    only if the real probe agrees (a CPU where fusing changes bits must not fuse)."""
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(dec_mod, "_fused_linear_ok", lambda shapes, hint=dec_mod.PACK_BATCH_HINT: False)
        return dec_mod.pack_linear_weights(model)


def _decode(model, rows, steps):
    """Batch-invariant decoder over ``model``: prefill ``rows``, run ``steps`` (one token per row per step); the
    log-probs and hidden states of every step, and one recomputed attention row (a lone packed q_proj row) per layer."""
    dec = MultiContextDecoder(model, _stats(), batch_invariant=True)
    batch = dec.prefill(rows, hidden=True, reserve=len(steps))
    out = [(batch.logprobs.clone(), batch.hidden.clone())]
    for tokens in steps:
        dec.step(batch, tokens, hidden=True)
        out.append((batch.logprobs.clone(), batch.hidden.clone()))
    n = len(rows[0]) + len(steps)
    for layer in range(dec.n_layers):
        keys = batch.cache.layers[layer].keys[0, :, :n]
        probs = dec.attention_probs(layer, batch.hidden[layer, :1], torch.tensor([n - 1]), keys)
        out.append((probs, probs))
    return out


def test_fused_decode_steps_are_bitwise_the_unfused_packed_ones(monkeypatch):
    """SmolLM2-135M-Instruct, a 2-row decode (Tok-RAG's shape, batch 1) and a 3-row one: the log-probs, hidden
    states and recomputed attention rows at every step are bitwise those of the unfused packed products; on this
    CPU the probe fuses every layer's q/k/v and gate/up (30 layers: 60 groups, 211 -> 121 products a step)."""
    from tokrag_model.base import Backbone

    fused_model = Backbone.load("smollm2-135m-instruct").model
    plain_model = Backbone.load("smollm2-135m-instruct").model
    groups = dec_mod._fused_groups(fused_model)
    assert len(groups) == 60 and [len(g) for g in groups[:2]] == [3, 2]
    probe = dec_mod._fused_linear_ok(dec_mod._fused_shapes(groups))
    kf, kp = _packed(fused_model, True, monkeypatch), _packed(plain_model, False, monkeypatch)
    assert kf.n_linear == kp.n_linear == 211 and kp.n_fused == 0
    assert kf.n_fused == (60 if probe else 0)
    assert probe, "fused packed products differ from the unfused ones on this CPU: nothing is fused here"
    torch.manual_seed(0)
    for n_rows in (2, 3):
        rows = [torch.randint(1, 49000, (n,)).tolist() for n in (23, 41, 30)[:n_rows]]
        steps = [torch.randint(1, 49000, (n_rows,)).tolist() for _ in range(3)]
        got, want = _decode(fused_model, rows, steps), _decode(plain_model, rows, steps)
        for i, ((a, ha), (b, hb)) in enumerate(zip(got, want)):
            assert torch.equal(a, b) and torch.equal(ha, hb), (n_rows, i)
    assert not kf.on and not kp.on


def _tiny(kind: str):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if kind == "gemma3":
        cfg = Gemma3TextConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                               num_attention_heads=4, num_key_value_heads=2, head_dim=12, query_pre_attn_scalar=20,
                               sliding_window=4, max_position_embeddings=256,
                               layer_types=["sliding_attention", "full_attention", "sliding_attention"])
        model = Gemma3ForCausalLM(cfg)
    else:
        cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                          num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256,
                          attention_bias=kind == "llama-bias")
        model = LlamaForCausalLM(cfg)
        with torch.no_grad():  # initialised to zeros: random ones, so a bias lost by fusing would show
            for mod in model.modules():
                if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
                    mod.bias.normal_()
    model.set_attn_implementation("eager")
    return model.eval()


@pytest.mark.parametrize("kind", ["llama", "llama-bias", "gemma3"])
def test_tiny_models_fuse_bitwise_and_a_false_probe_falls_back(kind, monkeypatch):
    """Llama (with and without q/k/v biases) and Gemma 3: fused and unfused packed decoders give bitwise the same
    numbers; a False probe fuses nothing (each layer its own packed product); an unknown model type fuses nothing."""
    a, b = _tiny(kind), _tiny(kind)
    assert dec_mod._fused_linear_ok(dec_mod._fused_shapes(dec_mod._fused_groups(a)))
    ka, kb = _packed(a, True, monkeypatch), _packed(b, False, monkeypatch)
    assert (ka.n_fused, kb.n_fused, ka.n_linear, kb.n_linear) == (6, 0, 22, 22)
    rows, steps = [[5, 9, 11, 3, 7], [4, 8, 15, 16, 23, 42, 2]], [[12, 13], [14, 15], [16, 17]]
    for (x, hx), (y, hy) in zip(_decode(a, rows, steps), _decode(b, rows, steps)):
        assert torch.equal(x, y) and torch.equal(hx, hy)
    other = _tiny(kind)
    monkeypatch.setattr(other.config, "model_type", "not_a_fused_type")
    assert dec_mod._fused_groups(other) == [] and dec_mod.pack_linear_weights(other).n_fused == 0


def test_a_fused_group_gives_each_member_its_own_columns_in_any_call_order():
    """FusedLinears: members called in order on one tensor share one product; called out of order or on other
    inputs, each still gets bitwise its own packed product; the kept columns are released once all are taken."""
    g = torch.Generator().manual_seed(0)
    mods = [torch.nn.Linear(64, n, bias=False) for n in (64, 16, 16)]
    for m in mods:
        torch.nn.init.normal_(m.weight, generator=g)
    group = dec_mod.FusedLinears(mods)
    alone = [torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), dec_mod.PACK_BATCH_HINT) for m in mods]

    def own(i, x):
        return torch.ops.mkldnn._linear_pointwise(x, alone[i], None, "none", [], "")

    x, y = torch.randn(2, 64, generator=g), torch.randn(2, 64, generator=g)
    with torch.no_grad():
        for i in (0, 1, 2):
            out = group(i, x)
            assert torch.equal(out, own(i, x)) and out.is_contiguous()
        assert group._input is None and not group._kept
        for i, inp in ((1, x), (0, y), (2, x), (2, y), (1, y)):
            assert torch.equal(group(i, inp), own(i, inp)), (i, inp is x)
