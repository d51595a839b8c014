"""``rag-replug``: REPLUG (Shi et al., NAACL 2024, arXiv 2301.12652, §3) — one branch per passage
(passage + task context), decoded in one batch; the next-token distribution is the probability mixture

    p(y | x) = Σ_i w_i · p(y | d_i, x),   w = softmax(s / τ)   (``uniform``: w_i = 1/k)

with ``s`` the retriever's scores of the k passages — a mixture of probabilities (log-sum-exp of
log-probs), not logit pooling. The lm-eval class, its per-step rule and the two formulas live here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from retrieval.errors import ConfigError

from ..args import Arg, choice, to_opt_float
from ..base import RAGMethodLM, branch_logprobs, budget_check
from ..decoder import Batch, MultiContextDecoder
from ..prompt import Encoded

# Default REPLUG temperature per retriever (scores live on different scales): BM25 scores differ by a few
# points between ranks (τ=1 keeps the top passage dominant but not one-hot); MiniLM/DPR-style cosine or
# inner products differ by ~0.01–0.1 (τ=0.05); reciprocal-rank-fusion scores by ~0.001 (τ=0.005).
REPLUG_TAU = {"bm25": 1.0, "dense": 0.05, "hybrid": 0.005, "oracle": 1.0}


# ------------------------------------------------------------------------------------------ formulas
def replug_weights(scores: Sequence[float], tau: float | None, mode: str = "mixture") -> torch.Tensor:
    """REPLUG passage weights: ``softmax(s/τ)`` (``mixture``) or ``1/k`` (``uniform``) -> (k,) float64.

    Raises:
        ValueError: ``tau <= 0`` in mixture mode, or an unknown mode.
    """
    k = len(scores)
    if mode == "uniform":
        return torch.full((k,), 1.0 / k, dtype=torch.float64)
    if mode != "mixture":
        raise ValueError(f"replug_mode must be mixture or uniform, got {mode!r}")
    if tau is None or tau <= 0:
        raise ValueError(f"replug temperature must be > 0, got {tau}")
    s = torch.tensor([float(x) for x in scores], dtype=torch.float64)
    return torch.softmax(s / tau, dim=0)


def mixture_logprobs(logprobs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``log Σ_i w_i·p_i`` for (k, V) log-probs and (k,) weights -> (V,) log-probs (nats)."""
    lw = torch.log(weights.to(logprobs.device, torch.float64)).unsqueeze(-1)
    return torch.logsumexp(lw + logprobs.double(), dim=0).float()


def weight_summary(weights: torch.Tensor) -> tuple[float, float]:
    """``(max_i w_i, −Σ_i w_i·ln w_i)`` of (k,) mixture weights: the top-1 weight and the weight entropy in
    nats (0 = one passage takes all the mass, ln k = uniform); the trace fields ``top1_weight`` and
    ``weight_entropy`` of the per-passage methods."""
    w = weights.double()
    ent = -float(torch.where(w > 0, w * torch.log(w), torch.zeros_like(w)).sum())
    return float(w.max()), max(0.0, ent)


# ---------------------------------------------------------------------------------------- generation
class ReplugRule:
    """REPLUG: rows = one (passage + context) prompt per passage; greedy on ``log Σ_i w_i p_i``."""

    needs_hidden = False

    def __init__(self, prompts: list[list[int]], weights: torch.Tensor) -> None:
        self.prompts = prompts
        self.weights = weights

    def rows(self) -> list[list[int]]:
        return self.prompts

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        return int(mixture_logprobs(batch.logprobs[rows], self.weights).argmax())


# ---------------------------------------------------------------------------------------- lm-eval model
class ReplugLM(RAGMethodLM):
    """``rag-replug``: REPLUG (Shi et al. 2024) — one branch per passage (passage + task context); the
    next-token distribution is the probability mixture ``Σ_i w_i p_i`` with ``w = softmax(score/τ)``
    (``replug_mode=mixture``) or ``w = 1/k`` (``uniform``). ``replug_temperature`` defaults per
    ``retriever`` (:data:`REPLUG_TAU`: bm25 1.0, dense 0.05, hybrid 0.005)."""

    METHOD = "rag-replug"
    EXTRA_ARGS = {
        "replug_temperature": Arg(None, to_opt_float, "τ in softmax(score/τ) (default per retriever)"),
        "replug_mode": Arg("mixture", choice("mixture", "uniform"), "mixture | uniform"),
        "retriever": Arg("bm25", choice(*REPLUG_TAU), f"retriever whose scores are mixed: {sorted(REPLUG_TAU)}"),
    }

    def setup(self) -> None:
        c = self.resolved_config
        if c["replug_temperature"] is None:
            c["replug_temperature"] = REPLUG_TAU[c["retriever"]]
        if c["replug_temperature"] <= 0:
            raise ConfigError(f"--model rag-replug: replug_temperature must be > 0, got {c['replug_temperature']}")

    def _branches(self, doc: Any, context: str, budget: int) -> tuple[list[Encoded], torch.Tensor, dict]:
        encs, ctxs = self.encode_per_passage(doc, context, budget)
        if not encs:
            pure = self.encode_pure(context, budget)
            return [pure], torch.ones(1, dtype=torch.float64), {"passages": [], "weights": [1.0], "top1_weight": 1.0,
                                                                "weight_entropy": 0.0, "closed_book": True}
        scores = [float(c.get("score", 0.0) or 0.0) for c in ctxs]
        w = replug_weights(scores, self.resolved_config["replug_temperature"], self.resolved_config["replug_mode"])
        top1, ent = weight_summary(w)
        trace = {"passages": [e.kept[0] for e in encs], "weights": [round(float(x), 4) for x in w],
                 "top1_weight": round(top1, 4), "weight_entropy": round(ent, 4)}
        return encs, w, trace

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        encs, w, trace = self._branches(doc, context, budget)
        return ReplugRule([e.ids for e in encs], w), trace

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None
              ) -> tuple[float, bool, dict]:
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        encs, w, trace = self._branches(doc, context, budget_check(cont, budget, self.METHOD))
        lps = torch.stack([branch_logprobs(self.decoder, e.ids, cont)[0] for e in encs])  # (k, C, V)
        mix = torch.stack([mixture_logprobs(lps[:, i], w) for i in range(len(cont))])
        ll, greedy = self._sum_ll(mix, cont)
        return ll, greedy, trace
