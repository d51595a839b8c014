"""``retrieve`` (cached BM25 / dense / hybrid retrieval) and ``check_run_sanity`` (degenerate-retrieval guard)."""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .bm25 import DEFAULT_B, DEFAULT_K1, Bm25Searcher, build_bm25_index, default_threads, validate_queries
from .cache import Run, RunCache
from .corpus import Corpus, resolve_corpus
from .errors import ConfigError, DataError
from .io import fingerprint
from .paths import cache_dir as _cache_root
from .worker import java_in_process, java_worker

logger = logging.getLogger(__name__)

RETRIEVERS = ("bm25", "dense", "hybrid")
BM25_PARAMS = {"k1": DEFAULT_K1, "b": DEFAULT_B}
# parameters that never change the result (not part of the cache key)
RUNTIME_PARAMS = {"threads", "batch_size", "progress", "index", "device"}


@lru_cache(maxsize=8)
def _bm25_searcher(index_dir: str, k1: float, b: float) -> Bm25Searcher:
    return Bm25Searcher(index_dir, k1=k1, b=b)


def _resolve_params(retriever: str, params: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """-> (result-changing params with defaults filled in, runtime-only params). Unknown names -> ConfigError."""
    params = dict(params or {})
    runtime = {k: params.pop(k) for k in list(params) if k in RUNTIME_PARAMS}
    if retriever == "bm25":
        known = dict(BM25_PARAMS)
    else:
        from .dense import DENSE_PARAMS

        known = dict(DENSE_PARAMS)
        if retriever == "hybrid":
            from .hybrid import HYBRID_PARAMS

            known.update(BM25_PARAMS)
            known.update(HYBRID_PARAMS)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown {retriever} parameter(s) {unknown}; known: {sorted(known) + sorted(RUNTIME_PARAMS)}"
        )
    known.update(params)
    return known, runtime


def _bm25_hits(corpus: Corpus, queries: Mapping[str, str], depth: int, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> tuple[dict, int]:
    index_dir = build_bm25_index(corpus, runtime.get("index"), cache_dir=cache_dir)
    s = _bm25_searcher(str(index_dir), float(p["k1"]), float(p["b"]))
    before = s.searches
    hits = s.batch_search(queries, k=depth, threads=runtime.get("threads") or default_threads(), progress=bool(runtime.get("progress")))
    return hits, s.searches - before


PREBUILT = "prebuilt:"


def _index_fingerprint(index_dir: Path) -> str:
    """Fingerprint of a Lucene index folder: its name (Pyserini's prebuilt folders carry the tarball md5)
    and its segment files with sizes (Lucene never rewrites a segment file in place)."""
    files = sorted((f.name, f.stat().st_size) for f in index_dir.iterdir() if f.is_file() and not f.name.endswith(".lock"))
    return fingerprint({"name": index_dir.name, "files": files})


def _run_config(retriever: str, p: Mapping[str, Any], corpus, prebuilt: Bm25Searcher | None, k: int,
                queries: Mapping[str, str], exclude: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The run-cache config of a request: everything that changes the result (the cache key)."""
    config: dict[str, Any] = {
        "retriever": retriever,
        "params": p,
        "corpus": (
            {"name": corpus.name, "fingerprint": corpus.fingerprint, "size": len(corpus)}
            if prebuilt is None
            else {"name": corpus, "fingerprint": _index_fingerprint(prebuilt.index_dir), "size": prebuilt.num_docs}
        ),
        "k": k,
        "queries": {"n": len(queries), "fingerprint": fingerprint(list(queries.items()))},
        "exclude": fingerprint(sorted(exclude.items())) if exclude else None,
    }
    if retriever != "bm25":
        from .dense import encoder_identity

        config["encoder"] = encoder_identity(p)
    return config


def retrieve(
    corpus: Corpus | str | os.PathLike,
    queries: Mapping[str, str],
    retriever: str = "bm25",
    k: int = 5,
    params: Mapping[str, Any] | None = None,
    exclude: Mapping[str, Sequence[str]] | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    data_dir: str | os.PathLike | None = None,
) -> Run:
    """Top-``k`` passages per query, from the run cache when the same request was made before.

    Args:
        corpus: a :class:`Corpus`, a named corpus (``nq-wiki-12k``, ``nq-dpr-1k``, ``wiki-vital``), a corpus
            path, or ``prebuilt:<name>`` for a Pyserini prebuilt BM25 index (e.g. ``prebuilt:wikipedia-dpr-100w``;
            downloaded once by Pyserini, needs the internet; passages come from the stored raw documents).
        queries: ``{qid: query text}``; qids are single tokens, texts non-empty.
        retriever: ``bm25`` (params ``k1``=0.9, ``b``=0.4), ``dense`` (params of
            :data:`retrieval.dense.DENSE_PARAMS`: ``encoder``, ``query_encoder``, ``encoder_class``,
            ``pooling``, ``l2_norm``, ``max_length``, ``prefix_query``, ``prefix_passage``) or ``hybrid``
            (both, plus ``fusion`` = ``rrf`` | ``weighted``, ``alpha``, ``rrf_k``, ``normalization``, ``depth``).
            Runtime-only params (not in the cache key): ``threads``, ``batch_size``, ``progress``,
            ``index`` (BM25 index folder), ``device``.
        k: passages per query (>= 1). k larger than the corpus is allowed and returns every match.
        exclude: ``{qid: [docid, ...]}`` never returned for that query (e.g. the gold passage for a
            distractor-only setting); k passages are still returned when the corpus has them.
        cache_dir: cache root (default ``$TOKRAG_CACHE_DIR`` or ``~/.cache/tokrag``).
        data_dir: data folder for named corpora.

    Returns:
        :class:`Run` with ``ctxs[qid]`` = ``[{"docid", "title", "text", "score", "rank"}]`` (rank 1 first),
        ``searches`` = queries searched now (0 on a cache hit), the cached ``trec_path``/``jsonl_path``.

    Raises:
        ConfigError: unknown retriever or parameter, k < 1, bad qids. DataError: empty, whitespace-only or
        invalid-Unicode queries, bad corpus files. IndexNotFoundError, JavaSetupError, OfflineError: see
        the searchers. TokragError: the worker process died (e.g. a JVM crash).

    Process model: unless the JVM already runs in this process (or ``TOKRAG_JVM_IN_PROCESS=1``), a cache
    miss is computed by the retrieval worker process (:mod:`retrieval.worker`), so the JVM never starts in
    a process that runs torch; errors raised there are re-raised here with the same type and message.
    """
    if retriever not in RETRIEVERS:
        raise ConfigError(f"unknown retriever {retriever!r}; use one of {', '.join(RETRIEVERS)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k={k!r}: k must be an integer >= 1 (the number of passages per query)")
    validate_queries(queries)
    prebuilt = None
    is_prebuilt = isinstance(corpus, str) and corpus.startswith(PREBUILT)
    if is_prebuilt and retriever != "bm25":
        raise ConfigError(f"corpus {corpus!r}: Pyserini prebuilt indexes are searched with retriever='bm25' only")
    if not is_prebuilt:
        corpus = resolve_corpus(corpus, data_dir)
    p, runtime = _resolve_params(retriever, params)
    exclude = {q: list(v) for q, v in (exclude or {}).items() if v}
    unknown_ex = sorted(set(exclude) - set(queries))
    if unknown_ex:
        raise ConfigError(f"exclude names qids that are not queries: {unknown_ex[:5]}")
    queries = dict(queries)
    if not java_in_process():
        # Pyserini/Lucene work happens in the worker process, so the JVM never starts in this one
        # (retrieval/worker.py, README "Java in a separate process"); cache hits are served here directly.
        cache_root = str(_cache_root(cache_dir))
        if not is_prebuilt:
            run = RunCache(cache_root).load(_run_config(retriever, p, corpus, None, k, queries, exclude))
            if run is not None:
                return run
        return java_worker().call("retrieve", corpus, queries, retriever, k, params, exclude, cache_root, data_dir=data_dir)
    if is_prebuilt:
        prebuilt = Bm25Searcher.from_prebuilt(corpus[len(PREBUILT):], k1=float(p["k1"]), b=float(p["b"]))
    config = _run_config(retriever, p, corpus, prebuilt, k, queries, exclude)
    depth = k + max((len(v) for v in exclude.values()), default=0)

    def compute() -> tuple[dict, int]:
        if prebuilt is not None:
            hits = prebuilt.batch_search(queries, k=depth, threads=runtime.get("threads") or default_threads(), progress=bool(runtime.get("progress")))
            searches = len(queries)
        elif retriever == "bm25":
            hits, searches = _bm25_hits(corpus, queries, depth, p, runtime, cache_dir)
        elif retriever == "dense":
            from .dense import dense_hits

            hits, searches = dense_hits(corpus, queries, depth, p, runtime, cache_dir)
        else:
            from .hybrid import hybrid_hits

            hits, searches = hybrid_hits(corpus, queries, depth, p, runtime, cache_dir, _bm25_hits)
        ctxs: dict[str, list[dict[str, Any]]] = {}
        for qid in queries:
            banned = set(exclude.get(qid, ()))
            kept = [(d, s) for d, s in hits.get(qid, []) if d not in banned][:k]
            rows = []
            for rank, (docid, score) in enumerate(kept, start=1):
                psg = corpus.get(docid) if prebuilt is None else prebuilt.passage(docid)
                rows.append({"docid": docid, "title": psg.title, "text": psg.text, "score": round(float(score), 6), "rank": rank})
            ctxs[qid] = rows
        return ctxs, searches

    return RunCache(cache_dir).get_or_compute(config, compute, queries)


def check_run_sanity(run: Run | Mapping[str, Sequence[Mapping[str, Any]]], *, top: int = 5, max_same_frac: float = 0.5, min_queries: int = 10) -> None:
    """Stop before generation when retrieval is obviously broken.

    Checks (issue 6, "degenerate retrieval guard"):

    * every query has at least one passage (empty hits: a wrong index, an encoder producing zeros,
      queries that analyse to no terms);
    * the queries do not all get the same top-``top`` ranked list (with >= 2 queries of different
      text), and, with >= ``min_queries`` queries, no single top list is shared by more than
      ``max_same_frac`` of them (a constant query vector, a collapsed encoder, a broken analyzer).
      Skipped for a run over a corpus of at most ``top`` passages (known from ``run.config``).

    Args:
        run: a :class:`Run` or ``{qid: ctxs}``.

    Raises:
        DataError: naming the offending qids / the shared docids and the likely causes.
    """
    ctxs = run.ctxs if isinstance(run, Run) else run
    queries = run.queries if isinstance(run, Run) else None
    if not ctxs:
        raise DataError("retrieval run is empty: no queries were retrieved for")
    empty = [q for q, c in ctxs.items() if not c]
    if empty:
        raise DataError(
            f"degenerate retrieval: {len(empty)} of {len(ctxs)} queries got no passages (e.g. {empty[:5]}); "
            "check the index/corpus, and that queries are not only stop words or punctuation"
        )
    tops = {q: tuple(c["docid"] for c in hits[:top]) for q, hits in ctxs.items()}
    size = (run.config.get("corpus") or {}).get("size") if isinstance(run, Run) else None
    if size is not None and size <= top:
        return  # a corpus of <= `top` passages: every query may legitimately get all of it
    if len(tops) >= 2:
        distinct_texts = len(set(queries.values())) if queries else len(tops)
        counts = Counter(tops.values())
        common, n = counts.most_common(1)[0]
        if distinct_texts >= 2 and (n == len(tops) or (len(tops) >= min_queries and n / len(tops) > max_same_frac)):
            raise DataError(
                f"degenerate retrieval: {n} of {len(tops)} queries got the same top-{top} passages {list(common)}; "
                "the retriever ignores the query (a collapsed or wrong query encoder, a wrong index); fix it before generating"
            )
