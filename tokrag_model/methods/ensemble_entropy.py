"""``rag-ensemble-entropy``: the low-entropy ensemble LeEns (Qiu, Ou, Wu, Li, Liu, King, "Entropy-Based
Decoding for Retrieval-Augmented Large Language Models", NAACL 2025, arXiv 2406.17519; the LeEns part of
its method section) — the lm-eval class, its per-step rule and its formulas.

One branch per passage (passage ``d_j`` + task context ``x``; no passage-free branch), decoded in one batch as
REPLUG's branches (:mod:`tokrag_model.methods.replug`: same prompts, same cost). At every step each branch's
next-token distribution is weighted by the LM's own confidence instead of a retriever score — the lower a
branch's entropy over the full vocabulary, the larger its weight — and the branches are combined as a
weighted product of experts (a weighted sum of log-probs), not a probability mixture::

    H_j,t = −Σ_v p_j,t(v)·ln p_j,t(v)                         (nats, full vocabulary)
    w_j,t = exp(−H_j,t / τ) / Σ_k exp(−H_k,t / τ)              (τ default 0.1)
    log p_t(y) = log_softmax_y( Σ_j w_j,t · ln p(y | d_j, x, y_<t) );   greedy argmax

Source: the authors' code (GitHub mohrsalt/entropy-based-decoding, commit 2da84cb by the first author Zexuan
Qiu, ``utils/decoding_utils.py``, ``leens_using_logits``, lines 108–118): per branch the entropy of
softmax(final logits), ``softmax(−H/τ)`` across the branches, then ``Σ_j w_j·logit_j`` and a greedy argmax.
A sum of raw logits equals the sum of log-probs up to ``Σ_j w_j·logsumexp_j``, a constant over the vocabulary,
so after ``log_softmax`` it is exactly the formula above. τ is that code's ``--temp-cpmi``, default 0.1
(``get_qa_responses.py`` line 298; ``scripts/odqa_scripts/*.sh`` pass 0.1 for Llama-2-7B/13B and
Mistral-7B, 0.25 for Llama-3-8B, in runs of CLeHe, which shares this τ). The paper's own text was not
readable offline, so the formula and the default follow that code, read at that commit. 0.1 is the authors'
default for 7B-scale models; it is not validated for SmolLM2 or Gemma 3 here (``entropy_temperature=``).

Unlike REPLUG's mixture ``Σ_j w_j p_j``, the product of experts lets a branch veto: a token that one weighted
branch finds (almost) impossible is (almost) impossible in the ensemble, however likely another branch finds
it. A log-prob of exactly −inf is clamped to :data:`LOGPROB_FLOOR` first, so the veto holds without NaNs (a
branch whose weight underflows to 0 contributes 0, not 0·(−inf)) and tokens ruled out by every branch stay
finite and ordered.

This is the paper's first component (LeEns). Its second component, CLeHe (contrasting the ensemble against a
high-entropy internal layer, ``clehe_using_logits`` in the same file, the authors' runs with ``--beta`` > 0),
is out of scope for this row.
"""

from __future__ import annotations

from typing import Any

import torch

from ..args import Arg, number_at_least
from ..base import RAGMethodLM, ScorePlan, budget_check
from ..decoder import Batch, Forced, MultiContextDecoder
from ..prompt import Encoded
from .replug import weight_summary

ENTROPY_TAU = 0.1
"""Default τ (nats): the authors' ``--temp-cpmi`` default (``get_qa_responses.py`` line 298 at commit 2da84cb),
used in their scripts for Llama-2-7B/13B and Mistral-7B; not validated for SmolLM2 or Gemma 3."""

LOGPROB_FLOOR = torch.finfo(torch.float32).min
"""Floor (≈ −3.4e38) for log-probs in :func:`product_of_experts_logprobs`: the most negative finite float32,
so every finite log-prob the float32 models produce is unchanged, while −inf becomes finite; a convex
combination of floored values cannot overflow float64."""


# ------------------------------------------------------------------------------------------ formulas
def entropy(logprobs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy ``−Σ_v p(v)·ln p(v)`` of (..., V) log-probs -> (...,) float64 nats (0·ln 0 = 0)."""
    lp = logprobs.double()
    p = lp.exp()
    return -torch.where(p > 0, p * lp, torch.zeros_like(p)).sum(-1)


def entropy_weights(logprobs: torch.Tensor, tau: float) -> torch.Tensor:
    """LeEns weights ``softmax(−H_j / τ)`` over the k branches (axis 0) of (k, ..., V) log-probs -> (k, ...)
    float64 (one weight vector per position when there are middle axes). Authors' code
    ``leens_using_logits`` line 112 (commit 2da84cb).

    Computed as ``softmax(−(H_j − min_i H_i) / τ)`` (the same weights: softmax is shift-invariant), so they are
    finite for every finite τ > 0: the lowest-entropy branch's logit is exactly 0, and a tiny τ (``1e-320``; or
    ``3e-308`` with entropies of ~10 nats) sends the others to −inf (weight 0) instead of making every logit −inf
    and the softmax NaN.

    Raises:
        ValueError: ``tau <= 0``.
    """
    if tau <= 0:
        raise ValueError(f"entropy temperature must be > 0, got {tau}")
    h = entropy(logprobs)
    return torch.softmax(-(h - h.min(dim=0).values) / tau, dim=0)


def product_of_experts_logprobs(logprobs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``log_softmax(Σ_j w_j · ln p_j)``: the weighted product of experts over axis 0 (LeEns's combination;
    authors' code ``leens_using_logits`` line 113, commit 2da84cb, as a sum of logits — the same after
    normalisation).

    Args:
        logprobs: (k, ..., V) log-probs (nats) of the k branches; −inf is clamped to :data:`LOGPROB_FLOOR`
            (a branch with a non-negligible weight vetoes the tokens it rules out; never NaN).
        weights: (k, ...) weights summing to 1 over axis 0 (e.g. :func:`entropy_weights`).
    Returns:
        (..., V) float64 log-probs (nats).
    """
    lp = logprobs.double().clamp_min(LOGPROB_FLOOR)
    w = weights.to(lp.device, torch.float64).unsqueeze(-1)
    return torch.log_softmax((w * lp).sum(0), dim=-1)


# ---------------------------------------------------------------------------------------- generation
class EntropyEnsembleRule:
    """rows = one (passage + context) prompt per passage; greedy on :func:`product_of_experts_logprobs` with
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
        return int(product_of_experts_logprobs(lps, w).argmax())


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
    """``rag-ensemble-entropy``: per-passage branches combined as a product of experts with low-entropy
    weights (LeEns, Qiu et al. 2025; see the module docstring for the formula and its sources).

    Model argument ``entropy_temperature`` τ (nats, default :data:`ENTROPY_TAU` = 0.1, the authors' default
    for 7B models, not validated for SmolLM2/Gemma). No passage fits: the pure prompt alone
    (``closed_book``; the authors have no such case). ``loglikelihood`` teacher-forces every branch once and
    combines them at every position with that position's weights. The passages are those every method shows (the
    block rule of :meth:`~tokrag_model.base.RAGMethodLM.encode_per_passage`), one branch each. Trace: ``passages``,
    ``dropped`` (docids dropped for the budget), ``weights`` (per
    passage, mean over tokens), ``top1_weight``, ``weight_entropy`` (nats; means over tokens), ``token_weights``;
    closed-book (no passage weighted): ``weights`` and ``token_weights`` [], ``top1_weight`` / ``weight_entropy``
    null, so the leaderboard's means leave the question out.
    """

    METHOD = "rag-ensemble-entropy"
    EXTRA_ARGS = {
        "entropy_temperature": Arg(ENTROPY_TAU, number_at_least(0.0, strict=True), "τ in softmax(−H_j/τ), nats (larger: closer to uniform)"),
    }

    def _branches(self, doc: Any, context: str, budget: int, kind: str | None = None) -> tuple[list[Encoded], dict]:
        encs, _, trace = self.per_passage_branches(doc, context, budget, kind)
        return encs, trace

    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        encs, trace = self._branches(doc, context, budget, kind)
        return EntropyEnsembleRule([e.ids for e in encs], self.resolved_config["entropy_temperature"]), trace

    def finish_trace(self, rule: EntropyEnsembleRule, trace: dict) -> dict:
        return {**trace, **weights_trace([] if trace.get("closed_book") else rule.weights)}

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        encs, trace = self._branches(doc, context, budget_check(cont, budget, self.METHOD), kind)
        tau = self.resolved_config["entropy_temperature"]

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            lps = torch.stack([f.logprobs for f in forced])  # (k, C, V)
            # position by position: float64 (k, C, V) or (C, V) temporaries would not fit for long rolling windows
            ws = [entropy_weights(lps[:, i], tau) for i in range(len(cont))]
            ll, greedy = 0.0, True
            for i, (w, tok) in enumerate(zip(ws, cont)):
                comb = product_of_experts_logprobs(lps[:, i], w)  # (V,) float64
                ll += float(comb[tok])
                greedy = greedy and int(comb.argmax()) == tok
            return ll, greedy, {**trace, **weights_trace([] if trace.get("closed_book") else ws)}

        return ScorePlan([e.ids for e in encs], cont, finish)
