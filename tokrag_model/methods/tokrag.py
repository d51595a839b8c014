"""``tokrag``: Tok-RAG (Xu et al., ICLR 2025, arXiv 2406.00944) — token-level collaboration of the pure
and the RAG branch; the lm-eval class, its per-step rule, teacher-forced scoring and its formulas.

Both branches are decoded in lock-step (one batched forward pass per step); at every token the benefit
``S_R`` and the detriment ``S_L`` of the retrieved text are compared by representation similarity and the
RAG or the pure branch's greedy token is emitted; both branches continue from it. Source: the paper and
the authors' code ``dola_greedy_decode_multi_ids``; spec: ../shared/docs/tokrag_method.md §3.3–3.6:

* ``e_R = Σ_{u ∈ top-2(P_R)} P_R(u)·E[u]``, ``e_L = Σ_{v ∈ top-3(P_L)} P_L(v)·E[v]`` (input embeddings E);
* anchors: the 3 passage positions with the largest head-averaged attention of the last query at the
  fusion layer, skipping punctuation/digit/space/special tokens; windows ``j−2 … j+1``;
* ``S_R = max(0, max_{w ∈ windows} cos(e_R, E[w]))`` (initialised at 0 as in the code), ``S_L = cos(e_R, e_L)``;
* emit the RAG branch's greedy token iff ``rate·S_R > S_L`` (paper Eq. 19 with the code's ``rate``),
  otherwise the pure branch's.

Layout: the formulas as small pure functions (unit-tested on toy distributions), :class:`TokRAGParams`
/ :class:`TokRAGScorer` (the rule at one position), :class:`TokRAGRule` (generation),
:class:`TeacherForced` / :func:`tokrag_token_scores` (teacher forcing: ``loglikelihood`` and
``tokrag analyze``), and the lm-eval model :class:`TokRAGLM`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F

from retrieval.errors import ConfigError

from ..args import Arg, layer_spec, to_bool
from ..base import RAGMethodLM, ScorePlan, budget_check
from ..decoder import Batch, Forced, Forcing, MultiContextDecoder, js_mean

# ------------------------------------------------------------------------------------------ formulas
# Words the authors' bypass list accepts without a test (their LLaMA strings, lower-cased).
BYPASS_WORDS = frozenset({"the", "a", "an", "query", "for", "in", "on", "at"})


def _is_punct_or_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in {"P", "S"}


def normalise_token(text: str) -> str:
    """Token text without the tokenizer's space markers (``▁`` SentencePiece, ``Ġ``/``Ċ`` byte-level BPE) and whitespace."""
    return text.replace("\u2581", " ").replace("\u0120", " ").replace("\u010a", "\n").strip()


def is_function_token(text: str, special: bool = False) -> bool:
    """Tokenizer-agnostic version of the authors' bypass list (§3.3 step 2).

    True for special tokens, empty/whitespace, tokens made only of punctuation/symbols (brackets,
    quotes, ``:``, ``-``, ``.``, ``]:``...), and the words the, a, an, query, for, in, on, at (any case).
    """
    if special:
        return True
    s = normalise_token(text)
    if not s:
        return True
    if all(_is_punct_or_symbol(c) for c in s):
        return True
    return s.lower() in BYPASS_WORDS


def is_skip_token(text: str, special: bool = False) -> bool:
    """Tokenizer-agnostic version of the authors' anchor skip list (§3.3 step 3).

    True for special tokens, empty/whitespace, and tokens made only of digits and punctuation
    (``0``–``9``, ``.``, ``'``, ``)``, ``-``, ``]``, ``]:``, ``:``...).
    """
    if special:
        return True
    s = normalise_token(text)
    if not s:
        return True
    return all(c.isdigit() or _is_punct_or_symbol(c) for c in s)


def select_anchors(attn: torch.Tensor, skip: Callable[[int], bool], n_anchors: int = 3) -> list[int]:
    """Positions of the ``n_anchors`` largest attention weights whose token is not skipped.

    Args:
        attn: (n_R,) head-averaged attention over the passage tokens.
        skip: position -> True when the token at that position is on the skip list.
    Returns:
        up to ``n_anchors`` positions in descending attention order (ties: lower position first).
        The whole span is ranked (the authors' top-100 cut fails below 100 tokens, §3.9.2).
    """
    order = torch.argsort(attn, descending=True, stable=True).tolist()
    out: list[int] = []
    for j in order:
        if not skip(j):
            out.append(int(j))
            if len(out) == n_anchors:
                break
    return out


def window_positions(anchors: Sequence[int], n_r: int, left: int = 2, right: int = 1) -> list[int]:
    """Union of the windows ``j−left … j+right`` (clipped to ``[0, n_r−1]``) around each anchor, sorted."""
    pos: set[int] = set()
    for j in anchors:
        pos.update(range(max(0, j - left), min(n_r - 1, j + right) + 1))
    return sorted(pos)


def weighted_embedding(probs: torch.Tensor, emb: torch.Tensor, top: int) -> tuple[torch.Tensor, list[int]]:
    """``Σ_{u ∈ top-k(probs)} probs[u]·emb[u]`` -> ((d,), the top-k ids). ``probs`` (V,) are probabilities."""
    p, idx = torch.topk(probs, top)
    return (p.unsqueeze(-1) * emb[idx].float()).sum(0), idx.tolist()


def tokrag_scores(p_rag: torch.Tensor, p_pure: torch.Tensor, emb: torch.Tensor, window_ids: Sequence[int],
                  rag_top: int = 2, pure_top: int = 3) -> tuple[float, float]:
    """``(S_R, S_L)`` of tokrag_method.md §3.3 steps 4–6.

    Args:
        p_rag, p_pure: (V,) next-token probabilities of the RAG and pure branches.
        emb: (V, d) input word-embedding table.
        window_ids: token ids at the window positions (may be empty: then ``S_R = 0``).
    Returns:
        S_R = max(0, max_w cos(e_R, E[w])), S_L = cos(e_R, e_L); unitless cosines in [-1, 1].
    """
    e_r, _ = weighted_embedding(p_rag.float(), emb, rag_top)
    e_l, _ = weighted_embedding(p_pure.float(), emb, pure_top)
    s_l = float(F.cosine_similarity(e_r, e_l, dim=0))
    s_r = 0.0
    if len(window_ids):
        w = emb[torch.as_tensor(list(window_ids), device=emb.device)].float()
        s_r = max(0.0, float(F.cosine_similarity(w, e_r.unsqueeze(0), dim=1).max()))
    return s_r, s_l


def tokrag_choose_rag(s_r: float, s_l: float, rate: float = 1.0) -> bool:
    """Benefit beats detriment (emit the RAG token) iff ``rate·S_R > S_L`` (paper Eq. 19, strict)."""
    return rate * s_r > s_l


def dynamic_layer(gaps: Callable[[int], float], n_layers: int, min_layer: int, fallback: int,
                  threshold: float = 5e-7) -> tuple[int, bool]:
    """The authors' JS-gap rule ``get_dynamic_layer`` (tokrag_method.md §3.4 (A)).

    Scan adjacent logit-lens pairs ``(ℓ, ℓ+1)``, ℓ = min_layer+1 … n_layers−1 in increasing order;
    ``gaps(ℓ) = JS_RAG(ℓ, ℓ+1) − JS_pure(ℓ, ℓ+1)``. Return ``(ℓ − 1, True)`` for the first ℓ with
    ``gap > threshold``, else ``(fallback, False)``. ``gaps`` is called lazily, so callers can stop
    computing logit lenses at the first hit.
    """
    for ell in range(min_layer + 1, n_layers):
        if gaps(ell) > threshold:
            return ell - 1, True
    return fallback, False


def resolve_layer(spec: str | int | float, n_layers: int) -> int:
    """A fixed layer argument -> a 0-based decoder layer index (negative ints count from the top; fractions of depth)."""
    if isinstance(spec, float):
        return min(n_layers - 1, max(0, int(round(spec * n_layers))))
    idx = int(spec)
    if idx < 0:
        idx += n_layers
    if not 0 <= idx < n_layers:
        raise ValueError(f"layer={spec} is outside the model's {n_layers} layers (0..{n_layers - 1})")
    return idx


# ----------------------------------------------------------------------------------- the rule per step
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

    def decide(self, lp_rag: torch.Tensor, lp_pure: torch.Tensor, rag_ids: list[int], span: tuple[int, int],
               attention: Callable[[int], torch.Tensor], h_rag: torch.Tensor | None, h_pure: torch.Tensor | None,
               position: int, force_score: bool = False) -> TokenDecision:
        """The §3.3 rule at one position.

        Args:
            lp_rag, lp_pure: (V,) next-token log-probs of the two branches.
            rag_ids: tokens of the RAG sequence; the retrieved span is ``rag_ids[start:end]`` with
                ``span = (start, end)`` (:attr:`tokrag_model.prompt.Encoded.span`: ``(0, n_R)`` for a
                plain prompt, inside the first user turn for a chat prompt). Anchors and their windows
                are taken inside the span only.
            attention: layer -> (≥ end,) head-averaged attention of the RAG query at that layer.
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
        start, end = span
        if end > start:
            a = attention(layer)[start:end]
            anchors = select_anchors(a, lambda j: self.is_skip(rag_ids[start + j]), self.p.n_anchors)
            pos = window_positions(anchors, end - start, self.p.window_left, self.p.window_right)
            win_ids = [rag_ids[start + j] for j in pos]
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



# ---------------------------------------------------------------------------------------- generation
class TokRAGRule:
    """Tok-RAG generation: rows = [RAG prompt, pure prompt]; the emitted token extends both."""

    needs_hidden = True

    def __init__(self, scorer: TokRAGScorer, rag_ids: list[int], span: tuple[int, int], pure_ids: list[int]) -> None:
        self.scorer = scorer
        self.rag_ids, self.span, self.pure_ids = rag_ids, span, pure_ids
        self.decisions: list[TokenDecision] = []

    def rows(self) -> list[list[int]]:
        return [self.rag_ids, self.pure_ids]

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        r, l = rows
        d = self.scorer.decide(
            batch.logprobs[r], batch.logprobs[l], batch.ids[r], self.span,
            lambda layer: dec.last_query_attention(batch, r, layer),
            batch.hidden[:, r] if batch.hidden is not None else None,
            batch.hidden[:, l] if batch.hidden is not None else None,
            step,
        )
        self.decisions.append(d)
        return d.token



# ---------------------------------------------------------------------------------- teacher forcing
class TeacherForced:
    """The RAG and pure branches teacher-forced once on their prompt + the same continuation (tokrag_method.md §5.3).

    Built by :meth:`run`, or from the two branches' :class:`~tokrag_model.decoder.Forced` of a batched pass
    (``loglikelihood``). ``lp_rag``/``lp_pure`` (C, V) float32: next-token log-probs (nats) that predict
    ``cont_ids[i]``; ``hs_rag`` (L+1, C, d) and ``hs_pure`` (or None): hidden states at the same query
    positions; ``keys_rag``: per layer the RAG sequence's keys (kv_heads, T, head_dim); ``rag_seq``: RAG
    prompt + continuation ids. :meth:`decide` applies a
    :class:`TokRAGScorer` at one position; several scorers (layer policies) can share one run.
    """

    def __init__(self, dec: MultiContextDecoder, rag_ids: list[int], cont_ids: list[int], rag: Forced, pure: Forced) -> None:
        self.dec = dec
        self.cont_ids = list(cont_ids)
        self.rag_seq = list(rag_ids) + self.cont_ids
        self.lp_rag, self.hs_rag, self.keys_rag = rag.logprobs, rag.hidden, rag.keys
        self.lp_pure, self.hs_pure = pure.logprobs, pure.hidden
        base = len(rag_ids) - 1
        self.positions = torch.arange(base, base + len(cont_ids))  # (C,) query positions in rag_seq
        self._attention: dict[int, torch.Tensor] = {}

    @classmethod
    @torch.inference_mode()
    def run(cls, dec: MultiContextDecoder, rag_ids: list[int], pure_ids: list[int], cont_ids: list[int],
            hidden_pure: bool) -> "TeacherForced":
        """Both branches in one teacher-forced pass (the RAG branch with its hidden states and keys, for the
        attention rows); ``hidden_pure``: keep the pure branch's hidden states (dynamic layer)."""
        rag, pure = dec.teacher_force([Forcing(rag_ids, cont_ids, hidden=True, keys=True),
                                       Forcing(pure_ids, cont_ids, hidden=hidden_pure)])
        return cls(dec, rag_ids, cont_ids, rag, pure)

    def attention(self, layer: int) -> torch.Tensor:
        """(C, T) head-averaged attention of every continuation query at ``layer``, causal (keys ≤ the
        query), computed for all positions in one call and kept (the rows of the per-position call)."""
        if layer not in self._attention:
            keys = self.keys_rag[layer][:, : int(self.positions[-1]) + 1]
            self._attention[layer] = self.dec.attention_probs(layer, self.hs_rag[layer], self.positions, keys,
                                                              causal_limit=self.positions)
        return self._attention[layer]

    @torch.inference_mode()
    def decide(self, scorer: TokRAGScorer, i: int, span: tuple[int, int], force_score: bool) -> TokenDecision:
        """The §3.3 rule at continuation position ``i`` (retrieved span ``span = (start, end)`` of the RAG
        prompt); ``logp_*`` = log-prob
        (nats) of the gold ``cont_ids[i]`` under each branch."""
        dyn = scorer.fixed_layer is None
        d = scorer.decide(self.lp_rag[i], self.lp_pure[i], self.rag_seq, span, lambda layer: self.attention(layer)[i],
                          self.hs_rag[:, i] if dyn else None, self.hs_pure[:, i] if dyn else None, i,
                          force_score=force_score)
        gold = self.cont_ids[i]
        d.logp_rag, d.logp_pure = float(self.lp_rag[i, gold]), float(self.lp_pure[i, gold])
        return d


def tokrag_token_scores(dec: MultiContextDecoder, scorer: TokRAGScorer, rag_ids: list[int], span: tuple[int, int],
                        pure_ids: list[int], cont_ids: list[int], score_all: bool = True) -> list[TokenDecision]:
    """Teacher-forced Tok-RAG at every continuation position (the token-level benefit/detriment study).

    Both branches are run once on their prompt + ``cont_ids`` (:class:`TeacherForced`, tokrag_method.md
    §5.3); at position i the rule of §3.3 is applied to the two next-token distributions that predict
    ``cont_ids[i]``, with the attention of the RAG query at that position over the retrieved span
    ``rag_ids[start:end]`` (``span``; causal: keys ≤ the query) at the fixed or dynamic layer.

    Args:
        rag_ids: RAG prompt ids; span: its retrieved span ``(start, end)`` (:attr:`Encoded.span`); pure_ids: pure prompt ids; cont_ids: the text
            scored (≥ 1 token). ``score_all``: compute S_R/S_L at every position (also where the two
            greedy tokens agree or the bypass fires; the ``branch`` field still follows the rule).
    Returns:
        one :class:`TokenDecision` per continuation token with ``token`` = the branch's greedy token,
        ``logp_rag``/``logp_pure`` = log-prob (nats) of the *gold* ``cont_ids[i]`` under each branch.
    """
    if not cont_ids:
        return []
    tf = TeacherForced.run(dec, rag_ids, pure_ids, cont_ids, hidden_pure=scorer.fixed_layer is None)
    return [tf.decide(scorer, i, span, force_score=score_all) for i in range(len(cont_ids))]


# ---------------------------------------------------------------------------------------- lm-eval model
class TokRAGLM(RAGMethodLM):
    """``tokrag``: Tok-RAG (Xu et al., ICLR 2025) token-level collaboration of the pure and RAG branches.

    At each step both branches are decoded in one batched forward pass; the RAG branch's greedy token
    is emitted iff ``rate·S_R > S_L`` (tokrag_method.md §3.3), the emitted token extends both.
    Function tokens bypass the test; when both branches agree no test is needed (the emitted token is
    the same). See :class:`TokRAGParams` for every constant.
    """

    METHOD = "tokrag"
    EXTRA_ARGS = {
        "layer": Arg("dynamic", layer_spec, "fusion layer: dynamic (JS-gap rule) | int index | fraction of depth"),
        "rate": Arg(1.0, float, "decision multiplier: RAG iff rate*S_R > S_L"),
        "n_anchors": Arg(3, int, "attended passage positions kept"),
        "window_left": Arg(2, int, "window tokens left of an anchor"),
        "window_right": Arg(1, int, "window tokens right of an anchor"),
        "rag_top": Arg(2, int, "RAG top tokens in e_R"),
        "pure_top": Arg(3, int, "pure top tokens in e_L"),
        "js_threshold": Arg(5e-7, float, "JS-gap threshold (vocabulary-averaged JS, nats/V)"),
        "js_min_layer": Arg(10 / 32, float, "JS scan starts above this fraction of depth"),
        "layer_fallback": Arg(20 / 32, float, "layer when the JS rule finds none (fraction of depth or int)"),
        "bypass": Arg(True, to_bool, "accept function tokens from the RAG branch without a test"),
        "always_score": Arg(False, to_bool, "compute S_R/S_L also when both branches agree (trace only)"),
    }

    def setup(self) -> None:
        self._func_cache: dict[int, bool] = {}
        self._skip_cache: dict[int, bool] = {}
        c = self.resolved_config
        fb = c["layer_fallback"]
        params = TokRAGParams(layer=c["layer"], rate=c["rate"], n_anchors=c["n_anchors"], window_left=c["window_left"],
                              window_right=c["window_right"], rag_top=c["rag_top"], pure_top=c["pure_top"],
                              js_threshold=c["js_threshold"], js_min_layer=c["js_min_layer"],
                              layer_fallback=int(fb) if float(fb).is_integer() and fb >= 1 else float(fb),
                              bypass=c["bypass"], always_score=c["always_score"])
        try:
            self.decoder.check_attention_rows()  # a model whose attention rows cannot be recomputed fails here
            self.scorer = TokRAGScorer(self.decoder, params, self.token_text, self.is_function, self.is_skip)
        except ValueError as exc:
            raise ConfigError(f"--model tokrag: {exc}") from None
        self.params = params

    def is_function(self, tid: int) -> bool:
        """Token ``tid`` is on the bypass list (:func:`is_function_token`; cached)."""
        if tid not in self._func_cache:
            self._func_cache[tid] = is_function_token(*self.token_text(tid))
        return self._func_cache[tid]

    def is_skip(self, tid: int) -> bool:
        """Token ``tid`` is on the anchor skip list (:func:`is_skip_token`; cached)."""
        if tid not in self._skip_cache:
            self._skip_cache[tid] = is_skip_token(*self.token_text(tid))
        return self._skip_cache[tid]

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        rag = self.encode_rag(doc, context, budget)
        pure = self.encode_pure(context, budget)
        return TokRAGRule(self.scorer, rag.ids, rag.span, pure.ids), {"passages": rag.kept, "dropped": rag.dropped}

    def finish_trace(self, rule: TokRAGRule, trace: dict) -> dict:
        trace["tokens"] = [d.compact() for d in rule.decisions]
        trace["n_rag"] = sum(d.branch == "rag" for d in rule.decisions)
        trace["n_pure"] = sum(d.branch == "pure" for d in rule.decisions)
        return trace

    def token_scores(self, doc: Any, context: str, continuation: str) -> list[TokenDecision]:
        """Teacher-forced per-position Tok-RAG decisions for ``continuation`` (see
        :func:`tokrag_token_scores`); S_R/S_L computed at every position."""
        context, continuation = self.split_context(context, continuation)
        cont = self.cont_ids(context, continuation)
        b = budget_check(cont, self.max_length, self.METHOD)
        rag = self.encode_rag(doc, context, b)
        pure = self.encode_pure(context, b)
        return tokrag_token_scores(self.decoder, self.scorer, rag.ids, rag.span, pure.ids, cont, score_all=True)

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int) -> ScorePlan:
        b = budget_check(cont, budget, self.METHOD)
        rag = self.encode_rag(doc, context, b)
        pure = self.encode_pure(context, b)
        dyn = self.scorer.fixed_layer is None

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            tf = TeacherForced(self.decoder, rag.ids, cont, forced[0], forced[1])
            decs = [tf.decide(self.scorer, i, rag.span, force_score=self.params.always_score) for i in range(len(cont))]
            ll = sum(d.logp_rag if d.branch == "rag" else d.logp_pure for d in decs)
            greedy = all(d.token == g for d, g in zip(decs, cont))
            return float(ll), greedy, {"passages": rag.kept, "dropped": rag.dropped, "tokens": [d.compact() for d in decs]}

        return ScorePlan([rag.ids, pure.ids], cont, finish, hidden=[True, dyn], keys=[True, False])