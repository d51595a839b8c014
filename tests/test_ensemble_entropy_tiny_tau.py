"""rag-ensemble-entropy: an accepted ``entropy_temperature`` gives finite weights however small it is.

Before the fix ``entropy_weights`` computed ``softmax(−H_j / τ)`` directly: with τ = 1e-320 (a subnormal the
argument check accepts: a finite number > 0), or τ = 3e-308 with entropies of ~6 nats, every −H_j/τ is −inf and
the softmax is NaN, and decoding ran on NaN weights. The weights are now ``softmax(−(H_j − min H)/τ)`` (equal by
shift invariance): all the mass on the lowest-entropy branch(es).
"""

from __future__ import annotations

import math
import sys

import pytest
import torch

from tokrag_model.args import parse_args
from tokrag_model.methods.ensemble_entropy import EntropyEnsembleLM, EntropyEnsembleRule, entropy, entropy_weights

A = torch.tensor([0.9, 0.1, 0.0, 0.0], dtype=torch.float64)  # H = .325083 nats
B = torch.tensor([0.0, 0.45, 0.3, 0.25], dtype=torch.float64)  # H = 1.067101 nats


@pytest.mark.parametrize("tau", [1e-320, 5e-324, sys.float_info.min, 1e-300])
def test_tiny_temperature_puts_the_mass_on_the_lowest_entropy_branch(tau):
    assert tau > 0 and math.isfinite(tau)
    assert entropy_weights(torch.stack([A, B, B]).log(), tau).tolist() == [1.0, 0.0, 0.0]
    assert entropy_weights(torch.stack([B, A, A]).log(), tau).tolist() == [0.0, 0.5, 0.5]  # a tie splits it


def test_normal_temperature_whose_ratios_overflow():
    """τ = 3e-308 is a normal float (>= sys.float_info.min), yet H/τ overflows for the uniform distributions over
    1000 and 500 tokens (H = ln 1000 = 6.908, ln 500 = 6.215 nats; 6.2 / 3e-308 > 1.8e308): the old weights
    were [nan, nan]; the lower-entropy branch (500 tokens) takes all the mass."""
    u1000 = torch.full((1000,), 1 / 1000, dtype=torch.float64)
    u500 = torch.cat([torch.full((500,), 1 / 500, dtype=torch.float64), torch.zeros(500, dtype=torch.float64)])
    lps = torch.stack([u1000, u500]).log()
    assert entropy(lps).tolist() == pytest.approx([math.log(1000), math.log(500)])
    assert math.log(500) / 3e-308 == math.inf and 3e-308 >= sys.float_info.min
    assert entropy_weights(lps, 3e-308).tolist() == [0.0, 1.0]
    # a temperature whose ratio is finite keeps the plain formula's value (hand-computed, two branches)
    d = math.log(1000) - math.log(500)  # ln 2
    w = entropy_weights(lps, 0.5)
    assert w.tolist() == pytest.approx([1 / (1 + math.exp(d / 0.5)), 1 / (1 + math.exp(-d / 0.5))])  # [0.2, 0.8]
    assert w.tolist() == pytest.approx([0.2, 0.8])


def test_the_rule_decodes_on_finite_weights_at_an_accepted_tiny_temperature():
    cfg = parse_args("rag-ensemble-entropy", EntropyEnsembleLM.EXTRA_ARGS, {"entropy_temperature": "1e-320"})
    assert cfg["entropy_temperature"] == 1e-320  # accepted by the argument check

    class Bt:
        logprobs = torch.stack([A, B]).log().float()

    rule = EntropyEnsembleRule([[1], [2]], tau=cfg["entropy_temperature"])
    assert rule.choose(None, Bt(), [0, 1], 0) == 0  # A alone: its most likely token
    assert torch.isfinite(rule.weights[0]).all() and rule.weights[0].tolist() == [1.0, 0.0]
