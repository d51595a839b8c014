"""tokrag retrieval: corpora, Pyserini BM25 (Lucene) and dense (FAISS) search, fusion, a fingerprinted run cache, metrics.

Importing this package is cheap: it configures Java for Pyserini (see :mod:`retrieval.java`) and sets
``OMP_WAIT_POLICY=PASSIVE`` when unset, but imports neither pyserini nor torch; the public names below
are loaded on first access.

Public API (``docs/architecture.md``, "retrieval/")::

    from retrieval import named_corpus, retrieve, check_run_sanity, has_answer
    corpus = named_corpus("nq-dpr-1k")                       # Corpus of Passage(docid, title, text)
    run = retrieve(corpus, {"q1": "who got the first nobel prize in physics"}, "bm25", k=5)
    run.ctxs["q1"][0]  # {"docid", "title", "text", "score", "rank"}
"""

from __future__ import annotations

import importlib
from typing import Any

from .java import configure_java as _configure_java

_configure_java()

_EXPORTS = {
    # corpora
    "Passage": "corpus", "Corpus": "corpus", "load_corpus": "corpus", "named_corpus": "corpus",
    "nq_gold_docid": "corpus", "wiki_docid": "corpus", "dpr_docid": "corpus", "load_queries": "corpus",
    "NAMED_CORPORA": "corpus", "nq_oracle_questions": "corpus",
    # search
    "build_bm25_index": "bm25", "Bm25Searcher": "bm25", "bm25_index_dir": "bm25",
    "build_dense_index": "dense", "DenseSearcher": "dense", "DEFAULT_ENCODER": "dense",
    "rrf_fusion": "hybrid", "weighted_fusion": "hybrid",
    # runs
    "Run": "cache", "RunCache": "cache", "load_run": "cache",
    "retrieve": "api", "check_run_sanity": "api", "score_passages": "api", "score_label": "api",
    # metrics
    "has_answer": "metrics", "answer_recall_at_k": "metrics", "gold_at_k": "metrics", "mrr": "metrics",
    "evaluate_run": "metrics", "format_table": "metrics",
    # errors
    "TokragError": "errors", "DataError": "errors", "ConfigError": "errors", "IndexNotFoundError": "errors",
    "JavaSetupError": "errors", "OfflineError": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
