"""BM25 over Lucene with Pyserini/Anserini: index build (raw text stored) and (batch) search.

Uses Anserini's Java classes through ``pyserini.pyclass`` (``io.anserini.index.IndexCollection``,
``io.anserini.search.SimpleSearcher``, the class behind Pyserini's ``LuceneSearcher``): same index,
same scores, but without importing ``pyserini.search.lucene``, which pulls torch, transformers and
onnxruntime (~17 s; ``../shared/docs/stack_notes.md`` G5).

Index folders made by tokrag hold ``tokrag_index.json`` (corpus name and fingerprint, document count,
Anserini version, build seconds). An index whose recorded corpus fingerprint differs from the corpus it
is used with is *stale* and refused (:class:`IndexNotFoundError`); one built by another Anserini jar than
the installed Pyserini ships (another Lucene: its BM25 differs) is rebuilt by :func:`build_bm25_index`,
as the run cache recomputes runs made by another engine (:func:`retrieval.cache.engine_versions`).

Lucene refuses a query of more than ``IndexSearcher.maxClauseCount`` (1024) distinct analysed terms
(``TooManyClauses``; in a batch search the whole batch failed with an opaque "queryCount = 1 is not equal
to completedTaskCount = 0"). :class:`Bm25Searcher` raises that JVM-wide limit to Java's ``Integer.MAX_VALUE``
(:data:`MAX_CLAUSES`), so a long query (a long ELI5 post) is searched with all its terms, as any shorter
query is: queries under 1024 terms score exactly as before.

Queries are searched as bags of words (Anserini's ``BagOfWordsQueryGenerator``, as Pyserini's
``LuceneSearcher.search``: no query parser reads them), and Lucene query syntax characters
(``+ - & | ! ( ) { } [ ] ^ " ~ * ? \\ /``) are replaced by spaces first, so ``"AND" (x) [y] ^~*? OR NOT`` is
just the words *and x y or not* (stop words are dropped by the analyzer; a query left with no terms returns
no hits). The analyzer splits words at each of these characters anyway, so the replacement changes no score.
``:`` is kept: the analyzer (UAX#29 word breaks) keeps ``pavia:cathedral`` one term, as Pyserini searches it;
replaced by a space it made two (BM25 7.5444 where Pyserini's LuceneSearcher gives 2.9658). Run-cache keys of
query sets holding a ``:`` changed with that (:func:`query_rule`); others are the same.
"""

from __future__ import annotations

import json
import logging
import numbers
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .corpus import Corpus, Passage, _split_contents
from .errors import ConfigError, DataError, IndexNotFoundError, TokragError, check_java_int, check_k
from .io import (INDEX_META, LUCENE_CHECKSUMS, atomic_write_json, check_index_folder, file_lock, file_stamp,
                 index_code_change, invalid_unicode, no_room_naming, read_index_meta, read_regular_file,
                 remove_stale_scratch, replace_folder, scratch_dir, source_fingerprint)
from .java import anserini_jar, start_jvm
from .paths import cache_dir as _cache_dir

logger = logging.getLogger(__name__)

META = INDEX_META
BATCH_CHUNK = 1000  # queries per Java batch_search call: bounds JVM heap use (10k queries x k=100 fit in -Xmx4g)
DEFAULT_K1 = 0.9
DEFAULT_B = 0.4
CONTENTS = "contents"  # the indexed text field (Anserini's Constants.CONTENTS)

MAX_CLAUSES = 2**31 - 1  # Lucene's IndexSearcher.maxClauseCount, JVM-wide once a Bm25Searcher opened (module docstring)

# Lucene query syntax but ':' (module docstring): each is a word break for the analyzer, so replacing it by a space
# gives the terms Pyserini's LuceneSearcher searches. ':' is not (UAX#29 MidLetter: 'a:b' is one term) and is kept.
_LUCENE_SPECIAL = re.compile(r'[+\-&|!(){}\[\]^"~*?\\/]')
QUERY_RULE = 2  # 2: ':' kept (1: replaced by a space); part of the run-cache key of query sets holding a ':'

_SPACES = re.compile(r"\s+")


def default_threads() -> int:
    """Search/index threads: at most 2 (the project's CI machines have 2 cores), at least 1."""
    return max(1, min(2, os.cpu_count() or 1))


def sanitize_query(text: str) -> str:
    """Neutralise Lucene query syntax: special characters but ``:`` become spaces, whitespace is collapsed
    (the terms searched are those of Pyserini's ``LuceneSearcher.search`` for ``text``: module docstring)."""
    return _SPACES.sub(" ", _LUCENE_SPECIAL.sub(" ", text)).strip()


def query_rule(queries: Mapping[str, str]) -> int | None:
    """:data:`QUERY_RULE` when a query holds a ``:`` (whose terms changed with rule 2), else None: the run cache
    keys it (``retrieval.api``), so runs of such queries made by the old rule are recomputed and other keys stay."""
    return QUERY_RULE if any(":" in t for t in queries.values()) else None


def validate_queries(queries: Mapping[str, str]) -> None:
    """Check a query set before searching.

    Raises:
        ConfigError: an empty query set, or a qid that is empty or contains whitespace (TREC runs are
            whitespace-separated).
        DataError: a query that is not a string, is empty/whitespace only, or is not valid Unicode
            (lone surrogates, e.g. from bytes decoded with ``surrogateescape``); the qid is named.
    """
    if not queries:
        raise ConfigError("no queries given: the query set is empty")
    for qid, text in queries.items():
        if not isinstance(qid, str) or not qid or re.search(r"\s", qid):
            raise ConfigError(f"query id {qid!r} is empty or contains whitespace; TREC run ids must be single tokens")
        if not isinstance(text, str):
            raise DataError(f"query {qid!r}: expected a string, got {type(text).__name__}")
        if not text.strip():
            raise DataError(f"query {qid!r} is empty or whitespace only; drop it or give it text")
        if invalid_unicode(text) is not None:
            raise DataError(
                f"query {qid!r} is not valid Unicode (invalid UTF-8 was decoded into it); re-encode the topics as UTF-8"
            )


# ----------------------------------------------------------------------------------------------- index
def index_contents(title: str, text: str) -> str:
    """The ``contents`` field of a passage in tokrag's Lucene indexes: ``'"title"\ntext'`` (Pyserini's
    ``wikipedia-dpr`` convention), or the text alone when there is no title."""
    return f'"{title}"\n{text}' if title else text


INDEX_CODE = ("retrieval.bm25",)
"""The modules whose code builds a BM25 index (the indexed text, :func:`index_contents`, and the build): their
fingerprint, :func:`index_code`, is recorded in the index's ``tokrag_index.json`` as ``code``."""


def index_code() -> str:
    """Fingerprint (16 hex) of :data:`INDEX_CODE` as this process imported it (:func:`retrieval.io.source_fingerprint`:
    docstring- and comment-only edits keep it). :func:`build_bm25_index` rebuilds an index recorded with another one
    (or none: built before it was recorded). Raises OSError or SyntaxError when the source cannot be read."""
    return source_fingerprint(INDEX_CODE)


def anserini_round(score: float) -> float:
    """A score as Anserini's searcher reports it: float32 rounded to 1e-4 (``ScoreTiesAdjusterReranker``:
    ``Math.round(score * 1e4f) / 1e4f``), before its 1e-6 offsets of tied ranks."""
    import math

    import numpy as np

    x = np.float32(score) * np.float32(1e4)
    return float(np.float32(math.floor(float(x) + 0.5)) / np.float32(1e4))


def bm25_index_dir(corpus: Corpus, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where :func:`build_bm25_index` keeps the index of ``corpus``: ``<cache>/indexes/bm25-<corpus fingerprint>``."""
    return _cache_dir(cache_dir) / "indexes" / f"bm25-{corpus.fingerprint}"


INDEX_THREADS_MAX = 32767  # Anserini indexes with a Java ForkJoinPool, whose parallelism is at most 0x7fff


def check_bm25_numbers(k1=None, b=None, threads=None, *, label=lambda name, value: f"{name}={value!r}",
                       index: bool = False) -> None:
    """The one range check of BM25 ``k1`` and ``b`` and of a thread count (None: not given), used by
    :func:`build_bm25_index`, :class:`Bm25Searcher` and the CLI before any work. ``label(name, value)``
    names the value in the message (``k1=-1`` here, ``--k1 -1.0`` in the CLI). ``index``: the threads are
    indexing threads (at most :data:`INDEX_THREADS_MAX`); search threads are a Java int.

    Raises:
        ConfigError: ``threads`` not an integer >= 1 or too large, ``k1`` not a number >= 0, ``b`` not a number
            in [0, 1].
    """
    def number(v) -> bool:  # np.float32(0.9), np.int64(1) too
        return isinstance(v, numbers.Real) and not isinstance(v, bool)

    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ConfigError(f"{label('threads', threads)}: must be >= 1 (an integer number of threads)")
    if threads is not None and index and threads > INDEX_THREADS_MAX:
        raise ConfigError(f"{label('threads', threads)}: must be at most {INDEX_THREADS_MAX} (Anserini indexes with a "
                          "Java ForkJoinPool, which takes no more threads)")
    if threads is not None:
        check_java_int(threads, label("threads", threads))
    if k1 is not None and not (number(k1) and k1 >= 0):
        raise ConfigError(f"{label('k1', k1)}: BM25 k1 must be >= 0 (default {DEFAULT_K1})")
    if b is not None and not (number(b) and 0 <= b <= 1):
        raise ConfigError(f"{label('b', b)}: BM25 b must be between 0 and 1 (default {DEFAULT_B})")


def rebuild_command(corpus: Corpus, index_dir: str | os.PathLike) -> str:
    """The shell command that rebuilds the BM25 index of ``corpus`` into ``index_dir``:
    ``tokrag index build --corpus <name or file> [--data-dir <folder>] --index <folder> --force`` (``CORPUS`` for a
    corpus built in code; ``--data-dir`` for a named corpus read from a data folder, which it then names)."""
    import shlex

    from .corpus import NAMED_CORPORA

    if corpus.name in NAMED_CORPORA:
        arg = corpus.name + (f" --data-dir {shlex.quote(corpus.data_dir)}" if getattr(corpus, "data_dir", None) else "")
    elif Path(corpus.source).exists():
        arg = shlex.quote(corpus.source)
    else:
        arg = "CORPUS"
    return f"tokrag index build --corpus {arg} --index {shlex.quote(str(index_dir))} --force"


def java_error_line(exc: BaseException) -> str:
    """One line for a Java exception raised through pyjnius: its message's first line, and the innermost
    ``Caused by:`` exception when it has one (often the one that names the damaged file), without the Java stack that
    ``str(exc)`` holds (:class:`Bm25Searcher` keeps it with ``TOKRAG_TRACEBACK=1``)."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines()]
    first = lines[0] if lines and lines[0] else type(exc).__name__
    causes = [lines[i + 1] for i, ln in enumerate(lines[:-1]) if ln == "Caused by:" and lines[i + 1]]
    return f"{first} (caused by {causes[-1]})" if causes else first


LUCENE_HEADER = bytes.fromhex("3fd76c17")
"""The first 4 bytes of every Lucene index file (``CodecUtil.CODEC_MAGIC``, big-endian)."""
LUCENE_FOOTER = bytes.fromhex("c02893e800000000")
"""The start of the 16-byte footer that ends every Lucene index file (``CodecUtil.FOOTER_MAGIC`` and the checksum
algorithm id 0, then the CRC32 as a long): a truncated file ends otherwise."""


def lucene_damage(index_dir: str | os.PathLike) -> str | None:
    """Why the Lucene files of tokrag's BM25 index in ``index_dir`` are damaged (a truncated copy, a disk error), told
    cheaply and without Java: each file but ``tokrag_index.json`` and ``write.lock`` must start with Lucene's codec
    header magic and end with its codec footer (what Lucene's ``CodecUtil.retrieveChecksum`` checks when it opens a
    file; the checksums themselves are not read: :func:`lucene_checksum_damage`). Hidden files (tokrag's
    :data:`retrieval.io.LUCENE_CHECKSUMS`) are not Lucene's. None when every file has both."""
    folder = Path(index_dir)
    try:
        names = sorted(p.name for p in folder.iterdir()
                       if p.name not in (META, "write.lock") and not p.name.startswith("."))
    except OSError as exc:
        return f"cannot list {folder}: {exc.strerror or exc}"
    for name in names:
        path = folder / name
        try:
            size = path.stat().st_size
            with open(path, "rb") as fh:
                head = fh.read(len(LUCENE_HEADER))
                fh.seek(max(0, size - 16))
                foot = fh.read(len(LUCENE_FOOTER))
        except OSError as exc:
            return f"{path} cannot be read ({exc.strerror or exc})"
        if size < len(LUCENE_HEADER) + 16 or head != LUCENE_HEADER or foot != LUCENE_FOOTER:
            return f"{path} ({size} bytes) lacks Lucene's codec {'header' if head != LUCENE_HEADER else 'footer'}"
    return None


CHECKSUM_PROGRESS_BYTES = 1 << 30
"""A checksum verification that reads more than this many bytes shows a progress bar (0.26 GB/s on a shared 2-core
machine: the 9.18 GB ``wikipedia-dpr-100w`` index takes about 35 s plus its disk read)."""


def _lucene_file(name: str) -> bool:
    """Whether ``name`` is a file Lucene writes (a commit point ``segments_N`` or a segment file ``_*``), every one of
    which ends with a codec footer holding its CRC-32."""
    return name.startswith(("segments_", "_"))


def lucene_crc(path: str | os.PathLike, bar=None) -> tuple[int, int | None]:
    """``(computed, recorded)`` CRC-32 of a Lucene file, as Lucene's ``CodecUtil.checksumEntireFile`` checks it: the
    CRC-32 (zlib's, Java's ``java.util.zip.CRC32``) of every byte but the last 8, which hold the recorded one as a
    big-endian long (the footer: ``FOOTER_MAGIC``, algorithm id 0, the checksum). ``recorded`` is None when the
    file is shorter than the footer, or its footer's magic and algorithm id are not Lucene's, or the long does not
    fit 32 bits (``CodecUtil.readCRC``'s "Illegal CRC-32 checksum"). ``bar``: a tqdm bar updated by the bytes read.
    Raises OSError when the file cannot be read."""
    import zlib

    crc = 0
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        left = max(0, size - 8)
        while left:
            chunk = fh.read(min(left, 1 << 22))
            if not chunk:  # shrank while being read
                return crc, None
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
            if bar is not None:
                bar.update(len(chunk))
        tail = fh.read(8)
        if bar is not None:
            bar.update(len(tail))
        if size >= 16:
            fh.seek(size - 16)
            footer = fh.read(8)
        else:
            footer = b""
    recorded = int.from_bytes(tail, "big") if len(tail) == 8 else None
    if footer != LUCENE_FOOTER or recorded is None or recorded >> 32:
        return crc, None
    return crc, recorded


CHECKSUMS_ELSEWHERE = "lucene-checksums"
"""The folder under tokrag's cache folder (``$TOKRAG_CACHE_DIR``) that holds the checksum records of index folders that
cannot be written (a read-only shared copy of a prebuilt index): :func:`checksum_record_elsewhere`."""


def checksum_record_elsewhere(folder: Path) -> Path:
    """Where :func:`lucene_checksum_damage` records the verified checksums of an index folder it cannot write into:
    ``<cache>/lucene-checksums/<16 hex of the SHA-256 of the folder's absolute path>.json``. The record names the
    folder, and each file's entry holds its stamp, so a file changed, replaced or copied anew is verified again."""
    import hashlib

    return _cache_dir() / CHECKSUMS_ELSEWHERE / (hashlib.sha256(str(folder).encode("utf-8")).hexdigest()[:16] + ".json")


CHECKSUM_RECORD_MAX_BYTES = 1 << 26
"""The largest checksum record read (64 MiB; an entry per Lucene file, ~150 bytes each): a larger file there is not
one tokrag wrote, and is read as no record (:func:`retrieval.io.read_regular_file`)."""


def _checksum_entries(path: Path, folder: Path | None = None) -> dict:
    """The file entries of a checksum record (version 1; ``folder``: it must name that folder); {} when it is missing,
    unreadable, torn, another's, not a regular file (a named pipe, a link to a device) or over
    :data:`CHECKSUM_RECORD_MAX_BYTES`."""
    try:  # a regular file only: a named pipe there blocked the search's start for ever (s53 r1)
        old = json.loads(read_regular_file(path, CHECKSUM_RECORD_MAX_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
        return {}
    if not isinstance(old, dict) or old.get("version") != 1 or (folder is not None and old.get("folder") != str(folder)):
        return {}
    known = old.get("files")
    return known if isinstance(known, dict) else {}


def lucene_checksum_damage(index_dir: str | os.PathLike) -> str | None:
    """Why a Lucene file in ``index_dir`` is damaged, from the CRC-32 that Lucene records in each file's footer
    (:func:`lucene_crc`), read without Java; None when every file matches its recorded checksum.

    Bytes changed in the middle of a file (a disk error, a bad copy) pass :func:`lucene_damage`, and Lucene does
    not verify the checksums of its large files (``.doc``, ``.tim``, ``.tip``, ``.fdt``) when it opens them: searches
    run over such damage, and may silently return other passages. Verifying a file reads it whole, so each file is
    verified once: the result is recorded in the folder's :data:`retrieval.io.LUCENE_CHECKSUMS` with the file's
    name and :func:`retrieval.io.file_stamp` (size, mtime_ns, ctime_ns, inode); a later call reads no file whose
    stamp is unchanged and verifies again only a file whose stamp changed (rewritten, replaced, copied: a copy has
    new inodes; an edit whose mtime was put back changes the ctime). A mismatch is recorded too, so the damage is
    told again without a read. A verification that reads more than :data:`CHECKSUM_PROGRESS_BYTES` shows a
    progress bar. A folder the process cannot write to (a read-only shared copy of a prebuilt index) gets its record
    in tokrag's cache folder instead (:func:`checksum_record_elsewhere`, read only when the folder's own record does
    not cover every file), so it too is verified once, not in every process (20-35 s for the 9 GB prebuilt index);
    where neither can be written it is verified again at its next use (logged). The record is hidden and no Lucene
    file: run keys, corpus and index fingerprints and :func:`index_identity` read nothing of it.
    """
    folder = Path(index_dir)
    record_path = folder / LUCENE_CHECKSUMS
    known = _checksum_entries(record_path)
    try:
        names = sorted(p.name for p in folder.iterdir() if _lucene_file(p.name))
    except OSError as exc:
        return f"cannot list {folder}: {exc.strerror or exc}"
    files: dict[str, dict] = {}  # the record: every file's entry whose stamp it holds
    checked: dict[str, dict] = {}  # the files of this folder now: their entry, recorded or read now
    todo: list[tuple[str, list[int]]] = []
    elsewhere: dict | None = None  # the record in the cache folder, read when the folder's own does not cover a file

    def recorded(entry, stamp) -> bool:
        return (isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("ok"), bool)
                and isinstance(entry.get("crc"), str))

    for name in names:
        try:
            stamp = file_stamp(folder / name)
        except OSError as exc:
            return f"{folder / name} cannot be read ({exc.strerror or exc})"
        entry = known.get(name)
        if not recorded(entry, stamp):
            if elsewhere is None:
                try:
                    elsewhere = _checksum_entries(checksum_record_elsewhere(folder.resolve()), folder.resolve())
                except OSError:  # no cache folder can be made: nothing recorded there
                    elsewhere = {}
            entry = elsewhere.get(name)
        if recorded(entry, stamp):
            files[name] = checked[name] = entry
        else:
            todo.append((name, stamp))
    if todo:
        total = sum(stamp[0] for _, stamp in todo)
        bar = None
        if total > CHECKSUM_PROGRESS_BYTES:
            from tqdm.auto import tqdm

            logger.info("verifying the Lucene checksums of %d file(s) of %s (%.1f GB), once: recorded in %s",
                        len(todo), folder, total / 1e9, LUCENE_CHECKSUMS)
            bar = tqdm(total=total, desc="Lucene checksums", unit="B", unit_scale=True)
        try:
            for name, stamp in todo:
                try:
                    computed, recorded_crc = lucene_crc(folder / name, bar)
                    after = file_stamp(folder / name)
                except OSError as exc:
                    return f"{folder / name} cannot be read ({exc.strerror or exc})"
                entry = {"stamp": stamp, "ok": computed == recorded_crc,
                         "crc": f"{computed:08x}", "recorded": None if recorded_crc is None else f"{recorded_crc:08x}"}
                checked[name] = entry
                if after == stamp:  # not changed while being read: the result holds for this stamp (else not recorded)
                    files[name] = entry
        finally:
            if bar is not None:
                bar.close()
        what = ("CRC-32 of each Lucene file checked against its codec footer (retrieval.bm25.lucene_checksum_damage); "
                "stamp: size, mtime_ns, ctime_ns, inode")
        try:
            atomic_write_json(record_path, {"version": 1, "files": files, "what": what})
        except OSError as exc:
            side = None
            try:  # a read-only folder: the record goes to the cache folder, keyed by the folder's absolute path
                side = checksum_record_elsewhere(folder.resolve())
                atomic_write_json(side, {"version": 1, "folder": str(folder.resolve()), "files": files, "what": what})
                logger.info("cannot write the Lucene checksum record into %s (%s): recorded in %s instead", folder,
                            exc.strerror or exc, side)
            except OSError as exc2:
                logger.warning("cannot record the verified Lucene checksums in %s (%s) nor in %s (%s): they are "
                               "verified again at the next use", record_path, exc.strerror or exc,
                               side if side is not None else f"the cache folder's {CHECKSUMS_ELSEWHERE}",
                               exc2.strerror or exc2)
    for name, entry in sorted(checked.items()):
        if not entry["ok"]:
            if entry.get("recorded") is None:
                return f"{folder / name} ({entry['stamp'][0]} bytes) lacks Lucene's codec footer"
            return (f"{folder / name} fails its Lucene checksum (CRC-32 {entry['crc']}, its footer records "
                    f"{entry['recorded']}: changed after Lucene wrote it)")
    return None


def _index_complete(index_dir: Path) -> bool:
    return index_dir.is_dir() and any(index_dir.glob("segments_*"))


def index_identity(index_dir: str | os.PathLike) -> tuple:
    """Which build an index folder holds now: the corpus fingerprint its ``tokrag_index.json`` records (None for a
    foreign index) and the file identity (inode, mtime in ns, size) of that file and of each Lucene commit point
    (``segments_*``). Every build writes them anew (:func:`build_bm25_index` renames a fresh folder into place),
    so a folder rebuilt in place, also by another process (``tokrag index build --force``), has another identity
    than the build a searcher opened; :func:`retrieval.api.retrieve` opens a new searcher then. Files that vanish
    while being listed count as absent (the next call sees the new build)."""
    folder = Path(index_dir)

    def stamp(path: Path) -> tuple | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return (path.name, st.st_ino, st.st_mtime_ns, st.st_size)

    meta = read_index_meta(folder)
    try:
        segments = sorted(folder.glob("segments_*"))
    except OSError:
        segments = []
    return ((meta or {}).get("corpus_fingerprint"), stamp(folder / META), tuple(stamp(s) for s in segments))


def build_bm25_index(
    corpus: Corpus,
    index_dir: str | os.PathLike | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    force: bool = False,
    run_java: Callable[[Callable[[], object]], object] | None = None,
) -> Path:
    """Build (once) a Lucene index of ``corpus`` with raw documents stored, and return its folder.

    Documents are JsonCollection records ``{"id": docid, "contents": '"title"\\ntext'}`` (the Pyserini
    ``wikipedia-dpr`` convention, so titles are searchable and recoverable), indexed by Anserini's
    ``IndexCollection`` with ``DefaultLuceneDocumentGenerator`` and ``-storeRaw``. The build happens in a
    temporary folder (``.<folder name>.<random>`` beside the index folder) that is renamed into place, under a
    cross-process lock (``<folder>.lock``); a complete index with the same corpus fingerprint, built by the
    Anserini jar the installed Pyserini ships (recorded as ``anserini_jar``) and by this index code (recorded as
    ``code``, :func:`index_code`), is reused unless ``force``; one built by another Anserini (another Lucene), or by
    other index code (or recording none), or one with a damaged file (:func:`lucene_damage`: a truncated copy, a
    disk error; Lucene refused to open it; :func:`lucene_checksum_damage`: a file whose CRC-32 is not the one its footer
    records, verified once per file and recorded), is rebuilt, with a warning. A new index's checksums are verified
    and recorded before it is renamed into place. Temporary folders that interrupted
    builds of the same folder left (Ctrl-C, ``kill -9``) are removed once the lock is held
    (:func:`retrieval.io.remove_stale_scratch`). A rebuild replaces the old index with
    :func:`retrieval.io.replace_folder` (renamed aside into the scratch folder first, deleted last): interrupted, the
    folder is the complete old or new index, never a half-deleted one (``kill -9`` between the two renames leaves
    no folder: the next build builds it again).

    Args:
        corpus: the passages.
        index_dir: target folder (default :func:`bm25_index_dir`).
        cache_dir: cache root for the default folder.
        threads: indexing threads (default :func:`default_threads`).
        force: rebuild even when a matching index exists.
        run_java: how to run the Lucene indexing call (a no-argument callable): ``run_java(call)`` returns
            ``call()``'s value (default: called here). ``tokrag index build`` runs it on a helper thread so that
            Ctrl-C interrupts a long build at once (``retrieval.cli._in_helper_thread``); only the indexing step,
            after the reuse and folder checks and the JVM start (a complete index is reused without starting Java).

    Raises:
        IndexNotFoundError: ``index_dir`` holds an index of another corpus (the message gives the
            ``tokrag index build ... --force`` command that replaces it).
        ConfigError: ``index_dir`` is a file, a non-empty folder that is not a tokrag BM25 index or holds other files too (never deleted,
            even with ``force``), or cannot be created; ``threads`` below 1.
        JavaSetupError: Java cannot be set up.
    """
    check_bm25_numbers(threads=threads, index=True)
    target = check_index_folder(index_dir if index_dir is not None else bm25_index_dir(corpus, cache_dir),
                                user_given=index_dir is not None, kind="bm25")
    with file_lock(target):
        # no other build of this folder runs while we hold its lock: scratch folders of earlier ones are leftovers
        for leftover in remove_stale_scratch(target, frozenset({"collection", "index", "old"})):
            logger.info("removed %s, left by an interrupted BM25 index build", leftover)
        if index_dir is not None:
            check_index_folder(target, kind="bm25")  # again under the lock: a folder filled meanwhile is still refused
        meta = read_index_meta(target)
        if not force and meta and _index_complete(target):
            jar = anserini_jar()
            if meta.get("corpus_fingerprint") == corpus.fingerprint:
                if meta.get("anserini_jar") != (jar.name if jar else None):
                    logger.warning("BM25 index %s was built by %s, the installed Pyserini ships %s (another Lucene): "
                                   "rebuilding it", target, meta.get("anserini_jar"), jar.name if jar else None)
                elif meta.get("code") != index_code():
                    logger.warning("BM25 index %s was built %s: rebuilding it", target,
                                   index_code_change(meta.get("code"), index_code(), INDEX_CODE))
                else:
                    damage = lucene_damage(target) or lucene_checksum_damage(target)  # the CRCs: read once, recorded
                    if damage is None:
                        return target
                    logger.warning("BM25 index %s is damaged: %s (a truncated copy or a disk error?); rebuilding it",
                                   target, damage)
            elif index_dir is not None:
                raise IndexNotFoundError(
                    f"{target} holds a BM25 index of another corpus (fingerprint {meta.get('corpus_fingerprint')}, "
                    f"this corpus {corpus.fingerprint}); to replace it run: {rebuild_command(corpus, target)} "
                    "(force=True in Python), or choose another --index folder"
                )
        pyclass = start_jvm()
        t0 = time.perf_counter()
        target.parent.mkdir(parents=True, exist_ok=True)
        work = scratch_dir(target.parent, f".{target.name}.")
        try:
            coll = work / "collection"
            coll.mkdir()
            with no_room_naming(coll / "docs.jsonl"), open(coll / "docs.jsonl", "w", encoding="utf-8") as f:
                for p in corpus:
                    f.write(json.dumps({"id": p.docid, "contents": index_contents(p.title, p.text)}, ensure_ascii=False) + "\n")
            out = work / "index"
            args = [
                "-collection", "JsonCollection", "-input", str(coll), "-index", str(out),
                "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads or default_threads()),
                "-storeRaw", "-quiet",
            ]
            indexer = pyclass.autoclass("io.anserini.index.IndexCollection")
            try:
                (run_java or (lambda call: call()))(lambda: indexer.main(args))
            except Exception as exc:  # jnius.JavaException
                raise TokragError(f"Lucene indexing of corpus {corpus.name!r} into {target} failed: {exc}") from exc
            if not _index_complete(out):
                raise TokragError(f"Lucene indexing of corpus {corpus.name!r} produced no index (see the Anserini log above)")
            seconds = time.perf_counter() - t0
            atomic_write_json(out / META, {
                "kind": "bm25",
                "corpus_name": corpus.name,
                "corpus_fingerprint": corpus.fingerprint,
                "num_docs": len(corpus),
                "contents": '"title"\\ntext (JsonCollection, raw stored)',
                "anserini_jar": anserini_jar().name if anserini_jar() else None,
                "code": index_code(),
                "build_seconds": round(seconds, 3),
                "threads": threads or default_threads(),
            })
            damage = lucene_checksum_damage(out)  # read once now (written just now), so the first use reads nothing
            if damage is not None:
                raise TokragError(f"Lucene indexing of corpus {corpus.name!r} into {target} wrote a damaged index: "
                                  f"{damage} (a disk error?)")
            replace_folder(out, target, work / "old")  # target: the complete old index or the new one, never half
            logger.info("BM25 index of %s (%d passages) built in %.1f s at %s", corpus.name, len(corpus), seconds, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


# ----------------------------------------------------------------------------------------------- search
class Bm25Searcher:
    """BM25 search over a Lucene index (Anserini ``SimpleSearcher``; Robertson & Zaragoza 2009, BM25 with
    Lucene's idf; defaults k1=0.9, b=0.4 as Pyserini's ``LuceneSearcher``).

    Args:
        index_dir: a Lucene index folder (tokrag's or any Pyserini/Anserini index with raw documents).
        k1, b: BM25 parameters.
        corpus: when given, the index's recorded corpus fingerprint must match it, and passage text
            comes from the corpus (fast) instead of the stored raw documents.

    Attributes:
        searches: number of queries searched so far (cache tests count it).

    Raises:
        IndexNotFoundError: a missing or incomplete folder, an unreadable index, a stale index
            (recorded corpus fingerprint differs from ``corpus.fingerprint``), or a damaged one: a Lucene file whose
            CRC-32 is not the one its footer records (:func:`lucene_checksum_damage`: verified once per file, before
            Java opens the folder; a later open reads only the files' stamps).
    """

    def __init__(self, index_dir: str | os.PathLike, k1: float = DEFAULT_K1, b: float = DEFAULT_B, corpus: Corpus | None = None):
        check_bm25_numbers(k1=k1, b=b)  # before any work
        self.index_dir = Path(index_dir).expanduser().resolve()
        if not self.index_dir.is_dir():
            raise IndexNotFoundError(
                f"BM25 index folder {self.index_dir} does not exist; build it with 'tokrag index build --corpus ... "
                f"--index {self.index_dir}'"
            )
        if not _index_complete(self.index_dir):
            raise IndexNotFoundError(f"{self.index_dir} is not a complete Lucene index (no segments_* file); rebuild it")
        self.meta = read_index_meta(self.index_dir)
        if corpus is not None and self.meta is not None and self.meta.get("corpus_fingerprint") != corpus.fingerprint:
            raise IndexNotFoundError(
                f"stale index {self.index_dir}: built for corpus fingerprint {self.meta.get('corpus_fingerprint')} "
                f"({self.meta.get('corpus_name')}), but corpus {corpus.name!r} has fingerprint {corpus.fingerprint}; "
                f"rebuild it ({rebuild_command(corpus, self.index_dir)}) or delete the folder"
            )
        damage = lucene_checksum_damage(self.index_dir)  # Lucene would search a changed .doc/.tim/.tip silently
        if damage is not None:
            how = (f"rebuild it: {self._rebuild(corpus)}" if self.meta is not None else
                   "delete the folder (a Pyserini prebuilt index is downloaded again at its next use; another index "
                   "must be built again)")
            raise IndexNotFoundError(f"damaged Lucene index {self.index_dir}: {damage} (a disk error or a bad copy); "
                                     f"{how}")
        self.k1, self.b = float(k1), float(b)
        self.corpus = corpus
        self.searches = 0
        self._pc = start_jvm()
        try:
            self._s = self._pc.autoclass("io.anserini.search.SimpleSearcher")(self._pc.JString(str(self.index_dir)))
            self._s.set_bm25(self.k1, self.b)
            searcher_class = self._pc.autoclass("org.apache.lucene.search.IndexSearcher")
            if searcher_class.getMaxClauseCount() < MAX_CLAUSES:  # a query of > 1024 terms (module docstring)
                searcher_class.setMaxClauseCount(MAX_CLAUSES)
        except Exception as exc:  # jnius.JavaException: corrupt or incompatible index
            full = os.environ.get("TOKRAG_TRACEBACK", "") not in ("", "0")  # then with the Java stack, as before
            line = exc if full else java_error_line(exc)
            raise IndexNotFoundError(f"cannot open the Lucene index {self.index_dir}: {line}; rebuild it: "
                                     f"{self._rebuild(corpus)}") from exc

    def _rebuild(self, corpus: Corpus | None) -> str:
        """The command that rebuilds this folder's index: of ``corpus``, else of the corpus its ``tokrag_index.json``
        names (``<its corpus>`` when that is no named corpus)."""
        from .corpus import NAMED_CORPORA

        if corpus is not None:
            return rebuild_command(corpus, self.index_dir)
        recorded = (self.meta or {}).get("corpus_name")
        return (f"tokrag index build --corpus {recorded if recorded in NAMED_CORPORA else '<its corpus>'} "
                f"--index {shlex.quote(str(self.index_dir))} --force")

    @classmethod
    def from_prebuilt(cls, name: str, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> "Bm25Searcher":
        """A Pyserini prebuilt index by name (e.g. ``wikipedia-dpr-100w``): Pyserini's
        ``LuceneSearcher.from_prebuilt_index`` downloads it once and checks it, then this searcher opens its folder.

        Raises:
            OfflineError: it is not cached and cannot be downloaded (no internet).
            ConfigError: an unknown prebuilt name.
            IndexNotFoundError: the folder fails Pyserini's consistency check.
        """
        from .prebuilt import index_info, open_lucene

        try:
            index_info(name, "lucene")  # an unknown name fails here, before any download
        except ConfigError as exc:
            raise ConfigError(f"{name!r} is neither an index folder nor a Pyserini prebuilt BM25 index name: {exc}") from None
        s = open_lucene(name)
        try:
            return cls(s.index_dir, k1=k1, b=b)
        finally:
            s.object.close()

    @property
    def num_docs(self) -> int:
        return int(self._s.get_total_num_docs())

    def close(self) -> None:
        try:
            self._s.close()
        except Exception:  # noqa: BLE001 - already closed
            pass

    def passage(self, docid: str) -> Passage:
        """Passage by id: from the corpus when given, else parsed from the stored raw JSON."""
        if self.corpus is not None:
            return self.corpus.get(docid)
        doc = self._s.doc(self._pc.JString(docid))
        if doc is None:
            raise KeyError(docid)
        raw = doc.get("raw")
        contents = json.loads(raw).get("contents", "") if raw else ""
        title, text = _split_contents(contents)
        return Passage(docid, title, text)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """Top-``k`` ``(docid, score)`` for one query (score: BM25, higher is better; ties by docid)."""
        validate_queries({"q": query})
        k = check_k(k, java=True)
        q = sanitize_query(query)
        self.searches += 1
        if not q:
            return []
        hits = self._s.search(self._pc.JString(q), int(k))
        return [(h.docid, float(h.score)) for h in hits]

    def batch_search(
        self,
        queries: Mapping[str, str],
        k: int = 10,
        threads: int | None = None,
        chunk: int = BATCH_CHUNK,
        progress: bool = False,
    ) -> dict[str, list[tuple[str, float]]]:
        """Search many queries with Java threads, ``chunk`` queries per call (bounded JVM memory).

        Returns:
            ``{qid: [(docid, score), ...]}`` in the order of ``queries``; at most ``k`` hits per query,
            fewer when fewer passages share a term with the query (k > corpus size is allowed).

        Raises:
            ConfigError: k < 1, bad qids. DataError: empty, whitespace-only or invalid-Unicode queries.
        """
        validate_queries(queries)
        k = check_k(k, java=True)
        threads = threads or default_threads()
        check_java_int(threads, f"threads={threads!r}")
        pc = self._pc
        items = [(qid, sanitize_query(text)) for qid, text in queries.items()]
        out: dict[str, list[tuple[str, float]]] = {qid: [] for qid, _ in items}
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(items), desc="BM25 search", unit="q")
        for start in range(0, len(items), chunk):
            part = [(qid, q) for qid, q in items[start : start + chunk] if q]
            if part:
                jq, jid = pc.JArrayList(), pc.JArrayList()
                for qid, q in part:
                    jq.add(q)
                    jid.add(qid)
                try:
                    res = self._s.batch_search(jq, jid, int(k), int(threads))
                except Exception as exc:  # jnius.JavaException
                    raise TokragError(f"BM25 batch search failed on queries {start}..{start + len(part)}: {exc}") from exc
                for entry in res.entrySet().toArray():
                    out[entry.getKey()] = [(h.docid, float(h.score)) for h in entry.getValue()]
            n = min(chunk, len(items) - start)
            self.searches += n
            if bar is not None:
                bar.update(n)
        if bar is not None:
            bar.close()
        return out

    def _scoring(self):
        """Lucene objects for :meth:`score_passages`, opened once: reader, searcher, collection statistics
        of the ``contents`` field, analyzer, similarity."""
        if getattr(self, "_scoring_state", None) is None:
            from jnius import cast

            pc = self._pc
            directory = pc.autoclass("org.apache.lucene.store.FSDirectory").open(
                pc.autoclass("java.io.File")(pc.JString(str(self.index_dir))).toPath())
            reader = cast("org.apache.lucene.index.IndexReader",
                          pc.autoclass("org.apache.lucene.index.DirectoryReader").open(directory))
            searcher = pc.autoclass("org.apache.lucene.search.IndexSearcher")(reader)
            self._scoring_state = {
                "reader": reader,
                "searcher": searcher,
                "stats": searcher.collectionStatistics(pc.JString(CONTENTS)),
                "analyzer": pc.autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance(),
                "analyze": pc.autoclass("io.anserini.analysis.AnalyzerUtils").analyze,
                "similarity": pc.autoclass("org.apache.lucene.search.similarities.BM25Similarity")(self.k1, self.b),
                "norm": pc.autoclass("org.apache.lucene.util.SmallFloat").intToByte4,
                "term": pc.autoclass("org.apache.lucene.index.Term"),
                "document_score": pc.autoclass("io.anserini.index.IndexReaderUtils").computeQueryDocumentScoreWithSimilarity,
            }
        return self._scoring_state

    def score_passages(self, query: str, passages: list[tuple[str, str]], docids: list[str | None] | None = None) -> list[float]:
        """BM25 score of each ``(title, text)`` passage for ``query`` over this index, as :meth:`search`
        reports scores.

        A passage of the index (its ``docids`` entry given) is scored by Lucene itself, the query restricted
        to that document (Anserini's ``IndexReaderUtils.computeQueryDocumentScoreWithSimilarity``, Pyserini's
        ``compute_query_document_score``): the search's own float arithmetic. Any other passage (``docids``
        entry None: an answer-swapped one) is scored with
        Lucene's own ``BM25Similarity(k1, b)`` scorer with this index's statistics (document count,
        average length, each term's document frequency), the passage's term frequencies and encoded
        length (its :func:`index_contents` analysed by the index's analyzer, Anserini's default English
        analyzer), summed over the query's analysed terms with their counts as boosts (Anserini's
        bag-of-words query; BooleanQuery sums in double, then float32), rounded by :func:`anserini_round`.
        So a passage of the index gets the score a search gives it (up to Anserini's 1e-6 offsets of tied
        ranks, and one 1e-4 rounding step where Lucene's search sums the terms in another order and lands on the
        other side of a rounding boundary), and a passage that is not in the index (an answer-swapped one) is scored against the same
        statistics. 0.0 when no query term occurs in the passage (what a search could not return).
        """
        from collections import Counter

        import numpy as np

        st = self._scoring()
        pc = self._pc
        terms = Counter(str(t) for t in st["analyze"](st["analyzer"], pc.JString(sanitize_query(query))).toArray())
        scorers = {}
        for term, count in terms.items():
            jt = st["term"](pc.JString(CONTENTS), pc.JString(term))
            df = st["reader"].docFreq(jt)
            if df > 0:
                ts = st["searcher"].termStatistics(jt, df, st["reader"].totalTermFreq(jt))
                scorers[term] = st["similarity"].scorer(float(count), st["stats"], ts)
        out = []
        for i, (title, text) in enumerate(passages):
            docid = docids[i] if docids is not None else None
            if docid is not None:
                total = float(st["document_score"](st["reader"], pc.JString(docid), pc.JString(sanitize_query(query)),
                                                   st["similarity"]))
                out.append(anserini_round(total) if total else 0.0)
                continue
            tokens = [str(t) for t in st["analyze"](st["analyzer"], pc.JString(index_contents(title, text))).toArray()]
            tf = Counter(tokens)
            norm = st["norm"](len(tokens))
            total = sum(float(scorers[t].score(float(tf[t]), norm)) for t in scorers if tf.get(t))
            out.append(anserini_round(float(np.float32(total))) if total else 0.0)
        return out
