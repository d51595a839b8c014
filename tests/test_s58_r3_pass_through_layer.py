"""The decoder's hidden states with the recording hooks installed twice and a pass-through layer (s58 r3, review of
o1's 7a6360e).

7a6360e's :func:`tokrag_model.decoder.layer_hidden_states` dropped consecutive entries that were the same tensor
object, taking them for the copies a second set of transformers' recording hooks appends. A layer that returns its
input tensor itself records the same object as the layer before it, so that layer was dropped too and every later
layer shifted by one, with the right count (no error): index 2 was the input of layer 3. The copies are now told by
position (k copies of each layer's output).
"""

from __future__ import annotations

import torch
from test_s58_o1_capture_hooks import _decoder_hidden, _install_twice

from tokrag_model.decoder import layer_hidden_states


def test_a_pass_through_layer_keeps_its_place_among_the_copies():
    emb, outs, normed = torch.zeros(1), [torch.full((1,), float(i + 1)) for i in range(3)], torch.full((1,), 9.0)
    outs[1] = outs[0]  # layer 1 returns its input: its output is layer 0's output tensor itself
    twice = (emb, outs[0], outs[0], outs[1], outs[1], outs[2], normed)
    assert [float(h) for h in layer_hidden_states(twice, 3)] == [0.0, 1.0, 1.0, 9.0]  # was [0, 1, 3, 9]
    thrice = (emb, *[o for o in outs for _ in range(3)][:-1], normed)
    assert [float(h) for h in layer_hidden_states(thrice, 3)] == [0.0, 1.0, 1.0, 9.0]
    once = (emb, outs[0], outs[1], normed)
    assert layer_hidden_states(once, 3) is once


def test_decoder_hidden_states_with_a_pass_through_layer_and_the_hooks_installed_twice(one_thread):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg).eval()
    layer = model.model.layers[1]
    own = layer.forward

    def pass_through(hidden_states, *args, **kwargs):
        own(hidden_states, *args, **kwargs)  # its cache is filled as before
        return hidden_states  # the input tensor itself

    layer.forward = pass_through
    before = _decoder_hidden(model)
    assert all(h.shape[0] == 4 for h in before.values())  # L + 1
    assert all(torch.equal(h[2], h[1]) for h in before.values())  # layer 2's input is layer 1's
    _install_twice(model)
    after = _decoder_hidden(model)
    for kind in before:
        assert torch.equal(after[kind], before[kind]), kind
