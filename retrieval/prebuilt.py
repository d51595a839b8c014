"""Pyserini's prebuilt indexes of a corpus (``corpus="prebuilt:<name>"``): BM25, DPR and their hybrid.

The standard open-domain QA setting is the 21M-passage DPR Wikipedia (``wikipedia-dpr-100w``, the 100-word
passages of ``psgs_w100.tsv``, Karpukhin et al. 2020) with Pyserini's prebuilt indexes:

* ``bm25``: the prebuilt Lucene index (``LuceneSearcher.from_prebuilt_index``; raw documents stored), BM25
  k1=0.9, b=0.4 as Pyserini's runs.
* ``dpr``: a prebuilt FAISS flat inner-product index (``FaissSearcher.from_prebuilt_index``) searched with
  the matching DPR question encoder (``DprQueryEncoder``): ``dense_index`` ``dpr-multi``
  (``wikipedia-dpr-100w.dpr-multi`` + ``facebook/dpr-question_encoder-multiset-base``, the default) or
  ``dpr-single-nq`` (``…dpr-single-nq`` + ``facebook/dpr-question_encoder-single-nq-base``).
* ``hybrid``: Pyserini's ``HybridSearcher`` over the two: the top ``depth`` (1000, Pyserini's
  ``fusion --hits``) of each, fused score ``alpha * bm25 + dpr`` (Ma et al., *A Replication Study of Dense
  Passage Retriever*, arXiv 2104.05740; ``pyserini/search/hybrid/_searcher.py``). ``alpha`` has no default:
  Pyserini's DPR page uses 1.3 for NQ, 0.95 for TriviaQA and WebQuestions with DPR-multi (1.2 for NQ with
  DPR-single); Pyserini's own default 0.1 is another system and is never used silently. Ties are broken by
  docid (Pyserini iterates a Python set, so its order of tied documents changes between processes).

Passages come from the prebuilt Lucene index's stored raw documents (``"Title"\\ntext``). Query encoding is
batched and truncated at ``max_length`` (512) tokens; for shorter queries the vectors equal Pyserini's
``DprQueryEncoder.encode`` within float rounding.

Downloads: the indexes go to Pyserini's cache (``$PYSERINI_CACHE``, default ``~/.cache/pyserini/indexes/
<archive name>.<md5>``; an index copied there by hand is used as is), the query encoder to the Hugging Face
cache. Before anything is downloaded, :func:`format_plan` of :func:`download_plan` is printed to stderr:
what, from where, how large, and the memory the FAISS flat index takes when loaded (about 64.6 GB for
21M x 768 float32 vectors). ``tokrag retrieve ... --dry-run`` prints it without downloading.

This module imports Pyserini's prebuilt-index tables, which start the JVM: it runs in the retrieval worker
process (:mod:`retrieval.worker`), never next to a model.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .corpus import Passage
from .errors import ConfigError, IndexNotFoundError, OfflineError
from .io import SearcherCache
from .logs import quiet_foreign_loggers

logger = logging.getLogger(__name__)
quiet_foreign_loggers()  # faiss.loader's INFO "Could not load library with AVX512 support" reads as an error

PREBUILT = "prebuilt:"
DEFAULT_CORPUS = "wikipedia-dpr-100w"
# Short DPR index names of a corpus -> their question encoders (Pyserini's DPR reproduction page / 2CR).
DPR_QUERY_ENCODERS = {
    "dpr-multi": "facebook/dpr-question_encoder-multiset-base",
    "dpr-single-nq": "facebook/dpr-question_encoder-single-nq-base",
}
# Download size of a BERT-base DPR question encoder (pytorch_model.bin, float32): for the plan only.
_BERT_BASE_BYTES = 438_000_000
DPR_DIMENSION = 768
BM25_PARAMS: dict[str, Any] = {"k1": 0.9, "b": 0.4}
DPR_PARAMS: dict[str, Any] = {"dense_index": "dpr-multi", "query_encoder": None, "max_length": 512}
HYBRID_PARAMS: dict[str, Any] = {"alpha": None, "depth": 1000, "normalization": False, "weight_on_dense": False}
RETRIEVERS = ("bm25", "dpr", "hybrid")


def known_params(retriever: str) -> dict[str, Any]:
    """Default result-changing parameters of ``retriever`` over a prebuilt corpus (``alpha`` has none)."""
    if retriever == "bm25":
        return dict(BM25_PARAMS)
    if retriever == "dpr":
        return dict(DPR_PARAMS)
    if retriever == "hybrid":
        return {**BM25_PARAMS, **DPR_PARAMS, **HYBRID_PARAMS}
    raise ConfigError(
        f"retriever {retriever!r} cannot search a Pyserini prebuilt corpus; use bm25, dpr or hybrid "
        "('dense' encodes a local corpus; over prebuilt:wikipedia-dpr-100w use 'dpr')"
    )


def check_params(corpus: str, retriever: str, p: Mapping[str, Any]) -> None:
    """Raises ConfigError for a hybrid without an explicit ``alpha`` or out-of-range values."""
    if retriever == "hybrid":
        alpha = p.get("alpha")
        if alpha is None or isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            raise ConfigError(
                f"hybrid retrieval over prebuilt:{corpus} needs an explicit alpha (fused score = alpha * BM25 + DPR), "
                "e.g. retriever_params {\"alpha\": 1.3} for NQ or 0.95 for WebQuestions/TriviaQA (Pyserini's DPR page, "
                "DPR-multi); Pyserini's default 0.1 is a different system and is not used silently"
            )
        if isinstance(p["depth"], bool) or not isinstance(p["depth"], int) or p["depth"] < 1:
            raise ConfigError(f"depth={p['depth']!r}: hits per retriever before fusion must be an integer >= 1")
    if retriever in ("dpr", "hybrid") and (not isinstance(p["max_length"], int) or p["max_length"] < 8):
        raise ConfigError(f"max_length={p['max_length']!r}: give an integer >= 8 (query tokens)")


# ----------------------------------------------------------------------------------------------- index tables
@dataclass(frozen=True)
class IndexInfo:
    """One Pyserini prebuilt index: its table entry and where Pyserini keeps it once downloaded.

    Attributes:
        name: Pyserini's index name (``wikipedia-dpr-100w``, ``wikipedia-dpr-100w.dpr-multi``).
        kind: ``lucene`` or ``faiss``.
        url: first download URL; md5: of the archive (also the folder suffix).
        bytes: compressed archive size (bytes); documents: passages in the index.
        path: the unpacked folder in Pyserini's cache; cached: whether it is there.
    """

    name: str
    kind: str
    url: str
    md5: str
    bytes: int | None
    documents: int | None
    path: str
    cached: bool


def _tables() -> tuple[dict, dict]:
    from .java import start_jvm

    start_jvm()  # pyserini.prebuilt_index_info calls autoclass at import
    from pyserini.prebuilt_index_info import FAISS_INDEX_INFO, TF_INDEX_INFO

    return TF_INDEX_INFO, FAISS_INDEX_INFO


def index_info(name: str, kind: str) -> IndexInfo:
    """The table entry of prebuilt index ``name`` (``kind`` ``lucene`` or ``faiss``).

    Raises:
        ConfigError: ``name`` is not a Pyserini prebuilt index of that kind.
    """
    from pyserini.util import get_cache_home

    tf, faiss_ = _tables()
    table = tf if kind == "lucene" else faiss_
    if name not in table:
        close = [n for n in table if n.startswith(name.split(".")[0])][:6]
        raise ConfigError(
            f"{name!r} is not a Pyserini prebuilt {'Lucene' if kind == 'lucene' else 'FAISS'} index "
            f"({len(table)} known{'; e.g. ' + ', '.join(close) if close else ''})"
        )
    e = table[name]
    url = e["urls"][0]
    stem = re.sub(r"\.tar\.gz.*$", "", e.get("filename") or url.split("/")[-1])
    path = Path(get_cache_home()) / "indexes" / f"{stem}.{e['md5']}"
    return IndexInfo(name, kind, url, e["md5"], e.get("size compressed (bytes)"), e.get("documents"), str(path), path.is_dir())


def dense_index_name(corpus: str, dense_index: str) -> str:
    """``dpr-multi`` -> ``<corpus>.dpr-multi``; a full Pyserini name is kept."""
    return dense_index if "." in dense_index else f"{corpus}.{dense_index}"


def query_encoder_name(p: Mapping[str, Any]) -> str:
    """The DPR question encoder of a dpr/hybrid request: ``query_encoder`` or the one matching ``dense_index``.

    Raises:
        ConfigError: a dense index without a known question encoder and no ``query_encoder`` given.
    """
    if p.get("query_encoder"):
        return str(p["query_encoder"])
    short = str(p["dense_index"]).rsplit(".", 1)[-1] if "." in str(p["dense_index"]) else str(p["dense_index"])
    if short not in DPR_QUERY_ENCODERS:
        raise ConfigError(
            f"dense_index={p['dense_index']!r} has no known DPR question encoder; pass query_encoder (a hub id or a "
            f"local folder), or use one of {', '.join(DPR_QUERY_ENCODERS)}"
        )
    return DPR_QUERY_ENCODERS[short]


def indexes(corpus: str, retriever: str, p: Mapping[str, Any]) -> list[IndexInfo]:
    """The prebuilt indexes a request needs: the Lucene index of ``corpus`` (BM25, and the passage texts
    for every retriever), then the FAISS index for ``dpr``/``hybrid``.

    Raises:
        ConfigError: unknown names, or a FAISS index whose passages are not ``corpus``.
    """
    out = [index_info(corpus, "lucene")]
    if retriever in ("dpr", "hybrid"):
        name = dense_index_name(corpus, str(p["dense_index"]))
        info = index_info(name, "faiss")
        _, faiss_ = _tables()
        texts = faiss_[name].get("texts")
        if texts != corpus:
            raise ConfigError(f"FAISS index {name!r} holds passages of {texts!r}, not of {corpus!r}")
        out.append(info)
    return out


def corpus_config(corpus: str, retriever: str, p: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies the searched corpus in the run-cache key: ``prebuilt:<name>``, every index's name
    and md5 (Pyserini's archive checksum), and the number of passages."""
    idx = indexes(corpus, retriever, p)
    return {"name": PREBUILT + corpus, "indexes": [{"name": i.name, "md5": i.md5} for i in idx], "size": idx[0].documents}


# ----------------------------------------------------------------------------------------------- download plan
def _encoder_cached(name: str) -> bool:
    if Path(name).expanduser().is_dir():
        return True
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(name, local_files_only=True)
        return True
    except Exception:  # noqa: BLE001 - not in the local cache
        return False


def download_plan(corpus: str, retriever: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a request over ``prebuilt:<corpus>`` needs, what is already here and what would be downloaded.

    Returns:
        ``{"corpus", "retriever", "items": [{"what", "name", "url", "bytes", "md5", "path", "cached"}],
        "download_bytes": bytes of the items not cached (the encoder counted at its approximate size),
        "memory_bytes": RAM of the loaded FAISS flat index (documents x 768 x 4), or None}``.

    Raises:
        ConfigError: unknown names or parameters.
    """
    p = {**known_params(retriever), **(params or {})}
    items = []
    for i in indexes(corpus, retriever, p):
        what = "Lucene index (BM25 and the passage texts)" if i.kind == "lucene" else "FAISS flat index (DPR passage vectors)"
        items.append({"what": what, **{k: v for k, v in asdict(i).items() if k not in ("kind", "documents")}})
    memory = None
    if retriever in ("dpr", "hybrid"):
        enc = query_encoder_name(p)
        items.append({"what": "DPR question encoder (Hugging Face hub)", "name": enc, "url": f"https://huggingface.co/{enc}",
                      "bytes": _BERT_BASE_BYTES, "md5": None, "path": None, "cached": _encoder_cached(enc)})
        docs = indexes(corpus, retriever, p)[1].documents
        memory = docs * DPR_DIMENSION * 4 if docs else None
    return {"corpus": corpus, "retriever": retriever, "items": items,
            "download_bytes": sum(it["bytes"] or 0 for it in items if not it["cached"]), "memory_bytes": memory}


def _gb(n: int | None) -> str:
    return "size unknown" if n is None else f"{n / 1e9:.2f} GB"


def format_plan(plan: Mapping[str, Any]) -> str:
    """The download plan as the lines printed before a download starts (module docstring)."""
    lines = [f"tokrag: {plan['retriever']} retrieval over prebuilt:{plan['corpus']} needs:"]
    for it in plan["items"]:
        state = "cached  " if it["cached"] else "DOWNLOAD"
        approx = "about " if it["md5"] is None else ""
        where = f" -> {it['path']}" if it["path"] else ""
        lines.append(f"  [{state}] {it['what']}: {it['name']}, {approx}{_gb(it['bytes'])}"
                     + (f" (md5 {it['md5']})" if it["md5"] else "") + f" from {it['url']}{where}")
    if plan["download_bytes"]:
        lines.append(f"  total to download: {_gb(plan['download_bytes'])} (the archives are unpacked next to themselves, "
                     "then deleted: keep about twice that free while it runs)")
    else:
        lines.append("  everything is cached: nothing to download")
    if plan.get("memory_bytes"):
        lines.append(f"  the FAISS flat index is loaded into memory whole: about {_gb(plan['memory_bytes'])} of RAM")
    return "\n".join(lines)


def print_plan_if_downloading(plan: Mapping[str, Any]) -> bool:
    """Print :func:`format_plan` to stderr when something is not cached; returns whether it printed."""
    if plan["download_bytes"] or any(not it["cached"] for it in plan["items"]):
        print(format_plan(plan), file=sys.stderr, flush=True)
        return True
    return False


# ----------------------------------------------------------------------------------------------- question encoder
def dry_run_command(corpus: str, retriever: str, p: Mapping[str, Any]) -> str:
    """The ``tokrag retrieve --corpus prebuilt:NAME --dpr|--hybrid ... --dry-run`` line that prints what a request
    needs (:func:`format_plan`): with ``--alpha`` (which a prebuilt hybrid requires), ``--dense-index`` and
    ``--query-encoder`` where ``p`` sets them otherwise than the defaults."""
    import shlex

    words = ["tokrag", "retrieve", "--corpus", PREBUILT + corpus, f"--{retriever}"]
    if retriever == "hybrid" and p.get("alpha") is not None:
        words += ["--alpha", str(p["alpha"])]
    if p.get("dense_index") not in (None, DPR_PARAMS["dense_index"]):
        words += ["--dense-index", str(p["dense_index"])]
    if p.get("query_encoder"):
        words += ["--query-encoder", str(p["query_encoder"])]
    return " ".join(shlex.quote(w) for w in [*words, "--dry-run"])


def query_encoder_missing_error(corpus: str, retriever: str, p: Mapping[str, Any],
                                plan: Mapping[str, Any] | None = None, cause: BaseException | None = None) -> OfflineError:
    """One line for a dpr/hybrid request over ``prebuilt:<corpus>`` whose DPR question encoder is neither a local
    folder nor in the local Hugging Face cache, and cannot be downloaded (``HF_HUB_OFFLINE=1``, or the hub did not
    answer: ``cause``): what is missing (the encoder, and the indexes of ``plan``, :func:`download_plan`, that are not
    cached; None: the encoder alone, e.g. when the run is cached and needs only the encoder's hash) with its size, and
    the :func:`dry_run_command` that lists them and where each goes. No other encoder is suggested: the FAISS index
    holds 768-d DPR passage vectors, which only a matching DPR question encoder can query."""
    from .paths import hub_offline

    enc = query_encoder_name(p)
    names = {"lucene": "the Lucene index", "faiss": "the FAISS index"}
    why = ("HF_HUB_OFFLINE=1 forbids its download" if hub_offline()
           else f"the hub did not answer: {type(cause).__name__}" if cause is not None else "no internet?")
    folder = enc.startswith(("/", "~", "./", "../"))  # a local folder's path (resolve_encoder: not there), no hub id
    missing = [] if folder else [f"the DPR question encoder {enc!r} (about {_gb(_BERT_BASE_BYTES)}; {why})"]
    for it in (plan or {}).get("items", []):
        if it["md5"] is not None and not it["cached"]:
            kind = "lucene" if it["what"].startswith("Lucene") else "faiss"
            missing.append(f"{names[kind]} {it['name']!r} ({_gb(it['bytes'])})")
    what = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else "".join(missing)
    n = f"{len(missing)} downloads that are" if len(missing) > 1 else "a download that is"
    if folder:
        need = (f": its DPR question encoder folder {enc!r} (the query_encoder given) does not exist"
                + (f"; it also needs {n} not here: {what}" if missing else ""))
    else:
        need = f" needs {n} not here: {what}"
    return OfflineError(
        f"{retriever} retrieval over {PREBUILT}{corpus}{need}; "
        f"`{dry_run_command(corpus, retriever, p)}` lists what it needs and where each goes (a copy of the question "
        "encoder in a local folder can be named as the task's retriever_params query_encoder)")


def resolve_query_encoder(corpus: str, retriever: str, p: Mapping[str, Any],
                          plan: Mapping[str, Any] | None = None) -> Path:
    """The local folder of the DPR question encoder of a dpr/hybrid request (:func:`retrieval.dense.resolve_encoder`
    of :func:`query_encoder_name`; a hub id not cached is downloaded unless offline).

    Raises:
        OfflineError: :func:`query_encoder_missing_error` (with ``plan``'s missing indexes) when it is not here and
        cannot be downloaded."""
    from .dense import resolve_encoder

    try:
        return resolve_encoder(query_encoder_name(p))
    except OfflineError as exc:
        raise query_encoder_missing_error(corpus, retriever, p, plan, exc.__cause__ or exc) from exc


# ----------------------------------------------------------------------------------------------- offline check
def url_reachable(url: str, timeout: float = 10.0) -> bool:
    """Whether a download from ``url`` can start: a HEAD request made as Pyserini's ``download_url`` makes its GET
    (urllib, its ``User-Agent``), waiting at most ``timeout`` seconds. Any HTTP answer counts as reachable (Pyserini's
    own download then decides); no answer (no DNS, no route, connection refused, timeout) does not. No Java: this runs
    in the process that loads the model (:mod:`tasks.precheck`)."""
    import http.client
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0"}, method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=timeout):
            return True
    except (urllib.error.HTTPError, http.client.HTTPException):  # the server answered
        return True
    except (OSError, ValueError):  # URLError, socket timeout, TLS failure; a malformed URL
        return False


def unreachable_index_error(plan: Mapping[str, Any]) -> OfflineError | None:
    """The :class:`OfflineError` that :func:`open_lucene` (``bm25``) or :func:`open_faiss` (``dpr``, ``hybrid``) would
    raise for the request of ``plan`` (:func:`download_plan`), when its first index that is not cached cannot be
    downloaded (:func:`url_reachable` of its first URL is False); None when every index is cached or the URL answers.
    The DPR question encoder is left to its own loading (Hugging Face hub, ``HF_HUB_OFFLINE``)."""
    items = [it for it in plan["items"] if it["md5"] is not None]  # the indexes (the encoder has no md5)
    todo = next((it for it in items if not it["cached"]), None)
    if todo is None or url_reachable(todo["url"]):
        return None
    if plan["retriever"] == "bm25":
        return _lucene_offline(plan["corpus"])
    return _faiss_offline(items[-1]["name"])


def _lucene_offline(name: str) -> OfflineError:
    return OfflineError(
        f"prebuilt index {name!r} is not cached and cannot be downloaded (no internet?); copy the unpacked folder to "
        f"{index_info(name, 'lucene').path}, or search a local corpus instead, whose index is built on first use "
        "(tokrag retrieve --corpus passages.jsonl; a task: its metadata corpus, e.g. "
        "--metadata '{\"corpus\": \"passages.jsonl\"}')"
    )


def _faiss_offline(name: str) -> OfflineError:
    return OfflineError(
        f"prebuilt FAISS index {name!r} (or its passage texts) is not cached and cannot be downloaded (no internet?); "
        f"copy the unpacked folders to {Path(index_info(name, 'faiss').path).parent}"
    )


# ----------------------------------------------------------------------------------------------- searchers
def open_lucene(name: str):
    """``LuceneSearcher.from_prebuilt_index(name)`` (downloads once), with tokrag's errors.

    Raises:
        OfflineError: not cached and not downloadable. IndexNotFoundError: the folder fails Pyserini's
        consistency check (document and term counts), e.g. a partial download.
    """
    from .java import start_jvm

    start_jvm()
    from pyserini.search.lucene import LuceneSearcher

    try:
        s = LuceneSearcher.from_prebuilt_index(name)
    except (ValueError, AssertionError) as exc:  # LuceneIndexReader.validate / download_url size and md5 checks
        info = index_info(name, "lucene")
        raise IndexNotFoundError(
            f"prebuilt index {name!r} at {info.path} fails Pyserini's checks ({exc}); delete that folder and retry "
            "(a partial download or a folder of another index)"
        ) from exc
    if s is None:  # pyserini prints the reason and returns None when every download URL fails
        raise _lucene_offline(name)
    return s


def open_faiss(name: str, query_encoder):
    """``FaissSearcher.from_prebuilt_index(name, query_encoder)`` (downloads the FAISS index and, for the passage
    texts, the Lucene index it names), with tokrag's errors (see :func:`open_lucene`)."""
    from pyserini.search.faiss import FaissSearcher

    try:
        s = FaissSearcher.from_prebuilt_index(name, query_encoder)
    except (ValueError, AssertionError) as exc:
        raise IndexNotFoundError(
            f"prebuilt FAISS index {name!r} (or the Lucene index of its passages) fails Pyserini's checks ({exc}); "
            f"delete the folder under {Path(index_info(name, 'faiss').path).parent} and retry"
        ) from exc
    if s is None or getattr(s, "ssearcher", None) is None:
        raise _faiss_offline(name)
    return s


class _DprHalf:
    """The dense half for ``HybridSearcher``: batched DPR query vectors, then ``FaissSearcher.batch_search``."""

    def __init__(self, faiss_searcher, query_encoder, max_length: int, batch_size: int):
        self.fs, self.qenc, self.max_length, self.batch_size = faiss_searcher, query_encoder, max_length, batch_size

    def batch_search(self, queries, q_ids, k=10, threads=1):
        from pyserini.search.faiss import DenseSearchResult

        from .dense import encode_queries, tie_complete_top_k

        q_ids = list(q_ids)
        embs = encode_queries(self.qenc, list(queries), {"encoder_class": "dpr", "max_length": self.max_length}, self.batch_size)

        def search(idx, depth):
            res = self.fs.batch_search(embs[idx], [q_ids[i] for i in idx], k=depth, threads=threads)
            return [[(h.docid, float(h.score)) for h in res[q_ids[i]]] for i in idx]

        # ties at the cut-off resolved by docid, the same at every k (issue 12.4); FAISS's scores are kept
        ranked = tie_complete_top_k(search, len(q_ids), min(int(k), self.fs.num_docs), self.fs.num_docs)
        return {q: [DenseSearchResult(d, s) for d, s in r] for q, r in zip(q_ids, ranked)}


class _Bm25Half:
    """The sparse half for ``HybridSearcher``: tokrag's BM25 searcher over the same Lucene index."""

    def __init__(self, bm25):
        self.bm25 = bm25

    def batch_search(self, queries, q_ids, k=10, threads=1):
        from pyserini.search.faiss import DenseSearchResult

        hits = self.bm25.batch_search(dict(zip(q_ids, queries)), k=int(k), threads=threads)
        return {q: [DenseSearchResult(d, s) for d, s in hits[q]] for q in q_ids}


def _hybrid_searcher_class():
    from pyserini.search.hybrid import HybridSearcher

    from .hybrid import weighted_fusion

    class TiedHybridSearcher(HybridSearcher):
        """Pyserini's ``HybridSearcher`` with ties broken by docid (same fused scores, :func:`retrieval.hybrid.weighted_fusion`)."""

        @staticmethod
        def _hybrid_results(dense_results, sparse_results, alpha, k, normalization=False, weight_on_dense=False):
            from pyserini.search.faiss import DenseSearchResult

            fused = weighted_fusion([(h.docid, h.score) for h in dense_results], [(h.docid, h.score) for h in sparse_results],
                                    k, alpha, normalization, weight_on_dense)
            return [DenseSearchResult(d, s) for d, s in fused]

    return TiedHybridSearcher


class PrebuiltSearcher:
    """BM25, DPR or hybrid search over one Pyserini prebuilt corpus (module docstring).

    Args:
        corpus: prebuilt corpus name (``wikipedia-dpr-100w``).
        retriever: ``bm25`` | ``dpr`` | ``hybrid``.
        params: the result-changing parameters (:func:`known_params` filled in).
        device: torch device of the DPR question encoder.

    Raises:
        ConfigError, OfflineError, IndexNotFoundError (see :func:`open_lucene`).
    """

    def __init__(self, corpus: str, retriever: str, params: Mapping[str, Any], device: str = "cpu"):
        from .bm25 import Bm25Searcher

        self.corpus, self.retriever = corpus, retriever
        self.p = {**known_params(retriever), **params}
        check_params(corpus, retriever, self.p)
        self.faiss = None
        if retriever in ("dpr", "hybrid"):
            from pyserini.encode import DprQueryEncoder

            self.query_encoder = DprQueryEncoder(encoder_dir=str(resolve_query_encoder(corpus, retriever, self.p)),
                                                 device=device)
            self.faiss = open_faiss(dense_index_name(corpus, str(self.p["dense_index"])), self.query_encoder)
            lucene_dir = self.faiss.ssearcher.index_dir
        else:
            lucene_dir = open_lucene(corpus).index_dir
        # BM25 and the passage texts: the same Lucene folder, through tokrag's searcher (batching, query hygiene)
        self.bm25 = Bm25Searcher(lucene_dir, k1=float(self.p.get("k1", BM25_PARAMS["k1"])), b=float(self.p.get("b", BM25_PARAMS["b"])))

    @property
    def num_docs(self) -> int:
        return self.bm25.num_docs

    def passage(self, docid: str) -> Passage:
        """The passage ``docid`` from the Lucene index's stored raw document."""
        return self.bm25.passage(docid)

    def batch_search(self, queries: Mapping[str, str], k: int, threads: int = 1, batch_size: int = 64,
                     progress: bool = False) -> dict[str, list[tuple[str, float]]]:
        """``{qid: [(docid, score), ...]}``, top ``k`` per query, ties by docid."""
        if self.retriever == "bm25":
            return self.bm25.batch_search(queries, k=k, threads=threads, progress=progress)
        qids = list(queries)
        texts = [queries[q] for q in qids]
        dense = _DprHalf(self.faiss, self.query_encoder, int(self.p["max_length"]), batch_size)
        if self.retriever == "dpr":
            res = dense.batch_search(texts, qids, k=k, threads=threads)
            return {q: sorted(((h.docid, float(h.score)) for h in res[q]), key=lambda x: (-x[1], x[0])) for q in qids}
        hs = _hybrid_searcher_class()(dense, _Bm25Half(self.bm25))
        res = hs.batch_search(texts, qids, k0=max(int(self.p["depth"]), k), k=k, threads=threads, alpha=float(self.p["alpha"]),
                              normalization=bool(self.p["normalization"]), weight_on_dense=bool(self.p["weight_on_dense"]))
        return {q: [(h.docid, float(h.score)) for h in res[q]] for q in qids}


_SEARCHERS_MAX = 2
# (corpus, retriever, params JSON, device, ((kind, index folder), ...)) -> a searcher, held with the folders'
# identity when opened
_searchers: SearcherCache[PrebuiltSearcher] = SearcherCache(_SEARCHERS_MAX)


def _folder_identity(kind: str, folder: str) -> tuple:
    """The identity of a prebuilt index folder now: :func:`retrieval.bm25.index_identity` of a Lucene folder,
    :func:`retrieval.dense.dense_index_identity` of a FAISS one (absent files count as absent)."""
    if kind == "lucene":
        from .bm25 import index_identity

        return index_identity(folder)
    from .dense import dense_index_identity

    return dense_index_identity(folder)


def searcher(corpus: str, retriever: str, params: Mapping[str, Any], device: str = "cpu") -> PrebuiltSearcher:
    """A :class:`PrebuiltSearcher`, reused across calls in this process (indexes stay open) while the index folders
    it opened are still the ones in Pyserini's cache (``$PYSERINI_CACHE`` read at each call) and hold the same
    files (:class:`retrieval.io.SearcherCache`): a folder deleted and downloaded again, or replaced by hand, or
    another cache folder, gets a new searcher. The identity is read again after opening (which may download).

    Raises:
        ConfigError, OfflineError, IndexNotFoundError (see :class:`PrebuiltSearcher`).
    """
    p = {**known_params(retriever), **params}
    check_params(corpus, retriever, p)
    folders = tuple((i.kind, os.path.abspath(i.path)) for i in indexes(corpus, retriever, p))
    params_json = json.dumps(dict(params), sort_keys=True)
    return _searchers.get((corpus, retriever, params_json, device, folders),
                          lambda: tuple(_folder_identity(kind, f) for kind, f in folders),
                          lambda: PrebuiltSearcher(corpus, retriever, json.loads(params_json), device=device), reread=True)


def encoder_identity(p: Mapping[str, Any], plan: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The question encoder's name and weights hash (run-cache key of dpr/hybrid; the passage encoder is
    identified by the FAISS index's md5). Resolving a hub id downloads it when it is not cached. ``plan``
    (:func:`download_plan` of the request): its corpus and retriever, and the indexes it lacks, are named when the
    encoder cannot be had (:func:`resolve_query_encoder`)."""
    from .dense import weights_hash

    name = query_encoder_name(p)
    corpus, retriever = (plan["corpus"], plan["retriever"]) if plan else (DEFAULT_CORPUS, "dpr")
    return {"query_encoder": name, "query_encoder_sha256": weights_hash(resolve_query_encoder(corpus, retriever, p, plan))}


# ----------------------------------------------------------------------------------------------- topics
def parse_dpr_answers(value: Any, where: str) -> list[str]:
    """Answers of a Pyserini DPR topic: a list, or its Python-literal string (``"['a', 'b']"``, possibly CSV-quoted,
    as Pyserini's ``convert_trec_run_to_dpr_retrieval_run`` reads them).

    Raises:
        DataError: not a non-empty list of strings.
    """
    import ast

    from .errors import DataError

    if isinstance(value, str):
        text = value.strip()
        if text.startswith('"') and text.endswith('"'):
            text = text[1:-1].replace('""', '"')
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(a, str) for a in value):
        raise DataError(f"{where}: expected a non-empty list of answer strings, got {value!r}")
    return list(value)


def pyserini_topics(name: str) -> dict[str, dict[str, Any]]:
    """A Pyserini topic set with answers (``dpr-wq-test``, ``dpr-nq-test``, ``nq-test``, ``dpr-trivia-test``, ...):
    ``{qid: {"question", "answers"}}`` in qid order. Anserini downloads the topic file once (needs the internet).

    Raises:
        ConfigError: an unknown topic set. OfflineError: the file cannot be downloaded.
    """
    from .java import start_jvm

    start_jvm()
    from pyserini.search import get_topics

    try:
        topics = get_topics(name)
    except ValueError as exc:
        raise ConfigError(f"--topics pyserini:{name}: {exc} (Pyserini topic names: dpr-wq-test, dpr-nq-test, nq-test, ...)") from None
    except Exception as exc:  # noqa: BLE001 - jnius.JavaException: Anserini could not download the file
        raise OfflineError(f"Pyserini topics {name!r} cannot be downloaded ({str(exc).splitlines()[0]}); use a local "
                           "topics file (TSV or JSONL with answers; for 'retrieve eval --expect', in a copy of the "
                           "expectation file: topics: PATH)") from None
    out: dict[str, dict[str, Any]] = {}
    for qid in sorted(topics, key=lambda q: (not isinstance(q, int), q if isinstance(q, int) else 0, str(q))):
        t = topics[qid]
        if "answers" not in t:
            raise ConfigError(f"Pyserini topics {name!r} have no answers (an ad-hoc retrieval set, not a QA set)")
        out[str(qid)] = {"question": t.get("title", ""), "answers": parse_dpr_answers(t["answers"], f"pyserini:{name} topic {qid}")}
    return out
