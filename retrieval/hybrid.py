"""Hybrid BM25 + dense retrieval by rank fusion.

* ``rrf``: reciprocal rank fusion, score(d) = sum over runs of 1 / (rrf_k + rank(d)), rrf_k = 60
  (Cormack, Clarke & Buettcher, SIGIR 2009).
* ``weighted``: Pyserini's ``HybridSearcher._hybrid_results`` (pyserini/search/hybrid/_searcher.py):
  a document missing from one list gets that list's minimum score; with ``normalization`` each score is
  centred on the list's (min+max)/2 and divided by (max-min); fused = alpha * sparse + dense, or
  sparse + alpha * dense with ``weight_on_dense``. Unlike Pyserini, ties are broken by docid (Pyserini
  iterates a Python set, so its order of tied documents changes between processes).

Both fuse the top ``depth`` hits of each retriever (default 100; ``max(depth, k)`` when k is larger) and
keep the top k, ties by docid: for k <= depth a shallower run is a prefix of a deeper one (issue 12.4).
:func:`hybrid_passage_scores` gives any passage the fused score it gets (or would get) against the same
component lists, with the same formulas (:func:`rrf_score`, :func:`weighted_score`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ConfigError

HYBRID_PARAMS: dict[str, Any] = {"fusion": "rrf", "alpha": 0.1, "rrf_k": 60, "normalization": False, "weight_on_dense": False, "depth": 100}
Hits = Sequence[tuple[str, float]]


# The settings of one local hybrid fusion that the other ignores: given with the other fusion (other than their
# default) they were dropped silently, yet entered the run key (a second cached run of the same passages). Their flags.
_FUSION_ONLY = {"rrf": {"rrf_k": "--rrf-k"},
                "weighted": {"alpha": "--alpha", "normalization": "--normalization", "weight_on_dense": "--weight-on-dense"}}


def check_fusion_settings(params: Mapping[str, Any]) -> None:
    """Refuse a local hybrid's setting that its fusion ignores (``params`` as resolved by :func:`retrieval.api._resolve_params`:
    the given names only, bools read). Reciprocal rank fusion (``fusion`` ``rrf``, the default) reads only
    ``rrf_k``; weighted fusion reads ``alpha``, ``normalization`` and ``weight_on_dense``. A setting of the other
    fusion at its default (:data:`HYBRID_PARAMS`: ``rrf_k: 60``, a false flag) changes neither the passages nor the
    run key, and passes. E.g. ``tokrag retrieve --corpus passages.jsonl --hybrid --alpha 0.95``
    (the prebuilt hybrid's option, which is always weighted) fused by RRF and ignored the 0.95.

    Raises:
        ConfigError: one line naming each ignored setting (with its CLI flag), the fusion in use and the two fixes; a
            ``fusion`` other than ``rrf`` / ``weighted`` (``'Weighted'``, ``['weighted']``, None):
            ``fusion='Weighted'; use 'rrf' or 'weighted'``, the line :func:`component_hits` gives at search time.
    """
    fusion = params.get("fusion", "rrf")
    if not isinstance(fusion, str) or fusion not in _FUSION_ONLY:  # component_hits' line, before any search or load
        raise ConfigError(f"fusion={fusion!r}; use 'rrf' or 'weighted'")  # a list was a TypeError from `in` here
    other = "weighted" if fusion == "rrf" else "rrf"
    stray = [f"{name}={params[name]!r} ({flag})" for name, flag in _FUSION_ONLY[other].items()
             if name in params and params[name] != HYBRID_PARAMS[name]]
    if not stray:
        return
    name = {"rrf": "reciprocal rank fusion", "weighted": "weighted fusion"}
    default = ", the default over a local corpus" if fusion == "rrf" else ""
    it = "it" if len(stray) == 1 else "them"
    raise ConfigError(
        f"{', '.join(stray)}: {'a setting' if len(stray) == 1 else 'settings'} of {name[other]}, but this hybrid "
        f"fuses by {name[fusion]} (fusion {fusion}{default}), which ignores {it}; set fusion {other} (--fusion {other}; "
        f"task metadata retriever_params fusion: {other}) to use {it}, or leave {it} out")


def rrf_score(ranks: Sequence[int | None], rrf_k: int = 60) -> float:
    """``Σ 1 / (rrf_k + rank)`` over the runs in which the document occurs (``None``: absent), in run order."""
    return sum((1.0 / (rrf_k + r) for r in ranks if r is not None), 0.0)


def rrf_fusion(runs: Sequence[Hits], k: int, rrf_k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of ranked ``(docid, score)`` lists -> top ``k`` ``(docid, rrf score)``."""
    ranks: dict[str, list[int | None]] = {}
    for j, hits in enumerate(runs):
        for rank, (docid, _) in enumerate(hits, start=1):
            ranks.setdefault(docid, [None] * len(runs))[j] = rank
    scores = {docid: rrf_score(r, rrf_k) for docid, r in ranks.items()}
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]


def _span(hits: Mapping[str, float]) -> tuple[float, float]:
    return (min(hits.values()), max(hits.values())) if hits else (0.0, 1.0)


def weighted_score(s: float, d: float, sparse_span: tuple[float, float], dense_span: tuple[float, float], alpha: float,
                   normalization: bool = False, weight_on_dense: bool = False) -> float:
    """Fused score of a document with sparse score ``s`` and dense score ``d`` (each its list's minimum when
    the document is missing from that list); spans are ``(min, max)`` of each list (module docstring)."""
    if normalization:
        (smin, smax), (dmin, dmax) = sparse_span, dense_span
        s = (s - (smin + smax) / 2) / ((smax - smin) or 1.0)
        d = (d - (dmin + dmax) / 2) / ((dmax - dmin) or 1.0)
    return alpha * s + d if not weight_on_dense else s + alpha * d


def weighted_fusion(dense: Hits, sparse: Hits, k: int, alpha: float = 0.1, normalization: bool = False, weight_on_dense: bool = False) -> list[tuple[str, float]]:
    """Pyserini-style weighted score fusion (module docstring) -> top ``k`` ``(docid, fused score)``."""
    dh, sh = dict(dense), dict(sparse)
    ds, ss = _span(dh), _span(sh)
    out = [(doc, weighted_score(sh.get(doc, ss[0]), dh.get(doc, ds[0]), ss, ds, alpha, normalization, weight_on_dense))
           for doc in set(dh) | set(sh)]
    return sorted(out, key=lambda x: (-x[1], x[0]))[:k]


CF_SUFFIX = "#cf"
"""The suffix of a counterfactual passage's docid: its gold passage's docid + ``"#cf"`` (the one definition: the
counterfactual tasks, :mod:`tasks.rag`, build docids with it and ``gold_at_k`` removes it; tasks import retrieval,
not the reverse)."""


def replaced_docid(docid: str) -> str:
    """The docid of the corpus passage that a passage which is not that corpus passage stands in for: its own docid
    less :data:`CF_SUFFIX` (a counterfactual ``X#cf`` replaces ``X``; an edited passage keeping ``X`` replaces ``X``)."""
    return docid.removesuffix(CF_SUFFIX)


def _key(docid: str, score: float) -> tuple[float, str]:
    return -score, docid


def _place(hits: Hits, docid: str, score: float) -> tuple[int | None, float | None]:
    """(rank, score) of ``docid`` in a ranked list: its own when listed, else the rank its ``score`` would take
    (score desc, docid asc) if that lies within the list; ``(None, None)`` when it would fall beyond it."""
    for rank, (d, s) in enumerate(hits, start=1):
        if d == docid:
            return rank, s
    rank = 1 + sum(1 for d, s in hits if _key(d, s) < _key(docid, score))
    return (rank, score) if rank <= len(hits) else (None, None)


def _stand_in(hits: Hits, original: str, score: float) -> Hits:
    """``hits`` with the entry of ``original`` (when listed) replaced by a passage of score ``score`` that takes its
    place and its docid, re-ranked (score desc, docid asc); the passage is left out (the list without
    ``original``) when it falls below every other entry and below ``original``'s score: whether the corpus
    passage after the list (not fetched) outranks it is not known, and a passage beyond a list's reach gets
    no term from it. Unlisted ``original``: ``hits`` unchanged."""
    was = next((s for d, s in hits if d == original), None)
    if was is None:
        return hits
    others = [(d, s) for d, s in hits if d != original]
    if score < was and all(_key(d, s) < _key(original, score) for d, s in others):
        return others
    return sorted([*others, (original, score)], key=lambda x: _key(*x))


def fuse_passage(p: Mapping[str, Any], docid: str, sparse: Hits, dense: Hits, s: float, d: float,
                 in_index: bool = True) -> float:
    """The fused score of passage ``docid`` with component scores ``s`` (BM25) and ``d`` (dense) against the
    component lists ``sparse`` and ``dense`` of its query: the score fusion gives it when it is listed,
    else the one it would get at the rank its scores take (missing from a list: no RRF term, that list's
    minimum for weighted fusion). ``in_index``: the passage is the corpus passage ``docid`` (same title and
    text, the rule of BM25's and dense's passage scores). When False (an edited passage keeping a corpus
    docid, or a counterfactual ``X#cf``) it replaces the corpus passage :func:`replaced_docid` in what the
    model is shown, so it is ranked as if it stood in that passage's place: that passage's entry in each list
    is removed and the edited passage is placed by its own scores among the other entries, ties broken by
    the replaced docid (:func:`_stand_in`). Text identical to the replaced passage's thus gets its fused
    score; ranking it against the original it replaced would count the original's slot twice."""
    if not in_index:
        docid = replaced_docid(docid)
        sparse, dense = _stand_in(sparse, docid, s), _stand_in(dense, docid, d)
    (rs, s_at), (rd, d_at) = _place(sparse, docid, s), _place(dense, docid, d)
    if p["fusion"] == "rrf":
        return rrf_score([rs, rd], int(p["rrf_k"]))
    sh, dh = dict(sparse), dict(dense)
    ss, ds = _span(sh), _span(dh)
    return weighted_score(ss[0] if s_at is None else s_at, ds[0] if d_at is None else d_at, ss, ds, float(p["alpha"]),
                          bool(p["normalization"]), bool(p["weight_on_dense"]))


def component_hits(corpus, queries: Mapping[str, str], depth: int, p: Mapping[str, Any], runtime: Mapping[str, Any],
                   cache_dir, bm25_fn) -> tuple[dict, dict, int]:
    """The BM25 and dense top ``max(depth, p['depth'])`` lists that :func:`hybrid_hits` fuses -> (sparse, dense, searches)."""
    from .dense import dense_hits

    if p["fusion"] not in ("rrf", "weighted"):
        raise ConfigError(f"fusion={p['fusion']!r}; use 'rrf' or 'weighted'")
    d = max(depth, int(p["depth"]))
    sparse, n1 = bm25_fn(corpus, queries, d, p, runtime, cache_dir)
    dense, n2 = dense_hits(corpus, queries, d, p, runtime, cache_dir)
    return sparse, dense, max(n1, n2)


def hybrid_hits(corpus, queries: Mapping[str, str], depth: int, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir, bm25_fn) -> tuple[dict, int]:
    """Search BM25 and dense to ``max(depth, p['depth'])`` and fuse per query (used by :func:`retrieval.retrieve`)."""
    sparse, dense, n = component_hits(corpus, queries, depth, p, runtime, cache_dir, bm25_fn)
    out = {}
    for q in queries:
        if p["fusion"] == "rrf":
            out[q] = rrf_fusion([sparse.get(q, []), dense.get(q, [])], depth, int(p["rrf_k"]))
        else:
            out[q] = weighted_fusion(dense.get(q, []), sparse.get(q, []), depth, float(p["alpha"]), bool(p["normalization"]), bool(p["weight_on_dense"]))
    return out, n
