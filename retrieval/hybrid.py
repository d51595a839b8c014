"""Hybrid BM25 + dense retrieval by rank fusion.

* ``rrf``: reciprocal rank fusion, score(d) = sum over runs of 1 / (rrf_k + rank(d)), rrf_k = 60
  (Cormack, Clarke & Buettcher, SIGIR 2009).
* ``weighted``: Pyserini's ``HybridSearcher._hybrid_results`` (pyserini/search/hybrid/_searcher.py):
  a document missing from one list gets that list's minimum score; with ``normalization`` each score is
  centred on the list's (min+max)/2 and divided by (max-min); fused = alpha * sparse + dense, or
  sparse + alpha * dense with ``weight_on_dense``. Unlike Pyserini, ties are broken by docid (Pyserini
  iterates a Python set, so its order of tied documents changes between processes).

Both fuse the top ``depth`` hits of each retriever (default 100) and keep the top k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ConfigError

HYBRID_PARAMS: dict[str, Any] = {"fusion": "rrf", "alpha": 0.1, "rrf_k": 60, "normalization": False, "weight_on_dense": False, "depth": 100}
Hits = Sequence[tuple[str, float]]


def rrf_fusion(runs: Sequence[Hits], k: int, rrf_k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of ranked ``(docid, score)`` lists -> top ``k`` ``(docid, rrf score)``."""
    scores: dict[str, float] = {}
    for hits in runs:
        for rank, (docid, _) in enumerate(hits, start=1):
            scores[docid] = scores.get(docid, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]


def weighted_fusion(dense: Hits, sparse: Hits, k: int, alpha: float = 0.1, normalization: bool = False, weight_on_dense: bool = False) -> list[tuple[str, float]]:
    """Pyserini-style weighted score fusion (module docstring) -> top ``k`` ``(docid, fused score)``."""
    dh, sh = dict(dense), dict(sparse)
    dmin, dmax = (min(dh.values()), max(dh.values())) if dh else (0.0, 1.0)
    smin, smax = (min(sh.values()), max(sh.values())) if sh else (0.0, 1.0)
    out = []
    for doc in set(dh) | set(sh):
        s = sh.get(doc, smin)
        d = dh.get(doc, dmin)
        if normalization:
            s = (s - (smin + smax) / 2) / ((smax - smin) or 1.0)
            d = (d - (dmin + dmax) / 2) / ((dmax - dmin) or 1.0)
        out.append((doc, alpha * s + d if not weight_on_dense else s + alpha * d))
    return sorted(out, key=lambda x: (-x[1], x[0]))[:k]


def hybrid_hits(corpus, queries: Mapping[str, str], depth: int, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir, bm25_fn) -> tuple[dict, int]:
    """Search BM25 and dense to ``max(depth, p['depth'])`` and fuse per query (used by :func:`retrieval.retrieve`)."""
    from .dense import dense_hits

    if p["fusion"] not in ("rrf", "weighted"):
        raise ConfigError(f"fusion={p['fusion']!r}; use 'rrf' or 'weighted'")
    d = max(depth, int(p["depth"]))
    sparse, n1 = bm25_fn(corpus, queries, d, p, runtime, cache_dir)
    dense, n2 = dense_hits(corpus, queries, d, p, runtime, cache_dir)
    out = {}
    for q in queries:
        if p["fusion"] == "rrf":
            out[q] = rrf_fusion([sparse.get(q, []), dense.get(q, [])], depth, int(p["rrf_k"]))
        else:
            out[q] = weighted_fusion(dense.get(q, []), sparse.get(q, []), depth, float(p["alpha"]), bool(p["normalization"]), bool(p["weight_on_dense"]))
    return out, max(n1, n2)
