"""``rag-adacad``: AdaCAD (Wang, Prasad, Stengel-Eskin, Bansal, "AdaCAD: Adaptively Decoding to Balance
Conflicts between Contextual and Parametric Knowledge", NAACL 2025, arXiv 2409.07394) — the lm-eval class
and its formula; the contrast itself is CAD's (:func:`tokrag_model.methods.cad.cad_logprobs`).

CAD with the adjustment level set at every step from the degree of conflict between the two next-token
distributions, their Jensen–Shannon divergence (§2, "AdaCAD"; the authors' code ``get_jsd``)::

    α_t = JSD( p(· | c, x, y_<t) ‖ p(· | x, y_<t) )          (natural log: 0 ≤ α_t ≤ ln 2)
    ỹ_t ~ softmax[(1 + α_t)·logit(y_t | c, x, y_<t) − α_t·logit(y_t | x, y_<t)]

so the contrast is weak where the branches agree (no conflict) and strong where they disagree. No
hyperparameter for QA (the paper's setting); ``alpha_floor`` is the authors' ``--threshold`` (α_t =
max(JSD, floor), a warm-up they use for long-form summarisation only), default 0.
"""

from __future__ import annotations

import math

import torch

from ..args import Arg, number_at_least
from .cad import CADLM


# ------------------------------------------------------------------------------------------ formulas
def jensen_shannon(lp_a: torch.Tensor, lp_b: torch.Tensor) -> torch.Tensor:
    """Jensen–Shannon divergence ``½·KL(p‖m) + ½·KL(q‖m)``, ``m = (p+q)/2``, summed over the vocabulary.

    Args:
        lp_a, lp_b: (..., V) log-probs (nats) of p and q.
    Returns:
        (...,) float64 divergences in nats, in ``[0, ln 2]`` (0 iff p = q; ln 2 for disjoint supports).
        Terms with p(v) = 0 contribute 0 (the ``0·log 0 = 0`` convention).
    """
    a, b = lp_a.double(), lp_b.double()
    log_m = torch.logaddexp(a, b) - math.log(2.0)

    def kl_to_m(lp: torch.Tensor) -> torch.Tensor:
        p = lp.exp()
        return torch.where(p > 0, p * (lp - log_m), torch.zeros_like(p)).sum(-1)

    return (0.5 * (kl_to_m(a) + kl_to_m(b))).clamp(0.0, math.log(2.0))


# ---------------------------------------------------------------------------------------- lm-eval model
class AdaCADLM(CADLM):
    """``rag-adacad``: AdaCAD (Wang et al., NAACL 2025): CAD with ``α_t = JSD(p_RAG, p_pure)`` per token.

    Same branches, batching and teacher forcing as :class:`tokrag_model.methods.cad.CADLM`. Model argument
    ``alpha_floor`` (default 0). Trace: ``alphas`` (one α_t per generated / scored token, nats),
    ``passages``, ``dropped``.
    """

    METHOD = "rag-adacad"
    EXTRA_ARGS = {
        "alpha_floor": Arg(0.0, number_at_least(0.0), "lower bound on α_t = JSD (the authors' --threshold; 0 for QA)"),
    }

    def alpha_at(self, lp_rag: torch.Tensor, lp_pure: torch.Tensor) -> torch.Tensor:
        """``max(JSD(p_RAG, p_pure), alpha_floor)`` for (..., V) log-probs -> (...,) float64 (nats)."""
        return jensen_shannon(lp_rag, lp_pure).clamp_min(self.resolved_config["alpha_floor"])

    def alpha_trace(self, alphas: list[float]) -> dict:
        return {"alphas": [round(float(a), 4) for a in alphas]}
