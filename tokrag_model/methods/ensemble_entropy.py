"""``rag-ensemble-entropy``: the low-entropy ensemble LeEns (Qiu, Ou, Wu, Li, Liu, King, "Entropy-Based
Decoding for Retrieval-Augmented Large Language Models", NAACL 2025, arXiv 2406.17519) — the lm-eval class,
its per-step rule and its formulas.

One branch per passage (passage ``d_j`` + task context ``x``), decoded in one batch as REPLUG's branches
(:mod:`tokrag_model.methods.replug`: same prompts, same cost); the branches are mixed at every step with
weights from the LM's own confidence instead of retriever scores — the lower a branch's next-token entropy,
the larger its weight::

    H_j,t = −Σ_v p_j,t(v)·ln p_j,t(v)                    (nats)
    w_j,t = exp(−H_j,t / τ) / Σ_k exp(−H_k,t / τ)
    p_t(y) = Σ_j w_j,t · p(y | d_j, x, y_<t)             (a probability mixture, as REPLUG's)

This is the paper's first component (document-parallel LeEns); its second component (CLeHe, a contrast
against a high-entropy internal layer) is not part of this row. Caveat on the source: only the paper's
abstract and secondary summaries were readable offline when this was written, so the normalisation above
(softmax of −H/τ, probability mixture) and the default τ = 1 nat are this implementation's reading of
"prioritise low-entropy distributions", not yet checked against the paper's §3 equations and its
hyperparameter table: check them before quoting the row as LeEns.
"""

from __future__ import annotations

from typing import Any

import torch

from ..args import Arg, number_at_least
from ..base import RAGMethodLM, ScorePlan, budget_check
from ..decoder import Batch, Forced, MultiContextDecoder
from ..prompt import Encoded
from .replug import mixture_logprobs, weight_summary

ENTROPY_TAU = 1.0  # nats; see the module docstring's caveat


# ------------------------------------------------------------------------------------------ formulas
def entropy(logprobs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy ``−Σ_v p(v)·ln p(v)`` of (..., V) log-probs -> (...,) float64 nats (0·ln 0 = 0)."""
    lp = logprobs.double()
    p = lp.exp()
    return -torch.where(p > 0, p * lp, torch.zeros_like(p)).sum(-1)


def entropy_weights(logprobs: torch.Tensor, tau: float) -> torch.Tensor:
    """LeEns weights ``softmax(−H_j / τ)`` over the k branches of (k, V) log-probs -> (k,) float64.

    Raises:
        ValueError: ``tau <= 0``.
    """
    if tau <= 0:
        raise ValueError(f"entropy temperature must be > 0, got {tau}")
    return torch.softmax(-entropy(logprobs) / tau, dim=0)


# ---------------------------------------------------------------------------------------- generation
class EntropyEnsembleRule:
    """rows = one (passage + context) prompt per passage; greedy on ``log Σ_j w_j,t p_j,t`` with
    ``w_t = entropy_weights(·, τ)`` recomputed at every step (kept in ``weights``, one (k,) per token)."""

    needs_hidden = False

    def __init__(self, prompts: list[list[int]], tau: float) -> None:
        self.prompts = prompts
        self.tau = tau
        self.weights: list[torch.Tensor] = []

    def rows(self) -> list[list[int]]:
        return self.prompts

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        lps = batch.logprobs[rows]  # (k, V)
        w = entropy_weights(lps, self.tau)
        self.weights.append(w)
        return int(mixture_logprobs(lps, w).argmax())


def weights_trace(per_token: list[torch.Tensor]) -> dict:
    """Trace fields of per-token weights (each (k,)): ``weights`` (per passage, mean over tokens),
    ``top1_weight`` and ``weight_entropy`` (nats; means over tokens of each token's value), ``token_weights``."""
    if not per_token:
        return {"weights": [], "top1_weight": None, "weight_entropy": None, "token_weights": []}
    w = torch.stack(per_token)  # (T, k)
    stats = [weight_summary(x) for x in per_token]
    return {"weights": [round(float(x), 4) for x in w.mean(0)],
            "top1_weight": round(sum(s[0] for s in stats) / len(stats), 4),
            "weight_entropy": round(sum(s[1] for s in stats) / len(stats), 4),
            "token_weights": [[round(float(x), 4) for x in row] for row in w]}


# ---------------------------------------------------------------------------------------- lm-eval model
class EntropyEnsembleLM(RAGMethodLM):
    """``rag-ensemble-entropy``: per-passage branches mixed with low-entropy weights (LeEns, Qiu et al. 2025).

    Model argument ``entropy_temperature`` τ (nats, default :data:`ENTROPY_TAU`). No passage fits: the pure
    prompt alone (``closed_book``). ``loglikelihood`` teacher-forces every branch once and mixes them at
    every position with that position's weights. Trace: ``passages``, ``weights`` (per passage, mean over
    tokens), ``top1_weight``, ``weight_entropy`` (nats; means over tokens), ``token_weights``.
    """

    METHOD = "rag-ensemble-entropy"
    EXTRA_ARGS = {
        "entropy_temperature": Arg(ENTROPY_TAU, number_at_least(0.0, strict=True), "τ in softmax(−H_j/τ), nats (larger: closer to uniform)"),
    }

    def _branches(self, doc: Any, context: str, budget: int) -> tuple[list[Encoded], dict]:
        encs, _ = self.encode_per_passage(doc, context, budget)
        if not encs:
            return [self.encode_pure(context, budget)], {"passages": [], "closed_book": True}
        return encs, {"passages": [e.kept[0] for e in encs]}

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        encs, trace = self._branches(doc, context, budget)
        return EntropyEnsembleRule([e.ids for e in encs], self.resolved_config["entropy_temperature"]), trace

    def finish_trace(self, rule: EntropyEnsembleRule, trace: dict) -> dict:
        return {**trace, **weights_trace(rule.weights)}

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int) -> ScorePlan:
        encs, trace = self._branches(doc, context, budget_check(cont, budget, self.METHOD))
        tau = self.resolved_config["entropy_temperature"]

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            lps = torch.stack([f.logprobs for f in forced])  # (k, C, V)
            ws = [entropy_weights(lps[:, i], tau) for i in range(len(cont))]
            mix = torch.stack([mixture_logprobs(lps[:, i], w) for i, w in enumerate(ws)])  # (C, V)
            ll, greedy = self._sum_ll(mix, cont)
            return ll, greedy, {**trace, **weights_trace(ws)}

        return ScorePlan([e.ids for e in encs], cont, finish)
