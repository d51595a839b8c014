"""Small I/O helpers shared by the run cache and the leaderboard runner.

Atomic writes (write a temporary file in the same folder, fsync, ``os.replace``; the file gets the mode a
plain ``open(path, "w")`` gives, or keeps the replaced file's; a symbolic link is written through), cross-process
locks (``filelock``), content hashing, a JSONL reader whose errors name the file and line, and the bounded
in-process cache of open index searchers (:class:`SearcherCache`) that BM25, dense and prebuilt retrieval share.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import secrets
import stat
import sys
import tempfile
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from filelock import FileLock

from .errors import ConfigError, DataError, mark_write

INDEX_META = "tokrag_index.json"  # written into every index folder tokrag builds (BM25 and dense)
LUCENE_CHECKSUMS = ".tokrag_checksums.json"  # a BM25 index folder's record of its verified Lucene checksums
# (retrieval.bm25.lucene_checksum_damage); hidden: tree_fingerprint skips it, and no Lucene file is so named
BOM = b"\xef\xbb\xbf"  # the UTF-8 byte order mark some editors (Notepad, Excel) put at the start of a file


def read_index_meta(index_dir: str | os.PathLike) -> dict | None:
    """The ``tokrag_index.json`` (:data:`INDEX_META`) of an index folder (BM25 or dense), or None: missing (a foreign
    Pyserini/Anserini index) or unreadable (malformed, nested past Python's recursion limit, or JSON that is not an
    object: every caller reads it with ``.get``)."""
    p = Path(index_dir) / INDEX_META
    if not p.is_file():
        return None
    try:
        meta = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
        return None
    return meta if isinstance(meta, dict) else None


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces: the same object always gives the same string."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(obj: Any, length: int = 16) -> str:
    """Short hex fingerprint (SHA-256 prefix, ``length`` hex digits) of a JSON-able object."""
    return sha256_bytes(canonical_json(obj).encode("utf-8"))[:length]


SOURCE_SUFFIXES = {".py", ".yaml", ".yml", ".jinja", ".j2", ".txt", ".json", ".jsonl", ".tsv", ".gz"}
"""The default ``suffixes`` of :func:`tree_fingerprint` (source and small data files)."""
MAX_SOURCE_BYTES = 64 << 20
"""The default ``max_bytes`` of :func:`tree_fingerprint`: larger files of a folder are left out (64 MiB)."""
HASH_MEMO_FILE = "leaderboard-file-hashes.json"
"""The file under the cache folder (``$TOKRAG_CACHE_DIR``) where :class:`HashMemo` persists file hashes."""


class HashMemo:
    """SHA-256 of files (and other values derived from a file) memoised by (resolved path, size, mtime_ns,
    ctime_ns, inode): :func:`file_stamp`.

    Persistent: the table is read from ``<cache_dir>/leaderboard-file-hashes.json`` (:data:`HASH_MEMO_FILE`)
    when made and merged back into it by :meth:`save` (under a file lock), so a multi-GB corpus is hashed once,
    not once per process: the leaderboards' run keys (:mod:`leaderboards.keys`) and the results' data
    provenance (:mod:`tasks.provenance`) share it. The inode-change time is part of the stamp because the mtime
    alone can be put back: ``touch -r``, ``cp -p``, ``rsync -a`` and tar extraction restore it after a same-size
    edit, which kept the old hash. The ctime changes on every write and cannot be set by a user; a ``chmod``,
    rename or copy only costs a re-hash. (A file rewritten within the file system's timestamp tick, a few ms,
    at the same size after being hashed would still keep its old hash.)

    :meth:`save` drops the entries of files that no longer exist (:func:`_memo_entry_gone`) and were smaller than
    :data:`MEMO_PRUNE_MAX_BYTES` (a large file's path may come back: a drive mounted again, another machine's data
    folder): they are not served while the file is gone, and every process reads the whole file when it makes a memo. Before, the file only grew: a machine whose
    test runs and spec runs hashed files in temporary folders held 37,438 entries (8.1 MB; ~0.11 s of CPU to parse,
    paid by every ``HashMemo()``, several per leaderboard cell) of which about 31,000 named files long deleted.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        from .paths import cache_dir

        self.path = Path(path) if path is not None else cache_dir() / HASH_MEMO_FILE
        try:
            self.table: dict[str, list] = _read_memo_table(self.path)
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
            self.table = {}
        if not isinstance(self.table, dict):  # a memo file someone overwrote: start afresh
            self.table = {}
        self.dirty = False
        self.fresh: dict[str, Path] = {}  # key -> file of the entries this memo computed since its last save

    def sha(self, p: Path) -> str:
        """Hex SHA-256 of the file ``p`` (:func:`sha256_file`), memoised. Raises OSError when it cannot be read."""
        return self.derived(p, "", sha256_file)

    def code_sha(self, p: Path) -> str:
        """Hex SHA-256 of the Python file ``p``'s code (:func:`python_code_sha`: its docstrings, comments and layout
        left out; its bytes' SHA-256 when it does not parse), memoised under :data:`PYTHON_CODE_KIND` (never served
        from a raw-bytes entry of :meth:`sha`, nor from one another Python or an older normalisation wrote). Raises
        OSError when it cannot be read."""
        return self.derived(p, PYTHON_CODE_KIND, _code_sha_here)

    def save(self) -> None:
        """Merge the new entries into the memo file (atomically, under :func:`file_lock`); nothing when none.

        Where the file holds another entry for a key than this memo, written by another process since this memo read
        it (two runners on one cache folder, ``leaderboard run --jobs 2``), the fresher one stays
        (:meth:`_merged_entry`): an entry this memo only read is not written back over it, and of an entry this memo
        computed and the file's, the one whose stamp is the file's current :func:`file_stamp` wins; the entries of
        files that no longer exist are dropped (:func:`_memo_entry_gone`; one ``stat`` an entry), those of files of
        :data:`MEMO_PRUNE_MAX_BYTES` or more excepted. Before s58, every
        entry of this memo replaced the file's, so an older process's hash of a file seen before an edit replaced a
        newer process's hash seen after it (a re-hash in the next process, never a stale value: an entry is served
        only when its stamp is the file's current one). Raises OSError when the memo file cannot be written."""
        if not self.dirty:
            return
        with file_lock(self.path):
            try:
                current = _read_memo_table(self.path)
            except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
                current = {}
            if not isinstance(current, dict):
                current = {}
            for key, entry in self.table.items():
                current[key] = self._merged_entry(key, entry, current.get(key))
            current = {key: entry for key, entry in current.items()
                       if not (_memo_entry_cheap(entry) and _memo_entry_gone(key))}
            atomic_write_json(self.path, current, indent=None)
        self.dirty = False
        self.fresh = {}

    def _merged_entry(self, key: str, mine: list, theirs: Any) -> Any:
        """Which of this memo's entry ``mine`` and the memo file's ``theirs`` (None: the file has none) :meth:`save`
        keeps for ``key``: ``mine`` when the file has none or the same; the file's when ``mine`` was only read
        (from the file, when this memo was made: the file's differing entry is later); of an entry this memo computed
        (:attr:`fresh`) and a differing one of the file, the file's when its stamp is the file's current
        :func:`file_stamp` and ``mine``'s is not, else ``mine`` (also when the file cannot be stat'ed). Raises
        nothing."""
        if theirs is None or theirs == mine:
            return mine
        if key not in self.fresh:
            return theirs
        try:
            stamp = file_stamp(self.fresh[key])
        except OSError:  # gone or unreadable: neither entry will be served
            return mine
        if isinstance(theirs, list) and theirs[:-1] == stamp and mine[:-1] != stamp:
            return theirs
        return mine

    def derived(self, p: Path, kind: str, fn) -> Any:
        """``fn(p)`` (a JSON value) memoised by (resolved path, :func:`file_stamp`), under ``kind`` (``""``: the
        file's SHA-256, :meth:`sha`). Entries of the older (size, mtime_ns) form are computed again. Raises
        OSError when ``p`` cannot be stat'ed (or ``fn`` raises it)."""
        stamp = file_stamp(p)
        resolved = p.resolve()
        key = f"{kind}:{resolved}" if kind else str(resolved)
        hit = self.table.get(key)
        if isinstance(hit, list) and len(hit) == len(stamp) + 1 and hit[:-1] == stamp:
            return hit[-1]
        value = fn(p)
        self.table[key] = [*stamp, value]
        self.fresh[key] = resolved
        self.dirty = True
        return value


_MEMO_READS: dict[str, tuple[bytes, dict]] = {}
"""The memo files this process parsed last (:func:`_read_memo_table`): resolved path -> (the bytes parsed, the table);
at most :data:`_MEMO_READS_KEPT` files."""
_MEMO_READS_KEPT = 4


def _read_memo_table(path: Path) -> Any:
    """The JSON value of the memo file ``path`` (a :class:`HashMemo` table: a new dict each call, whose entry lists are
    shared and never changed in place). Parsed only when the file's bytes differ from those this process parsed last
    for it (compared byte for byte: no reliance on time stamps): every ``HashMemo()`` reads the whole file (several a
    leaderboard cell), and a memo of 21,000 entries (4.8 MB: the key of a cell whose model is lm-eval's ``hf`` hashes
    the whole ``lm_eval`` package, ~14,700 files, ~14,000 of them the task YAMLs under ``lm_eval/tasks``) took ~45 ms
    of CPU to parse against ~3 ms to read and compare. Raises OSError (unreadable), ValueError (not UTF-8, not JSON)
    or RecursionError (nested past Python's limit), as ``json.loads`` of its text did."""
    data = path.read_bytes()
    key = str(path.resolve())
    hit = _MEMO_READS.get(key)
    if hit is not None and hit[0] == data:
        return dict(hit[1])
    value = json.loads(data.decode("utf-8"))
    if isinstance(value, dict):
        _MEMO_READS.pop(key, None)
        _MEMO_READS[key] = (data, value)
        while len(_MEMO_READS) > _MEMO_READS_KEPT:
            del _MEMO_READS[next(iter(_MEMO_READS))]
        return dict(value)
    return value


MEMO_PRUNE_MAX_BYTES = 16 << 20
""":meth:`HashMemo.save` drops the entry of a file that no longer exists only when the file was smaller than this
(16 MiB, ~20 ms to hash again): a large file's entry is kept while its path is gone, since a path that is gone here may
come back (a corpus on a drive not mounted now, a data folder another machine or container that shares the cache folder
sees under that path) and a multi-GB corpus would be hashed again. The memo's growth was of small files (tests' and
specs' temporary folders)."""


def _memo_entry_cheap(entry: Any) -> bool:
    """Whether a :class:`HashMemo` entry (``[size, mtime_ns, ctime_ns, inode, value]``) is of a file smaller than
    :data:`MEMO_PRUNE_MAX_BYTES`, or is not of that form (a malformed entry is never served). Raises nothing."""
    size = entry[0] if isinstance(entry, list) and entry else None
    return not isinstance(size, int) or size < MEMO_PRUNE_MAX_BYTES


def _memo_entry_gone(key: str) -> bool:
    """Whether the file a :class:`HashMemo` key names (``<resolved path>`` or ``<kind>:<resolved path>``) is gone:
    its path or a folder on it no longer exists (a dangling link too). An entry of a file that exists but cannot be
    stat'ed (no permission) is kept; a key that names no absolute path (none is written so) counts as gone. Raises
    nothing."""
    path = key if os.path.isabs(key) else key.partition(":")[2]
    if not os.path.isabs(path):
        return True
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):  # no permission, a name too long, an embedded NUL: not known to be gone
        return False
    return False


def file_stamp(p: str | os.PathLike) -> list[int]:
    """``[size, mtime_ns, ctime_ns, inode]`` of the file ``p`` (following links): what tells whether a file may
    have changed since it was hashed. The ctime (inode change time, ns) changes on every content write and
    cannot be set by ``touch``/``os.utime``, so a same-size edit whose mtime was restored (``touch -r``,
    ``cp -p``, ``rsync -a``, tar) still shows; the inode changes when a file is replaced (``os.replace``).
    Raises OSError when ``p`` cannot be stat'ed."""
    st = os.stat(p)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def walk_sorted(root: str | os.PathLike,
                skip_dir: Callable[[Path], bool] | None = None) -> Iterator[tuple[str, list[str]]]:
    """``(folder, sorted file names)`` of each folder under ``root`` (itself first), in sorted order: ``os.walk``
    following links, hidden folders and ``__pycache__`` not entered, nor a link to a folder that encloses it (a
    folder whose real path is that of one of the folders above it: a loop), nor a subfolder for which ``skip_dir``
    returns True. File names are all given (hidden ones too; the caller filters). The one walk of
    :func:`tree_fingerprint` and :func:`leaderboards.keys.first_unhashed_file`. Raises nothing (``os.walk`` passes
    over a folder it cannot list)."""
    # real paths of each walked folder and the folders above it: a link back into them would loop
    chain: dict[str, frozenset[str]] = {str(root): frozenset({os.path.realpath(root)})}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        above = chain.pop(dirpath, frozenset())
        keep = []
        for d in sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__"):
            real = os.path.realpath(os.path.join(dirpath, d))
            if real not in above and not (skip_dir is not None and skip_dir(Path(dirpath) / d)):
                keep.append(d)
                chain[os.path.join(dirpath, d)] = above | {real}
        dirnames[:] = keep
        yield dirpath, sorted(filenames)


def tree_fingerprint(root: str | os.PathLike, memo: HashMemo, suffixes: set[str] | None = SOURCE_SUFFIXES,
                     max_bytes: int | None = MAX_SOURCE_BYTES, *, code: bool = False,
                     skip_dir: Callable[[Path], bool] | None = None,
                     skip_file: Callable[[Path], bool] | None = None) -> str:
    """Fingerprint (16 hex) of the files under ``root``: ``[relative path, SHA-256]`` of each, in sorted order,
    skipping hidden files and folders and ``__pycache__``; only files whose suffix is in ``suffixes`` (None: all)
    and of at most ``max_bytes`` (None: any size). A file ``root`` gives ``fingerprint([name, SHA-256])``.
    File hashes go through ``memo``. ``code``: a ``.py`` file's hash is that of its code (:meth:`HashMemo.code_sha`:
    a docstring, comment or layout edit keeps it; a file that does not parse by its bytes), every other file's of
    its bytes; without it (the default) every file's of its bytes. Raises OSError when a file cannot be read.

    Symlinked files and folders are followed, with paths as seen through the link (``nq_open/NQ-open.dev.jsonl``
    for a link ``nq_open -> /elsewhere/nq_open``), so a data folder made of links is fingerprinted by what they
    point at and re-pointing a link changes the fingerprint. A link to a folder that encloses it (a loop) is not
    entered: a folder is skipped when its real path is that of one of the folders above it. A folder without
    symlinked folders gets the same fingerprint as before links were followed. ``skip_dir``: a subfolder (not
    ``root``) for which it returns True is not entered (None: every one is); ``skip_file``: a file (of a kept suffix
    and size) for which it returns True is left out (None: none is)."""
    root = Path(root)

    def sha(p: Path) -> str:
        return memo.code_sha(p) if code and p.suffix == ".py" else memo.sha(p)

    if root.is_file():
        return fingerprint([root.name, sha(root)])
    items = []
    for dirpath, filenames in walk_sorted(root, skip_dir):
        for fn in filenames:
            p = Path(dirpath) / fn
            if fn.startswith(".") or (suffixes is not None and p.suffix not in suffixes):
                continue
            if max_bytes is not None and p.stat().st_size > max_bytes:
                continue
            if skip_file is not None and skip_file(p):
                continue
            items.append([p.relative_to(root).as_posix(), sha(p)])
    return fingerprint(items)


def normalised_source(source: str | bytes, filename: str = "<source>", max_depth: int | None = None) -> str:
    """The code of a Python module's ``source`` without what cannot change what it computes: ``ast.dump`` of its
    parse tree (no line or column numbers, so comments, blank lines and formatting are gone) with every bare string
    statement removed (the module's, classes' and functions' docstrings, and attribute docstrings under constants).
    ``source`` as text, or as the file's bytes (decoded as Python decodes a source file). Raises SyntaxError (naming
    ``filename``) when ``source`` does not parse; RecursionError when its tree is more than ``max_depth`` levels deep
    (None: no bound; ``ast.dump`` recurses per level, so without a bound whether a deep tree raises RecursionError
    depends on the caller's stack depth)."""
    import ast

    tree = ast.parse(source, filename=filename)
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list):
                body[:] = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                   and isinstance(s.value.value, str))]
    if max_depth is not None and _tree_depth(tree) > max_depth:
        raise RecursionError(f"{filename}: a parse tree more than {max_depth} levels deep")
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _tree_depth(tree: Any) -> int:
    """Levels of the ``ast`` node ``tree`` (1 for a node without children), counted without recursion."""
    import ast

    best, todo = 0, [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        best = max(best, depth)
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best


MAX_CODE_DEPTH = 200
"""The deepest parse tree (levels from the module down) :func:`python_code_sha` hashes by its code; a deeper one by its
bytes. ``ast.dump`` recurses once or twice per level, so without this bound whether it raised RecursionError (and
the file fell back to its bytes) depended on how deep the caller's stack was: a generated 700-term ``1 + 1 + ...``
got its code hash from a shallow caller and its bytes hash from one 400 frames deeper (another key for the same
file). tokrag's own files are at most 23 levels deep, lm-eval's 20."""


PYTHON_CODE_KIND = f"py-code-v2-{sys.version_info[0]}.{sys.version_info[1]}"
"""The :meth:`HashMemo.derived` kind of :meth:`HashMemo.code_sha`'s entries in the memo file. Versioned: ``v2`` is
:func:`python_code_sha` as it is (bump it when it or :func:`normalised_source` changes what it gives; v1: a tree
deeper than :data:`MAX_CODE_DEPTH` got its code or its bytes hash by the caller's stack depth), and the Python version
is in it because ``ast.dump`` of the same file differs between Python versions (another Python's entry is computed
again, not served). A raw-bytes entry (:meth:`HashMemo.sha`: the bare path, the form an older tokrag wrote for every
source file) has no kind, so it is never read as a code hash."""


def python_code_sha(p: str | os.PathLike) -> str:
    """Hex SHA-256 of the code of the Python file ``p``: of :func:`normalised_source` of its bytes (UTF-8), so an edit
    of a docstring, a comment, a blank line or the layout keeps it, and any other edit (a string used as a value
    included) changes it. A file that does not parse (a SyntaxError, a null byte, a bad coding line, nesting too deep
    for the parser) is hashed by its bytes (:func:`sha256_bytes`) rather than stopping a key computation: any edit of
    it changes the hash, and the run that imports it fails on it. So is one whose tree is deeper than
    :data:`MAX_CODE_DEPTH` (generated code), whatever the caller's stack depth. Depends on the Python version
    (``ast.dump``). Raises OSError when ``p`` cannot be read."""
    data = Path(p).read_bytes()
    try:
        code = normalised_source(data, str(p), max_depth=MAX_CODE_DEPTH)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a bad encoding (older Pythons);
        # RecursionError: deeper than MAX_CODE_DEPTH; MemoryError: too deep for the parser (10,000 unary minuses)
        return sha256_bytes(data)
    return sha256_bytes(code.encode("utf-8"))


def _code_sha_here(p: Path) -> str:
    """:func:`python_code_sha` of ``p``, memoised in this process too by (resolved path, :func:`file_stamp`), so that
    key computations whose memo file is not kept (a read-only cache folder; each test's own cache folder) parse each
    file once per process, not once per computation."""
    return _code_sha_at(str(Path(p).resolve()), tuple(file_stamp(p)))


@functools.lru_cache(maxsize=4096)
def _code_sha_at(path: str, stamp: tuple[int, ...]) -> str:
    return python_code_sha(path)


def _module_file(module: str) -> Path:
    """The source file of ``module`` as this process imported it (``__file__``), else as it would import it.

    Raises:
        ConfigError: no ``.py`` file for it (not found, built in, or installed as bytecode only), in one line.
    """
    import importlib.util
    import sys

    loaded = sys.modules.get(module)
    origin = getattr(loaded, "__file__", None)
    if origin is None:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
    if origin is None or not str(origin).endswith(".py") or not Path(origin).is_file():
        raise ConfigError(f"code fingerprint: module {module!r} has no Python source file ({origin or 'not found'}); "
                          "the run cache and indexes are keyed by the retrieval code's source: install tokrag with its "
                          ".py files (pip install -e . from a checkout, or its wheel)")
    return Path(origin)


@functools.lru_cache(maxsize=None)
def source_fingerprint(modules: tuple[str, ...]) -> str:
    """Fingerprint (16 hex) of the code of ``modules`` (dotted names, e.g. ``("retrieval.bm25",)``): per module,
    its name and the SHA-256 of :func:`normalised_source` of its file, so an edit of a docstring or a comment keeps
    the fingerprint and any other edit changes it. Computed once per process and tuple of modules (the code as first
    asked for; ~50 ms for a 1,000-line module, parsed once per process), so every key of a process names the same
    code. Each file is read at that first call, not at the module's import: an edit saved between the two (a
    checkout moved under a running process) is keyed but does not run. What keys the run cache and the indexes by
    the retrieval code that computes them (:func:`retrieval.cache.run_code`, :func:`retrieval.bm25.index_code`,
    :func:`retrieval.dense.index_code`).

    Raises:
        ConfigError: a module without a ``.py`` source file (:func:`_module_file`).
        OSError, SyntaxError: a source file that cannot be read or parsed.
    """
    return fingerprint([[module, _module_code(module)] for module in modules])


@functools.lru_cache(maxsize=None)
def _module_code(module: str) -> str:
    """SHA-256 of :func:`normalised_source` of ``module``'s file (:func:`_module_file`), once per process."""
    path = _module_file(module)
    # bytes: ast.parse decodes them as the import did (a PEP 263 coding line included)
    return sha256_bytes(normalised_source(path.read_bytes(), str(path)).encode("utf-8"))


TASK_DATA_ARGS = ("questions", "corpus", "oracle_file", "hub_id")
"""Task metadata keys whose value may name a local file or folder the task's loader reads."""


def task_data_path(value: Any) -> Path | None:
    """The path a task metadata value of :data:`TASK_DATA_ARGS` names, as the loaders read it, or None when it
    names none: not a non-blank string, a named corpus (``nq-wiki-12k``: :data:`retrieval.corpus.NAMED_CORPORA`)
    or a ``prebuilt:`` index. A relative path is taken from the working directory; ``~`` is expanded. Whether
    the path exists is the caller's to check. One rule for the leaderboards' run keys
    (:func:`leaderboards.keys.task_data_files`) and the results' provenance (:mod:`tasks.provenance`)."""
    from .corpus import NAMED_CORPORA

    if not isinstance(value, str) or not value.strip() or value in NAMED_CORPORA or value.startswith("prebuilt:"):
        return None
    return Path.cwd() / expand_user(value)  # an absolute value stays itself


def expand_user(value: str | os.PathLike) -> Path:
    """``Path(value)`` with ``~`` expanded; as written where it names no home (``~nosuchuser``: pathlib's
    RuntimeError), so the path does not exist and the check or loader that reads it names it in one line."""
    try:
        return Path(value).expanduser()
    except RuntimeError:
        return Path(value)


mark_own_write = mark_write
"""The name this module's writes (:func:`write_beside`, :func:`file_lock`, ...) and the leaderboard programs' own
(``leaderboards.runner.leaderboard_write``) mark their failed writes by: :func:`retrieval.errors.mark_write`, whose
one rule leaves an ``ENOENT`` unmarked (s57 h4, r11; the rule moved into ``mark_write`` itself)."""


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The bytes go to a temporary file ``.<name>.<8 hex digits>.tmp`` in the same folder, are fsynced
    (:func:`write_beside`), then renamed over ``path``. The file gets the permission bits a plain ``open(path, "w")``
    gives: ``0o666`` less the process umask for a new file (``0o644`` under umask ``0o022``; ``tempfile.mkstemp``
    gave ``0o600``), the existing file's bits when one is replaced. Missing parent folders are created. A ``path``
    that is a symbolic link is written through: its target is replaced, beside it, and the link kept
    (:func:`write_target`).

    Raises:
        OSError: the folder cannot be created or written (the temporary file is removed, a file already at ``path``
            is left as it was); a full disk (``ENOSPC``), a quota (``EDQUOT``) or ``ulimit -f`` (``EFBIG``) while
            the temporary file is created or written is an OSError naming the file written (``path``, or a link's
            target: ``[Errno 28] No space left on device: '<path>'``); the path (or a link's target) is a device, a
            named pipe or a socket (:func:`write_beside`).
    """
    try:
        target = write_target(path)
    except OSError as exc:  # a path too long to look up (ENAMETOOLONG), a failing disk (EIO): a write's error
        mark_own_write(exc, path)
        raise
    tmp = write_beside(target, data)
    try:
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):  # EISDIR (a folder at the path), EACCES, EIO: a write's error (mark_write)
            mark_own_write(exc, target)
        raise


def write_target(path: str | os.PathLike) -> Path:
    """The file an atomic write of ``path`` renames its temporary file over: ``path`` itself, or, when ``path`` is a
    symbolic link, the file it points to (every link followed; it need not exist yet), so that the write goes
    through the link, as ``open(path, "w")``, a shell's ``>`` and most tools write, and the link stays. Renaming over
    the link itself replaced it with a regular file and left its target's old content (``retrieve --output
    link.trec``, ``check --write --baseline link.json``: s52 r1)."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def write_beside(path: str | os.PathLike, data: bytes) -> Path:
    """The first half of :func:`atomic_write_bytes`: ``data`` written and fsynced to a new temporary file
    ``.<name>.<8 hex digits>.tmp`` beside ``write_target(path)`` (``path``, or the file a symbolic link ``path``
    points to; with that file's permission bits when it is one), not yet renamed: ``os.replace(tmp,
    write_target(path))`` does that, so several files can be written before any is replaced. Missing parent folders
    are created. -> the temporary file.

    Raises:
        OSError: the folder cannot be created or written (the temporary file is removed; a file already at the path
            is left as it was); ``write_target(path)`` is a device, a named pipe or a socket (``out.json`` linked to
            ``/dev/null`` to discard it: the rename replaced ``/dev/null`` itself with a regular file, as root;
            nothing is written). An error of the temporary file's creation or of its write, flush, fsync or close
            (a full disk's ``ENOSPC``, ``EDQUOT``, ``ulimit -f``'s ``EFBIG``, ``EIO``) names ``write_target(path)``,
            the file being written (:func:`_naming`): a buffered write's flush raises it without a path, so the
            commands' one line (:func:`retrieval.errors.no_room_line`) named no file and no disk (s55 f4). Every
            OSError raised is marked as a write's (:func:`retrieval.errors.mark_write`: the commands' one line
            for any errno, s57 f2) but ``ENOENT``, a folder or temporary file gone mid-write (:func:`mark_own_write`).
    """
    try:
        return _write_beside(path, data)
    except OSError as exc:
        mark_own_write(exc, path)
        raise


def _write_beside(path: str | os.PathLike, data: bytes) -> Path:
    """:func:`write_beside`, its errors not yet marked as a write's."""
    path = write_target(path)
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):  # a folder: os.replace refuses
        raise OSError(errno.EINVAL, f"is {_file_kind(path)}, not a regular file; an atomic write renames a new file over "
                                    "the path, which would replace it", str(path))
    keep = stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else None
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o666)  # the kernel takes the umask off, as for open(path, "w")
            break
        except FileExistsError:
            continue
        except OSError as exc:  # no inode or directory block left (ENOSPC), a quota: named by the file written
            named = _naming(exc, path, tmp)
            if named is None:
                raise
            raise named from exc
    else:
        raise FileExistsError(f"no free temporary name for {path} after 100 tries in {path.parent}")
    try:
        with os.fdopen(fd, "wb") as f:
            if keep is not None:
                os.chmod(tmp, keep)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        named = _naming(exc, path, tmp) if isinstance(exc, OSError) else None
        if named is None:
            raise
        raise named from exc
    return tmp


@contextlib.contextmanager
def no_room_naming(path: str | os.PathLike) -> Iterator[None]:
    """Re-raise an OSError that names no file, raised while ``path`` is written in place with ``open`` (a BM25 build's
    collection file, analyze's records appends, a leaderboard cell's journal), as the same errno naming ``path``
    (``[Errno 28] No space left on device: '<path>'``, ``[Errno 5] Input/output error: '<path>'``): a buffered write's
    flush or close, an ``fsync``, raise it without a path, so the commands' one line
    (:func:`retrieval.errors.no_room_line`) or the traceback's last line named no file and no disk (s55 r6's finding).
    Every errno is named (``ENOSPC``, ``EDQUOT``, ``EFBIG``, ``EIO``, ``EROFS``, ...): the one rule of every tokrag
    write, the atomic ones' too (:func:`write_beside`, :func:`_naming`). An error that names a file, an OSError
    without an errno, and any other exception pass unchanged. (The name is from its first rule, the no-room errnos
    only, s55; it stays, as a rename would edit :mod:`retrieval.bm25`, whose code keys every BM25 index and run.)
    The error naming ``path`` (this one, or ``open(path)``'s own) is marked as a write's
    (:func:`retrieval.errors.mark_write`: the commands' one line for any errno but ``ENOENT``, :func:`mark_own_write`, s57 f2
    and h4); one naming another file (a
    read inside the block) or a file descriptor's number is not. A pathless error is taken as ``path``'s, a read's
    too (a file object's ``read`` or iteration raises ``EIO`` without a path): keep reads out of the block.

    Raises:
        OSError: ``OSError(errno, strerror, str(path))`` (the errno's own subclass, ``PermissionError`` for
            ``EACCES``) raised ``from`` the original, for a pathless OSError of the block.
    """
    try:
        yield
    except OSError as exc:
        named = _naming(exc, path)
        if named is None:
            # the open of path itself; a file descriptor's error names the number (os.stat(fd)): another file
            if isinstance(exc.filename, (str, bytes, os.PathLike)) and os.fsdecode(exc.filename) == os.fsdecode(path):
                mark_own_write(exc, path)
            raise
        raise mark_own_write(named, path) from exc


def _naming(exc: OSError, path: str | os.PathLike, tmp: str | os.PathLike | None = None) -> OSError | None:
    """``exc``, an error met while writing ``path``, as a new OSError of the same errno and text naming ``path`` (the
    caller raises it ``from exc``), when it names no file (a buffered write's flush, ``fsync``, ``close``: ``[Errno
    28] No space left on device``) or names ``tmp``, the temporary file of an atomic write of ``path``
    (:func:`write_beside`: its ``os.open``, ``os.chmod``), so that the line a command prints
    (:func:`retrieval.errors.no_room_line`) says which file, and so which disk, failed; None (``exc`` is raised as it
    is) when it names another file or has no errno. The one rule of :func:`no_room_naming` and :func:`write_beside`."""
    if exc.errno is None:
        return None
    if exc.filename is not None and (tmp is None or os.fspath(exc.filename) != os.fspath(tmp)):
        return None
    return OSError(exc.errno, exc.strerror, str(path))


def read_regular_file(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The bytes of ``path`` (links followed), read only when it is a regular file of at most ``max_bytes``: a named
    pipe there blocked its reader in ``open`` until a writer came (for ever), a link to ``/dev/zero`` read until memory
    ran out. For the records tokrag writes for itself and reads back (:data:`LUCENE_CHECKSUMS`), which such a file
    cannot be: the caller treats the OSError as no record. Checked before the open and again on the open file (opened
    with ``O_NONBLOCK``, so a named pipe put there in between does not wait either); also the lm-eval task-index
    cache's file (:mod:`tokrag_model._task_index_cache`).

    Raises:
        OSError: no such file, not a regular file (``not a regular file (mode prw-r--r--)``), more than ``max_bytes``
            (both ``EINVAL``, not ``EFBIG``: a file too large to read is no full disk, which
            :func:`retrieval.errors.no_room_line` would tell the commands to make room for).
    """
    def check(st: os.stat_result) -> None:
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file (mode {stat.filemode(st.st_mode)})", str(path))
        if st.st_size > max_bytes:
            raise OSError(errno.EINVAL, f"{st.st_size} bytes, more than {max_bytes}", str(path))

    check(os.stat(path))  # before the open: a named pipe's open waits for a writer, a device's may act
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as fh:
        check(os.fstat(fh.fileno()))
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew while read
        raise OSError(errno.EINVAL, f"more than {max_bytes} bytes", str(path))
    return data


def scratch_dir(parent: str | os.PathLike, prefix: str, suffix: str = "") -> Path:
    """A new empty folder ``<parent>/<prefix><8 hex digits><suffix>`` to build something in before renaming it into
    place, with the permission bits a plain ``os.mkdir`` gives (``0o777`` less the process umask: ``0o755`` under
    umask ``0o022``; ``tempfile.mkdtemp`` gives ``0o700``, which the renamed model folder kept, so other users of a
    shared cache could not read it). The kernel takes the umask off, as in :func:`atomic_write_bytes`: reading the
    umask means setting it, which is not thread-safe (a file another thread created in between got ``0o666``).

    Raises:
        OSError: ``parent`` cannot be written.
    """
    for _ in range(100):
        path = Path(parent) / f"{prefix}{secrets.token_hex(4)}{suffix}"  # 8 characters, as remove_stale_scratch finds them
        try:
            os.mkdir(path, 0o777)
            return path
        except FileExistsError:
            continue
        except OSError as exc:  # a read-only or failing disk, no permission: a write's error (mark_write)
            mark_own_write(exc, path)
            raise
    raise FileExistsError(f"no free folder name {prefix}*{suffix} after 100 tries in {parent}")


def replace_folder(new: str | os.PathLike, target: str | os.PathLike, aside: str | os.PathLike) -> None:
    """Put the folder ``new`` at ``target``, replacing the folder there, so that ``target`` is never a partly deleted
    folder: the old folder is renamed to ``aside`` (one ``os.replace``), ``new`` renamed in, and only then ``aside``
    deleted. An interruption (Ctrl-C, ``kill``) while the old copy is deleted leaves ``target`` complete and new;
    Ctrl-C between the two renames puts the old folder back. Only ``kill -9`` between the two renames leaves no
    ``target`` (both copies are then in ``aside``'s scratch folder, which the next build removes and builds again).

    Args:
        new: the complete new folder, on ``target``'s file system.
        target: the folder to replace (absent: ``new`` is renamed in).
        aside: a path that does not exist, inside a scratch folder beside ``target`` (:func:`scratch_dir`) that
            :func:`remove_stale_scratch` recognises (its ``entries`` include ``aside``'s name).

    Raises:
        OSError: a rename fails (``target`` is then the old folder, as before the call).
    """
    import shutil

    target = Path(target)
    moved = target.exists()
    try:
        if moved:
            os.replace(target, aside)
        os.replace(new, target)
    except BaseException as exc:
        if isinstance(exc, OSError):
            mark_own_write(exc, target)  # a write's error (the commands' one line, s57 f2)
        if moved:  # the old folder back; fails harmlessly when it was never moved or the new one got in just before
            with contextlib.suppress(OSError):
                os.replace(aside, target)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON (sorted keys, trailing newline) atomically."""
    atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=True, ensure_ascii=False, default=str) + "\n")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, timeout: float = -1) -> Iterator[None]:
    """Hold an exclusive cross-process lock on ``<path>.lock`` (``filelock``); blocks by default.

    Raises:
        filelock.Timeout: the lock is held elsewhere for ``timeout`` seconds (``0``: at once).
        OSError: the folder or the lock file cannot be created (a read-only or failing disk, no permission), marked
            as a write's (:func:`retrieval.errors.mark_write`: the commands' one line, s57 f2).
    """
    path = Path(path)
    lock = FileLock(str(path) + ".lock", timeout=timeout)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except OSError as exc:
        if exc.errno is not None:  # not filelock.Timeout (a TimeoutError without errno): the caller's to handle
            mark_own_write(exc, lock.lock_file)
        raise
    try:
        yield
    finally:
        lock.release()


S = TypeVar("S")


class SearcherCache(Generic[S]):
    """Open searchers over index folders, reused in this process while their folders hold the same build.

    Opening a searcher is expensive (a Lucene reader, FAISS vectors loaded into memory), and an open one keeps
    searching the files or vectors it loaded, so each entry holds the folder identity read when it was opened
    (``identity()``: e.g. :func:`retrieval.bm25.index_identity`, :func:`retrieval.dense.dense_index_identity`,
    built from :func:`file_stamp`-like stamps of the folder's files). :meth:`get` reuses an entry only while
    the identity is unchanged, so a folder rebuilt, re-downloaded or replaced in place, also by another process,
    is never served from the old searcher. At most ``max_size`` entries are kept; the oldest opened goes first.

    Args:
        max_size: entries kept (one per key: index folder and the parameters the searcher was opened with).
        close: called on a searcher that is replaced or evicted (None: dropped, left to garbage collection).
    """

    def __init__(self, max_size: int, close: Callable[[S], None] | None = None) -> None:
        self.max_size, self.close = max_size, close
        self._held: dict[Hashable, tuple[Hashable, S]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        """Drop (and :attr:`close`) every held searcher."""
        while self._held:
            self._drop(self._held.pop(next(iter(self._held)))[1])

    def _drop(self, searcher: S) -> None:
        if self.close is not None:
            self.close(searcher)

    def get(self, key: Hashable, identity: Callable[[], Hashable], open_searcher: Callable[[], S], *,
            lock: str | os.PathLike | None = None, usable: Callable[[Hashable, S], bool] | None = None,
            reread: bool = False) -> S:
        """The searcher held under ``key`` when ``identity()`` still equals the one read when it was opened (and
        ``usable(identity, searcher)`` holds), else ``open_searcher()``, held from now on under ``key``.

        Args:
            key: what the searcher was opened for (index folder, parameters, device); hashable.
            identity: reads the identity of the folder(s) now.
            open_searcher: opens a new searcher; its exceptions propagate and nothing is held then.
            lock: a path held with :func:`file_lock` while the identity is read and the searcher opened (the index
                folder: its builds take the same lock, so none swaps it meanwhile); None: no lock.
            usable: a further check of a held searcher against the identity (e.g. recorded for the right corpus).
            reread: keep the identity read again after opening (a searcher that downloads its folder on opening:
                Pyserini's prebuilt indexes), not the one read before.
        """
        with file_lock(lock) if lock is not None else contextlib.nullcontext():
            ident = identity()
            held = self._held.get(key)
            if held is not None and held[0] == ident and (usable is None or usable(ident, held[1])):
                return held[1]
            s = open_searcher()
            if reread:
                ident = identity()
        if held is not None:
            self._drop(held[1])
        self._held.pop(key, None)
        self._held[key] = (ident, s)
        while len(self._held) > self.max_size:
            self._drop(self._held.pop(next(iter(self._held)))[1])
        return s


def index_code_change(recorded: Any, code: str, modules: Sequence[str]) -> str:
    """How an index's recorded index code (``code`` in its ``tokrag_index.json``) differs from this process's
    ``code``, for the build's rebuild warning: ``"before tokrag recorded the index code (...)"`` when it records
    none (``recorded`` None: built before the code was recorded, rebuilt once), else ``"by other index code (code
    <recorded>, this code <code>: <modules> edited)"``. Kept out of the modules whose code keys an index
    (:func:`retrieval.bm25.index_code`, :func:`retrieval.dense.index_code`), so its wording never re-keys one."""
    if recorded is None:
        return f"before tokrag recorded the index code (a one-time rebuild; this code {code})"
    return f"by other index code (code {recorded}, this code {code}: {', '.join(modules)} edited)"


INDEX_OPEN_TRIES = 3
"""How many times :func:`open_of_this_code` builds and opens an index that another process's index code keeps
rebuilding before it gives up (one ConfigError line)."""


def open_of_this_code(kind: str, open_searcher: Callable[[], S], code: str, modules: Sequence[str],
                      log: Any) -> S:
    """``open_searcher()`` (build the index if needed, then open it), opened over an index recorded with this
    process's index ``code`` (the searcher's ``meta``, ``tokrag_index.json`` read under the folder's lock as it was
    opened). The index folders are keyed by the corpus (and encoder), not by the code, so a checkout with other
    ``modules`` sharing the cache folder may rebuild one between the build's code check and the open, and its
    ranking would then be cached under this code's run key. Such an index is rebuilt (a warning on ``log``), at most
    :data:`INDEX_OPEN_TRIES` times. A foreign index (``meta`` None: no ``tokrag_index.json``) is opened as before.

    Args:
        kind: ``"BM25"`` or ``"dense"``, for messages.
        open_searcher: builds (reuses) the index and opens a searcher with ``meta`` and ``index_dir`` attributes.
        code: this process's index code (16 hex); ``modules``: the dotted modules it fingerprints.
        log: the caller's ``logging.Logger``.

    Raises:
        ConfigError: the index was rebuilt by other index code before every one of those opens: one line naming the
            folder and both codes, and what to do (one cache folder per checkout: ``$TOKRAG_CACHE_DIR``).
    """
    for _ in range(INDEX_OPEN_TRIES):
        searcher = open_searcher()
        meta = getattr(searcher, "meta", None)
        recorded = meta.get("code") if isinstance(meta, dict) else code
        if recorded == code:
            return searcher
        log.warning("%s index %s was rebuilt by other index code (code %s, this code %s: another checkout shares the "
                    "cache folder) before it was opened: rebuilding it", kind, searcher.index_dir, recorded, code)
    files = ", ".join(m.replace(".", "/") + ".py" for m in modules)
    raise ConfigError(f"{kind} index {searcher.index_dir} was rebuilt by other index code (code {recorded}, this code "
                      f"{code}) each of the {INDEX_OPEN_TRIES} times it was built and opened: another checkout with "
                      f"another {files} is using the same cache folder; give each checkout its own TOKRAG_CACHE_DIR "
                      "(or the task's cache_dir)")


def remove_stale_scratch(target: str | os.PathLike, entries: frozenset[str] | Callable[[Path], bool],
                         suffix: str = "") -> list[Path]:
    """Remove the scratch folders that earlier builds of ``target`` left beside it when they were interrupted
    (Ctrl-C, ``kill -9``, a crash): ``.<target name>.<8 random characters><suffix>``, as
    :func:`scratch_dir` (``prefix=f".{name}."``) and ``tempfile.mkdtemp`` before it name them, holding nothing but
    ``entries`` (what a build writes there: the names, or a test of each entry's path, e.g. a model conversion's
    files, :func:`tokrag_model.loading.remove_stale_conversions`). Call it only while holding ``file_lock(target)``: every build of
    ``target`` writes its scratch folder under that lock, so no live build is writing one of these. Scratch
    folders of other targets (another fingerprint, another index folder) and anything else are left alone.

    Returns:
        the folders removed.
    """
    import re
    import shutil

    target = Path(target)
    pattern = re.compile(re.escape(f".{target.name}.") + r"[a-z0-9_]{8}" + re.escape(suffix))
    removed = []
    try:
        candidates = [e for e in target.parent.iterdir() if pattern.fullmatch(e.name)]
    except OSError:
        return removed
    for e in candidates:
        try:
            if e.is_symlink() or not e.is_dir():
                continue
            if not (all(entries(c) for c in e.iterdir()) if callable(entries)
                    else {c.name for c in e.iterdir()} <= entries):
                continue
            shutil.rmtree(e)
        except OSError:
            continue
        removed.append(e)
    return removed


def int_limit_message(where: str, fix: str = "fix or remove the line") -> str:
    """The one line for a JSON document holding an integer of more digits than Python converts (its integer string
    conversion limit, :func:`sys.get_int_max_str_digits`: 4300 by default): the JSON is valid, but Python's reader
    raises a plain ``ValueError`` (not a :class:`json.JSONDecodeError`), a traceback where it was not caught. ``where``:
    the file (and line) read; ``fix``: what to do. Python's own message names no file and advises changing the limit
    in the reading program."""
    import sys

    return (f"{where}: holds an integer of more than {sys.get_int_max_str_digits()} digits, more than Python's JSON "
            f"reader converts; {fix}")


def depth_limit_message(where: str, fix: str = "fix or remove the line") -> str:
    """The one line for a JSON document nested deeper than Python's reader follows (``[[[...]]]`` 100,000 deep): the
    reader recurses once per level and raises :class:`RecursionError` past :func:`sys.getrecursionlimit` (1000 by
    default), a traceback where it was not caught, naming no file. ``where``: the file (and line) read; ``fix``: what
    to do (as :func:`int_limit_message`)."""
    import sys

    return (f"{where}: holds JSON nested too deep for Python's JSON reader (past its recursion limit, "
            f"{sys.getrecursionlimit()}); {fix}")


def json_limit_error(exc: BaseException, where: str, whole_file: bool = False, fix: str | None = None) -> DataError:
    """The :class:`DataError` for valid JSON that Python's reader cannot take, raised by it as ``exc``: a plain
    ``ValueError`` (an integer past the digit limit, :func:`int_limit_message`) or a :class:`RecursionError` (nesting
    past the recursion limit, :func:`depth_limit_message`). ``where``: the file (and line); ``whole_file``: the fix
    named is the number's or the nesting's, else the line's; ``fix``, when given, is named instead (a file tokrag
    wrote, such as a cell's ``DONE`` manifest, is not for the user to edit: ``re-run the cell``). One rule for every
    JSON reader that catches both."""
    if isinstance(exc, RecursionError):
        return DataError(depth_limit_message(where, fix or ("fix the nesting" if whole_file else "fix or remove the line")))
    return DataError(int_limit_message(where, fix or ("fix the number" if whole_file else "fix or remove the line")))


def json_error(exc: json.JSONDecodeError) -> str:
    """``exc``'s message and column for an error line: ``Unterminated string starting at column 9`` (json's
    message for it ends in ``at``: written as is it read "starting at at column 9")."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


@contextlib.contextmanager
def gzip_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn the errors of reading a truncated or corrupt ``.gz`` file (``EOFError``, ``BadGzipFile``,
    ``zlib.error``) into a one-line :class:`DataError` naming the file."""
    import gzip
    import zlib

    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(
            f"{path}: the gzip file is truncated or corrupt ({exc}); download or compress it again"
        ) from None


GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip file; never the start of UTF-8 text (0x8b is no lead byte)

# Other compressions a user may apply to a data file afterwards (``bzip2 run.trec``), which tokrag's readers do not
# decompress: (name, a pattern of the file's first bytes, the command that decompresses it). bzip2's "BZh" is
# followed by the block size digit and the 6-byte magic of a block or of the end of the stream (an empty file), so
# that a text file starting "BZh" is not mistaken for one.
OTHER_COMPRESSIONS: tuple[tuple[str, re.Pattern[bytes], str], ...] = (
    ("bzip2", re.compile(rb"BZh[1-9](?:\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)", re.DOTALL), "bunzip2"),
    ("xz", re.compile(rb"\xfd7zXZ\x00", re.DOTALL), "unxz"),
    ("zstd", re.compile(rb"\x28\xb5\x2f\xfd", re.DOTALL), "unzstd"),
    ("zip", re.compile(rb"PK\x03\x04", re.DOTALL), "unzip"),
)


def other_compression(path: str | os.PathLike) -> tuple[str, str] | None:
    """``(name, decompress command)`` when the file's first bytes are the magic number of a compression tokrag's
    readers do not decompress (:data:`OTHER_COMPRESSIONS`: bzip2, xz, zstd, zip), told by content as
    :func:`open_data` tells gzip, whatever the file's name; else None (plain text, gzip, anything else).

    Raises:
        OSError: the file cannot be opened.
    """
    with open(path, "rb") as f:
        return _other_compression_of(f.read(10))


def _other_compression_of(head: bytes) -> tuple[str, str] | None:
    """:func:`other_compression` of a file's first bytes ``head`` (10 bytes are enough)."""
    for name, magic, tool in OTHER_COMPRESSIONS:
        if magic.match(head):
            return name, tool
    return None


def compressed_file_message(path: str | os.PathLike, name: str, tool: str, reader: str = "tokrag") -> str:
    """The one line for a data file compressed with ``name`` (decompressed by ``tool``: :func:`other_compression`),
    which ``reader`` does not read: ``data.jsonl.bz2: a bzip2-compressed file; tokrag reads plain text or gzip:
    decompress it (bunzip2) or gzip it``."""
    article = "an" if name == "xz" else "a"
    return f"{path}: {article} {name}-compressed file; {reader} reads plain text or gzip: decompress it ({tool}) or gzip it"


@contextlib.contextmanager
def open_data(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """The bytes of a data file a user gives (questions, corpus, topics, a run, a local copy of a data set),
    decompressed when the file is gzip: told by its content (:data:`GZIP_MAGIC`), not only by a ``.gz`` name, as
    ``datasets`` tells it. A gzipped file named ``.jsonl`` (``gzip -k`` then a rename, a download saved under the plain
    name) was read as text: "invalid UTF-8 at byte 1 of the line; re-encode the file as UTF-8", or a bare
    UnicodeDecodeError traceback. A file compressed otherwise (bzip2, xz, zstd, zip: :func:`other_compression`,
    told by its first bytes whatever its name) is refused in one line instead of being read as text ("invalid UTF-8
    ...; re-encode the file as UTF-8", wrong advice for it). A ``.gz`` name whose bytes are neither gzip nor such a
    compression is still read as gzip, so that a damaged download is named as such. The one opener of tokrag's
    readers of user data files.

    Raises:
        DataError: a truncated or corrupt gzip file, named (:func:`gzip_errors`), also when raised by the caller's
            reading inside the ``with`` block; a file compressed with bzip2, xz, zstd or zip
            (:func:`compressed_file_message`: ``corpus.jsonl.bz2: a bzip2-compressed file; tokrag reads plain text
            or gzip: decompress it (bunzip2) or gzip it``).
        OSError: the file cannot be opened.
    """
    import gzip

    path = Path(path)
    with open(path, "rb") as raw, gzip_errors(path):
        head = raw.peek(10)  # the buffer's first read (8 KiB of a regular file), without consuming it
        if head[:2] != GZIP_MAGIC:
            packed = _other_compression_of(head)
            if packed is not None:
                raise DataError(compressed_file_message(path, *packed))
        if head[:2] == GZIP_MAGIC or path.suffix == ".gz":
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                yield unzipped
        else:
            yield raw


_WS = re.compile(r"\s")


def invalid_unicode(text: str) -> str | None:
    """None when ``text`` can be written as UTF-8; else where it cannot, for a message: ``"U+D800 at character 7"``,
    its first lone surrogate (a JSON escape ``\\ud800`` without its pair, or invalid UTF-8 decoded with
    ``surrogateescape``), which Lucene's index files, the run files and the dense encoders' tokenizers cannot take.
    The one test of queries (:func:`retrieval.bm25.validate_queries`) and corpus passages (:class:`retrieval.Corpus`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"U+{ord(text[exc.start]):04X} at character {exc.start + 1}"
    return None


def check_unicode(value: Any, where: str, field: str = "") -> None:
    """Refuse a record read from JSON whose strings cannot be written as UTF-8 (:func:`invalid_unicode`: a JSON
    escape ``"\\udfff"`` without its pair is valid JSON): ``value`` a string, or a list or dict, checked through
    (keys too); ``field`` names ``value`` in the line, and a dict's top-level keys name its fields
    (``'answers'[0]``). The QA readers' check (bring-your-own questions, NQ-open, WebQuestions, a local copy's
    JSON rows) before the rows reach ``datasets.Dataset.from_list`` (pyarrow), where such a string was an
    ``UnicodeEncodeError`` traceback after the model load; a corpus passage is checked by :class:`retrieval.Corpus`.

    Raises:
        DataError: ``<where>: <field> holds an invalid Unicode character (U+DFFF at character 6: a lone surrogate,
            ...); remove the character or fix the text``.
    """
    try:  # the common case at C speed; only a record that fails is walked, to name the field
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return
    except (UnicodeEncodeError, TypeError, ValueError):
        pass
    found = _invalid_unicode_in(value, field)
    if found is not None:
        name, bad = found
        raise DataError(f"{where}: {name} holds an invalid Unicode character ({bad}: a lone surrogate, half of a "
                        "UTF-16 pair, as a JSON escape such as \\udfff without its partner writes it); remove the character "
                        "or fix the text")


def _invalid_unicode_in(value: Any, field: str) -> tuple[str, str] | None:
    """:func:`check_unicode`'s walk: ``(the field, invalid_unicode's place)`` of the first bad string, else None."""
    if isinstance(value, str):
        bad = invalid_unicode(value)
        return None if bad is None else (field or "the value", bad)
    if isinstance(value, (list, tuple)):
        items = enumerate(value)
    elif isinstance(value, dict):
        for k in value:
            if isinstance(k, str) and invalid_unicode(k) is not None:
                return (f"a field name{' in ' + field if field else ''}", invalid_unicode(k))
        items = value.items()
    else:
        return None
    for k, v in items:
        found = _invalid_unicode_in(v, f"{field}[{k!r}]" if field else repr(k))
        if found is not None:
            return found
    return None


def json_id(value: Any, where: str) -> str:
    """An id read from JSON as a string: a string as is, an integer as its digits (``12`` -> ``"12"``). The one
    rule of every id tokrag reads from a JSON record: corpus passage ids, topics query ids and gold ids, a ctxs
    run's question and passage ids, the QA tasks' own questions' ids.

    Ids are compared as strings, exactly. An id is one token: a TREC run cannot hold whitespace in an id (its
    columns are whitespace-separated), so an id ``"12 "`` or ``"30\n"`` names no passage; it is refused, not
    stripped, so that the file that holds it is fixed rather than read differently by each tool. An empty id is
    refused too (a question or passage must be named to be matched). A float ``3.0`` is refused: read as
    ``"3.0"`` it silently matched no id ``"3"`` of a run, qrels or answers, and reading it as ``"3"`` would guess
    what the file meant; above 2**53 a float is not even the integer the file holds, so no digits are suggested.
    A bool (``true``) is no id either.

    Args:
        value: the JSON value (absent and null are the caller's to handle: they mean "no id").
        where: what to name in the message, e.g. ``"file:3: query id 'qid'"``.

    Raises:
        DataError: one line, ``{where} is {value}: ...`` with what to do: a float, a bool or another type, or a
            string that is empty or holds whitespace.
    """
    if isinstance(value, float):
        fix = (f'write it as a string ("{value}")' if not value.is_integer()
               else f'write it as {int(value)} or "{int(value)}"' if abs(value) < 2 ** 53
               else "write it as a string or an integer, as the source of the ids has it")
        raise DataError(f"{where} is {json.dumps(value)}: an id must be a string or an integer, not a float; {fix}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(f"{where} is {json.dumps(value)}: an id must be a string or an integer")
    v = str(value)
    if not v:
        raise DataError(f'{where} is "": an id must not be empty; give the id, or remove the field')
    if _WS.search(v):
        raise DataError(f"{where} is {v!r}: an id is one token, without whitespace (as in a TREC run, a corpus or "
                        "topics); fix the id in the file")
    return v


def one_passage_id(obj: Mapping[str, Any], names: Sequence[str], where: str) -> None:
    """Refuse a passage record whose id fields (``names``, e.g. ``id``, ``docid``, ``_id``) hold two different
    non-empty values: the corpus reader takes ``id`` first and the ctxs reader ``docid`` first, so such a record
    named one passage in the corpus and another in a run (gold@k 0, silently). Null and ``""`` fields are no id;
    ``12`` and ``"12"`` are the same id (:func:`json_id`).

    Raises:
        DataError: one line naming ``where`` and both fields with their values.
    """
    seen: tuple[str, Any, str] | None = None
    for n in names:
        v = obj.get(n)
        if v is None or v == "":
            continue
        key = str(v) if isinstance(v, (str, int)) and not isinstance(v, bool) else json.dumps(v)
        if seen is None:
            seen = (n, v, key)
        elif key != seen[2]:
            raise DataError(f"{where}: passage id fields {seen[0]!r} ({json.dumps(seen[1])}) and {n!r} "
                            f"({json.dumps(v)}) differ; keep one id field (or give both the same id)")


class DuplicateKeyError(Exception):
    """A JSON object that gives the same key twice (:func:`unique_keys`); ``key`` is that key."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``object_pairs_hook`` for :func:`json.loads` that refuses a key given twice in one object, at any depth.

    Python's json (like most readers) keeps the last value of a repeated key and drops the others without a word, so
    ``{"id": "q1", ..., "id": "q2"}`` would be read as question ``q2``. Through :data:`UNIQUE_KEYS_DECODER` its cost
    is within the noise of a plain ``json.loads`` (s57 h1: 22 ms CPU for a 10,033-line, 5.4 MB corpus either way;
    28 vs 27 ms for the 2,655 lines of the NQ oracle file, whose rows nest passages).

    Raises:
        DuplicateKeyError: the first key given twice (the caller names the file and line).
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


UNIQUE_KEYS_DECODER = json.JSONDecoder(object_pairs_hook=unique_keys)
"""A :class:`json.JSONDecoder` with :func:`unique_keys`, made once (as :func:`json.loads` shares its default one):
``json.loads(line, object_pairs_hook=...)`` builds a decoder per line, which made reading a 10,033-line corpus 1.6x
slower (36 vs 22 ms CPU); this one costs nothing measurable."""


def duplicate_key_message(where: str, key: str) -> str:
    """The one-line refusal of a JSON object that gives ``key`` twice, at ``where`` (``file:line``)."""
    return (f"{where}: key {key!r} is given twice in one JSON object (a JSON reader keeps only the last value, "
            "silently); keep the one you mean and remove the other")


def duplicate_key_line(text: str) -> int | None:
    """The 1-based line on which the JSON object of ``text`` that gives a key twice opens (the first one refused, the
    innermost); None when ``text`` has none, or does not parse. Re-reads ``text`` with Python's pure-Python scanner,
    whose object parser sees positions (the C one that :data:`UNIQUE_KEYS_DECODER` uses does not): call it only once a
    duplicate was refused (0.07 s CPU for the 6.5 MB Wikipedia summaries file)."""
    from json import decoder as json_decoder, scanner as json_scanner

    opened: list[int] = []

    def parse_object(s_and_end, *args, **kwargs):
        try:
            return json_decoder.JSONObject(s_and_end, *args, **kwargs)
        except DuplicateKeyError:
            if not opened:  # the innermost object raised first
                s, end = s_and_end  # end: just after its "{"
                opened.append(s.count("\n", 0, end) + 1)
            raise

    dec = json.JSONDecoder(object_pairs_hook=unique_keys)
    dec.parse_object = parse_object
    dec.scan_once = json_scanner.py_make_scanner(dec)
    try:
        dec.decode(text)
    except DuplicateKeyError:
        return opened[0] if opened else None
    except (ValueError, RecursionError):
        return None
    return None


def loads_unique(text: str, where: str) -> Any:
    """``text`` (one JSON document of the file ``where``) decoded, a key given twice in one object refused
    (:func:`unique_keys`, on :data:`UNIQUE_KEYS_DECODER`), for a whole-file JSON whose line is not known beforehand.

    Raises:
        DataError: a key given twice in one object: ``where:line`` of that object (:func:`duplicate_key_line`) and
            the key, one line; an integer of more digits than Python converts: ``where`` (:func:`int_limit_message`),
            one line; JSON nested deeper than Python's recursion limit: ``where`` (:func:`depth_limit_message`), one
            line.
        json.JSONDecodeError: malformed JSON (the caller words it).
    """
    try:
        if text.startswith("\ufeff"):  # json.loads's own refusal ('Unexpected UTF-8 BOM'), which decode() lacks
            return json.loads(text)
        return UNIQUE_KEYS_DECODER.decode(text)
    except DuplicateKeyError as exc:
        line = duplicate_key_line(text)
        raise DataError(duplicate_key_message(f"{where}:{line}" if line else where, exc.key)) from None
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit: a traceback before
        raise json_limit_error(exc, where, whole_file=True) from None


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file (1-based lines); a gzip file (``.gz``,
    or gzip under another name: :func:`open_data`) is decompressed on the fly and a UTF-8 byte order mark at the start
    of the file is skipped. A key given twice in one object, at the top of the line or nested (a ctxs passage's
    ``id``), is refused (:func:`unique_keys`): the reader the rows go to would keep only its last value.

    Raises:
        DataError: naming the file and line for invalid UTF-8, invalid JSON, an integer of more digits than Python
            converts (:func:`int_limit_message`), JSON nested deeper than Python's recursion limit
            (:func:`depth_limit_message`), a non-object line or a key given twice in one object (the key named);
            naming the file for a truncated or corrupt ``.gz``.
    """
    path = Path(path)
    with open_data(path) as f:
        for lineno, raw in enumerate(f, start=1):
            if lineno == 1:
                raw = raw.removeprefix(BOM)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{path}:{lineno}: invalid UTF-8 at byte {exc.start} of the line; "
                    "re-encode the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                # the line end would move an error at the end to "line 2 column 1"
                obj = UNIQUE_KEYS_DECODER.decode(line.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{lineno}: malformed JSON ({json_error(exc)}); fix or remove the line") from None
            except DuplicateKeyError as exc:
                raise DataError(duplicate_key_message(f"{path}:{lineno}", exc.key)) from None
            except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit
                raise json_limit_error(exc, f"{path}:{lineno}") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def jsonl_conversion_command(path: str | os.PathLike, array: bool = True, program: str | None = None) -> str:
    """The shell command that writes the JSON file ``path`` as JSON Lines, for the error that names such a file:
    ``jq -c '.[]' FILE > OUT`` for one JSON array (``array``: one element per line), ``jq -c . FILE > OUT`` for
    pretty-printed objects, both paths shell-quoted. A gzip file (told by its content, as :func:`open_data` reads it;
    by its ``.gz`` name when it cannot be read) is piped through ``gunzip -c FILE | jq ...``, since jq reads no gzip.
    ``OUT`` is the name without ``.gz``/``.json``/``.jsonl`` plus ``.jsonl``, or ``.lines.jsonl`` where that is
    ``path`` itself or a path that exists (the shell empties ``OUT`` before jq runs: ``x.json.gz`` beside the
    ``x.jsonl`` it was made from). ``program``: another jq program, given in place of ``'.[]'`` / ``.`` (shell-quoted).
    Used by the run cache (DPR's retriever output), ``retrieve eval`` (Pyserini's DPR-style run), bring-your-own
    questions and the corpus and topics readers (:mod:`retrieval.corpus`)."""
    import shlex

    p = Path(path)
    try:
        with open(p, "rb") as f:
            gz = f.read(2) == GZIP_MAGIC
    except OSError:  # read a moment ago by the caller; name it by its name then
        gz = p.name.endswith(".gz")
    stem = p.name.removesuffix(".gz").removesuffix(".json").removesuffix(".jsonl")
    out = p.with_name(stem + ".jsonl")
    if out == p or os.path.lexists(out):
        out = p.with_name(stem + ".lines.jsonl")
    jq = "jq -c " + (shlex.quote(program) if program is not None else "'.[]'" if array else ".")
    src = shlex.quote(str(p))
    return (f"gunzip -c {src} | {jq}" if gz else f"{jq} {src}") + f" > {shlex.quote(str(out))}"


def _file_kind(path: Path) -> str:
    """What a path that exists but is neither a folder nor a regular file is, in a user's words."""
    import stat

    mode = path.stat().st_mode
    for test, words in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "a special file"


def check_writable(path: str | os.PathLike, what: str, *, folder: bool) -> Path:
    """Refuse, before any work, an output path that cannot be written: a file where a folder is wanted (or the
    reverse), or a path whose nearest existing parent is not a writable folder. Creates nothing.

    The one writability check of tokrag (``retrieve --output``, index folders, leaderboard outputs): a real
    probe (a temporary folder made and removed at once), because ``os.access`` says yes to root, also on
    ``/proc`` or a read-only mount. An existing folder is probed itself; a missing path, its nearest
    existing parent; an existing file, its folder (it is replaced atomically, a temporary file beside it).

    A name longer than the file system allows (``ENAMETOOLONG``), in the path or in folders of it not yet created, or
    a file name whose temporary file ``.<name>.<8 hex>.tmp`` would be (:func:`write_beside`), is refused as
    ``tokrag retrieve`` refuses one (:func:`retrieval.cli._check_lookup`'s line); a path that cannot be looked up for
    another reason (a folder above it this user may not search: ``EACCES``) is one line too. Both were a traceback
    (``Path.exists`` raises them) before s57 h4.

    Returns:
        the resolved path.

    Raises:
        ConfigError: naming ``what`` (e.g. ``report --out``), the path and the reason: ``{what} {path}: a name of 300
            bytes, more than the 255 its file system allows ([Errno 36] File name too long); give a shorter path``;
            ``{what} {path}: cannot be looked up ([Errno 13] Permission denied); give a path this user can reach``.
    """
    given = Path(path).expanduser()
    _check_name_lengths(given, what, folder=folder)
    try:
        return _check_writable(given, what, folder=folder)
    except OSError as exc:  # a lookup's (Path.exists, is_symlink raise all but ENOENT, ENOTDIR, ...); the probe's are lines
        todo = "give a shorter path" if exc.errno == errno.ENAMETOOLONG else "give a path this user can reach"
        raise ConfigError(f"{what} {given}: cannot be looked up ([Errno {exc.errno}] {exc.strerror}); {todo}") from None


def _nearest_folder(path: Path) -> tuple[Path, list[Path]]:
    """The nearest existing folder above ``path`` and the folders between them, not yet made (nearest first): what
    the system measures a new name or path against (:func:`name_too_long`, :func:`path_too_long`). Raises nothing."""
    made, parent = [], path.parent
    while parent != parent.parent:
        try:
            if parent.is_dir():
                break
        except OSError:  # a name too long itself, say: measured by the caller
            pass
        made.append(parent)
        parent = parent.parent
    return parent, made


def _pathconf(folder: Path, name: str, default: int) -> int:
    """``os.pathconf(folder, name)``, or ``default`` when it cannot be read."""
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default


def name_too_long(path: Path, *, folder: bool = False) -> str | None:
    """Why ``path`` cannot be created for its name, or None: ``a name of 300 bytes, more than the 255 its file system
    allows ([Errno 36] File name too long)`` when its own name or that of a folder of it not yet created is longer than
    the nearest existing folder's file system allows (``PC_NAME_MAX``, 255 when it cannot be read), or, for a file
    (``folder`` False), when its temporary file ``.<name>.<8 hex>.tmp`` (:func:`write_beside`, renamed over it once
    written; 14 bytes longer) would be. The one rule of :func:`check_writable` and ``tokrag retrieve``'s output checks
    (:func:`retrieval.cli._check_lookup`). Raises nothing."""
    parent, made = _nearest_folder(path)
    names = [path.name, *(p.name for p in made)]
    name_max = _pathconf(parent, "PC_NAME_MAX", 255)
    sizes = [len(os.fsencode(n)) for n in names]
    tmp = 0 if folder else sizes[0] + len(".") + len(".01234567.tmp")
    if max(sizes) <= name_max and tmp <= name_max:
        return None
    told = (f"a name of {max(sizes)} bytes," if max(sizes) > name_max else
            f"a name of {sizes[0]} bytes, whose temporary file (.<name>.<8 hex>.tmp, renamed over it once written) "
            f"has {tmp},")
    return (f"{told} more than the {name_max} its file system allows ([Errno {errno.ENAMETOOLONG}] "
            f"{os.strerror(errno.ENAMETOOLONG)})")


def path_too_long(path: Path) -> str | None:
    """Why ``path`` cannot be created for its length, or None: ``a path of 4109 bytes, more than the 4095 its file
    system allows ([Errno 36] File name too long)`` when the path as given (relative ones as they are: the system
    measures the text it is handed) has ``PATH_MAX`` bytes or more (``PC_PATH_MAX`` of the nearest existing folder,
    4096 when it cannot be read; the limit counts the text's closing NUL). :func:`name_too_long`'s rule for the whole
    path (``tasks.precheck``'s ``--output_path`` checks). Raises nothing."""
    size = len(os.fsencode(str(path)))
    most = _pathconf(_nearest_folder(path)[0], "PC_PATH_MAX", 4096) - 1
    if size <= most:
        return None
    return (f"a path of {size} bytes, more than the {most} its file system allows ([Errno {errno.ENAMETOOLONG}] "
            f"{os.strerror(errno.ENAMETOOLONG)})")


def _check_name_lengths(given: Path, what: str, *, folder: bool) -> None:
    """Refuse ``given`` for a name longer than its file system allows (:func:`name_too_long`). Raises ConfigError
    (:func:`check_writable`)."""
    told = name_too_long(given, folder=folder)
    if told is not None:
        raise ConfigError(f"{what} {given}: {told}; give a shorter path")


def _check_writable(given: Path, what: str, *, folder: bool) -> Path:
    """:func:`check_writable` after its name lengths: a lookup's OSError is raised as it is (the caller words it)."""
    for link in (given, *given.parents):  # resolve() follows a dangling link, so the probe passed and mkdir failed
        if link.is_symlink() and not link.exists():
            raise ConfigError(f"{what} {given}: {link} is a symbolic link to {os.readlink(link)}, which does not exist; "
                              "create its target or give another path")
    path = given.resolve()
    if path.exists():
        if folder and not path.is_dir():
            raise ConfigError(f"{what} {path} is a file, not a folder; give a folder (it is created if missing)")
        if not folder and path.is_dir():
            raise ConfigError(f"{what} {path} is a folder; give a file path")
        if not folder and not path.is_file():  # /dev/null: the atomic write's rename replaced the device (as root)
            raise ConfigError(f"{what} {given}: is {_file_kind(path)}, not a regular file; the output is written to a "
                              "temporary file and renamed over the path, which would replace it: give a file path")
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{what} {path} is not writable")
        where = path if path.is_dir() else path.parent
    else:
        where = path.parent
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir():
            raise ConfigError(f"{what} {path}: {where} is a file, so the path cannot be created")
    try:  # a real probe (os.access says yes to root, also on /proc); removed at once
        os.rmdir(tempfile.mkdtemp(prefix=".tokrag-probe-", dir=where))
    except OSError as exc:
        if where == path:
            raise ConfigError(f"{what} {path} is not writable ({exc.strerror})") from None
        raise ConfigError(f"{what} {path}: cannot create it ({where} is not writable: {exc.strerror})") from None
    return path


def _index_entry_known(name: str, is_file: bool, kind: str) -> bool:
    """Whether ``name`` is a file a tokrag index build of ``kind`` writes into its folder: BM25 (Lucene)
    ``segments_*``, ``_*`` segment files, ``write.lock``, :data:`LUCENE_CHECKSUMS` and the temporary file its
    :func:`atomic_write_json` leaves when killed before the rename (``.<LUCENE_CHECKSUMS>.<8 hex>.tmp``, written at a
    folder's first use); dense (Pyserini layout) ``index`` and ``docid``; both :data:`INDEX_META`. Folders are never
    index entries."""
    if not is_file:
        return False
    if name == INDEX_META:
        return True
    if kind == "bm25":
        return (name.startswith(("segments_", "_")) or name in ("segments.gen", "write.lock", LUCENE_CHECKSUMS)
                or re.fullmatch(re.escape(f".{LUCENE_CHECKSUMS}.") + r"[0-9a-f]{8}\.tmp", name) is not None)
    if kind == "dense":
        return name in ("index", "docid")
    raise ValueError(f"unknown index kind {kind!r}")


def check_index_folder(path: str | os.PathLike, *, user_given: bool = True, kind: str = "bm25") -> Path:
    """Resolve an index folder to build into, refusing any place where a build could destroy a user's files.

    A build replaces its folder, so a folder the user named (``user_given``) must be absent, empty, or an
    index tokrag built of ``kind`` (``"bm25"`` or ``"dense"``): it holds :data:`INDEX_META` and every entry
    is a file such a build writes (:func:`_index_entry_known`). Anything else is refused and left as it is,
    with or without ``force``. Cache folders (``user_given=False``) are tokrag's own and may be replaced.
    The parent folder is created.

    Raises:
        ConfigError: the path is a file, a non-empty folder that is not a tokrag index of ``kind`` (the
            unexpected entries are named), or its parent cannot be created or written (the path is named).
    """
    p = Path(path).expanduser().resolve()
    if p.exists() and not p.is_dir():
        raise ConfigError(f"index folder {p} is a file, not a folder; give a new or empty folder for the index")
    if user_given and p.is_dir():
        entries = sorted(p.iterdir(), key=lambda e: e.name)
        if entries and not (p / INDEX_META).is_file():
            raise ConfigError(
                f"index folder {p} is not empty and is not an index built by tokrag (no {INDEX_META}); nothing was "
                "changed: give a new or empty folder for the index"
            )
        unexpected = [e.name + ("/" if e.is_dir() else "") for e in entries
                      if not _index_entry_known(e.name, e.is_file() and not e.is_symlink(), kind)]
        if unexpected:
            shown = ", ".join(unexpected[:5]) + (f", ... ({len(unexpected)} in all)" if len(unexpected) > 5 else "")
            raise ConfigError(
                f"index folder {p} holds entries a tokrag {kind} index build does not write ({shown}); nothing was "
                "changed: move them away or give a new or empty folder for the index"
            )
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the index folder {p}: {exc.strerror or exc}; give a folder you can write to") from None
    check_writable(p.parent, f"cannot write the index folder {p}: its parent", folder=True)
    return p
