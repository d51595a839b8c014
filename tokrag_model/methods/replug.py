"""``rag-replug``: REPLUG (Shi et al., NAACL 2024, arXiv 2301.12652, §3) — one branch per passage
(passage + task context), decoded in one batch; the next-token distribution is the probability mixture

    p(y | x) = Σ_i w_i · p(y | d_i, x),   w = softmax(s / τ)   (``uniform``: w_i = 1/k)

with ``s`` the retriever's scores of the k passages — a mixture of probabilities (log-sum-exp of
log-probs), not logit pooling. The lm-eval class, its per-step rule and the two formulas live here.

Scores and temperature come from the doc (issue 11.1): the tasks give every attached passage — noise and
counterfactual ones included — the score their retriever gives it for the question, and record the score
scale in ``doc["scored_by"]`` (:func:`retrieval.score_label`); τ is :data:`REPLUG_TAU` of that scale unless
the model argument ``replug_temperature`` sets it. In ``mixture`` mode a passage without a score is an
error naming the doc and the passage (never a silent 0, which gave inserted passages a weight of ~1e-5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from retrieval.errors import ConfigError, DataError

from ..args import Arg, choice, to_opt_float
from ..base import RAGMethodLM, ScorePlan, budget_check
from ..decoder import Batch, Forced, MultiContextDecoder
from ..prompt import Encoded

# Default REPLUG temperature per score scale (doc["scored_by"]; scores live on different scales): BM25
# scores differ by a few points between ranks (τ=1 keeps the top passage dominant but not one-hot), and so do
# DPR inner products; MiniLM-style cosines differ by ~0.01–0.1 (τ=0.05); reciprocal-rank-fusion scores by
# ~0.001 (τ=0.005). No default where the scale is not known in advance (pass replug_temperature): weighted hybrid
# fusion (scales mixed by alpha) and un-normalised dense inner products (``dense-ip``: l2_norm false or a non-DPR
# checkpoint under encoder_class dpr; ``dense`` is cosines only, retrieval.score_label). τ=0.05 on inner products
# of ~22 gave one passage all the weight on every question.
REPLUG_TAU = {"bm25": 1.0, "dpr": 1.0, "dense": 0.05, "hybrid-rrf": 0.005}
NO_DEFAULT_TAU = {
    "hybrid-weighted": "weighted hybrid fusion (alpha * BM25 + dense)",
    "dense-ip": "the dense retriever's raw inner products (l2_norm false, or an encoder_class=dpr checkpoint other "
                "than DPR's own)",
}


# ------------------------------------------------------------------------------------------ formulas
def positive_temperature(value: Any) -> float | None:
    """The ``replug_temperature`` caster: a finite number > 0, or None (the doc's default). Checked when the model
    arguments are read, before the weights load (it was checked in ``setup``, after the load)."""
    tau = to_opt_float(value)
    if tau is not None and tau <= 0:
        raise ValueError(f"replug_temperature must be > 0, got {tau:g}")
    return tau


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


def passage_scores(doc: Any, ctxs: Sequence[dict]) -> list[float]:
    """The retriever scores of ``ctxs`` (``score`` of each passage).

    Raises:
        DataError: a passage without a numeric score, naming the doc (``qid``) and the passage (docid, rank).
    """
    out = []
    for i, c in enumerate(ctxs):
        score = c.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            qid = doc.get("qid", "?") if isinstance(doc, dict) else "?"
            raise DataError(
                f"--model rag-replug (replug_mode=mixture): doc {qid!r}, passage {c.get('docid', '?')!r} (rank "
                f"{c.get('rank', i + 1)}) has no retriever score ({score!r}); the weights softmax(score/τ) need one "
                "for every passage: rebuild the docs with a tokrag retrieval task (it scores every attached passage), "
                "or use replug_mode=uniform"
            )
        out.append(float(score))
    return out


def doc_temperature(doc: Any, override: float | None) -> float:
    """τ for ``doc``: ``override`` (the ``replug_temperature`` model argument) when given, else
    :data:`REPLUG_TAU` of the doc's ``scored_by``.

    Raises:
        ConfigError: the doc records no ``scored_by``, or a scale without a default (:data:`NO_DEFAULT_TAU`:
            ``hybrid-weighted``, ``dense-ip``; or an unknown one) (one line, what to pass).
    """
    if override is not None:
        return float(override)
    scale = doc.get("scored_by") if isinstance(doc, dict) else None
    qid = doc.get("qid", "?") if isinstance(doc, dict) else "?"
    if scale is None:
        raise ConfigError(f"--model rag-replug: doc {qid!r} does not record which retriever scored its passages "
                          "(doc['scored_by']); pass replug_temperature=τ explicitly")
    if scale in NO_DEFAULT_TAU:
        raise ConfigError(f"--model rag-replug: no default temperature for scores from {scale!r} (doc {qid!r}; "
                          f"{NO_DEFAULT_TAU[scale]}: their scale depends on the settings); pass replug_temperature=τ "
                          "chosen for these scores, or replug_mode=uniform")
    if scale not in REPLUG_TAU:
        raise ConfigError(f"--model rag-replug: no default temperature for scores from {scale!r} (doc {qid!r}; "
                          f"defaults: {', '.join(f'{k}={v}' for k, v in REPLUG_TAU.items())}); pass replug_temperature=τ")
    return REPLUG_TAU[scale]


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
    (``replug_mode=mixture``) or ``w = 1/k`` (``uniform``). τ: ``replug_temperature`` when given, else the
    default of the doc's score scale (:func:`doc_temperature`, :data:`REPLUG_TAU`: bm25 1.0, dpr 1.0,
    dense 0.05, hybrid-rrf 0.005). The passages are those every method shows (the block rule of
    :meth:`~tokrag_model.base.RAGMethodLM.encode_per_passage`), one branch each. Trace: ``passages``, ``dropped``
    (docids dropped for the budget), ``weights``, ``top1_weight``, ``weight_entropy``
    (nats), ``tau``."""

    METHOD = "rag-replug"
    EXTRA_ARGS = {
        "replug_temperature": Arg(None, positive_temperature, "τ in softmax(score/τ) (default: from the doc's scored_by)",
                                  only_with=("replug_mode", "mixture")),
        "replug_mode": Arg("mixture", choice("mixture", "uniform"), "mixture | uniform"),
    }

    def _branches(self, doc: Any, context: str, budget: int) -> tuple[list[Encoded], torch.Tensor, dict]:
        encs, ctxs, dropped = self.encode_per_passage(doc, context, budget)
        if not encs:
            pure = self.encode_pure(context, budget)
            return [pure], torch.ones(1, dtype=torch.float64), {"passages": [], "dropped": dropped, "weights": [1.0],
                                                                "top1_weight": 1.0, "weight_entropy": 0.0, "tau": None,
                                                                "closed_book": True}
        c = self.resolved_config
        if c["replug_mode"] == "uniform":
            tau = None
            w = replug_weights([0.0] * len(ctxs), None, "uniform")
        else:
            tau = doc_temperature(doc, c["replug_temperature"])
            self.__dict__.setdefault("_taus_used", set()).add(tau)  # recorded only (resolved_values)
            w = replug_weights(passage_scores(doc, ctxs), tau, "mixture")
        top1, ent = weight_summary(w)
        trace = {"passages": [e.kept[0] for e in encs], "dropped": dropped, "weights": [round(float(x), 4) for x in w],
                 "top1_weight": round(top1, 4), "weight_entropy": round(ent, 4), "tau": tau}
        return encs, w, trace

    def resolved_values(self) -> dict[str, Any]:
        """``replug_temperature_resolved``: the τ the mixture weights used (``replug_temperature`` when given, else the
        default of the docs' ``scored_by``: :func:`doc_temperature`, e.g. 1.0 for BM25), a sorted list when docs of
        several score scales used several, None when no doc was weighted (``replug_mode=uniform``, or no request
        with passages yet). Under data parallelism, the τs this rank's docs used."""
        taus = sorted(self.__dict__.get("_taus_used", ()))
        return {"replug_temperature_resolved": None if not taus else taus[0] if len(taus) == 1 else taus}

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        encs, w, trace = self._branches(doc, context, budget)
        return ReplugRule([e.ids for e in encs], w), trace

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int) -> ScorePlan:
        encs, w, trace = self._branches(doc, context, budget_check(cont, budget, self.METHOD))

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            lps = torch.stack([f.logprobs for f in forced])  # (k, C, V)
            mix = torch.stack([mixture_logprobs(lps[:, i], w) for i in range(len(cont))])
            ll, greedy = self._sum_ll(mix, cont)
            return ll, greedy, trace

        return ScorePlan([e.ids for e in encs], cont, finish)
