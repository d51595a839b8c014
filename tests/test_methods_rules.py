"""Hand-computed decisions of the method rules on toy distributions and embeddings (no model)."""

from __future__ import annotations

import math

import pytest
import torch

from tokrag_model.methods.replug import mixture_logprobs, replug_weights
from tokrag_model.methods.selfrag_filter import filter_by_relevance, relevance_ratio
from tokrag_model.methods.tokrag import (
    dynamic_layer,
    is_function_token,
    is_skip_token,
    resolve_layer,
    select_anchors,
    tokrag_choose_rag,
    tokrag_scores,
    window_positions,
)

# 4-token vocabulary in a 2-d embedding space
E = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])


def _cos(a, b):
    return (a[0] * b[0] + a[1] * b[1]) / (math.hypot(*a) * math.hypot(*b))


def test_tokrag_chooses_rag_when_rag_prediction_matches_the_attended_passage_tokens():
    p_rag = torch.tensor([0.7, 0.2, 0.1, 0.0])
    p_pure = torch.tensor([0.0, 0.1, 0.2, 0.7])
    # by hand: e_R = .7*E0 + .2*E1 = (.7, .2); e_L = .7*E3 + .2*E2 + .1*E1 = (-.5, .3)
    s_r, s_l = tokrag_scores(p_rag, p_pure, E, window_ids=[0], rag_top=2, pure_top=3)
    assert s_l == pytest.approx(_cos((0.7, 0.2), (-0.5, 0.3)), abs=1e-6)  # -0.6832
    assert s_r == pytest.approx(_cos((0.7, 0.2), (1.0, 0.0)), abs=1e-6)  # 0.9615
    assert s_l == pytest.approx(-0.68315, abs=1e-4) and s_r == pytest.approx(0.96152, abs=1e-4)
    assert tokrag_choose_rag(s_r, s_l, rate=1.0) is True


def test_tokrag_chooses_pure_when_rag_prediction_resembles_the_pure_llm():
    p_rag = torch.tensor([0.7, 0.2, 0.1, 0.0])
    p_pure = torch.tensor([0.6, 0.3, 0.1, 0.0])
    # e_R = (.7, .2); e_L = .6*E0 + .3*E1 + .1*E2 = (.7, .4); window token 1 -> E1 = (0, 1)
    s_r, s_l = tokrag_scores(p_rag, p_pure, E, window_ids=[1])
    assert s_l == pytest.approx(_cos((0.7, 0.2), (0.7, 0.4)), abs=1e-6)  # 0.9713
    assert s_r == pytest.approx(_cos((0.7, 0.2), (0.0, 1.0)), abs=1e-6)  # 0.2747
    assert tokrag_choose_rag(s_r, s_l, rate=1.0) is False
    # rate scales the benefit side: 4 * 0.2747 = 1.099 > 0.9713
    assert tokrag_choose_rag(s_r, s_l, rate=4.0) is True
    # strict inequality at a tie
    assert tokrag_choose_rag(0.5, 0.5) is False


def test_s_r_is_max_over_window_tokens_and_floored_at_zero():
    p = torch.tensor([0.7, 0.2, 0.1, 0.0])
    s_r, _ = tokrag_scores(p, p, E, window_ids=[3])  # cos((.7,.2),(-1,0)) < 0 -> floored to 0
    assert s_r == 0.0
    s_r, _ = tokrag_scores(p, p, E, window_ids=[3, 1, 2])  # max(…, .2747, cos((.7,.2),(1,1)) = .8575)
    assert s_r == pytest.approx(_cos((0.7, 0.2), (1.0, 1.0)), abs=1e-6)
    s_r, _ = tokrag_scores(p, p, E, window_ids=[])  # no anchor survived: S_R = 0 (authors' init)
    assert s_r == 0.0


def test_anchors_skip_listed_positions_and_windows():
    attn = torch.tensor([0.10, 0.50, 0.20, 0.15, 0.05])
    anchors = select_anchors(attn, skip=lambda j: j == 1, n_anchors=3)
    assert anchors == [2, 3, 0]
    assert window_positions(anchors, n_r=5, left=2, right=1) == [0, 1, 2, 3, 4]
    assert window_positions([2], n_r=5) == [0, 1, 2, 3]
    assert window_positions([4], n_r=5) == [2, 3, 4]  # clipped at the end of the span
    # fewer than 3 survivors: the whole span is ranked (no top-100 failure)
    assert select_anchors(torch.tensor([0.6, 0.4]), skip=lambda j: j == 0) == [1]


def test_tokenizer_agnostic_bypass_and_skip_lists():
    for s in [" the", "\u2581The", "the", " a", " An", ".", "]:", "\u2581[", '"', " ", "", "\u0120in", " Query"]:
        assert is_function_token(s), s
    for s in [" Paris", " 1947", "Einstein", " physics"]:
        assert not is_function_token(s), s
    assert is_function_token("<|im_end|>", special=True)
    for s in [" 1947", "7", ".", "'", ")", "]:", "\u2581", " ", "1,000"]:
        assert is_skip_token(s), s
    for s in [" Paris", " the", "X-ray"]:
        assert not is_skip_token(s), s


def test_dynamic_layer_js_gap_rule_is_lazy():
    calls = []
    gaps = {3: 0.05, 4: 0.2, 5: 0.9}

    def gap(ell):
        calls.append(ell)
        return gaps.get(ell, 0.0)

    assert dynamic_layer(gap, n_layers=8, min_layer=2, fallback=5, threshold=0.1) == (3, True)  # first ℓ=4 -> ℓ-1
    assert calls == [3, 4]
    assert dynamic_layer(lambda ell: 0.0, n_layers=8, min_layer=2, fallback=5, threshold=0.1) == (5, False)
    # strictly greater than the threshold, and only ℓ > min_layer is scanned
    assert dynamic_layer(lambda ell: 0.1 if ell == 3 else (1.0 if ell <= 2 else 0.0), 8, 2, 6, 0.1) == (6, False)


def test_layer_specs():
    assert resolve_layer(20 / 32, 30) == 19  # same relative depth as layer 20 of 32
    assert resolve_layer(-1, 30) == 29 and resolve_layer(12, 30) == 12
    with pytest.raises(ValueError):
        resolve_layer(30, 30)


def test_replug_weights_and_probability_mixture():
    w = replug_weights([2.0, 1.0, 0.0], tau=1.0)
    z = math.e**2 + math.e + 1
    assert w.tolist() == pytest.approx([math.e**2 / z, math.e / z, 1 / z], abs=1e-12)  # .6652 .2447 .0900
    w2 = replug_weights([2.0, 1.0, 0.0], tau=2.0)
    z2 = math.e + math.e**0.5 + 1
    assert w2.tolist() == pytest.approx([math.e / z2, math.e**0.5 / z2, 1 / z2], abs=1e-12)
    assert replug_weights([5.0, -3.0], tau=None, mode="uniform").tolist() == [0.5, 0.5]
    with pytest.raises(ValueError):
        replug_weights([1.0], tau=0.0)
    # mixture of probabilities, not of logits: .25*[.9,.1] + .75*[.2,.8] = [.375, .625]
    lp = torch.log(torch.tensor([[0.9, 0.1], [0.2, 0.8]]))
    mix = mixture_logprobs(lp, torch.tensor([0.25, 0.75], dtype=torch.float64))
    assert mix.exp().tolist() == pytest.approx([0.375, 0.625], abs=1e-6)
    # logit pooling (FlashRAG) would differ: w=[.75,.25], p1=[.99,.01], p2=[.01,.99]
    lp2 = torch.log(torch.tensor([[0.99, 0.01], [0.01, 0.99]]))
    w3 = torch.tensor([0.75, 0.25], dtype=torch.float64)
    assert mixture_logprobs(lp2, w3).exp().tolist() == pytest.approx([0.745, 0.255], abs=1e-6)
    pooled = torch.softmax(0.75 * lp2[0] + 0.25 * lp2[1], dim=0)
    assert float(pooled[0]) == pytest.approx(0.9087, abs=1e-3)


def test_selfrag_filter_ratio_threshold_edge_and_none_kept():
    assert relevance_ratio(math.log(0.3), math.log(0.1)) == pytest.approx(0.75)
    assert relevance_ratio(-math.inf, -math.inf) == 0.5
    assert filter_by_relevance([0.5, 0.4999, 0.75], threshold=0.5) == [0, 2]  # r >= threshold is kept
    assert filter_by_relevance([0.1, 0.2], threshold=0.5) == []  # none kept -> closed-book
