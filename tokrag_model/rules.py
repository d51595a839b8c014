"""The decision rules of the methods as small pure functions (unit-tested on toy distributions).

Tok-RAG (Xu et al., ICLR 2025, arXiv 2406.00944; authors' code ``dola_greedy_decode_multi_ids``;
``docs``: tokrag_method.md §3.3–3.6):

* ``e_R = Σ_{u ∈ top-2(P_R)} P_R(u)·E[u]``, ``e_L = Σ_{v ∈ top-3(P_L)} P_L(v)·E[v]`` (input embeddings E);
* anchors: the 3 passage positions with the largest head-averaged attention of the last query at the
  fusion layer, skipping punctuation/digit/space/special tokens; windows ``j−2 … j+1``;
* ``S_R = max(0, max_{w ∈ windows} cos(e_R, E[w]))`` (initialised at 0 as in the code), ``S_L = cos(e_R, e_L)``;
* emit the RAG branch's greedy token iff ``rate·S_R > S_L`` (paper Eq. 19 with the code's ``rate``),
  otherwise the pure branch's.

REPLUG (Shi et al., NAACL 2024, §3): ``p(y) = Σ_i w_i p_i(y)`` with ``w = softmax(s/τ)`` — a probability
mixture (log-sum-exp of log-probs), not logit pooling. Self-RAG-style filter: ``r = P(Yes)/(P(Yes)+P(No))``.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

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


def relevance_ratio(logp_yes: float, logp_no: float) -> float:
    """``r = P(Yes)/(P(Yes)+P(No))`` from the two log-probs (nats); 0.5 when both are -inf."""
    if logp_yes == -math.inf and logp_no == -math.inf:
        return 0.5
    m = max(logp_yes, logp_no)
    a, b = math.exp(logp_yes - m), math.exp(logp_no - m)
    return a / (a + b)


def filter_by_relevance(ratios: Sequence[float], threshold: float = 0.5) -> list[int]:
    """Indices of the passages kept: ``r ≥ threshold`` (inclusive); empty list = answer closed-book."""
    return [i for i, r in enumerate(ratios) if r >= threshold]
