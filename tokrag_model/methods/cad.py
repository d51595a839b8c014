"""``rag-cad``: context-aware decoding, CAD (Shi et al., "Trusting Your Evidence: Hallucinate Less with
Context-aware Decoding", NAACL 2024, arXiv 2305.14739) — the lm-eval class, its per-step rule and its formula.

Two branches decoded in lock-step: the RAG prompt (passages ``c`` + task context ``x``) and the pure prompt
(``x`` alone). The next token follows the contrastive distribution of §2.2 (its final, normalised form)::

    ỹ_t ~ softmax[(1 + α)·logit(y_t | c, x, y_<t) − α·logit(y_t | x, y_<t)]

a product of the RAG distribution and the pointwise mutual information between ``c`` and ``y_t`` raised to
α (α = 0 is ``rag-standard``). Log-probs are used instead of logits: per branch they differ by one constant
(the log-partition), which the softmax removes. Greedy on ``ỹ_t`` (the paper's decoding for its QA and
knowledge-conflict sets); the emitted token extends both branches.

Default α = 1: the paper's value for the knowledge-conflict and QA sets (NQ, NQ-Swap, MemoTrap; §3.2 "Models
and Baselines", results in Table 3); it uses α = 0.5 for summarisation and reports 0.5 as robust everywhere
(§5, Figure 3) — pass ``alpha=0.5`` for that setting.
"""

from __future__ import annotations

from typing import Any

import torch

from ..args import Arg, number_at_least
from ..base import RAGMethodLM, ScorePlan, budget_check, passages_trace
from ..decoder import Batch, Forced, MultiContextDecoder
from ..prompt import Encoded

CAD_ALPHA = 1.0  # Shi et al. 2024 §3.2: α = 1 on the knowledge-conflict / QA sets (0.5 for summarisation)


# ------------------------------------------------------------------------------------------ formulas
def cad_logprobs(lp_ctx: torch.Tensor, lp_noctx: torch.Tensor, alpha: float | torch.Tensor) -> torch.Tensor:
    """``log softmax[(1+α)·lp_ctx − α·lp_noctx]`` over the last axis (CAD, Shi et al. 2024 §2.2).

    Args:
        lp_ctx, lp_noctx: (..., V) next-token log-probs (nats) with and without the passages.
        alpha: a float, or a tensor broadcastable to (..., 1) (per-position α, e.g. AdaCAD's).
    Returns:
        (..., V) float32 log-probs (nats) of the adjusted distribution. A token impossible under either
        branch (log-prob −inf) stays impossible (its adjusted logit is −inf, never NaN).
    """
    a = torch.as_tensor(alpha, dtype=torch.float64, device=lp_ctx.device)
    if a.dim():
        a = a.reshape(*a.shape, *([1] * (lp_ctx.dim() - a.dim())))
    x, y = lp_ctx.double(), lp_noctx.double()
    z = (1 + a) * x - a * y
    z = torch.where(torch.isfinite(x) & torch.isfinite(y), z, torch.full_like(z, -torch.inf))
    return torch.log_softmax(z, dim=-1).float()


# ---------------------------------------------------------------------------------------- generation
class CADRule:
    """Contrastive two-branch rule: rows = [RAG prompt, pure prompt]; greedy on :func:`cad_logprobs`.

    ``alpha_at(lp_rag, lp_pure) -> α`` is the adjustment level at one step (CAD: the constant α; AdaCAD: a
    divergence of the two distributions); every α used is kept in ``alphas`` (one per emitted token).
    """

    needs_hidden = False

    def __init__(self, rag_ids: list[int], pure_ids: list[int], alpha_at: Any) -> None:
        self.rag_ids, self.pure_ids = rag_ids, pure_ids
        self.alpha_at = alpha_at
        self.alphas: list[float] = []

    def rows(self) -> list[list[int]]:
        return [self.rag_ids, self.pure_ids]

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        lp_rag, lp_pure = batch.logprobs[rows[0]], batch.logprobs[rows[1]]
        alpha = float(self.alpha_at(lp_rag, lp_pure))
        self.alphas.append(alpha)
        return int(cad_logprobs(lp_rag, lp_pure, alpha).argmax())


# ---------------------------------------------------------------------------------------- lm-eval model
class CADLM(RAGMethodLM):
    """``rag-cad``: context-aware decoding (Shi et al., NAACL 2024) over the RAG and the pure branch.

    Model argument ``alpha`` (default :data:`CAD_ALPHA` = 1, the paper's QA / knowledge-conflict value).
    ``loglikelihood`` teacher-forces both branches once and scores the continuation under
    :func:`cad_logprobs` at every position. Trace: ``alpha``, ``passages``, ``dropped``.
    """

    METHOD = "rag-cad"
    EXTRA_ARGS = {
        "alpha": Arg(CAD_ALPHA, number_at_least(0.0), "CAD adjustment level α: softmax[(1+α)·logit_RAG − α·logit_pure] (0 = rag-standard)"),
    }

    def alpha_at(self, lp_rag: torch.Tensor, lp_pure: torch.Tensor) -> torch.Tensor | float:
        """α for next-token log-probs (..., V) of both branches -> a float or a (...,) tensor (CAD: constant)."""
        return self.resolved_config["alpha"]

    def _branches(self, doc: Any, context: str, budget: int, kind: str | None = None) -> tuple[Encoded, Encoded, dict]:
        rag = self.encode_rag(doc, context, budget, kind=kind)
        pure = self.encode_pure(context, budget)
        return rag, pure, passages_trace(rag)

    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        rag, pure, trace = self._branches(doc, context, budget, kind)
        return CADRule(rag.ids, pure.ids, self.alpha_at), trace

    def alpha_trace(self, alphas: list[float]) -> dict:
        """The α fields of the trace (CAD: the constant ``alpha``)."""
        return {"alpha": self.resolved_config["alpha"]}

    def finish_trace(self, rule: CADRule, trace: dict) -> dict:
        return {**trace, **self.alpha_trace(rule.alphas)}

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        rag, pure, trace = self._branches(doc, context, budget_check(cont, budget, self.METHOD), kind)

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            lp_rag, lp_pure = forced[0].logprobs, forced[1].logprobs  # (C, V) each
            alpha = self.alpha_at(lp_rag, lp_pure)  # float or (C,)
            ll, greedy = self._sum_ll(cad_logprobs(lp_rag, lp_pure, alpha), cont)
            alphas = alpha.tolist() if isinstance(alpha, torch.Tensor) else [alpha] * len(cont)
            return ll, greedy, {**trace, **self.alpha_trace(alphas)}

        return ScorePlan([rag.ids, pure.ids], cont, finish)
