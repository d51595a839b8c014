"""The five methods as short rules over the shared decoder, plus teacher-forced scoring.

Generation rules (``rows()`` = the request's branch prompts; ``choose()`` = the next token):
* :class:`SingleBranch` — ``rag-none`` (pure context) and ``rag-standard`` (RAG context).
* :class:`TokRAGRule` — pure + RAG branches, token-level switch (tokrag_method.md §3.3–3.6).
* :class:`ReplugRule` — one branch per passage, probability mixture (REPLUG §3).
* ``rag-selfrag-filter`` runs its critic first, then decodes a :class:`SingleBranch`.

Teacher-forced scoring: :func:`branch_logprobs` (any branch), :class:`TeacherForced` (both Tok-RAG
branches run once, the rule applied per position, shared by ``tokrag analyze``'s layer policies) and
:func:`tokrag_token_scores` (one policy at every position, used by ``loglikelihood``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch

from .decoder import Batch, MultiContextDecoder, js_mean
from .rules import (
    dynamic_layer,
    mixture_logprobs,
    resolve_layer,
    select_anchors,
    tokrag_choose_rag,
    tokrag_scores,
    window_positions,
)


@dataclass(frozen=True)
class TokRAGParams:
    """Every Tok-RAG constant (defaults = the authors' collaborative decoder, tokrag_method.md §3.7).

    ``layer``: ``"dynamic"`` (JS-gap rule, §3.4 A), an int layer index, or a fraction of the depth.
    ``layer_fallback``/``js_min_layer``: fractions of depth (20/32 and 10/32 for a 32-layer model).
    ``js_threshold``: on the authors' vocabulary-averaged JS scale (nats / V).
    ``always_score``: also compute S_R/S_L when both branches agree on the greedy token (the emitted
    token is the same either way; only the trace differs).
    """

    layer: str | int | float = "dynamic"
    rate: float = 1.0
    n_anchors: int = 3
    window_left: int = 2
    window_right: int = 1
    rag_top: int = 2
    pure_top: int = 3
    js_threshold: float = 5e-7
    js_min_layer: float = 10 / 32
    layer_fallback: float = 20 / 32
    bypass: bool = True
    always_score: bool = False


@dataclass
class TokenDecision:
    """One Tok-RAG decision. ``branch``: 'rag' | 'pure'; ``reason``: 'agree' (same greedy token),
    'bypass' (function token), 'test' (``rate·S_R > S_L`` evaluated). Scores are cosines, ``logp_*`` nats."""

    position: int
    token: int
    branch: str
    reason: str
    s_r: float | None = None
    s_l: float | None = None
    layer: int | None = None
    layer_dynamic: bool | None = None
    top1_rag: int | None = None
    top1_pure: int | None = None
    logp_rag: float | None = None
    logp_pure: float | None = None

    def compact(self) -> list:
        """``[branch initial, S_R, S_L, layer]`` rounded (the --log_samples trace of one token)."""
        b = {"rag": "R", "pure": "L"}[self.branch] + ("=" if self.reason == "agree" else "b" if self.reason == "bypass" else "")
        r = (lambda x: None if x is None else round(float(x), 4))
        return [b, r(self.s_r), r(self.s_l), self.layer]

    def as_dict(self) -> dict:
        return asdict(self)


class TokRAGScorer:
    """Shared Tok-RAG machinery for generation steps and teacher forcing (one per model).

    Args:
        dec: the shared decoder; ``token_text(id) -> (text, is_special)`` for the bypass/skip lists
        (cached by the caller).
    """

    def __init__(self, dec: MultiContextDecoder, params: TokRAGParams, token_text: Callable[[int], tuple[str, bool]],
                 is_function: Callable[[int], bool], is_skip: Callable[[int], bool]) -> None:
        self.dec = dec
        self.p = params
        self.token_text = token_text
        self.is_function = is_function
        self.is_skip = is_skip
        n = dec.n_layers
        self.fixed_layer = None if params.layer == "dynamic" else resolve_layer(params.layer, n)
        self.min_layer = int(round(params.js_min_layer * n)) if isinstance(params.js_min_layer, float) else int(params.js_min_layer)
        self.fallback = resolve_layer(params.layer_fallback, n)

    def layer_for(self, h_rag: torch.Tensor | None, h_pure: torch.Tensor | None) -> tuple[int, bool | None]:
        """Fusion layer for one position; ``h_*`` (L+1, d) hidden states of the two branches there."""
        if self.fixed_layer is not None:
            return self.fixed_layer, None
        dec = self.dec
        n = dec.n_layers
        cache: dict[int, float] = {}
        chunk = 4

        def gaps(ell: int) -> float:
            if ell not in cache:
                hi = min(n, ell + chunk)
                idx = list(range(ell, hi + 1))
                hr = h_rag[idx]
                hp = h_pure[idx]
                logits = dec.logit_lens(torch.cat([hr, hp]))
                lr, lp = logits[: len(idx)], logits[len(idx):]
                js_r = js_mean(lr[:-1], lr[1:])
                js_p = js_mean(lp[:-1], lp[1:])
                for i, e in enumerate(idx[:-1]):
                    cache[e] = float(js_r[i] - js_p[i])
            return cache[ell]

        return dynamic_layer(gaps, n, self.min_layer, self.fallback, self.p.js_threshold)

    def decide(self, lp_rag: torch.Tensor, lp_pure: torch.Tensor, rag_ids: list[int], n_ctx: int,
               attention: Callable[[int], torch.Tensor], h_rag: torch.Tensor | None, h_pure: torch.Tensor | None,
               position: int, force_score: bool = False) -> TokenDecision:
        """The §3.3 rule at one position.

        Args:
            lp_rag, lp_pure: (V,) next-token log-probs of the two branches.
            rag_ids: tokens of the RAG sequence; the retrieved span is ``[0, n_ctx)``.
            attention: layer -> (≥ n_ctx,) head-averaged attention of the RAG query at that layer.
            h_rag, h_pure: (L+1, d) hidden states at this position (dynamic layer only).
        """
        g_r, g_l = int(lp_rag.argmax()), int(lp_pure.argmax())
        d = TokenDecision(position, g_r, "rag", "test", top1_rag=g_r, top1_pure=g_l)
        score = force_score or self.p.always_score
        if g_r == g_l and not score:
            d.reason = "agree"
            return d
        if self.p.bypass and self.is_function(g_r) and not score:
            d.reason = "bypass"
            return d
        layer, hit = self.layer_for(h_rag, h_pure)
        d.layer, d.layer_dynamic = layer, hit
        s_r = 0.0
        emb = self.dec.embed
        if n_ctx > 0:
            a = attention(layer)[:n_ctx]
            anchors = select_anchors(a, lambda j: self.is_skip(rag_ids[j]), self.p.n_anchors)
            pos = window_positions(anchors, n_ctx, self.p.window_left, self.p.window_right)
            win_ids = [rag_ids[j] for j in pos]
        else:
            win_ids = []
        s_r, s_l = tokrag_scores(lp_rag.exp(), lp_pure.exp(), emb, win_ids, self.p.rag_top, self.p.pure_top)
        d.s_r, d.s_l = s_r, s_l
        if g_r == g_l:
            d.reason = "agree"
        elif self.p.bypass and self.is_function(g_r):
            d.reason = "bypass"
        elif not tokrag_choose_rag(s_r, s_l, self.p.rate):
            d.branch, d.token = "pure", g_l
        return d


# ---------------------------------------------------------------------------------------------- rules
class SingleBranch:
    """Greedy decoding of one branch (``rag-none``: pure prompt; ``rag-standard``/filter: RAG prompt)."""

    needs_hidden = False

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def rows(self) -> list[list[int]]:
        return [self.ids]

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        return int(batch.logprobs[rows[0]].argmax())


class TokRAGRule:
    """Tok-RAG generation: rows = [RAG prompt, pure prompt]; the emitted token extends both."""

    needs_hidden = True

    def __init__(self, scorer: TokRAGScorer, rag_ids: list[int], n_ctx: int, pure_ids: list[int]) -> None:
        self.scorer = scorer
        self.rag_ids, self.n_ctx, self.pure_ids = rag_ids, n_ctx, pure_ids
        self.decisions: list[TokenDecision] = []

    def rows(self) -> list[list[int]]:
        return [self.rag_ids, self.pure_ids]

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        r, l = rows
        d = self.scorer.decide(
            batch.logprobs[r], batch.logprobs[l], batch.ids[r], self.n_ctx,
            lambda layer: dec.last_query_attention(batch, r, layer),
            batch.hidden[:, r] if batch.hidden is not None else None,
            batch.hidden[:, l] if batch.hidden is not None else None,
            step,
        )
        self.decisions.append(d)
        return d.token


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


# ---------------------------------------------------------------------------------- teacher forcing
def branch_logprobs(dec: MultiContextDecoder, prompt: list[int], cont: list[int], hidden: bool = False
                    ) -> tuple[torch.Tensor, torch.Tensor | None, Any]:
    """Teacher-forced next-token log-probs at the continuation positions.

    Returns:
        lp (C, V) float32 where ``lp[i]`` is the distribution that predicts ``cont[i]``; hidden
        (L+1, C, d) at the same query positions (or None); the KV cache of ``prompt + cont``.
    """
    lp, hs, cache = dec.forward_full(prompt + cont, hidden=hidden)
    sl = slice(len(prompt) - 1, len(prompt) - 1 + len(cont))
    return lp[sl], (hs[:, sl] if hs is not None else None), cache


class TeacherForced:
    """The RAG and pure branches teacher-forced once on their prompt + the same continuation (tokrag_method.md §5.3).

    Built by :meth:`run`. ``lp_rag``/``lp_pure`` (C, V) float32: next-token log-probs (nats) that predict
    ``cont_ids[i]``; ``hs_rag`` (L+1, C, d) and ``hs_pure`` (or None): hidden states at the same query
    positions; ``rag_seq``: RAG prompt + continuation ids. :meth:`decide` applies a
    :class:`TokRAGScorer` at one position; several scorers (layer policies) can share one run.
    """

    def __init__(self, dec: MultiContextDecoder, rag_ids: list[int], cont_ids: list[int], lp_rag: torch.Tensor,
                 hs_rag: torch.Tensor, cache_rag: Any, lp_pure: torch.Tensor, hs_pure: torch.Tensor | None) -> None:
        self.dec = dec
        self.cont_ids = list(cont_ids)
        self.rag_seq = list(rag_ids) + self.cont_ids
        self.lp_rag, self.hs_rag, self.cache_rag = lp_rag, hs_rag, cache_rag
        self.lp_pure, self.hs_pure = lp_pure, hs_pure
        base = len(rag_ids) - 1
        self.positions = torch.arange(base, base + len(cont_ids))  # (C,) query positions in rag_seq
        self._attention: dict[int, torch.Tensor] = {}

    @classmethod
    @torch.inference_mode()
    def run(cls, dec: MultiContextDecoder, rag_ids: list[int], pure_ids: list[int], cont_ids: list[int],
            hidden_pure: bool) -> "TeacherForced":
        """One forward pass per branch; ``hidden_pure``: keep the pure branch's hidden states (dynamic layer)."""
        lp_r, hs_r, cache_r = branch_logprobs(dec, rag_ids, cont_ids, hidden=True)
        lp_l, hs_l, _ = branch_logprobs(dec, pure_ids, cont_ids, hidden=hidden_pure)
        return cls(dec, rag_ids, cont_ids, lp_r, hs_r, cache_r, lp_l, hs_l)

    def attention(self, layer: int) -> torch.Tensor:
        """(C, T) head-averaged attention of every continuation query at ``layer``, causal (keys ≤ the
        query), computed for all positions in one call and kept (the rows of the per-position call)."""
        if layer not in self._attention:
            keys = self.cache_rag.layers[layer].keys[0, :, : int(self.positions[-1]) + 1]
            self._attention[layer] = self.dec.attention_probs(layer, self.hs_rag[layer], self.positions, keys,
                                                              causal_limit=self.positions)
        return self._attention[layer]

    @torch.inference_mode()
    def decide(self, scorer: TokRAGScorer, i: int, n_ctx: int, force_score: bool) -> TokenDecision:
        """The §3.3 rule at continuation position ``i`` (retrieved span ``[0, n_ctx)``); ``logp_*`` = log-prob
        (nats) of the gold ``cont_ids[i]`` under each branch."""
        dyn = scorer.fixed_layer is None
        d = scorer.decide(self.lp_rag[i], self.lp_pure[i], self.rag_seq, n_ctx, lambda layer: self.attention(layer)[i],
                          self.hs_rag[:, i] if dyn else None, self.hs_pure[:, i] if dyn else None, i,
                          force_score=force_score)
        gold = self.cont_ids[i]
        d.logp_rag, d.logp_pure = float(self.lp_rag[i, gold]), float(self.lp_pure[i, gold])
        return d


def tokrag_token_scores(dec: MultiContextDecoder, scorer: TokRAGScorer, rag_ids: list[int], n_ctx: int,
                        pure_ids: list[int], cont_ids: list[int], score_all: bool = True) -> list[TokenDecision]:
    """Teacher-forced Tok-RAG at every continuation position (the token-level benefit/detriment study).

    Both branches are run once on their prompt + ``cont_ids`` (:class:`TeacherForced`, tokrag_method.md
    §5.3); at position i the rule of §3.3 is applied to the two next-token distributions that predict
    ``cont_ids[i]``, with the attention of the RAG query at that position over the retrieved span
    ``[0, n_ctx)`` (causal: keys ≤ the query) at the fixed or dynamic layer.

    Args:
        rag_ids: RAG prompt ids (retrieved span first); pure_ids: pure prompt ids; cont_ids: the text
            scored (≥ 1 token). ``score_all``: compute S_R/S_L at every position (also where the two
            greedy tokens agree or the bypass fires; the ``branch`` field still follows the rule).
    Returns:
        one :class:`TokenDecision` per continuation token with ``token`` = the branch's greedy token,
        ``logp_rag``/``logp_pure`` = log-prob (nats) of the *gold* ``cont_ids[i]`` under each branch.
    """
    if not cont_ids:
        return []
    tf = TeacherForced.run(dec, rag_ids, pure_ids, cont_ids, hidden_pure=scorer.fixed_layer is None)
    return [tf.decide(scorer, i, n_ctx, force_score=score_all) for i in range(len(cont_ids))]
