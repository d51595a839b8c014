"""MKL's row-count probe (:func:`tokrag_model.decoder._mkl_min_rows`) runs once per process for a set of linear-layer
layouts, not once per model object (s61 c1). It reads nothing of the model but its layouts (random weights of those
shapes from a fixed seed), and every fresh load of SmolLM2 in one process (a leaderboard cell with other load
arguments, an in-process lm_eval run, a test's own load) probed again: ~1 s of CPU a load for SmolLM2-135M."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import tokrag_model.decoder as dec_mod


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=24, intermediate_size=40, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=64)
    return LlamaForCausalLM(cfg).float().eval()


def _linear_calls(monkeypatch) -> list[tuple]:
    """Every ``F.linear`` call's weight shape from now on (the probe's products)."""
    calls: list[tuple] = []
    real = F.linear

    def spy(x, w, b=None):
        calls.append(tuple(w.shape))
        return real(x, w, b)

    monkeypatch.setattr(F, "linear", spy)
    return calls


def test_a_second_model_of_the_same_shapes_is_not_probed_again(monkeypatch, one_thread):
    monkeypatch.setattr(dec_mod, "_MKL_VERDICTS", {}, raising=False)  # this process's earlier verdicts left aside
    a, b = _llama(), _llama()
    assert dec_mod._linear_layouts(a) == dec_mod._linear_layouts(b)
    calls = _linear_calls(monkeypatch)
    first = dec_mod.mkl_min_rows(a, 40)
    assert len(calls) > 0  # a's probe: products of its shapes
    n = len(calls)
    assert dec_mod.mkl_min_rows(b, 40) == first
    assert len(calls) == n  # the old code probed b again (as many products as for a)
    assert dec_mod.mkl_min_rows(a, 40) == first and len(calls) == n


def test_other_thread_counts_row_bounds_and_layouts_are_probed_and_the_verdict_is_the_probe_s(monkeypatch, one_thread):
    monkeypatch.setattr(dec_mod, "_MKL_VERDICTS", {}, raising=False)
    layouts = [(40, 24, False, False), (24, 24, True, False)]
    fresh = dec_mod._probe_mkl_min_rows(layouts, 40)  # the probe itself, not remembered
    calls = _linear_calls(monkeypatch)
    assert dec_mod._mkl_min_rows(layouts, 40) == fresh
    n = len(calls)
    assert n > 0
    assert dec_mod._mkl_min_rows(layouts[::-1] + layouts[:1], 40) == fresh and len(calls) == n  # same set of layouts
    dec_mod._mkl_min_rows(layouts, 41)
    assert len(calls) > n  # another max_rows: probed
    n = len(calls)
    dec_mod._mkl_min_rows(layouts[:1], 40)
    assert len(calls) > n  # other layouts: probed
    n = len(calls)
    torch.set_num_threads(2)
    dec_mod._mkl_min_rows(layouts, 40)
    assert len(calls) > n  # another thread count: probed (its verdict holds at the count it ran at)
    assert sorted(k[0] for k in dec_mod._MKL_VERDICTS) == [1, 1, 1, 2]
