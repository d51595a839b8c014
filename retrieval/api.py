"""``retrieve`` (cached BM25 / dense / hybrid retrieval) and ``check_run_sanity`` (degenerate-retrieval guard)."""

from __future__ import annotations

import json
import logging
import numbers
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .bm25 import INDEX_CODE as BM25_INDEX_CODE
from .bm25 import (DEFAULT_B, DEFAULT_K1, Bm25Searcher, build_bm25_index, default_threads, index_code, index_identity,
                   query_rule, validate_queries)
from .cache import Run, RunCache, engine_versions, key_material, run_code
from .corpus import Corpus, resolve_corpus
from .errors import JAVA_INT_MAX, ConfigError, DataError, check_java_int, check_k, unknown_name
from .io import SearcherCache, atomic_write_json, file_lock, fingerprint, open_of_this_code
from .logs import follow_lm_eval_logging
from .paths import cache_dir as _cache_root
from .worker import java_in_process, java_worker

logger = logging.getLogger(__name__)

RETRIEVERS = ("bm25", "dense", "hybrid", "dpr")
BM25_PARAMS = {"k1": DEFAULT_K1, "b": DEFAULT_B}
# parameters that never change the result (not part of the cache key)
RUNTIME_PARAMS = {"threads", "batch_size", "progress", "index", "device"}
PREBUILT = "prebuilt:"


_SEARCHERS_MAX = 8
# (index folder, k1, b) -> an open Lucene reader, held with the folder's index_identity when opened
_searchers: SearcherCache[Bm25Searcher] = SearcherCache(_SEARCHERS_MAX, close=Bm25Searcher.close)


def _bm25_searcher(index_dir: str, k1: float, b: float, corpus: Corpus) -> Bm25Searcher:
    """An open searcher over ``index_dir`` for ``corpus``, reused while the folder holds the same build.

    The reuse is keyed by :func:`retrieval.bm25.index_identity` too (:class:`retrieval.io.SearcherCache`): a
    folder rebuilt in place (``tokrag index build --force`` from another shell) gets a new searcher, since an
    open Lucene reader keeps searching the files it opened. The identity is read and the reader opened under the
    folder's build lock, and the searcher is opened with ``corpus``, so a run is only ever computed from an index
    recorded for ``corpus``.

    Raises:
        IndexNotFoundError: the folder holds an index of another corpus (rebuilt meanwhile), or none.
    """
    return _searchers.get(
        (index_dir, k1, b), lambda: index_identity(index_dir),
        lambda: Bm25Searcher(index_dir, k1=k1, b=b, corpus=corpus),  # IndexNotFoundError: recorded for another corpus
        lock=index_dir, usable=lambda ident, s: s.meta is None or ident[0] == corpus.fingerprint)


WHOLE_PARAMS = {"rrf_k": "the RRF constant, default 60", "depth": "hits per retriever before fusion",
                "max_length": "encoder tokens", "batch_size": "encoder batch size"}
"""The retrieval parameters (and runtime options) that are whole numbers >= 1, with what each is, for messages."""


def check_numbers(values: Mapping[str, Any], *, label=lambda name, value: f"{name}={value!r}", index: bool = False) -> None:
    """The one range check of the numeric retrieval parameters, before any work: ``retrieve`` and the tasks'
    ``retriever_params`` (:func:`_resolve_params`) and the CLI's options (``label`` names a value: ``rrf_k=-1`` here,
    ``--rrf-k -1`` in the CLI). ``k1``, ``b`` and ``threads`` by :func:`retrieval.bm25.check_bm25_numbers` (``index``:
    the threads index), the names of :data:`WHOLE_PARAMS` an integer >= 1 (``depth`` also a Java int): any
    ``numbers.Integral`` but a bool (``np.int64(60)`` too). A value absent or None is not checked.

    Raises:
        ConfigError: one line naming the parameter and its value: ``k1`` not a number >= 0, ``b`` not in [0, 1], an
            ``rrf_k`` (a negative one divided by zero in the fusion), ``depth``, ``max_length``, ``batch_size`` or
            ``threads`` that is not an integer >= 1 (a bool or a float neither).
    """
    from . import bm25  # looked up now: the library's own check, which the CLI's tests watch

    bm25.check_bm25_numbers(values.get("k1"), values.get("b"), values.get("threads"), label=label, index=index)
    for name, what in WHOLE_PARAMS.items():
        v = values.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1):
            raise ConfigError(f"{label(name, v)}: must be a whole number >= 1 ({what})")
    if values.get("depth") is not None:
        check_java_int(values["depth"], label("depth", values["depth"]))


def _plain_number(v: Any) -> Any:
    """``v`` as a Python number when it is another type's (``np.int64(60)`` -> ``60``, ``np.float32(0.5)`` ->
    ``0.5``: ``numbers.Integral`` -> int, another ``numbers.Real`` -> float), so a run's key and the checks read the
    value ``60`` gives; a bool and anything else unchanged."""
    if isinstance(v, bool) or type(v) in (int, float):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return v


_YAML_STRING_FLOAT = re.compile(r"([-+]?)(\d*)(?:\.(\d*))?[eE]([-+]?)(\d+)")
"""A number in exponent notation that PyYAML (YAML 1.1) reads as a string: no '.' or no exponent sign (``1e-1``)."""


def _yaml_float_hint(v: Any) -> str:
    """For a string that is a number in exponent notation (``'1e-1'``, as PyYAML reads ``alpha: 1e-1`` of a task
    YAML), ``; YAML reads 1e-1 as a string: write 1.0e-1``; else ``""``."""
    m = _YAML_STRING_FLOAT.fullmatch(v.strip()) if isinstance(v, str) else None
    if m is None or not (m.group(2) or m.group(3)):
        return ""
    sign, whole, frac, esign, exp = m.groups()
    return f"; YAML reads {v} as a string: write {sign}{whole or '0'}.{frac or '0'}e{esign or '+'}{exp}"


def read_bool(value: Any, label: str) -> bool:
    """``value`` as a bool, read strictly: a bool, the text ``true``/``false``/``1``/``0`` (any case, as JSON or YAML
    text such as ``--metadata '{"retriever_params": {"l2_norm": "false"}}'`` gives it) or the integer 0 or 1. The one
    reader of true/false settings: the retrievers' (:func:`_resolve_params`) and the tasks' flags
    (``tasks.utils._as_bool``); ``bool("false")`` is True, so a text value is never passed on as given.

    Raises:
        ConfigError: ``{label}={value!r}: expected true or false`` for anything else (``"no"``, ``"flase"``, ``0.5``,
            ``2``, None).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false", "1", "0"}:
        return value.lower() in {"true", "1"}
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ConfigError(f"{label}={value!r}: expected true or false")


def _resolve_params(retriever: str, params: Mapping[str, Any] | None, prebuilt: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """-> (result-changing params with defaults filled in, runtime-only params). Numbers of other types
    (``np.int64(60)``, ``np.float32(0.5)``) are taken as Python numbers (:func:`_plain_number`). Unknown names, a
    ``k1``, ``b`` or ``alpha`` that is not a finite number (nan, infinite, a bool, a string, a list, an int too large
    for a float such as ``10**400``, named by its size; a string in exponent notation, which PyYAML reads from
    ``alpha: 1e-1``, is named so), a true/false parameter (one whose default is a bool: ``l2_norm``,
    ``normalization``, ``weight_on_dense``) that :func:`read_bool` does not read, and the ranges of
    :func:`check_numbers` (the CLI's) -> ConfigError naming the parameter. The true/false parameters are returned as bools (``"false"`` as False), so the run's key and the dense index folder are those of the bool; so is
    the runtime option ``progress``. ``k1``, ``b`` and ``alpha`` are returned as floats (``k1: 1`` as ``1.0``, the
    value the searchers compute with), so the run's key, recorded ``params`` and the docs' ``run_fingerprint`` are
    those of the float.

    Raises:
        ConfigError: one line naming the parameter: a name unknown to ``retriever`` (over a prebuilt corpus ``fusion``
            and ``rrf_k`` too: Pyserini's hybrid is always weighted); a ``k1``, ``b`` or ``alpha`` that is not a finite
            number; a true/false parameter or ``progress`` that :func:`read_bool` does not read; the ranges of
            :func:`check_numbers`; for a local hybrid, weighted fusion without ``alpha``, a ``fusion`` other than
            ``rrf`` / ``weighted`` (``'Weighted'``, ``['weighted']``), or a setting its fusion ignores (``alpha``,
            ``normalization``, ``weight_on_dense`` with RRF, ``rrf_k`` with weighted fusion, each other than its
            default: :func:`retrieval.hybrid.check_fusion_settings`).
    """
    from .cache import _finite, _shown_rank  # the rank rule's: a finite number a float holds, and how one is shown

    params = {k: _plain_number(v) for k, v in (params or {}).items()}
    runtime = {k: params.pop(k) for k in list(params) if k in RUNTIME_PARAMS}
    if prebuilt:
        from .prebuilt import known_params

        known = known_params(retriever)
    elif retriever == "bm25":
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
        where = " over a Pyserini prebuilt corpus" if prebuilt else ""
        valid = sorted(known) + sorted(RUNTIME_PARAMS)
        raise ConfigError("; ".join(unknown_name(f"{retriever} parameter", u, valid, list_all=0) for u in unknown)
                          + f"{where}; valid: {', '.join(valid)}")
    for name in ("k1", "b", "alpha"):  # nan/inf scored every passage nan (a traceback writing the TREC run)
        v = params.get(name)
        # True read as 1.0 (Bm25Searcher and a prebuilt hybrid refuse it); "abc" and [1] were a ValueError and a
        # TypeError from float() at search time; "0.9" is not taken either, as Bm25Searcher and the CLI do not
        # an int too large for a float (k1: 1000...0, 400 digits, in a task YAML) made math.isfinite raise OverflowError
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v)):
            shown = _shown_rank(v) if isinstance(v, int) and not isinstance(v, bool) else repr(v)
            raise ConfigError(f"{name}={shown} (--{name}): {name} must be a finite number{_yaml_float_hint(v)}")
    for name, default in known.items():  # bool("false") is True downstream: "false" encoded a cosine index
        if isinstance(default, bool) and name in params:
            params[name] = read_bool(params[name], f"retriever_params {name}")
    if "progress" in runtime:  # a runtime option, read with bool() by the searchers: "false" showed the bar
        runtime["progress"] = read_bool(runtime["progress"], "retriever_params progress")
    check_numbers({**params, **runtime})
    for name in ("k1", "b", "alpha"):  # k1: 1 and k1: 1.0 are one setting, one run key (the searchers use float(k1))
        if params.get(name) is not None:
            params[name] = float(params[name])
    if retriever == "hybrid" and not prebuilt and params.get("fusion") == "weighted" and "alpha" not in params:
        raise ConfigError(
            "weighted hybrid fusion needs an explicit alpha (fused = alpha * BM25 + dense); Pyserini's default 0.1 "
            "is not used silently"
        )
    if retriever == "hybrid" and not prebuilt:  # a setting the fusion ignores (--alpha with RRF) is refused
        from .hybrid import check_fusion_settings

        check_fusion_settings(params)
    known.update(params)
    return known, runtime


def _corpus_bm25(corpus: Corpus, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> Bm25Searcher:
    """The BM25 index of ``corpus`` (``runtime['index']`` or the cache's), built once (:func:`build_bm25_index`), open.

    The searcher is opened only over an index recorded with this process's index code
    (:func:`retrieval.bm25.index_code`, read under the folder's lock as it is opened;
    :func:`retrieval.io.open_of_this_code`, as the dense path's :func:`retrieval.dense._corpus_searcher`): a checkout
    with other ``retrieval/bm25.py`` sharing the cache folder may rebuild it between the build's check and the open,
    and its ranking would then be cached under this code's run key. Such an index is rebuilt (a warning), at most
    :data:`retrieval.io.INDEX_OPEN_TRIES` times. A foreign index (no ``tokrag_index.json``) is opened as before.

    Raises:
        ConfigError: the index was rebuilt by other index code before every one of those opens: one line naming the
            folder and both codes, and what to do (one cache folder per checkout: ``$TOKRAG_CACHE_DIR``).
    """
    def open_searcher() -> Bm25Searcher:
        index_dir = build_bm25_index(corpus, runtime.get("index"), cache_dir=cache_dir)
        return _bm25_searcher(str(index_dir), float(p["k1"]), float(p["b"]), corpus)

    return open_of_this_code("BM25", open_searcher, index_code(), BM25_INDEX_CODE, logger)


def _bm25_hits(corpus: Corpus, queries: Mapping[str, str], depth: int, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> tuple[dict, int]:
    s = _corpus_bm25(corpus, p, runtime, cache_dir)
    before = s.searches
    hits = s.batch_search(queries, k=depth, threads=runtime.get("threads") or default_threads(), progress=bool(runtime.get("progress")))
    return hits, s.searches - before


def _run_config(retriever: str, p: Mapping[str, Any], corpus: Mapping[str, Any], k: int, queries: Mapping[str, str],
                exclude: Mapping[str, Sequence[str]], encoder: Mapping[str, Any] | None,
                prebuilt: bool = False) -> dict[str, Any]:
    """The run-cache config of a request: everything that changes the result (the cache key), the versions of
    Pyserini, Anserini (Lucene) and FAISS that compute it (:func:`retrieval.cache.engine_versions`) and the
    fingerprint of the retrieval code that computes it (``code``: :func:`retrieval.cache.run_code`) included."""
    config: dict[str, Any] = {
        "retriever": retriever,
        "params": p,
        "corpus": dict(corpus),
        "k": k,
        "queries": {"n": len(queries), "fingerprint": fingerprint(list(queries.items()))},
        "exclude": fingerprint(sorted(exclude.items())) if exclude else None,
    }
    if encoder is not None:
        config["encoder"] = dict(encoder)
    if retriever in ("bm25", "hybrid") and query_rule(queries) is not None:  # only ':' queries changed (rule 2)
        config["queries"]["rule"] = query_rule(queries)
    config["engine"] = engine_versions(retriever)
    config["code"] = run_code(retriever, prebuilt=prebuilt)
    return config


def _local_config(retriever: str, p: Mapping[str, Any], corpus: Corpus, k: int, queries: Mapping[str, str],
                  exclude: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    encoder = None
    if retriever != "bm25":
        from .dense import encoder_identity

        encoder = encoder_identity(p)
    corpus_cfg = {"name": corpus.name, "fingerprint": corpus.fingerprint, "size": len(corpus)}
    return _run_config(retriever, p, corpus_cfg, k, queries, exclude, encoder)


def _ctxs(hits: Mapping[str, Sequence[tuple[str, float]]], queries: Mapping[str, str], exclude: Mapping[str, Sequence[str]],
          k: int, passage) -> dict[str, list[dict[str, Any]]]:
    """Ranked ``(docid, score)`` hits -> ctxs rows (excluded docids dropped, top ``k`` kept, texts by ``passage(docid)``)."""
    ctxs: dict[str, list[dict[str, Any]]] = {}
    for qid in queries:
        banned = set(exclude.get(qid, ()))
        kept = [(d, s) for d, s in hits.get(qid, []) if d not in banned][:k]
        rows = []
        for rank, (docid, score) in enumerate(kept, start=1):
            psg = passage(docid)
            rows.append({"docid": docid, "title": psg.title, "text": psg.text, "score": float(score), "rank": rank})
        ctxs[qid] = rows
    return ctxs


def _prebuilt_run(name: str, queries: dict[str, str], retriever: str, k: int, p: dict[str, Any], runtime: Mapping[str, Any],
                  exclude: Mapping[str, Sequence[str]], cache_dir) -> Run:
    """:func:`retrieve` over ``prebuilt:<name>`` (in the Java process): key from Pyserini's index table (names, md5s),
    the download plan printed before anything is downloaded, then :class:`retrieval.prebuilt.PrebuiltSearcher`."""
    from . import prebuilt as pb

    plan = pb.download_plan(name, retriever, p)
    printed = False
    encoder = None
    if retriever != "bm25":
        if not all(it["cached"] for it in plan["items"] if it["md5"] is None):  # the encoder is fetched for its hash
            printed = pb.print_plan_if_downloading(plan)
        encoder = pb.encoder_identity(p, plan)
    config = _run_config(retriever, p, pb.corpus_config(name, retriever, p), k, queries, exclude, encoder,
                         prebuilt=True)
    depth = min(k + max((len(v) for v in exclude.values()), default=0), JAVA_INT_MAX)  # Lucene caps it anyway

    def compute() -> tuple[dict, int]:
        if not printed:
            pb.print_plan_if_downloading(plan)
        s = pb.searcher(name, retriever, p, device=runtime.get("device") or "cpu")
        hits = s.batch_search(queries, k=depth, threads=runtime.get("threads") or default_threads(),
                              batch_size=int(runtime.get("batch_size") or 64), progress=bool(runtime.get("progress")))
        return _ctxs(hits, queries, exclude, k, s.passage), len(queries)

    return RunCache(cache_dir).get_or_compute(config, compute, queries)


def check_retriever(retriever: str, prebuilt: bool) -> None:
    """Refuse a ``retriever`` that :func:`retrieve` cannot run over its corpus (``prebuilt``: a ``prebuilt:`` name):
    one not in :data:`RETRIEVERS`, or ``dpr`` over a local corpus. Shared with ``tokrag retrieve --dry-run``
    (:func:`retrieval.cli._check_run_params`), so both give the same line.

    Raises:
        ConfigError: an unknown retriever (with the closest name); ``dpr`` over a local corpus.
    """
    if retriever not in RETRIEVERS:
        raise ConfigError(unknown_name("retriever", retriever, RETRIEVERS))
    if not prebuilt and retriever == "dpr":
        raise ConfigError(
            "retriever 'dpr' searches Pyserini's prebuilt DPR FAISS index (corpus 'prebuilt:wikipedia-dpr-100w'); "
            "for a local corpus use retriever 'dense' with encoder_class 'dpr' and DPR encoders"
        )


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
            path, or ``prebuilt:<name>`` for Pyserini's prebuilt indexes of a corpus (e.g.
            ``prebuilt:wikipedia-dpr-100w``; :mod:`retrieval.prebuilt`: downloaded once by Pyserini, needs the
            internet, the download plan is printed first; passages come from the stored raw documents).
        queries: ``{qid: query text}``; qids are single tokens, texts non-empty.
        retriever: ``bm25`` (params ``k1``=0.9, ``b``=0.4), ``dense`` (params of
            :data:`retrieval.dense.DENSE_PARAMS`: ``encoder``, ``query_encoder``, ``encoder_class``,
            ``pooling``, ``l2_norm``, ``max_length``, ``prefix_query``, ``prefix_passage``) or ``hybrid``
            (both, plus ``fusion`` = ``rrf`` | ``weighted``, ``alpha`` (required for ``weighted``), ``rrf_k``,
            ``normalization``, ``depth``) over a local corpus; ``bm25``, ``dpr`` (``dense_index`` =
            ``dpr-multi`` | ``dpr-single-nq``, ``query_encoder``, ``max_length``) or ``hybrid`` (both, plus a
            required ``alpha``, ``depth`` = 1000, ``normalization``, ``weight_on_dense``) over a prebuilt corpus.
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
        The cache key of a prebuilt run holds every index's name and md5 (Pyserini's table).

    Raises:
        ConfigError: unknown retriever or parameter, k < 1, bad qids, ``dpr`` over a local corpus, a hybrid over a
        prebuilt corpus without ``alpha``, a true/false parameter (``l2_norm``, ``normalization``, ``weight_on_dense``)
        that is neither a bool nor ``"true"``/``"false"`` (:func:`read_bool`; ``"false"`` runs as False), a local
        weighted hybrid without ``alpha``, a local hybrid's ``fusion`` other than ``rrf``/``weighted`` or a setting
        its fusion ignores (``alpha`` with RRF: :func:`retrieval.hybrid.check_fusion_settings`), the other refusals
        of :func:`_resolve_params`; all before the corpus is searched or the run cache opened. DataError: empty,
        whitespace-only or invalid-Unicode queries, bad corpus files.
        IndexNotFoundError, JavaSetupError, OfflineError: see the searchers. TokragError: the worker process
        died (e.g. a JVM crash).

    Process model: unless the JVM already runs in this process (or ``TOKRAG_JVM_IN_PROCESS=1``), a cache
    miss is computed by the retrieval worker process (:mod:`retrieval.worker`), so the JVM never starts in
    a process that runs torch; errors raised there are re-raised here with the same type and message.
    """
    follow_lm_eval_logging()  # under lm_eval, a first index build's INFO line shows
    is_prebuilt = isinstance(corpus, str) and corpus.startswith(PREBUILT)
    check_retriever(retriever, is_prebuilt)
    k = check_k(k, " (the number of passages per query)", java=True)
    validate_queries(queries)
    if not is_prebuilt:
        corpus = resolve_corpus(corpus, data_dir)
    p, runtime = _resolve_params(retriever, params, is_prebuilt)
    if is_prebuilt:
        from .prebuilt import check_params

        check_params(corpus[len(PREBUILT):], retriever, p)
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
            run = RunCache(cache_root).load(_local_config(retriever, p, corpus, k, queries, exclude))
            if run is not None:
                return run
        return java_worker().call("retrieve", corpus, queries, retriever, k, params, exclude, cache_root, data_dir=data_dir)
    if is_prebuilt:
        return _prebuilt_run(corpus[len(PREBUILT):], queries, retriever, k, p, runtime, exclude, cache_dir)
    config = _local_config(retriever, p, corpus, k, queries, exclude)
    depth = min(k + max((len(v) for v in exclude.values()), default=0), JAVA_INT_MAX)  # Lucene caps it anyway

    def compute() -> tuple[dict, int]:
        if retriever == "bm25":
            hits, searches = _bm25_hits(corpus, queries, depth, p, runtime, cache_dir)
        elif retriever == "dense":
            from .dense import dense_hits

            hits, searches = dense_hits(corpus, queries, depth, p, runtime, cache_dir)
        else:
            from .hybrid import hybrid_hits

            hits, searches = hybrid_hits(corpus, queries, depth, p, runtime, cache_dir, _bm25_hits)
        return _ctxs(hits, queries, exclude, k, corpus.get), searches

    return RunCache(cache_dir).get_or_compute(config, compute, queries)


def score_label(retriever: str, params: Mapping[str, Any] | None = None, corpus: Any = None) -> str:
    """Which scale a retriever's scores live on: what a doc records as ``scored_by`` (REPLUG picks its default
    temperature from it, :data:`tokrag_model.methods.replug.REPLUG_TAU`). The one implementation used by every
    task loader (``tasks.rag``, ``tasks.utils`` wiki_lm, ``tasks.wikitext``).

    * ``bm25``; ``dpr`` for the ``dpr`` retriever (Pyserini's prebuilt DPR index).
    * ``dense`` (what :mod:`retrieval.dense` scores: exact inner products of the query and passage vectors)
      is told apart by what those products are:

      * ``dense``: an ``auto`` encoder with ``l2_norm`` true (the default): cosines, in [-1, 1].
      * ``dpr``: ``encoder_class="dpr"`` with DPR's own encoders (``facebook/dpr-ctx_encoder-single-nq-base``
        and ``facebook/dpr-question_encoder-single-nq-base``): the scale of the ``dpr`` retriever.
      * ``dense-ip``: any other dense setting (``l2_norm`` false, or another ``encoder_class="dpr"``
        checkpoint): unbounded inner products whose scale depends on the encoder; REPLUG has no default τ.

    * ``hybrid-rrf`` or ``hybrid-weighted`` (``params["fusion"]``, default rrf); a hybrid over a Pyserini
      prebuilt ``corpus`` is always weighted fusion.

    Args:
        retriever: ``bm25``, ``dense``, ``dpr`` or ``hybrid`` (other names are returned unchanged).
        params: the task's ``retriever_params`` (``None``: defaults, :data:`retrieval.dense.DENSE_PARAMS`).
        corpus: the corpus spec (only a ``prebuilt:`` string matters, for hybrid).
    """
    if retriever == "hybrid":
        if isinstance(corpus, str) and corpus.startswith(PREBUILT):
            return "hybrid-weighted"
        return f"hybrid-{(params or {}).get('fusion', 'rrf')}"
    if retriever != "dense":
        return retriever
    from .dense import DENSE_PARAMS, DPR_CTX, DPR_QUESTION

    p = {**DENSE_PARAMS, **(params or {})}
    if p["encoder_class"] == "dpr":
        return "dpr" if (p["encoder"], p["query_encoder"]) == (DPR_CTX, DPR_QUESTION) else "dense-ip"
    return "dense" if read_bool(p["l2_norm"], "retriever_params l2_norm") else "dense-ip"  # as _resolve_params reads it


SCORES_FORMAT = 2  # 2: passages of the index scored by Lucene (one-document query)


def score_passages(
    corpus: Corpus | str | os.PathLike,
    queries: Mapping[str, str],
    passages: Mapping[str, Sequence[Mapping[str, str]]],
    retriever: str = "bm25",
    k: int = 5,
    params: Mapping[str, Any] | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    data_dir: str | os.PathLike | None = None,
) -> dict[str, list[float]]:
    """The retriever's score of given passages for each query: what :func:`retrieve` with the same
    arguments gives (or would give) them, also for passages it did not return (noise passages) and for
    passages that are not in the corpus (answer-swapped ones), so that every passage a task attaches
    carries a score on the same scale (issue 11.1).

    * ``bm25``: :meth:`retrieval.bm25.Bm25Searcher.score_passages` (Lucene scores passages of the index
      against the same index and k1/b; others get Lucene's BM25 scorer with the index's statistics;
      Anserini's rounding).
    * ``dense``: :func:`retrieval.dense.dense_passage_scores` (exact inner products with the same query
      vectors; stored passage vectors, or freshly encoded ones for text not in the index).
    * ``hybrid``: both, fused against the same component top-``max(k, depth)`` lists with the same formula
      (:func:`retrieval.hybrid.fuse_passage`): a passage beyond a list's reach gets no RRF term from it
      (the list's minimum for weighted fusion); a list's own rank for a docid is taken only for the corpus
      passage itself (same title and text); an edited passage keeping that docid, or a counterfactual one
      (``X#cf``), is ranked in the place of the passage it replaces (that passage's entry left out of the lists),
      by its own scores.

    Args:
        corpus, queries, retriever, k, params, cache_dir, data_dir: as for :func:`retrieve` (local corpora).
        passages: ``{qid: [{"docid", "title", "text"}, ...]}`` (qids among ``queries``).

    Returns:
        ``{qid: [score, ...]}`` aligned with ``passages[qid]``. Cached next to the runs
        (``<cache>/scores/<retriever>-<key>.json``, key: the run config as the run cache keys it,
        :func:`retrieval.cache.key_material`, so the same passages under another file name share it, plus the
        passages).

    Raises:
        ConfigError: as :func:`retrieve` (``k`` an integer from 1 to 2**31 - 1, as there); a Pyserini prebuilt
            corpus; qids that are not queries.
    """
    if retriever not in RETRIEVERS or retriever == "dpr":
        raise ConfigError(unknown_name("retriever for scoring passages", retriever, ("bm25", "dense", "hybrid")))
    if isinstance(corpus, str) and corpus.startswith(PREBUILT):
        raise ConfigError(f"score_passages: corpus {corpus!r}: passages can be scored over local corpora only")
    # the same k as retrieve's (part of the cache key; the hybrid's component depth), refused before Java starts
    k = check_k(k, " (the number of passages per query)", java=True)
    validate_queries(queries)
    unknown = sorted(set(passages) - set(queries))
    if unknown:
        raise ConfigError(f"score_passages: passages name qids that are not queries: {unknown[:5]}")
    corpus = resolve_corpus(corpus, data_dir)
    p, runtime = _resolve_params(retriever, params)
    queries = dict(queries)
    plist = {q: [{"docid": str(c["docid"]), "title": str(c["title"]), "text": str(c["text"])} for c in v]
             for q, v in passages.items()}
    # hybrid 3: a component list's rank is used only for the corpus passage itself (an edited one keeping its docid
    # got the original's rank before); 4: an edited or counterfactual passage takes the place of the passage it
    # replaces in the component lists (it was ranked against it, one rank too low on a tie)
    config = {"kind": "passage-scores", "format": SCORES_FORMAT if retriever != "hybrid" else 4,
              "run": _local_config(retriever, p, corpus, k, queries, {}),
              "passages": fingerprint(sorted(plist.items()))}
    # keyed as the run cache keys the run (retrieval.cache.key_material): a local corpus by its passages, not its
    # file name; dense encoders by their weights hashes, not the names they were given by (the file records both)
    key = fingerprint({**config, "run": key_material(config["run"])}, 20)
    path = _cache_root(cache_dir) / "scores" / f"{retriever}-{key}.json"

    def load() -> dict[str, list[float]] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return data["scores"] if data.get("key") == key else None
        except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):  # a damaged cache file:
            return None  # recomputed (RecursionError: nested past Python's limit; AttributeError: JSON of another shape)

    cached = load()
    if cached is not None:
        return cached
    if not java_in_process():
        return java_worker().call("score_passages", corpus, queries, passages, retriever, k, params, cache_dir,
                                  data_dir=data_dir)
    with file_lock(path):
        cached = load()
        if cached is not None:
            return cached
        if retriever == "bm25":
            scores = _bm25_passage_scores(corpus, queries, plist, p, runtime, cache_dir)
        elif retriever == "dense":
            from .dense import dense_passage_scores

            scores = dense_passage_scores(corpus, queries, plist, p, runtime, cache_dir)
        else:
            from .dense import dense_passage_scores
            from .hybrid import component_hits, fuse_passage

            sparse, dense, _ = component_hits(corpus, queries, k, p, runtime, cache_dir, _bm25_hits)
            s_scores = _bm25_passage_scores(corpus, queries, plist, p, runtime, cache_dir)
            d_scores = dense_passage_scores(corpus, queries, plist, p, runtime, cache_dir)
            scores = {q: [fuse_passage(p, c["docid"], sparse.get(q, []), dense.get(q, []), s, d,
                                       _in_index(corpus, c) is not None)
                          for c, s, d in zip(plist[q], s_scores[q], d_scores[q])] for q in plist}
        atomic_write_json(path, {"key": key, "config": config, "scores": scores})
    return scores


def _bm25_passage_scores(corpus: Corpus, queries: Mapping[str, str], passages: Mapping[str, Sequence[Mapping[str, str]]],
                         p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> dict[str, list[float]]:
    s = _corpus_bm25(corpus, p, runtime, cache_dir)
    return {q: s.score_passages(queries[q], [(c["title"], c["text"]) for c in v], [_in_index(corpus, c) for c in v])
            for q, v in passages.items()}


def _in_index(corpus: Corpus, c: Mapping[str, str]) -> str | None:
    """``c``'s docid when it is that corpus passage (same title and text), else None (an edited or new passage)."""
    psg = corpus.get(c["docid"]) if c["docid"] in corpus else None
    return c["docid"] if psg is not None and psg.title == c["title"] and psg.text == c["text"] else None


def short_hits(ctxs: Mapping[str, Sequence[Any]], qids: Sequence[str] | Mapping[str, Any], k: int, retriever: str,
               size: int | None = None) -> tuple[int, int, int, str] | None:
    """How many questions got fewer than ``k`` passages, and why: the counting of the short-run notes of
    ``tokrag retrieve`` and of the tasks' warning (``tasks.rag``), one rule for both.

    Args:
        ctxs: the run, ``{qid: [passage, ...]}``; qids: every question searched (a missing one got 0).
        retriever: its name (``bm25`` names the cause: BM25 needs a shared word that is not a stop word).
        size: the number of passages searched, when known (a cause when below ``k``).

    Returns:
        ``(short, total, fewest, cause)``, or None when every question got ``k``: ``cause`` is the
        ``"; "``-joined causes, or ``"<retriever> returned fewer"``.
    """
    counts = [len(ctxs.get(q) or []) for q in qids]
    short = [n for n in counts if n < k]
    if not short:
        return None
    causes = []
    if retriever == "bm25":
        causes.append("BM25 returns only passages that share a word, not a stop word, with the question")
    if size is not None and size < k:
        causes.append(f"the corpus has only {size} passages")
    return len(short), len(counts), min(short), "; ".join(causes or [f"{retriever} returned fewer"])


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
