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

import hashlib
import json
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from retrieval.errors import ConfigError

from ..args import Arg, int_at_least, layer_spec, number_at_least, refuse_float_one, to_bool, to_finite, to_opt_str
from ..base import RAGMethodLM, ScorePlan, budget_check, passages_trace
from ..decoder import Batch, Forced, Forcing, MultiContextDecoder

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------ formulas
# Words the authors' bypass list accepts without a test (their LLaMA strings, lower-cased).
BYPASS_WORDS = frozenset({"the", "a", "an", "query", "for", "in", "on", "at"})


def _is_punct_or_symbol(ch: str) -> bool:
    return unicodedata.category(ch)[0] in {"P", "S"}


END_TOKENS = frozenset({"</s>", "<eos>", "<|endoftext|>", "<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>"})
"""Special tokens that end a generation or a chat turn (with the tokenizer's ``eos_token``): not on the bypass
list (:meth:`TokenClasses.is_function`), as the authors' list has ``<s>`` but not ``</s>``."""


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


TOKEN_LISTS = ("generalised", "authors")
"""The bypass and anchor-skip lists a Tok-RAG model can decode with (model argument ``token_lists``,
:class:`TokenClasses`): ``generalised`` (the default, every committed row: :func:`is_function_token` /
:func:`is_skip_token`, tokrag_method.md §3.6 and §3.8 row 6 "keep, but make tokenizer-agnostic") or ``authors`` (the
authors' own strings, :data:`AUTHORS_BYPASS` / :data:`AUTHORS_SKIP`: :func:`is_authors_bypass_token` /
:func:`is_authors_skip_token`)."""

AUTHORS_BYPASS = frozenset({" ", "", "\u2581", ")", "-", "]:", "]", "}:", ":", "\u2581[", "\u2581the", "the", "a", "an",
                            "The", ".", "[", "'", "Query", "\u2581\"", "<s>", "for", "in", "on", "at"})
"""The authors' bypass strings (their ``filter_words``, its 25 distinct entries; xsc1234/Tok-RAG f78f1b30
``my_transformers/generation/utils.py``, ``dola_greedy_decode_multi_ids``, l. 2960-2964; tokrag_method.md §3.3 step 2).
They compare ``tokenizer.decode`` of the RAG branch's greedy token with them, case-sensitive: ``The`` is on it, ``A``,
``For``, ``,``, ``?``, ``!``, ``(``, ``;`` and ``"`` are not (:func:`is_authors_bypass_token`). A LLaMA ``decode`` of
one token writes no ``\u2581`` (it drops the piece's leading one, a further one reads as a space), so their entries
``\u2581``, ``\u2581[``, ``\u2581the`` act through ``''``, ``[``, ``the``, and ``\u2581"`` never matches: ``\u2581"`` decodes to
``"``, which is not on the list, so their decoder tests it."""

AUTHORS_SKIP = frozenset({"1", "2", "3", "4", "5", "6", "7", "8", "9", "0", ".", "<s>", "'", " ", ")", "-", "]:", "]", "}:",
                          ":", "", "\u2581", "\u2581["})
"""The authors' anchor-skip strings (their ``skip_words``, its 23 distinct entries; xsc1234/Tok-RAG f78f1b30
``my_transformers/generation/utils.py``, ``get_predict_emb_contrastive``, l. 2824-2825; tokrag_method.md §3.3 step 3),
compared with ``tokenizer.convert_ids_to_tokens`` of a passage token, i.e. its SentencePiece piece: single digits, not
``12``; ``\u2581[`` (a bracket after a space), not ``[`` (:func:`is_authors_skip_token`)."""


def sentencepiece_forms(text: str) -> tuple[str, str]:
    """A token's own text as the authors' LLaMA tokenizer wrote it: ``(piece, decoded)``.

    ``piece``: every space as SentencePiece's ``\u2581`` (``convert_ids_to_tokens``: ``' the'`` -> ``'\u2581the'``);
    ``decoded``: the text without one leading space (``decode`` of a lone piece drops its leading ``\u2581``:
    ``' the'`` -> ``'the'``, ``'  '`` -> ``' '``). Only the space marker is normalised (tokrag_method.md §3.6): no case
    folding, no other whitespace (a newline stays a newline). ``text`` is the token's own text with spaces as spaces
    (:meth:`TokenClasses.text`: byte-level BPE's ``\u0120`` and SentencePiece's ``\u2581`` both read as ``' '``).
    """
    return text.replace(" ", "\u2581"), text[1:] if text.startswith(" ") else text


def is_authors_bypass_token(text: str) -> bool:
    """The token of own text ``text`` is on the authors' bypass list (:data:`AUTHORS_BYPASS`; §3.3 step 2): its
    decoded form (:func:`sentencepiece_forms`: what their ``tokenizer.decode`` of the lone token gives) is one of their
    strings, case-sensitive. ``' the'``, ``'The'``, ``']:'``, ``' ['``, ``'  '`` are; ``','``, ``'?'``, ``'A'``,
    ``'0'``, a newline and ``' "'`` (decoded ``'"'``: their ``'\u2581"'`` entry never matches a decode) are not (they
    are tested). Before 2026-12-07 the piece was compared too, which bypassed ``' "'``.
    Special tokens are the caller's (:meth:`TokenClasses.is_function`: BOS is their ``<s>``)."""
    return sentencepiece_forms(text)[1] in AUTHORS_BYPASS


def is_authors_skip_token(text: str) -> bool:
    """The token of own text ``text`` is on the authors' anchor-skip list (:data:`AUTHORS_SKIP`; §3.3 step 3): its
    piece (:func:`sentencepiece_forms`) is one of their strings, case-sensitive. ``'0'``, ``'.'``, ``']:'``, ``' ['``,
    ``' '`` are; ``'12'``, ``','``, ``'?'``, ``'['``, ``' .'`` are not (they can be anchors)."""
    return sentencepiece_forms(text)[0] in AUTHORS_SKIP


def token_lists_choice(value: Any) -> str:
    """Model argument ``token_lists``: one of :data:`TOKEN_LISTS` (case and surrounding spaces ignored).

    Raises:
        ValueError: another value, naming the valid ones and the closest (``'generalized'`` -> did you mean
        ``'generalised'``?; ``'author'`` -> ``'authors'``).
    """
    from retrieval.errors import closest

    text = str(value).strip().lower()
    if text in TOKEN_LISTS:
        return text
    near = closest(text, TOKEN_LISTS, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise ValueError(f"expected one of {list(TOKEN_LISTS)}, got {value!r}{hint}")


_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _is_byte_level(tokenizer: Any) -> bool:
    """True for byte-level BPE tokenizers (GPT-2 style pieces such as ``Ġthe``)."""
    if hasattr(tokenizer, "byte_decoder"):  # slow GPT-2 style tokenizers
        return True
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    return '"ByteLevel"' in json.dumps(json.loads(backend.to_str()).get("decoder"))


class TokenClasses:
    """Bypass and skip classes of token ids, from each token's **own** string (cached per id).

    The own text comes from the token's bytes, not from decoding the lone id: byte-level BPE pieces are
    mapped back through the byte alphabet (``transformers.convert_slow_tokenizer.bytes_to_unicode``),
    SentencePiece byte-fallback pieces ``<0xNN>`` are that byte, other pieces are their text with ``▁`` read
    as a space. A token whose bytes are not complete UTF-8 (a fragment of a multi-byte character; 313 of
    SmolLM2's 49,152 tokens) is part of a content character: neither a function nor a skip token
    (decoding it alone gives U+FFFD, which the Unicode categories would call a symbol). Special tokens are
    both, except that tokens ending a generation are tested, not bypassed (:meth:`is_function`).

    ``lists`` (model argument ``token_lists``, :data:`TOKEN_LISTS`): ``generalised`` (default) classes the own text by
    :func:`is_function_token` / :func:`is_skip_token`; ``authors`` by the authors' strings
    (:func:`is_authors_bypass_token` / :func:`is_authors_skip_token`), where of the special tokens only the tokenizer's
    BOS (their ``<s>``) is bypassed and skipped: others are tested and can be anchors, as their decoded text is on
    neither list. On SmolLM2's 49,152 tokens ``generalised`` bypasses 1,296 and skips 1,268, ``authors`` 37 and 21, all
    inside the former (a newline, ``,``, ``?`` and ``A`` are bypassed, ``12`` skipped only by ``generalised``).

    Raises:
        ValueError: ``lists`` is not one of :data:`TOKEN_LISTS`.
    """

    def __init__(self, tokenizer: Any, lists: str = "generalised") -> None:
        if lists not in TOKEN_LISTS:
            raise ValueError(f"token lists {lists!r}: expected one of {list(TOKEN_LISTS)}")
        self.lists = lists
        self.tok = tokenizer
        self.bos = getattr(tokenizer, "bos_token_id", None)
        self.special = set(tokenizer.all_special_ids)
        self.end = {getattr(tokenizer, "eos_token_id", None)} | {tid for tid in self.special
                                              if tokenizer.convert_ids_to_tokens(int(tid)) in END_TOKENS}
        self.end.discard(None)
        self.inverse_bytes: dict[str, int] | None = None
        if _is_byte_level(tokenizer):
            from transformers.convert_slow_tokenizer import bytes_to_unicode

            self.inverse_bytes = {v: k for k, v in bytes_to_unicode().items()}
        self._text: dict[int, str | None] = {}
        self._function: dict[int, bool] = {}
        self._skip: dict[int, bool] = {}

    def token_bytes(self, tid: int) -> bytes:
        """The bytes token ``tid`` stands for (special tokens: their text)."""
        piece = self.tok.convert_ids_to_tokens(int(tid))
        if piece is None:
            return b""
        m = _BYTE_PIECE.fullmatch(piece)
        if m:
            return bytes([int(m.group(1), 16)])
        inv = self.inverse_bytes
        if inv is not None and tid not in self.special and all(c in inv for c in piece):
            return bytes(inv[c] for c in piece)
        return piece.replace("\u2581", " ").encode("utf-8")

    def text(self, tid: int) -> str | None:
        """Own text of token ``tid``, or None when its bytes are an incomplete UTF-8 fragment."""
        if tid not in self._text:
            try:
                self._text[tid] = self.token_bytes(tid).decode("utf-8")
            except UnicodeDecodeError:
                self._text[tid] = None
        return self._text[tid]

    def is_function(self, tid: int) -> bool:
        """On the bypass list (:func:`is_function_token` of the own text; fragments: False). Special tokens are,
        except those that end a generation (the tokenizer's EOS and :data:`END_TOKENS`): the authors' list holds
        ``<s>`` but not ``</s>`` (tokrag_method.md §3.3 step 2), so the test decides whether the answer ends where
        the RAG branch would stop and the pure branch would not. With ``lists="authors"``: the tokenizer's BOS or an own
        text on :data:`AUTHORS_BYPASS` (:func:`is_authors_bypass_token`), again not a token ending a generation."""
        if tid not in self._function:
            text = self.text(tid)
            if self.lists == "authors":
                listed = tid == self.bos or (text is not None and is_authors_bypass_token(text))
            else:
                listed = tid in self.special or (text is not None and is_function_token(text))
            self._function[tid] = tid not in self.end and listed
        return self._function[tid]

    def is_skip(self, tid: int) -> bool:
        """On the anchor skip list (:func:`is_skip_token` of the own text; fragments: False; special tokens: True). With
        ``lists="authors"``: the tokenizer's BOS or an own text on :data:`AUTHORS_SKIP` (:func:`is_authors_skip_token`)."""
        if tid not in self._skip:
            text = self.text(tid)
            if self.lists == "authors":
                self._skip[tid] = tid == self.bos or (text is not None and is_authors_skip_token(text))
            else:
                self._skip[tid] = tid in self.special or (text is not None and is_skip_token(text))
        return self._skip[tid]


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
                  rag_top: int = 2, pure_top: int = 3, floor: bool = True) -> tuple[float, float]:
    """``(S_R, S_L)`` of tokrag_method.md §3.3 steps 4–6.

    Args:
        p_rag, p_pure: (V,) next-token probabilities of the RAG and pure branches.
        emb: (V, d) input word-embedding table.
        window_ids: token ids at the window positions (may be empty: then ``S_R = 0``, or NaN unfloored).
        floor: ``S_R`` starts at 0 as in the authors' decoder; False: the plain max (their analysis script).
    Returns:
        S_R = max(0, max_w cos(e_R, E[w])), S_L = cos(e_R, e_L); unitless cosines in [-1, 1].
    """
    e_r, _ = weighted_embedding(p_rag.float(), emb, rag_top)
    e_l, _ = weighted_embedding(p_pure.float(), emb, pure_top)
    s_l = float(F.cosine_similarity(e_r, e_l, dim=0))
    s_r = 0.0 if floor else math.nan
    if len(window_ids):
        w = emb[torch.as_tensor(list(window_ids), device=emb.device)].float()
        best = float(F.cosine_similarity(w, e_r.unsqueeze(0), dim=1).max())
        s_r = max(0.0, best) if floor else best
    return s_r, s_l


def tokrag_choose_rag(s_r: float, s_l: float, rate: float = 1.0) -> bool:
    """Benefit beats detriment (emit the RAG token) iff ``rate·S_R > S_L`` (paper Eq. 19, strict)."""
    return rate * s_r > s_l


def midpoint_kl(logits_a: torch.Tensor, logits_b: torch.Tensor) -> torch.Tensor:
    """The divergence the authors' dynamic-layer code calls "JS": ``½·(KL(M‖p) + KL(M‖q)) / V`` with
    ``M = (p+q)/2``, ``p = softmax(logits_a)``, ``q = softmax(logits_b)``.

    Their ``dola`` code computes ``F.kl_div(log p, M)``, i.e. ``KL(M‖p)``, and **averages** over the V
    vocabulary entries (tokrag_method.md §3.4 (ii)); nats / V. It is *not* the Jensen–Shannon divergence
    ``½·(KL(p‖M) + KL(q‖M))`` (bounded by ln 2): the direction is reversed, so it is unbounded, and an
    audit found half of SmolLM2's values above ln2/V. Shapes (..., V) -> (...).
    """
    lp = torch.log_softmax(logits_a.float(), dim=-1)
    lq = torch.log_softmax(logits_b.float(), dim=-1)
    m = 0.5 * (lp.exp() + lq.exp())
    kl_p = F.kl_div(lp, m, reduction="none").mean(-1)
    kl_q = F.kl_div(lq, m, reduction="none").mean(-1)
    return 0.5 * (kl_p + kl_q)


@torch.inference_mode()
def layer_gaps(dec: MultiContextDecoder, h_rag: torch.Tensor, h_pure: torch.Tensor, layers: Sequence[int],
               chunk: int = 16) -> torch.Tensor:
    """The dynamic rule's gaps ``gap(ℓ) = D_RAG(ℓ, ℓ+1) − D_pure(ℓ, ℓ+1)`` for each ℓ in ``layers``, where
    ``D = midpoint_kl`` of the logit lenses (LM head on the un-normed residual stream, tokrag_method.md
    §3.4 (i)) of hidden states ℓ and ℓ+1.

    Args:
        h_rag, h_pure: (L+1, n, d) hidden states of n positions of each branch.
        layers: pair indices ℓ (0 ≤ ℓ < L).
    Returns:
        (n, len(layers)) float32, nats / V; positions are processed ``chunk`` at a time.
    """
    idx = sorted({x for ell in layers for x in (ell, ell + 1)})
    at = {x: i for i, x in enumerate(idx)}
    a = [at[ell] for ell in layers]
    b = [at[ell + 1] for ell in layers]
    out = []
    for s in range(0, h_rag.shape[1], chunk):
        lr = dec.logit_lens(h_rag[idx, s:s + chunk])  # (m, c, V)
        lp = dec.logit_lens(h_pure[idx, s:s + chunk])
        out.append((midpoint_kl(lr[a], lr[b]) - midpoint_kl(lp[a], lp[b])).T)
    return torch.cat(out) if out else torch.zeros(0, len(layers))


def dynamic_layer(gaps: Callable[[int], float], n_layers: int, min_layer: int, fallback: int,
                  threshold: float = 5e-7, eligible: Callable[[int], bool] | None = None) -> tuple[int, bool]:
    """The authors' JS-gap rule ``get_dynamic_layer`` (tokrag_method.md §3.4 (A)).

    Scan adjacent logit-lens pairs ``(ℓ, ℓ+1)``, ℓ = min_layer+1 … n_layers−1 in increasing order;
    ``gaps(ℓ) = D_RAG(ℓ, ℓ+1) − D_pure(ℓ, ℓ+1)`` (:func:`midpoint_kl`). Return ``(ℓ − 1, True)`` for
    the first ℓ with ``gap > threshold``, else ``(fallback, False)``. ``gaps`` is called lazily, so
    callers can stop computing logit lenses at the first hit. ``eligible``: decoder layer -> whether its
    attention sees the whole retrieved span (:func:`span_visible`); a pair whose layer ℓ−1 does not is
    skipped (its gap is never asked for). None: every layer (the authors' rule; their models have no
    sliding-window layers).
    """
    for ell in range(min_layer + 1, n_layers):
        if eligible is not None and not eligible(ell - 1):
            continue
        if gaps(ell) > threshold:
            return ell - 1, True
    return fallback, False


def span_visible(window: int | None, query_pos: int, span: tuple[int, int]) -> bool:
    """Whether a layer with sliding window ``window`` (None: full attention) lets the query at position
    ``query_pos`` attend to every token of the retrieved span ``[start, end)``.

    A sliding-window layer hides keys ``j`` with ``query_pos − j ≥ window`` (the model's own mask, as
    :meth:`MultiContextDecoder.attention_probs` applies it), so it sees the whole span iff
    ``query_pos − start < window``. On Gemma 3 (window 512 on every layer but each sixth) a passages block
    of more than about 500 tokens thus puts the top-ranked passages out of reach of the local layers:
    their attention row is 0 there and the anchors would come from the lowest-ranked passages only.
    An empty span is always visible.
    """
    start, end = span
    return window is None or end <= start or query_pos - start < window


def layer_or_fraction(value: Any) -> int | float:
    """Caster of ``js_min_layer`` / ``layer_fallback``: a value ≥ 1 (integral) or 0 is a layer index, a value
    in (0, 1) a fraction of the depth; anything else raises ValueError with a one-line reason. ``1.0`` (the float,
    or text ``1.0``, ``1e0``) is refused as for ``layer`` (:func:`tokrag_model.args.refuse_float_one`): before
    2026-12-07 it ran as layer index 1, near the bottom, where a fraction 1.0 means the top; ``1`` is layer 1."""
    if isinstance(value, bool):
        raise ValueError("expected an integer layer (>= 1) or a fraction of the depth in (0, 1)")
    refuse_float_one(value, "the top layer's index (the model's number of layers less 1)")
    try:
        num = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected an integer layer (>= 1) or a fraction of the depth in (0, 1), got {value!r}") from None
    if 0.0 < num < 1.0:
        return num
    if num >= 1.0 and num.is_integer() or num == 0.0:
        return int(num)
    raise ValueError(f"expected an integer layer (>= 1) or a fraction of the depth in (0, 1), got {value!r}")


def resolve_layer(spec: str | int | float, n_layers: int, name: str = "layer") -> int:
    """A layer argument -> a 0-based decoder layer index.

    A float in (0, 1) is a fraction of the depth (``round(spec·n_layers)``, at most ``n_layers−1``); an
    integer (or integral float) is a layer index, negative ones counting from the top.

    Raises:
        ValueError: ``<name>=<spec> ...`` when the layer lies outside the model or the value is neither.
    """
    if isinstance(spec, bool) or not isinstance(spec, (int, float)):
        raise ValueError(f"{name}={spec!r}: expected a layer index or a fraction of the depth in (0, 1)")
    if isinstance(spec, float) and 0.0 < spec < 1.0:
        return min(n_layers - 1, max(0, int(round(spec * n_layers))))
    if not float(spec).is_integer():
        raise ValueError(f"{name}={spec}: a value >= 1 is a layer index and must be an integer (fractions lie in (0, 1))")
    idx = int(spec)
    if idx < 0:
        idx += n_layers
    if not 0 <= idx < n_layers:
        raise ValueError(f"{name}={spec} is outside the model's {n_layers} layers (0..{n_layers - 1})")
    return idx


# ----------------------------------------------------------------------------------- the rule per step
@dataclass(frozen=True)
class TokRAGParams:
    """Every Tok-RAG constant (defaults = the authors' collaborative decoder, tokrag_method.md §3.7).

    ``layer``: a fraction of the depth (default 0.625: ``round(0.625·depth)``, the authors' fixed layer
    20 of 32), an int layer index, or ``"dynamic"`` (the JS-gap rule, §3.4 A: a labelled variant).
    ``layer_fallback``/``js_min_layer``: an int layer (a value ≥ 1) or a fraction of depth (defaults
    20/32 and 10/32, the authors' 20 and 10 of 32). ``js_threshold``: on the gap of :func:`midpoint_kl`
    (nats / V), the authors' 5e-7. ``anchor_ranks``: None (walk the attention ranking skipping the skip
    list, the decoder) or ``(a, b)``: the anchors are ranks a … b−1 of the ranking, no skip list (the
    analysis script's ``[2:7]``); ``floor_s_r``: S_R starts at 0 (decoder) or is the plain max.
    ``always_score``: also compute S_R/S_L when both branches agree on the greedy token (the emitted
    token is the same either way; only the trace differs). ``token_lists``: the bypass and anchor-skip lists
    (:data:`TOKEN_LISTS`, :class:`TokenClasses`: the model's token classes are built with it).
    """

    layer: str | int | float = 0.625
    rate: float = 1.0
    n_anchors: int = 3
    window_left: int = 2
    window_right: int = 1
    rag_top: int = 2
    pure_top: int = 3
    js_threshold: float = 5e-7
    js_min_layer: int | float = 10 / 32
    layer_fallback: int | float = 20 / 32
    bypass: bool = True
    token_lists: str = "generalised"
    always_score: bool = False
    anchor_ranks: tuple[int, int] | None = None
    floor_s_r: bool = True


ANALYSIS_LAYER_FRACTION = 0.5
ANALYSIS_PARAMS = TokRAGParams(layer=ANALYSIS_LAYER_FRACTION, rag_top=3, pure_top=3, window_left=0, window_right=0,
                               anchor_ranks=(2, 7), floor_s_r=False, bypass=False)
"""The constants of the authors' token-level analysis (``comparing_benefit_and_detriment.py``, WikiText-103):
attention layer 16 of 32 (half the depth), anchors = ranks 3–7 of the 10 most attended passage tokens with no
skip list and no window, ``e_R`` from the top-3 RAG tokens, ``S_R`` the plain max (tokrag_method.md §3.7)."""


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

    def compact(self, text: str | None = None) -> list:
        """``[branch, S_R, S_L, layer, token_text]`` rounded (the --log_samples trace of one token).

        ``branch``: ``R``/``L`` (RAG / pure token emitted after the test), ``R=`` (both branches agree),
        ``Rb`` (bypass); ``token_text``: the emitted token's text (readers must also accept the older
        4-element form without it)."""
        b = {"rag": "R", "pure": "L"}[self.branch] + ("=" if self.reason == "agree" else "b" if self.reason == "bypass" else "")
        r = (lambda x: None if x is None or math.isnan(x) else round(float(x), 4))
        return [b, r(self.s_r), r(self.s_l), self.layer, text]

    def as_dict(self) -> dict:
        return asdict(self)


_WARNED_SLIDING: set[tuple[int, int]] = set()


def check_tops(rag_top: int, pure_top: int, vocab_size: int) -> None:
    """``rag_top``/``pure_top`` (tokens averaged into ``e_R``/``e_L``) against a vocabulary of ``vocab_size`` tokens
    (the input embedding's rows; ``torch.topk`` fails above it).

    Raises:
        ValueError: ``rag_top=60000 exceeds the model's vocabulary of 49152 tokens`` (likewise ``pure_top``).
    """
    for name, top in (("rag_top", rag_top), ("pure_top", pure_top)):
        if top > vocab_size:
            raise ValueError(f"{name}={top} exceeds the model's vocabulary of {vocab_size} tokens")


class TokRAGScorer:
    """The Tok-RAG rule at one position, shared by generation steps and teacher forcing (one per policy).

    Args:
        dec: the shared decoder; ``params``: the constants; ``is_function``/``is_skip``: token id -> on
        the bypass / anchor skip list (:class:`TokenClasses`); ``warn_sliding``: log a warning (once per
        decoder and layer) when the fixed or fallback layer is a sliding-window layer.
    Raises:
        ValueError: a layer argument outside the model, or ``rag_top``/``pure_top`` above the vocabulary size
        (one line naming it).
    """

    def __init__(self, dec: MultiContextDecoder, params: TokRAGParams, is_function: Callable[[int], bool],
                 is_skip: Callable[[int], bool], warn_sliding: bool = True) -> None:
        self.dec = dec
        self.p = params
        self.is_function = is_function
        self.is_skip = is_skip
        n = dec.n_layers
        embed = getattr(dec, "embed", None)  # (V, d); toy decoders in tests have none
        if embed is not None:  # torch.topk failed at the first scored token
            check_tops(params.rag_top, params.pure_top, int(embed.shape[0]))
        self.fixed_layer = None if params.layer == "dynamic" else resolve_layer(params.layer, n)
        self.min_layer = resolve_layer(params.js_min_layer, n, "js_min_layer")
        self.fallback = resolve_layer(params.layer_fallback, n, "layer_fallback")
        self.windows: list[int | None] = list(getattr(dec, "windows", None) or [None] * n)
        chosen = self.fixed_layer if self.fixed_layer is not None else self.fallback
        if self.windows[chosen] is not None and warn_sliding and (id(dec), chosen) not in _WARNED_SLIDING:
            _WARNED_SLIDING.add((id(dec), chosen))
            full = [i for i, w in enumerate(self.windows) if w is None]
            log.warning("tokrag: %s layer %d is a sliding-window layer (window %d): with a prompt longer than that its "
                        "attention cannot see the first passages; the full-attention layers are %s",
                        "the fusion" if self.fixed_layer is not None else "the fallback", chosen, self.windows[chosen], full)

    def sees_span(self, layer: int, query_pos: int | None, span: tuple[int, int]) -> bool:
        """Whether ``layer``'s attention at ``query_pos`` covers the whole retrieved ``span`` (:func:`span_visible`;
        ``query_pos`` None: assumed to)."""
        return query_pos is None or span_visible(self.windows[layer], query_pos, span)

    def layer_for(self, h_rag: torch.Tensor | None, h_pure: torch.Tensor | None, query_pos: int | None = None,
                  span: tuple[int, int] = (0, 0)) -> tuple[int, bool | None]:
        """Fusion layer for one position; ``h_*`` (L+1, d) hidden states of the two branches there,
        ``query_pos`` the RAG query's position and ``span`` the retrieved span. The dynamic rule considers
        only layers whose attention sees the whole span there (:func:`dynamic_layer` ``eligible``); its
        gaps (:func:`layer_gaps`) are computed 4 eligible layer pairs at a time, up to the first hit."""
        if self.fixed_layer is not None:
            return self.fixed_layer, None
        n = self.dec.n_layers
        scan = [ell for ell in range(self.min_layer + 1, n) if self.sees_span(ell - 1, query_pos, span)]
        cache: dict[int, float] = {}

        def gaps(ell: int) -> float:
            if ell not in cache:
                at = scan.index(ell)
                todo = scan[at:at + 4]
                vals = layer_gaps(self.dec, h_rag.unsqueeze(1), h_pure.unsqueeze(1), todo)[0]
                cache.update({e: float(v) for e, v in zip(todo, vals)})
            return cache[ell]

        return dynamic_layer(gaps, n, self.min_layer, self.fallback, self.p.js_threshold,
                             lambda layer: self.sees_span(layer, query_pos, span))

    def window_ids(self, attn: torch.Tensor, rag_ids: Sequence[int], span: tuple[int, int]) -> list[int]:
        """Token ids of the matching-information support (§3.3 step 3).

        Args:
            attn: (≥ end,) head-averaged attention of the RAG query over its sequence.
            rag_ids: the RAG sequence; ``span``: the retrieved span ``[start, end)`` in it.
        """
        start, end = span
        if end <= start:
            return []
        a = attn[start:end]
        if self.p.anchor_ranks is None:
            anchors = select_anchors(a, lambda j: self.is_skip(rag_ids[start + j]), self.p.n_anchors)
        else:
            lo, hi = self.p.anchor_ranks
            anchors = torch.argsort(a, descending=True, stable=True)[lo:hi].tolist()
        pos = window_positions(anchors, end - start, self.p.window_left, self.p.window_right)
        return [rag_ids[start + j] for j in pos]

    def scores_at(self, lp_rag: torch.Tensor, lp_pure: torch.Tensor, rag_ids: Sequence[int], span: tuple[int, int],
                  attn: torch.Tensor) -> tuple[float, float]:
        """``(S_R, S_L)`` from (V,) log-probs of the two branches and the attention row ``attn`` of the fusion layer."""
        return tokrag_scores(lp_rag.exp(), lp_pure.exp(), self.dec.embed, self.window_ids(attn, rag_ids, span),
                             self.p.rag_top, self.p.pure_top, self.p.floor_s_r)

    def decide(self, lp_rag: torch.Tensor, lp_pure: torch.Tensor, rag_ids: list[int], span: tuple[int, int],
               attention: Callable[[int], torch.Tensor], h_rag: torch.Tensor | None, h_pure: torch.Tensor | None,
               position: int, force_score: bool = False, query_pos: int | None = None) -> TokenDecision:
        """The §3.3 rule at one position.

        Args:
            lp_rag, lp_pure: (V,) next-token log-probs of the two branches.
            rag_ids: tokens of the RAG sequence; the retrieved span is ``rag_ids[start:end]`` with
                ``span = (start, end)`` (:attr:`tokrag_model.prompt.Encoded.span`: ``(0, n_R)`` for a
                plain prompt, inside the first user turn for a chat prompt). Anchors and their windows
                are taken inside the span only.
            attention: layer -> (≥ end,) head-averaged attention of the RAG query at that layer.
            h_rag, h_pure: (L+1, d) hidden states at this position (dynamic layer only).
            query_pos: position of the RAG query in ``rag_ids`` (the dynamic rule skips layers whose sliding
                window does not reach the span's start from there; None: no layer is skipped).
            force_score: the teacher-forced rule (``loglikelihood``, :func:`tokrag_token_scores`): S_R/S_L at every
                position and, unless the bypass fires, the test picks the branch also where the two greedy tokens
                agree (``reason`` stays ``agree``): a score sums the chosen branch's log-prob of the gold token, and
                §3.3 has no agree shortcut. Without it (generation) agreeing positions are RAG untested: either
                branch emits that token (``always_score`` computes their S_R/S_L for the trace only).
        """
        g_r, g_l = int(lp_rag.argmax()), int(lp_pure.argmax())
        d = TokenDecision(position, g_r, "rag", "agree" if g_r == g_l else "test", top1_rag=g_r, top1_pure=g_l)
        score = force_score or self.p.always_score
        agree, bypass = g_r == g_l, self.p.bypass and self.is_function(g_r)
        if agree and not score:  # generation: either branch emits this token, the test cannot change it
            return d
        if bypass and not score:  # §3.3 step 2: a function token is accepted from the RAG branch untested
            d.reason = "bypass"
            return d
        layer, hit = self.layer_for(h_rag, h_pure, query_pos, span)
        d.layer, d.layer_dynamic = layer, hit
        s_r, s_l = self.scores_at(lp_rag, lp_pure, rag_ids, span, attention(layer))
        d.s_r, d.s_l = s_r, s_l
        if agree and not force_score:
            pass  # generation with always_score: scores traced, the agreed token labelled as without them
        elif bypass:
            d.reason = "bypass"
        elif not tokrag_choose_rag(s_r, s_l, self.p.rate):  # teacher-forced also where the greedy tokens agree: §3.3
            d.branch, d.token = "pure", g_l  # has no agree shortcut, and a score sums the chosen branch's log-prob
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
            step, query_pos=batch.lengths[r] - 1,
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
        self.base = len(rag_ids) - 1  # position of the query that predicts cont_ids[0]; cont_ids[i]: base + i
        # (C,) query positions in rag_seq, on the model's device (RoPE and the causal mask of attention_probs)
        self.positions = torch.arange(self.base, self.base + len(cont_ids), device=rag.logprobs.device)
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
            keys = self.keys_rag[layer][:, : self.base + len(self.cont_ids)]  # up to the last query (no device sync)
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
                          force_score=force_score, query_pos=self.base + i)
        gold = self.cont_ids[i]
        d.logp_rag, d.logp_pure = float(self.lp_rag[i, gold]), float(self.lp_pure[i, gold])
        return d

    @torch.inference_mode()
    def records(self, scorer: TokRAGScorer, span: tuple[int, int]) -> list[dict]:
        """Per continuation token, the fields of ``tasks.analyze.TokenRecord`` (the token-level study).

        Every token: gold id, top-1 of each branch, log-prob (nats) of the gold and of each top-1, and
        whether the RAG top-1 is a function token (``bypass``). Tokens whose greedy tokens differ (the
        only ones where the decision matters; a superset of the paper's strict tokens) also get
        ``s_l``, ``s_r`` at *every* decoder layer with ``scorer``'s constants, the dynamic rule's ``gaps``
        for the pairs ``scorer.min_layer+1 … L−1`` (None below), and ``(S_R, S_L)`` with the analysis
        constants :data:`ANALYSIS_PARAMS` (None when the span has fewer than 3 tokens). On a model with
        sliding-window layers they also get ``blind``: the layers whose attention cannot see the whole
        retrieved span from this query (:func:`span_visible`; their S_R is still recorded). Needs the pure
        branch's hidden states (``run(..., hidden_pure=True)``).
        """
        n = self.dec.n_layers
        top_r, top_l = self.lp_rag.argmax(-1).tolist(), self.lp_pure.argmax(-1).tolist()
        conf_r, conf_l = self.lp_rag.max(-1).values.tolist(), self.lp_pure.max(-1).values.tolist()
        differ = [i for i in range(len(self.cont_ids)) if top_r[i] != top_l[i]]
        scan = list(range(scorer.min_layer + 1, n))
        gaps = None
        if differ and scan:
            gaps = layer_gaps(self.dec, self.hs_rag[:, differ], self.hs_pure[:, differ], scan).tolist()
        analysis = TokRAGScorer(self.dec, ANALYSIS_PARAMS, scorer.is_function, scorer.is_skip, warn_sliding=False)
        row_of = {i: k for k, i in enumerate(differ)}
        out = []
        for i, gold in enumerate(self.cont_ids):
            rec: dict[str, Any] = {
                "position": i, "gold": int(gold), "logp_rag": float(self.lp_rag[i, gold]),
                "logp_pure": float(self.lp_pure[i, gold]), "top1_rag": top_r[i], "top1_pure": top_l[i],
                "conf_rag": conf_r[i], "conf_pure": conf_l[i], "bypass": bool(scorer.is_function(top_r[i])),
            }
            if i in row_of:
                lr, lp = self.lp_rag[i], self.lp_pure[i]
                s_r = []
                for layer in range(n):
                    sr, sl = scorer.scores_at(lr, lp, self.rag_seq, span, self.attention(layer)[i])
                    s_r.append(sr)
                a_r, a_l = analysis.scores_at(lr, lp, self.rag_seq, span, self.attention(analysis.fixed_layer)[i])
                g = [None] * n
                if gaps is not None:
                    for ell, v in zip(scan, gaps[row_of[i]]):
                        g[ell] = v
                rec.update(s_l=sl, s_r=s_r, gaps=g, analysis=None if math.isnan(a_r) else (a_r, a_l))
                if any(w is not None for w in scorer.windows):
                    q = self.base + i
                    rec["blind"] = [layer for layer in range(n) if not scorer.sees_span(layer, q, span)]
            out.append(rec)
        return out


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
PRESET_FORMAT = "tokrag-preset/1"
PRESET_PARAMS = ("layer", "js_threshold", "js_min_layer", "layer_fallback", "rate", "n_anchors", "window_left",
                 "window_right", "rag_top", "pure_top", "bypass", "token_lists")
"""Model arguments a preset may set (explicit model arguments override them; one of :data:`PRESET_SETTINGS` with a
WARNING, :func:`preset_override_warning`)."""
DYNAMIC_ONLY = ("js_threshold", "js_min_layer", "layer_fallback")
"""Model arguments that act only with ``layer=dynamic`` (the JS-gap rule); given with a fixed layer they are an error."""
PRESET_SETTINGS = ("rate", "n_anchors", "window_left", "window_right", "rag_top", "pure_top", "bypass", "token_lists")
"""The Tok-RAG settings a preset's layer or threshold was chosen under (they change ``S_R``, ``S_L``, the decisions or
the tokens tested). ``tokrag calibrate`` writes every one into the preset's ``params``, so a ``preset=PATH`` run applies
them; a model argument giving another value overrides it with a WARNING (:func:`preset_override_warning`).
A preset without one (written before 2026-12-05, as the two under leaderboards/presets/; ``token_lists`` before
2026-12-07) was calibrated with its default (:class:`TokRAGParams`: ``token_lists`` ``generalised``)."""


def preset_settings(preset: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`PRESET_SETTINGS` a preset (as :func:`read_preset` returns it) was calibrated under: each from its
    ``params`` (cast as the model argument), else the default (:class:`TokRAGParams`: older presets record none)."""
    params, d = preset.get("params") or {}, TokRAGParams()
    return {key: TokRAGLM.EXTRA_ARGS[key].cast(params[key]) if params.get(key) is not None else getattr(d, key)
            for key in PRESET_SETTINGS}


def preset_settings_conflict(preset: Mapping[str, Any], values: Mapping[str, Any], keys: Iterable[str] = PRESET_SETTINGS
                             ) -> str | None:
    """``n_anchors=1 (this run: 3), bypass=False (this run: True; a setting its params lack: the default)``: the
    ``keys`` (of :data:`PRESET_SETTINGS`) whose value in ``values`` (the run's, key -> value; a key missing there is
    not compared) differs from the preset's (:func:`preset_settings`), each a key its ``params`` lack (older presets)
    marked as the default; None when none does. Such a run is warned of (:func:`preset_override_warning`) or, in
    ``tokrag analyze --preset`` (records scored under other settings), refused: the preset's layer or threshold
    was chosen under its own settings (on SmolLM2 a preset calibrated with ``n_anchors=1,rag_top=5,bypass=false``
    chose layer 2; the same dev samples under the defaults choose layer 26)."""
    made, params = preset_settings(preset), preset.get("params") or {}
    diff = [f"{key}={made[key]!r} (this run: {values[key]!r}"
            f"{'; a setting its params lack: the default' if params.get(key) is None else ''})"
            for key in keys if key in values and values[key] != made[key]]
    return ", ".join(diff) or None


def preset_override_warning(preset: Mapping[str, Any] | None, cfg: Mapping[str, Any], given: Mapping[str, Any]
                            ) -> str | None:
    """One WARNING line when model arguments given explicitly (``given``: key -> value as given) override
    :data:`PRESET_SETTINGS` the preset was calibrated under with other values (``cfg``: the resolved config,
    :meth:`TokRAGLM.resolve_args`); None without a preset or such an argument. :meth:`TokRAGLM.setup` logs it.

    ``preset=P: calibrated with n_anchors=1 (this run: 3; a setting its params lack: the default); its params
    {'layer': 2} were chosen under those settings, so they may not suit this run's: drop n_anchors from the model
    arguments (the preset applies its own), or calibrate a preset with them (tokrag calibrate --model M --split dev
    --model-args n_anchors=3)``.
    """
    if preset is None:
        return None
    explicit = {k: cfg[k] for k in PRESET_SETTINGS if given.get(k) is not None and k in cfg}
    conflict = preset_settings_conflict(preset, explicit)
    if not conflict:
        return None
    made = preset_settings(preset)
    keys = [k for k in explicit if explicit[k] != made[k]]
    chosen = {k: v for k, v in (preset.get("params") or {}).items() if k not in PRESET_SETTINGS}
    return (f"preset={preset.get('path')}: calibrated with {conflict}; its "
            f"params {chosen} were chosen under those settings, so they may not suit this run's: drop {', '.join(keys)} "
            f"from the model arguments (the preset applies its own), or calibrate a preset with them (tokrag calibrate "
            f"--model {cfg.get('pretrained') or 'MODEL'} --split dev --model-args "
            f"{','.join(f'{k}={given[k]}' for k in keys)})")


def preset_unused_dynamic(preset: Mapping[str, Any], lm_eval: bool = True) -> str | None:
    """The refusal (one line, from ``preset=PATH:``) of a preset whose ``params`` set :data:`DYNAMIC_ONLY`
    arguments while its ``layer`` is a fixed one (absent: the default fixed layer), as the same arguments given
    explicitly are refused; None when they have an effect (``layer: dynamic``) or there are none. Such a preset applies
    under an explicit ``layer=dynamic`` model argument (or another explicit layer), which its caller checks first.

    Args:
        preset: the preset as :func:`read_preset` returns it (``path``: the file named).
        lm_eval: the fix offers ``layer=dynamic`` in the model arguments (False: ``tokrag analyze --preset``, whose
            calibrated row follows the preset's params alone, offers only the preset's own ``params.layer``).
    """
    params = preset.get("params") or {}
    unused = [key for key in DYNAMIC_ONLY if params.get(key) is not None]
    layer = params.get("layer", TokRAGParams().layer)
    if not unused or layer == "dynamic":
        return None
    which = f"the preset's layer={layer!r}" if "layer" in params else f"layer={layer!r} (the default: the preset sets none)"
    add = "add layer=dynamic to the model arguments (or set params.layer to \"dynamic\" in the preset)" if lm_eval else \
        "set params.layer to \"dynamic\" in the preset"
    return f"preset={preset.get('path')}: " + no_effect_message("params", unused, which, add, " from the preset")


def no_effect_message(what: str, keys: Sequence[str], layer: str, add: str, drop_from: str = "") -> str:
    """``<what> js_threshold, layer_fallback have no effect with <layer> (a fixed fusion layer); <add> to use them, or
    drop them<drop_from>`` (``has``/``it`` for one key): the refusal of :data:`DYNAMIC_ONLY` arguments beside a fixed
    layer, given explicitly (:meth:`TokRAGLM.resolve_args`) or by a preset (:func:`preset_unused_dynamic`)."""
    verb, them = ("has", "it") if len(keys) == 1 else ("have", "them")
    return (f"{what} {', '.join(keys)} {verb} no effect with {layer} (a fixed fusion layer); {add} to use {them}, "
            f"or drop {them}{drop_from}")


def calibrate_hint(pretrained: str | None = None) -> str:
    """``use a preset calibrated for this model (tokrag calibrate --model M --split dev)``: the fix of a preset made
    for another model (``M``: ``pretrained`` when known)."""
    return f"use a preset calibrated for this model (tokrag calibrate --model {pretrained or 'MODEL'} --split dev)"


def preset_split_error(preset: Mapping[str, Any]) -> str | None:
    """Why ``preset`` (a parsed preset file) records calibration data of another split than dev, or None:
    ``calibration.data.<name>.split is 'test', not 'dev'`` for its first such data set (``tokrag calibrate`` refuses
    ``--split test`` and writes dev records only, so such a preset was edited by hand or written by other code). A data
    entry without ``split`` (older presets) and a ``calibration``/``data`` of another shape are not judged here.
    Raises nothing."""
    cal = preset.get("calibration")
    data = cal.get("data") if isinstance(cal, dict) else None
    for name, cfg in (data.items() if isinstance(data, dict) else ()):
        split = cfg.get("split", "dev") if isinstance(cfg, dict) else "dev"  # not recorded: not judged (older presets)
        if split != "dev":
            return f"calibration.data.{name}.split is {split!r}, not 'dev'"
    return None


def read_preset(path: str | Path, fingerprint: str | None = None, n_layers: int | None = None,
                pretrained: str | None = None, files_fingerprint: str | None = None, *,
                check_split: bool = True) -> dict:
    """Load and check a preset file written by ``tokrag calibrate`` (:func:`write_preset`).

    ``pretrained`` (the model it is to be used with) only completes the fix the depth and model-files messages give.
    ``files_fingerprint``: the model's :attr:`~tokrag_model.base.RAGMethodLM.files_fingerprint` (config, generation
    config, tokenizer, chat template, remote code), checked against the preset's ``model.files_fingerprint`` when
    both are given (presets written before it was recorded have none and are not refused for it).

    Returns:
        the preset dict (``format``, ``method``, ``model`` {pretrained, fingerprint, files_fingerprint, n_layers,
        dtype}, ``model_info`` (the model's :meth:`~tokrag_model.base.RAGMethodLM.get_model_info` at calibration:
        versions, fingerprints, machine; absent from older presets), ``params``, ``calibration``) plus ``path`` and
        ``sha256`` of the file; ``params.layer`` as the ``layer`` model argument reads it (``"Dynamic"`` ->
        ``"dynamic"``, ``"14"`` -> 14).
    Raises:
        ConfigError: a missing or malformed file (``model`` or ``calibration`` not an object; valid JSON past Python's
            digit or recursion limit, :func:`retrieval.io.json_limit_error`, a traceback before), unknown params or
        values, or a preset made for other
        weights (``fingerprint``), other model files (``files_fingerprint``: ``preset=PATH: calibrated with other
        model files (config, tokenizer, chat template: model.files_fingerprint X), this model's are Y; use a preset
        calibrated for this model (...)``) or another depth (``n_layers``: ``preset=PATH: made for 18 layers, this
        model has 30; use a preset calibrated for this model (tokrag calibrate --model M --split dev)``; a preset
        that does not record its depth as an integer says so); with ``check_split`` (the default), a preset whose
        ``calibration.data`` records a split other than dev (:func:`preset_split_error`: ``preset=PATH:
        calibration.data.wiki.split is 'test', not 'dev': a preset is chosen on dev questions only ...``); before,
        ``lm_eval --model tokrag --model_args preset=PATH`` ran such a preset without a word (``tokrag analyze
        --preset`` passes False and refuses it in its own words, :func:`tasks.analyze.check_preset_before_load`).
    """
    from retrieval.corpus import user_path

    where = f"preset={path}"
    path = user_path(path, "preset")[0]  # ~ expanded, as for every path a user types
    try:
        raw = path.read_bytes()
    except OSError as exc:
        rel = "" if path.is_absolute() else f" (a relative path is read from the current directory: {path.resolve()})"
        raise ConfigError(f"{where}: cannot read it ({exc.strerror}){rel}; give the preset's path, or write one with "
                          "'tokrag calibrate --split dev'") from None
    try:
        preset = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not JSON (not UTF-8 text); write one with 'tokrag calibrate --split dev'") from None
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit (a traceback)
        from retrieval.io import json_limit_error

        raise ConfigError(str(json_limit_error(exc, where, whole_file=True))) from None
    if not isinstance(preset, dict) or preset.get("format") != PRESET_FORMAT or not isinstance(preset.get("params"), dict):
        raise ConfigError(f"{where}: not a tokrag preset (expected format {PRESET_FORMAT!r} with a 'params' object)")
    unknown = sorted(set(preset["params"]) - set(PRESET_PARAMS))
    if unknown:
        raise ConfigError(f"{where}: unknown params {unknown}; a preset may set {', '.join(PRESET_PARAMS)}")
    for key, value in preset["params"].items():
        try:
            cast = TokRAGLM.EXTRA_ARGS[key].cast(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigError(f"{where}: params.{key}={value!r} is invalid: {exc}") from None
        if key == "layer":  # "Dynamic", "14": read as the model argument reads them (resolve_args casts alike)
            preset["params"]["layer"] = cast
    if preset.get("method") not in (None, "tokrag"):  # absent or null: an older preset, read as tokrag's
        raise ConfigError(f"{where}: a preset for method {preset.get('method')!r}; tokrag presets are for --model tokrag "
                          "(method 'tokrag'); write one with 'tokrag calibrate --split dev'")
    for key in ("model", "calibration"):
        if preset.get(key) is not None and not isinstance(preset[key], dict):
            raise ConfigError(f"{where}: {key!r} is {preset[key]!r}, not an object; write the preset with 'tokrag "
                              "calibrate --split dev'")
    split = preset_split_error(preset) if check_split else None
    if split:  # tuned on the questions a run may score: refused as tokrag calibrate --split test is
        raise ConfigError(f"{where}: {split}: a preset is chosen on dev questions only (test questions are never used "
                          "for tuning), so its params may be fitted to the questions this run scores; write one with "
                          "'tokrag calibrate --split dev'")
    model = preset.get("model") or {}
    if fingerprint is not None and model.get("fingerprint") != fingerprint:
        raise ConfigError(f"{where}: calibrated for other weights (pretrained={model.get('pretrained')!r}, fingerprint "
                          f"{model.get('fingerprint')}), this model's fingerprint is {fingerprint}: run tokrag calibrate for it")
    made_files = model.get("files_fingerprint")
    if files_fingerprint is not None and made_files is not None and made_files != files_fingerprint:
        raise ConfigError(f"{where}: calibrated with other model files (config, generation config, tokenizer, chat "
                          f"template or remote code: model.files_fingerprint {made_files}), this model's are "
                          f"{files_fingerprint}; {calibrate_hint(pretrained or model.get('pretrained'))}")
    if n_layers is not None:
        made = model.get("n_layers")
        if made is None:
            raise ConfigError(f"{where}: does not record the number of layers it was made for (model.n_layers), this "
                              f"model has {n_layers}; {calibrate_hint(pretrained)}")
        if isinstance(made, bool) or not isinstance(made, int):
            raise ConfigError(f"{where}: model.n_layers is {made!r} ({type(made).__name__}), not a number of layers "
                              f"(an integer), this model has {n_layers}; {calibrate_hint(pretrained)}")
        if made != n_layers:
            raise ConfigError(f"{where}: made for {made} layers, this model has {n_layers}; "
                              f"{calibrate_hint(pretrained)}")
    return {**preset, "path": str(path), "sha256": hashlib.sha256(raw).hexdigest()}


class ResolvedArgs(dict):
    """Model arguments as :meth:`TokRAGLM.resolve_args` resolved them (a dict, key -> value) that also records
    ``from_preset``: the keys whose value the preset set, its params that were not given explicitly. An argument given
    explicitly is never in it, even with the preset's value. The record is an attribute, not a key: the values are
    all that a run records (``resolved_config``) and the leaderboard compares (``check_distinct_methods``), since an
    explicit ``layer=12`` and a preset's layer 12 run the same.

    The record survives :meth:`copy`, :func:`copy.copy`, :func:`copy.deepcopy` and pickling; ``dict(args)``,
    ``{**args}`` and ``args | other`` make a plain dict without it, and where it is needed (a config with a
    ``preset``: :meth:`TokRAGLM.check_shape`, :func:`preset_note`) a plain dict is refused (:func:`require_resolved`)
    rather than guessed from the values, which named an explicit argument equal to the preset's as the preset's."""

    def __init__(self, values: Mapping[str, Any], from_preset: Iterable[str] = ()) -> None:
        super().__init__(values)
        self.from_preset = frozenset(from_preset)

    def copy(self) -> "ResolvedArgs":
        """A shallow copy with the same ``from_preset`` (``dict.copy`` returned a plain dict without it)."""
        return ResolvedArgs(self, self.from_preset)


def require_resolved(cfg: Mapping[str, Any], where: str) -> None:
    """Refuse a config with a ``preset`` that does not record which arguments the preset set (``cfg.from_preset``:
    a :class:`ResolvedArgs` as :meth:`TokRAGLM.resolve_args` returns it), where ``where`` needs to tell them from
    arguments given explicitly. A config without a preset needs no record.

    Raises:
        TypeError: a plain mapping with a preset (a programming error: ``dict(...)`` or ``{**...}`` of the resolved
        arguments dropped the record), naming ``where``.
    """
    if cfg.get("preset") and not isinstance(getattr(cfg, "from_preset", None), frozenset):
        raise TypeError(f"{where}: the config sets preset={cfg['preset']!r} but is a {type(cfg).__name__} without the "
                        "record of which arguments the preset set (dict(...), {**...} or | of the ResolvedArgs that "
                        "TokRAGLM.resolve_args returns drop it); pass resolve_args's result, or its .copy()")


def preset_note(message: str, cfg: Mapping[str, Any], preset: dict | None) -> str:
    """``; it comes from preset=PATH (params.layer): ...`` when the preset ``preset`` (as :func:`read_preset` returns
    it) set the argument a shape error ``message`` names (``layer=45 is outside ...``, ``rag_top=60000 exceeds ...``),
    else ``""``: a preset's own layer was reported as if given. Who set it is read from ``cfg.from_preset``
    (:class:`ResolvedArgs`, what :meth:`TokRAGLM.resolve_args` returns): an argument given explicitly is reported as
    given even when it equals the preset's value.

    Raises:
        TypeError: ``cfg`` sets a preset but has no ``from_preset`` record (:func:`require_resolved`).
    """
    require_resolved(cfg, "preset_note")
    key = message.partition("=")[0]
    if preset is None or key not in preset.get("params", {}) or key not in TokRAGLM.EXTRA_ARGS:
        return ""
    if key not in getattr(cfg, "from_preset", ()):
        return ""  # given explicitly, over the preset or with its value
    return (f"; it comes from preset={preset['path']} (params.{key}): {calibrate_hint(cfg.get('pretrained'))}, "
            f"or give {key}= explicitly")


def _calibration_nq(preset: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The preset's record of its QA calibration data (``calibration.data.nq``: ``apply_chat_template``, ``prompt``,
    ...); None when it has none or a hand-edited record is of another shape."""
    cal = (preset or {}).get("calibration")
    data = cal.get("data") if isinstance(cal, dict) else None
    nq = data.get("nq") if isinstance(data, dict) else None
    return nq if isinstance(nq, dict) else None


def preset_prompt_mismatch(preset: Mapping[str, Any] | None, chat_applied: bool, prompts: Iterable[str],
                           pretrained: str | None = None, cli: str = "lm_eval") -> str | None:
    """How this run's QA prompt format differs from the one the preset was calibrated with, as one WARNING line;
    None when it does not (or the preset does not record it). The preset records its QA data's format in
    ``calibration.data.nq``: ``apply_chat_template`` (``tokrag calibrate --apply-chat-template``) and ``prompt``
    (``--prompt instruct|base``); its layer / threshold were chosen on prompts of that format.

    Args:
        preset: the preset as :func:`read_preset` returns it.
        chat_applied: this run renders its QA prompts with the chat template (lm-eval's ``--apply_chat_template``,
            ``tokrag analyze --apply-chat-template``).
        prompts: the QA prompt formats of this run's QA requests (lm-eval: the task metadata ``prompt``; empty: no
            QA request, nothing to compare the chat template with either: wiki continuations are calibrated as plain
            text).
        cli: whose flags the line names: ``lm_eval`` (``--apply_chat_template``, task metadata ``prompt``) or
            ``analyze`` (``tokrag analyze``'s and ``benchmarks/tokrag_analysis.py``'s ``--apply-chat-template``,
            ``--prompt``).
    """
    nq = _calibration_nq(preset)
    prompts = sorted(set(prompts))
    if not isinstance(nq, dict) or not prompts:
        return None
    if cli not in ("lm_eval", "analyze"):
        raise ValueError(f"cli={cli!r}: expected 'lm_eval' or 'analyze'")
    chat_flag = "--apply_chat_template" if cli == "lm_eval" else "--apply-chat-template"
    run = "lm_eval " if cli == "lm_eval" else ""
    diffs, fix = [], []
    cal_chat = nq.get("apply_chat_template")
    if isinstance(cal_chat, bool) and cal_chat != bool(chat_applied):
        diffs.append("it was calibrated with the chat template (tokrag calibrate --apply-chat-template), this run's "
                     f"prompts are plain ({run}without {chat_flag})" if cal_chat else
                     "it was calibrated on plain prompts (tokrag calibrate without --apply-chat-template), this run "
                     f"renders them with the chat template ({run}{chat_flag})")
        fix.append(chat_flag if cal_chat else f"no {chat_flag}")
    cal_prompt = nq.get("prompt")
    other = [p for p in prompts if p != cal_prompt]
    if isinstance(cal_prompt, str) and other:
        source = "task metadata prompt" if cli == "lm_eval" else f"--prompt {other[0]}" if len(other) == 1 else "--prompt"
        diffs.append(f"its QA prompt format is {cal_prompt!r} (tokrag calibrate --prompt {cal_prompt}), this run's is "
                     f"{', '.join(map(repr, other))} ({source})")
        fix.append(f"task metadata prompt={cal_prompt}" if cli == "lm_eval" else f"--prompt {cal_prompt}")
    if not diffs:
        return None
    flags = (" --apply-chat-template" if chat_applied else "") + (f" --prompt {other[0]}" if len(other) == 1 else "")
    return (f"preset={preset.get('path')}: {'; '.join(diffs)}; its calibrated params {preset.get('params')} were chosen "
            f"for the other prompt format: run with {' and '.join(fix)}, or calibrate a preset for this run's format "
            f"(tokrag calibrate --model {pretrained or 'MODEL'} --split dev{flags})")


def preset_small_sample_warning(preset: Mapping[str, Any] | None) -> str | None:
    """One WARNING line for a preset calibrated on few strict tokens: the note ``tokrag calibrate`` printed
    (:func:`tasks.analyze.small_sample_note`), which it stores in ``calibration.small_sample`` with the counts it is
    based on (:func:`tasks.calibrate.write_calibration`), after the preset's file and size; None for a preset
    calibrated on enough tokens of both classes. The line is computed at load by that rule from the preset's
    ``calibration.dev_counts`` (``strict``, ``strict_benefit``, ``samples``), which the record is a copy of: a preset
    without the record (written before 2026-12-06, as the committed ones) warns without an edit that would change its
    SHA-256 and so the run key of every leaderboard cell that uses it, and a record that says otherwise than the
    counts (hand-edited, or copied from another preset) decides nothing. Only where ``dev_counts`` has no
    ``strict`` count is the record's note used (an object with a ``note``; else None).

    ``preset=cal/tokrag_preset.json: a small-sample preset, calibrated on 6 dev samples with 26 strict tokens (15
    benefit); its params {...} were chosen on them; tokrag calibrate's note: only 26 strict tokens (15 benefit): below
    200 an AUC's 95% CI is about ±0.08 or wider ...; raise --n``
    """
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    cal = (preset or {}).get("calibration") or {}
    counts = cal.get("dev_counts") if isinstance(cal.get("dev_counts"), dict) else {}
    strict, benefit = count(counts.get("strict")), count(counts.get("strict_benefit"))
    if strict is not None:  # the counts the note is computed from decide, not a copy of it that may be stale
        from tasks.analyze import small_sample_note

        note = small_sample_note(strict, benefit)
        if note is None:
            return None
        small = {"note": note, "samples": count(counts.get("samples")), "strict": strict, "strict_benefit": benefit}
    else:
        small = cal.get("small_sample")
        if not isinstance(small, dict) or not isinstance(small.get("note"), str):
            return None
    samples, strict, benefit = small.get("samples"), small.get("strict"), small.get("strict_benefit")
    size = ("" if samples is None else f" on {samples} dev samples") + ("" if strict is None else (
        f" with {strict} strict tokens" + ("" if benefit is None else f" ({benefit} benefit)")))
    return (f"preset={preset.get('path')}: a small-sample preset, calibrated{size}; its params {preset.get('params')} "
            f"were chosen on them; tokrag calibrate's {small['note']}")


def preset_dtype_mismatch(preset: Mapping[str, Any], dtype: str, device: str, pretrained: str | None = None) -> str | None:
    """One WARNING line when the preset was calibrated in another dtype than ``dtype`` (the loaded model's, e.g.
    ``bfloat16``), with the ``tokrag calibrate`` command for this dtype and device in the preset's QA prompt format;
    None when the dtypes agree or the preset does not record one (presets written before ``model.dtype``).

    The dynamic rule's gaps are ~1e-5 nats/V: in bfloat16 they moved so far that, on SmolLM2, a float32 preset's
    threshold changed no decision (the same sums as the fixed layer); a fixed layer is chosen on log-probs and
    attention of one precision too.
    """
    from ..loading import dtype_name

    made = (preset.get("model") or {}).get("dtype")
    if not isinstance(made, str) or (dtype_name(made) or made) == (dtype_name(dtype) or dtype):
        return None
    nq = _calibration_nq(preset) or {}
    flags = (" --apply-chat-template" if nq.get("apply_chat_template") is True else "") + \
        (f" --prompt {nq['prompt']}" if isinstance(nq.get("prompt"), str) else "")
    params = preset.get("params") or {}
    chosen = "threshold" if params.get("layer") == "dynamic" or "js_threshold" in params else "layer"
    return (f"preset={preset.get('path')}: calibrated in {made}, this model runs in {dtype}; its {chosen} was chosen "
            f"on the other precision's log-probs: calibrate in {dtype} (tokrag calibrate --model {pretrained or 'MODEL'} "
            f"--split dev{flags} --model-args dtype={dtype},device={device})")


def write_preset(path: str | Path, lm: "TokRAGLM", params: dict, calibration: dict) -> dict:
    """Write a preset for ``lm``'s weights (atomically, JSON) and return it as :func:`read_preset` reads it.
    ``model`` records the weights' and the model files' fingerprints (``files_fingerprint``, checked by
    :func:`read_preset`), depth and dtype; ``model_info`` the model's provenance as lm-eval records it
    (:meth:`~tokrag_model.base.RAGMethodLM.get_model_info`: versions, tokrag commit, machine; None for a model
    without it)."""
    from retrieval.io import atomic_write_json

    files = getattr(lm, "files_fingerprint", None)
    get_info = getattr(lm, "get_model_info", None)
    preset = {"format": PRESET_FORMAT, "method": "tokrag",
              "model": {"pretrained": lm.resolved_config["pretrained"], "fingerprint": lm.fingerprint,
                        "files_fingerprint": files, "n_layers": lm.decoder.n_layers, "dtype": lm.backbone.dtype},
              "model_info": get_info() if callable(get_info) else None,
              "params": params, "calibration": calibration}
    atomic_write_json(path, preset)
    return read_preset(path, lm.fingerprint, lm.decoder.n_layers, files_fingerprint=files)


class TokRAGLM(RAGMethodLM):
    """``tokrag``: Tok-RAG (Xu et al., ICLR 2025) token-level collaboration of the pure and RAG branches.

    At each step both branches are decoded in one batched forward pass; the RAG branch's greedy token
    is emitted iff ``rate·S_R > S_L`` (tokrag_method.md §3.3), the emitted token extends both.
    Function tokens bypass the test; in generation, when both branches agree no test is needed (the emitted
    token is the same). A teacher-forced score (``loglikelihood``, ``loglikelihood_rolling``) runs the test at
    every position that is not bypassed, agreeing or not: the chosen branch's log-prob of the gold token is summed
    (tokrag_method.md §3.3 has no agree shortcut; before 2026-12-04 agreeing positions always summed the RAG
    branch's, which favoured the RAG distribution: a review measured 2-6 nats per NQ passage on SmolLM2-135M). See :class:`TokRAGParams` for every constant. The default fusion layer is the authors'
    decoder's fixed ``round(0.625·depth)``; ``layer=dynamic`` is the JS-gap variant (leaderboard row
    ``tokrag-dynamic``); ``token_lists=authors`` bypasses and skips the authors' own LLaMA strings instead of the
    default's tokenizer-agnostic classes (:class:`TokenClasses`); ``preset=PATH`` applies a ``tokrag calibrate`` preset (row ``tokrag-calibrated``,
    explicit model arguments override it; the preset is recorded in the results' model info).
    """

    METHOD = "tokrag"
    REFUSE_UNUSED_DYNAMIC_ARGS = True
    """:meth:`resolve_args` refuses :data:`DYNAMIC_ONLY` arguments with a fixed layer (``tokrag analyze`` turns
    it off: there they set the dynamic policy it scores, whatever layer the model decodes with)."""
    EXTRA_ARGS = {
        "layer": Arg(0.625, layer_spec, "fusion layer: a fraction of depth (default 0.625: round(0.625*depth), the "
                                        "authors' decoder) | int index | dynamic (JS-gap rule variant)"),
        "rate": Arg(1.0, number_at_least(0.0, strict=True), "decision multiplier: RAG iff rate*S_R > S_L"),
        "n_anchors": Arg(3, int_at_least(1), "attended passage positions kept"),
        "window_left": Arg(2, int_at_least(0), "window tokens left of an anchor"),
        "window_right": Arg(1, int_at_least(0), "window tokens right of an anchor"),
        "rag_top": Arg(2, int_at_least(1), "RAG top tokens in e_R"),
        "pure_top": Arg(3, int_at_least(1), "pure top tokens in e_L"),
        "js_threshold": Arg(5e-7, to_finite, "layer=dynamic: threshold on the gap of the authors' 'JS' "
                                         "(0.5*(KL(M||p)+KL(M||q)) averaged over V, nats/V; not a Jensen-Shannon divergence)"),
        "js_min_layer": Arg(10 / 32, layer_or_fraction, "layer=dynamic: the scan starts above this layer "
                                                        "(an integer >= 1 is a layer, a value in (0, 1) a fraction of depth)"),
        "layer_fallback": Arg(20 / 32, layer_or_fraction, "layer=dynamic: layer when the rule finds none "
                                                          "(an integer >= 1 is a layer, a value in (0, 1) a fraction of depth)"),
        "bypass": Arg(True, to_bool, "accept function tokens from the RAG branch without a test"),
        "token_lists": Arg("generalised", token_lists_choice,
                           "bypass and anchor-skip lists: generalised (default, tokenizer-agnostic) | authors (the "
                           "authors' LLaMA strings, case-sensitive: tokrag_method.md §3.3 steps 2-3)"),
        "always_score": Arg(False, to_bool, "compute S_R/S_L also when both branches agree (trace only)"),
        "preset": Arg(None, to_opt_str, "preset file from 'tokrag calibrate' (explicit arguments override it)"),
    }

    @classmethod
    def resolve_args(cls, cfg: dict[str, Any], given: dict[str, Any], preset: dict | None = None) -> ResolvedArgs:
        """``cfg`` with the preset's params applied under the explicit arguments (``given``: key -> value as
        given), then checked: an explicit :data:`DYNAMIC_ONLY` argument with a fixed layer has no effect and
        is an error. The keys the preset set are recorded in the result's ``from_preset`` (:class:`ResolvedArgs`).
        An explicit argument overrides the preset's; one of :data:`PRESET_SETTINGS` given with another value than
        the preset's is warned of by :meth:`setup` (:func:`preset_override_warning`), not here (the leaderboard's
        pre-run check resolves each cell too).

        Args:
            preset: the preset as :func:`read_preset` returned it (checked against the weights); None reads
                ``cfg["preset"]`` without that check (the leaderboard's pre-run check, no model loaded).
        Raises:
            ConfigError: from :func:`read_preset`, or ``js_threshold``/``js_min_layer``/``layer_fallback`` given
            while the resolved ``layer`` is not ``dynamic``, or set by the preset while its own (or the default)
            fixed layer applies, no ``layer`` given explicitly (:func:`preset_unused_dynamic`).
        """
        out = dict(cfg)
        from_preset = []
        if out.get("preset"):
            preset = preset if preset is not None else read_preset(out["preset"])
            for key, value in preset["params"].items():
                if given.get(key) is None:  # not given (an explicit None is the default): the preset's value
                    out[key] = cls.EXTRA_ARGS[key].cast(value)
                    from_preset.append(key)
        if out["layer"] != "dynamic" and cls.REFUSE_UNUSED_DYNAMIC_ARGS:
            stray = [key for key in DYNAMIC_ONLY if given.get(key) is not None and out[key] is not None]
            if stray:
                where = " (from the preset)" if out.get("preset") and given.get("layer") is None else ""
                raise ConfigError(f"--model {cls.METHOD}: " + no_effect_message(
                    "model argument(s)", stray, f"layer={out['layer']!r}{where}", "add layer=dynamic"))
            if given.get("layer") is None:  # an explicit layer overrides the preset knowingly; else the same check
                message = preset_unused_dynamic(preset) if out.get("preset") else None
                if message:
                    raise ConfigError(f"--model {cls.METHOD}: {message}")
        return ResolvedArgs(out, from_preset)

    @classmethod
    def check_shape(cls, cfg: dict[str, Any], n_layers: int | None, vocab_size: int | None) -> None:
        """A resolved config (:meth:`resolve_args`) against a model of ``n_layers`` decoder layers and a vocabulary
        of ``vocab_size`` tokens (None: not known, not checked), as the load checks it: the preset's depth
        (:func:`read_preset`), ``rag_top``/``pure_top`` (:func:`check_tops`), the layer arguments resolved as
        :class:`TokRAGScorer` resolves them. The leaderboard's pre-run check
        (:func:`leaderboards.runner.check_cell_args`) refuses them with the load's message before the weights load;
        the preset's fingerprint, which the load checks first (so it names the other weights, not the depth), needs
        the weights and is left to the load.

        Raises:
            ConfigError: ``preset=PATH: made for 18 layers, this model has 30; use a preset calibrated for this
            model (tokrag calibrate ...)``; ``--model tokrag: rag_top=60000 exceeds the model's vocabulary of 49152
            tokens`` (likewise ``pure_top``); ``--model tokrag: layer=99 is outside the model's 30 layers (0..29)``
            (likewise ``js_min_layer``, ``layer_fallback``), with ``; it comes from preset=PATH (params.layer)``
            where the preset set it, not where it was given explicitly with the preset's value (``cfg.from_preset``,
            :func:`preset_note`).
            TypeError: ``cfg`` sets a preset but is not the :class:`ResolvedArgs` that :meth:`resolve_args` returns
            (:func:`require_resolved`: which arguments the preset set is not known).
        """
        require_resolved(cfg, f"{cls.__name__}.check_shape")
        preset = None
        if cfg.get("preset"):
            preset = read_preset(cfg["preset"], n_layers=n_layers, pretrained=cfg.get("pretrained"))
        try:
            if vocab_size is not None:
                check_tops(cfg["rag_top"], cfg["pure_top"], vocab_size)
            if n_layers is not None:
                if cfg["layer"] != "dynamic":
                    resolve_layer(cfg["layer"], n_layers)
                resolve_layer(cfg["js_min_layer"], n_layers, "js_min_layer")
                resolve_layer(cfg["layer_fallback"], n_layers, "layer_fallback")
        except ValueError as exc:
            raise ConfigError(f"--model {cls.METHOD}: {exc}{preset_note(str(exc), cfg, preset)}") from None

    def setup(self) -> None:
        c = self.resolved_config
        self.preset = None
        if c["preset"]:
            self.preset = read_preset(c["preset"], self.fingerprint, self.decoder.n_layers, c["pretrained"],
                                      getattr(self, "files_fingerprint", None))
            for message in (preset_small_sample_warning(self.preset),
                            preset_dtype_mismatch(self.preset, self.backbone.dtype, self.backbone.device, c["pretrained"])):
                if message:
                    log.warning("%s", message)
        resolved = self.resolve_args(c, self.given_args, self.preset)
        message = preset_override_warning(self.preset, resolved, self.given_args)
        if message:
            log.warning("%s", message)
        c.update(resolved)  # resolved_config stays a plain dict of values
        params = TokRAGParams(layer=c["layer"], rate=c["rate"], n_anchors=c["n_anchors"], window_left=c["window_left"],
                              window_right=c["window_right"], rag_top=c["rag_top"], pure_top=c["pure_top"],
                              js_threshold=c["js_threshold"], js_min_layer=c["js_min_layer"],
                              layer_fallback=c["layer_fallback"], bypass=c["bypass"], token_lists=c["token_lists"],
                              always_score=c["always_score"])
        self.token_classes = TokenClasses(self.tokenizer, params.token_lists)
        try:
            self.decoder.check_attention_rows()  # a model whose attention rows cannot be recomputed fails here
            self.use_params(params)
        except ValueError as exc:
            raise ConfigError(f"--model tokrag: {exc}{preset_note(str(exc), resolved, self.preset)}") from None

    def use_params(self, params: TokRAGParams, warn_sliding: bool = True) -> None:
        """Decode and score with ``params``: ``self.params`` and ``self.scorer`` (a :class:`TokRAGScorer` on this
        model's token classes, built here only). ``warn_sliding``: as :class:`TokRAGScorer`'s.

        Raises:
            ValueError: from :class:`TokRAGScorer` (a layer outside the model); ``self`` is then unchanged.
        """
        self.scorer = TokRAGScorer(self.decoder, params, self.is_function, self.is_skip, warn_sliding=warn_sliding)
        self.params = params

    def set_scan_start(self, min_layer: int) -> None:
        """Record the dynamic rule's gaps from layer pair ``min_layer + 1``: ``params.js_min_layer = min_layer``, the
        scorer rebuilt (:meth:`use_params`, no sliding-window warning); ``tasks.analyze.widen_records_scan``."""
        self.use_params(replace(self.params, js_min_layer=min_layer), warn_sliding=False)

    def check_preset_prompt(self, requests: Sequence[Any]) -> None:
        """Log one WARNING per evaluation (:func:`preset_prompt_mismatch`) when the QA requests' prompt format (chat
        template applied or not, task metadata ``prompt``: the docs' ``prompt``) differs from the preset's; the first
        call with a QA request after :meth:`start_evaluation` decides. Called at the start of :meth:`generate_until`
        and :meth:`loglikelihood`."""
        if self.preset is None or getattr(self, "_preset_prompt_checked", False):
            return
        prompts = [d["prompt"] for d in (getattr(r, "doc", None) for r in requests)
                   if isinstance(d, dict) and isinstance(d.get("prompt"), str)]
        if not prompts:
            return
        self._preset_prompt_checked = True
        message = preset_prompt_mismatch(self.preset, self.chat_template_applied, prompts,
                                         self.resolved_config.get("pretrained"))
        if message:
            log.warning("%s", message)

    def start_evaluation(self, apply_chat_template: Any = False, use_cache: bool = False) -> None:
        """:meth:`tokrag_model.base.RAGMethodLM.start_evaluation`, and check this evaluation's prompt format against
        the preset again (:meth:`check_preset_prompt`): a model object reused for several evaluations (a notebook, a
        leaderboard's cells of one model) warned on its first only, not on a later one in the other format."""
        super().start_evaluation(apply_chat_template, use_cache)
        self.__dict__.pop("_preset_prompt_checked", None)

    def note_evaluation_data(self, tasks: Sequence[tuple[str, Any, Any, Any]]) -> None:
        """Log one WARNING per evaluation when this evaluation scores dev questions the preset was calibrated on
        (:func:`tasks.analyze.lm_eval_in_sample_warning`, the rule and words of ``tokrag analyze --preset``'s in-sample
        note); ``tasks``: :func:`tokrag_model._lmeval_hook.evaluated_task_data`, called by lm-eval's ``evaluate``
        (patched) before the requests. Nothing without a preset."""
        if self.preset is None:
            return
        from tasks.analyze import lm_eval_in_sample_warning

        message = lm_eval_in_sample_warning(self.preset, tasks)
        if message:
            log.warning("%s", message)

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """:meth:`RAGMethodLM.generate_until` after :meth:`check_preset_prompt`."""
        self.check_preset_prompt(requests)
        return super().generate_until(requests, disable_tqdm)

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """:meth:`RAGMethodLM.loglikelihood` after :meth:`check_preset_prompt`."""
        self.check_preset_prompt(requests)
        return super().loglikelihood(requests, disable_tqdm)

    def get_model_info(self) -> dict:
        """The base model info plus ``tokrag_preset`` (the applied preset file, its absolute path and sha256; None
        without)."""
        preset = None if self.preset is None else {**self.preset, "path": str(Path(self.preset["path"]).absolute())}
        return {**super().get_model_info(), "tokrag_preset": preset}

    DYNAMIC_LAYER_ARGS = ("js_threshold", "js_min_layer", "layer_fallback")
    """The arguments only the dynamic-layer rule (``layer=dynamic``) reads."""

    def resolved_values(self) -> dict[str, Any]:
        """``layer_resolved``: the 0-based decoder layer the fusion used (:func:`resolve_layer`: 19 for ``layer=0.625``
        on SmolLM2's 30 layers), or ``"dynamic"``; with the dynamic rule also ``js_min_layer_resolved`` and
        ``layer_fallback_resolved`` (layer indices); with a fixed layer ``unused_args``: :data:`DYNAMIC_LAYER_ARGS`,
        recorded with their defaults but not read by its decisions."""
        scorer = getattr(self, "scorer", None)
        if scorer is None:
            return {}
        if scorer.fixed_layer is not None:
            return {"layer_resolved": scorer.fixed_layer, "unused_args": list(self.DYNAMIC_LAYER_ARGS)}
        return {"layer_resolved": "dynamic", "js_min_layer_resolved": scorer.min_layer,
                "layer_fallback_resolved": scorer.fallback}

    def is_function(self, tid: int) -> bool:
        """Token ``tid`` is on the bypass list (:class:`TokenClasses`)."""
        return self.token_classes.is_function(tid)

    def is_skip(self, tid: int) -> bool:
        """Token ``tid`` is on the anchor skip list (:class:`TokenClasses`)."""
        return self.token_classes.is_skip(tid)

    def _trace_tokens(self, decisions: Sequence[TokenDecision]) -> list[list]:
        return [d.compact(self.token_text(d.token)[0]) for d in decisions]

    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        rag = self.encode_rag(doc, context, budget, kind=kind)
        pure = self.encode_pure(context, budget)
        return TokRAGRule(self.scorer, rag.ids, rag.span, pure.ids), passages_trace(rag)

    def finish_trace(self, rule: TokRAGRule, trace: dict) -> dict:
        trace["tokens"] = self._trace_tokens(rule.decisions)
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

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        b = budget_check(cont, budget, self.METHOD)
        rag = self.encode_rag(doc, context, b, kind=kind)
        pure = self.encode_pure(context, b)
        dyn = self.scorer.fixed_layer is None

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            tf = TeacherForced(self.decoder, rag.ids, cont, forced[0], forced[1])
            # the test at every position (force_score): where the greedy tokens agree, generation may skip it (the
            # same token either way), but the branch it picks decides whose log-prob of the gold token is summed
            decs = [tf.decide(self.scorer, i, rag.span, force_score=True) for i in range(len(cont))]
            ll = sum(d.logp_rag if d.branch == "rag" else d.logp_pure for d in decs)
            greedy = all(d.token == g for d, g in zip(decs, cont))
            return float(ll), greedy, {**passages_trace(rag), "tokens": self._trace_tokens(decs)}

        return ScorePlan([rag.ids, pure.ids], cont, finish, hidden=[True, dyn], keys=[True, False])
