"""Disk cache of lm-eval's index of its own task folder (``lm_eval/tasks``, ~14,700 YAML files).

lm-eval 0.4.13's ``TaskManager()`` builds its index (``TaskIndex.build(paths)``) by loading every ``**/*.yaml`` under
its own task folder and then under each ``include_path`` folder, in every process: about 7 s CPU on an idle 2-core
machine, most of a short ``lm_eval --model tokrag ...`` or ``tokrag eval`` run. :func:`patch_task_index` (installed by
the start-up hook, :mod:`tokrag_model._lmeval_hook`, right after ``lm_eval.tasks._index`` is imported) keeps the index
of that one folder, lm-eval's defaults, in ``$TOKRAG_CACHE_DIR/lmeval-task-index/`` (default
``~/.cache/tokrag``) and reads it back in later processes; every other folder (``include_path``: ours, a user's) is
indexed by lm-eval as before, never cached, and a later folder's task still overrides an earlier one's with lm-eval's
warning, folder by folder in the order given.

The cache is used only while its key matches: lm-eval's version, Python's and PyYAML's (with or without libyaml), the
folder as given and as resolved, and :func:`tasks.task_index.folder_stamp` of the folder (relative path, size, mtime_ns,
ctime_ns and inode of every file under it, ``__pycache__`` left out): a YAML or ``.py`` file added, removed or written
there builds the index again. A YAML under the folder that includes a file outside it (lm-eval's own never do) makes
that file part of the key too (its stamp, or its absence). The log lines lm-eval's build wrote for the folder
(``Skip ...`` at DEBUG) are written again, with their level, source line and text, when the cache is read.

Format: JSON, no pickle: an entry of lm-eval's index (``lm_eval.tasks._index.Entry``) holds its name, kind, YAML path,
tags and the YAML's parsed config, loaded with ``resolve_func=False``, so a ``!function`` line is a path string and a
config holds only dicts with string keys, lists, strings, numbers, booleans and None. Before writing, each config is
checked to hold only those types (a ``bool`` is not taken for an ``int``); an index with anything else (a future
lm-eval's dates, sets, tuples) is not cached. A cache that is missing, truncated, corrupt, of another key or unreadable,
or a cache folder that cannot be written, falls back to lm-eval's own build (a DEBUG line on the ``tokrag_model``
logger), never an error. ``TOKRAG_NO_TASK_INDEX_CACHE=1`` turns the cache off (lm-eval's build, unchanged).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Callable

DISABLE_ENV = "TOKRAG_NO_TASK_INDEX_CACHE"
CACHE_SUBDIR = "lmeval-task-index"
FORMAT = 1
MAX_BYTES = 1 << 28
"""The largest cache file read or written (256 MiB; lm-eval 0.4.13's index is 17.5 MB): a bigger one is left to
lm-eval's build, as a file that is not a regular one is (a named pipe, on whose open a read waits for a writer forever;
a link to ``/dev/zero``, whose read never ends)."""
_INDEX_LOGGER = "lm_eval.tasks._index"
_log = logging.getLogger("tokrag_model")


def disabled() -> bool:
    """Whether :data:`DISABLE_ENV` turns the cache off (set to anything but empty or ``0``)."""
    return os.environ.get(DISABLE_ENV, "") not in ("", "0")


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of JSON's own types only, each of exactly that type (dicts with str keys)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            if any(type(k) is not str for k in v):
                return False
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        elif t not in (str, int, float, bool, type(None)):
            return False
    return True


def _key(root: Path) -> tuple[str, Any] | None:
    """The cache key of folder ``root`` (hex SHA-256) and its stamp; None when ``root`` is no folder."""
    from tasks.task_index import folder_stamp

    stamp = folder_stamp(root)
    if stamp is None:
        return None
    import lm_eval
    import yaml

    meta = [FORMAT, getattr(lm_eval, "__version__", None), sys.version, yaml.__version__,
            bool(getattr(yaml, "__with_libyaml__", False)), str(root), os.path.realpath(root), stamp]
    return hashlib.sha256(json.dumps(meta).encode("utf-8")).hexdigest(), stamp


def _outside_stamps(paths: list[str]) -> list:
    """``[path, [size, mtime_ns, ctime_ns, inode] or None]`` of files outside the folder that its YAMLs include."""
    from retrieval.io import file_stamp

    out = []
    for p in paths:
        try:
            out.append([p, file_stamp(p)])
        except OSError:
            out.append([p, None])
    return out


def _read(path: Path) -> Any:
    """The JSON in the cache file ``path``, read only when it is a regular file of at most :data:`MAX_BYTES` (links
    followed: :func:`retrieval.io.read_regular_file`, which a named pipe or a link to a device there does not block);
    raises OSError otherwise (FileNotFoundError when there is none), ValueError when it is no JSON."""
    from retrieval.io import read_regular_file

    try:
        data = read_regular_file(path, MAX_BYTES)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        raise OSError(exc.strerror) from None  # its reason alone: the debug line names the path already
    return json.loads(data.decode("utf-8"))


def cache_file(root: Path, cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache file of folder ``root``: ``<cache dir>/lmeval-task-index/<16 hex of the folder as given>.json``
    (one file per folder, replaced when its key changes). Raises OSError when the cache folder cannot be made."""
    from retrieval.paths import cache_dir as tokrag_cache_dir

    name = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]
    return tokrag_cache_dir(cache_dir) / CACHE_SUBDIR / f"{name}.json"


class _Record(logging.Filter):
    """Collects every record of lm-eval's index logger while it is opened to all levels, and passes on only those the
    logger would have passed (``level``), so the build prints what it prints without us."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level, self.records = level, []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append([record.levelno, record.pathname, record.lineno, record.funcName, record.getMessage()])
        return record.levelno >= self.level


def _recorded_build(root: Path, build: Callable) -> tuple[dict, list, list[str]]:
    """``build([root])`` with its log records (:class:`_Record`) and the files outside ``root`` its YAMLs included
    (each ``load_yaml`` call seen, lm-eval's own module globals wrapped for the build's duration)."""
    from lm_eval.tasks import _index, _yaml_loader

    logger = logging.getLogger(_INDEX_LOGGER)
    record, old_level = _Record(logger.getEffectiveLevel()), logger.level
    seen: list = []
    patched = []
    for mod in (_yaml_loader, _index):
        original = getattr(mod, "load_yaml", None)
        if original is None:
            continue

        def wrapped(path, *args, _original=original, **kwargs):
            seen.append(path)
            return _original(path, *args, **kwargs)

        patched.append((mod, original))
        mod.load_yaml = wrapped
    logger.addFilter(record)
    logger.setLevel(1)
    try:
        index = build([root])
    finally:
        logger.setLevel(old_level)
        logger.removeFilter(record)
        for mod, original in patched:
            mod.load_yaml = original
    tops = {str(root), os.path.realpath(root)}
    outside = set()
    for p in seen:
        p = os.path.abspath(os.path.expanduser(str(p)))
        if not any(os.path.commonpath([p, t]) == t for t in tops if os.path.isabs(t)):
            outside.add(os.path.realpath(p))
    return index, record.records, sorted(outside)


def _encode(index: dict) -> list | None:
    """The entries of ``index`` as JSON values, in order; None when a config holds a type JSON cannot give back."""
    rows = []
    for key, e in index.items():
        if type(key) is not str or type(e.name) is not str or not _plain(e.cfg) or not all(type(t) is str for t in e.tags):
            return None
        if e.yaml_path is not None and not isinstance(e.yaml_path, Path):
            return None
        rows.append([key, e.name, e.kind.name, None if e.yaml_path is None else str(e.yaml_path), e.cfg, sorted(e.tags)])
    return rows


def _decode(rows: list) -> dict:
    """:func:`_encode`'s rows as lm-eval's ``{name: Entry}``, in order."""
    from lm_eval.tasks._index import Entry, Kind

    return {key: Entry(name=name, kind=Kind[kind], yaml_path=None if path is None else Path(path), cfg=cfg,
                       tags=set(tags))
            for key, name, kind, path, cfg, tags in rows}


def _replay(records: list) -> None:
    """Write again the log lines lm-eval's build of the folder wrote (:class:`_Record`), each where the logger's level
    lets it through."""
    logger = logging.getLogger(_INDEX_LOGGER)
    for level, pathname, lineno, func, message in records:
        if logger.isEnabledFor(level):
            logger.handle(logger.makeRecord(logger.name, level, pathname, lineno, message, (), None, func))


STALE_SECONDS = 3600
"""A temporary file of the cache (``.<cache file name>.<8 hex>.tmp``: :func:`retrieval.io.atomic_write_bytes`) not
written to for this long is what a process killed while it wrote the cache left (``kill -9``: 17.5 MB that nothing
else removed); the next write of the cache folder removes it. A live write takes seconds."""
_TMP_NAME = re.compile(r"\.[0-9a-f]{16}\.json\.[0-9a-f]{8}\.tmp")


def remove_stale_tmp(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the temporary files of the cache in ``folder`` (only the names the cache's atomic write gives them,
    :data:`_TMP_NAME`) that are regular files not modified for :data:`STALE_SECONDS` (``now``: the time to compare
    with, ``time.time()`` by default). Never raises. -> the files removed."""
    import time

    now = time.time() if now is None else now
    removed = []
    try:
        names = [n for n in os.listdir(folder) if _TMP_NAME.fullmatch(n)]
    except OSError:
        return removed
    for name in names:
        p = Path(folder) / name
        try:
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > STALE_SECONDS:
                os.unlink(p)
                removed.append(p)
        except OSError:
            continue
    return removed


def _can_write(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (or in the nearest folder above it that exists, where the missing
    ones would be made), told by ``access(2)`` with the effective ids, without building or writing anything: False on
    a read-only file system, a folder without write permission, a file in the way."""
    p = folder
    while not os.path.lexists(p):
        if p.parent == p:
            return False
        p = p.parent
    if not os.path.isdir(p):
        return False
    effective = os.access in os.supports_effective_ids
    return os.access(p, os.W_OK | os.X_OK, effective_ids=effective)


def cached_folder_index(root: Path, build: Callable, cache_dir: str | os.PathLike | None = None) -> dict:
    """lm-eval's index of the one folder ``root`` (``build([root])``: ``TaskIndex.build``), read from its cache file
    (:func:`cache_file`) when the key matches, else built and written there atomically (the temporary files killed
    writes left removed first: :func:`remove_stale_tmp`). Any fault of the cache (a
    missing, corrupt or other-key file, a type JSON cannot hold) leaves ``build([root])``'s result, with a DEBUG
    line; never raises for the cache. A cache folder that cannot be made or written (:func:`_can_write`) with no
    cache of this key to read gives ``build([root])`` at once, unrecorded: the recording, encoding and failed write of
    an index that could not be kept cost more than lm-eval's build alone (14.6 s against about 10 s CPU)."""
    try:
        path = cache_file(root, cache_dir)
        if not os.path.lexists(path) and not _can_write(path.parent):  # nothing to read, nothing to write
            _log.debug("lm-eval task index cache not used for %s: %s cannot be written", root, path.parent)
            keyed = path = None
        else:
            keyed = _key(root)
    except Exception as exc:  # noqa: BLE001 - no cache: lm-eval's build
        _log.debug("lm-eval task index cache not used for %s: %s", root, exc)
        keyed = path = None
    if keyed is not None and path is not None:
        try:
            data = _read(path)
            if (data.get("key") == keyed[0] and data.get("outside") == _outside_stamps([p for p, _ in data["outside"]])):
                index = _decode(data["entries"])
                _replay(data["log"])
                return index
            _log.debug("lm-eval task index cache %s is of another key: building the index again", path)
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001 - a truncated or corrupt file, another format: lm-eval's build
            _log.debug("lm-eval task index cache %s not read (%s): building the index again", path, exc)
    if keyed is None or path is None:
        return build([root])
    if not _can_write(path.parent):  # a read-only cache of another key: it cannot be replaced
        _log.debug("lm-eval task index cache %s cannot be written: lm-eval's build", path)
        return build([root])
    index, records, outside = _recorded_build(root, build)
    try:
        rows = _encode(index)
        if rows is None:
            _log.debug("lm-eval task index of %s not cached: a config holds a value JSON cannot give back", root)
            return index
        if _key(root) != keyed:  # a file changed while it was indexed: the index may be of neither listing
            return index
        from retrieval.io import atomic_write_bytes

        data = json.dumps({"key": keyed[0], "outside": _outside_stamps(outside), "log": records, "entries": rows},
                          ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if len(data) > MAX_BYTES:  # it would not be read back
            _log.debug("lm-eval task index of %s not cached: %d bytes, more than %d", root, len(data), MAX_BYTES)
            return index
        remove_stale_tmp(path.parent)
        atomic_write_bytes(path, data)
    except Exception as exc:  # noqa: BLE001 - a read-only cache folder, a full disk: the index is still right
        _log.debug("lm-eval task index cache %s not written: %s", path, exc)
    return index


def _merge_warning_site(build: Callable) -> tuple[str, int, str] | None:
    """Where lm-eval's ``build`` writes its warning that a later folder's task overrides an earlier one's: (its file,
    the line of the ``log.warning(`` call, the function's name), so that the same warning written by the merge below
    reads as lm-eval's own (``[tasks._index:70]`` in lm-eval's log format); None when not found."""
    import inspect

    try:
        lines, start = inspect.getsourcelines(build)
        at = next(i for i, line in enumerate(lines) if "overrides existing task from" in line)
        call = next(i for i in range(at, -1, -1) if ".warning(" in lines[i])
        return inspect.getsourcefile(build) or "", start + call, build.__name__
    except Exception:  # noqa: BLE001 - no source (a zipped or compiled lm-eval): this file's line
        return None


def patch_task_index(module) -> None:
    """Make ``module.TaskIndex.build`` (``lm_eval.tasks._index``) read lm-eval's own task folder (that of ``module``)
    from :func:`cached_folder_index`. The folders are indexed one by one in the order given, each as lm-eval indexes
    it, and merged as lm-eval merges them: a later folder's entry replaces an earlier one's, with lm-eval's warning.
    ``resolve_includes=False``, :data:`DISABLE_ENV`, or no default folder among the paths: lm-eval's build of all the
    paths, unchanged. Idempotent."""
    cls = getattr(module, "TaskIndex", None)
    if cls is None or getattr(cls.build, "_tokrag", False):
        return
    original = cls.build
    default = Path(module.__file__).parent
    logger = logging.getLogger(_INDEX_LOGGER)
    site: list = []

    def warn_override(name: str, new, old) -> None:
        """lm-eval's override warning, with its file, line and function (:func:`_merge_warning_site`)."""
        message = "Task '%s' from %s overrides existing task from %s"
        if not site:
            site.append(_merge_warning_site(original))
        if site[0] is None:
            logger.warning(message, name, new, old)
        elif logger.isEnabledFor(logging.WARNING):
            logger.handle(logger.makeRecord(logger.name, logging.WARNING, site[0][0], site[0][1], message,
                                            (name, new, old), None, site[0][2]))

    def build(paths, *, resolve_includes=True):
        paths = list(paths)
        if not resolve_includes or disabled() or not any(isinstance(p, Path) and p == default for p in paths):
            return original(paths, resolve_includes=resolve_includes)
        index: dict = {}
        for root in paths:
            if isinstance(root, Path) and root == default:
                part = cached_folder_index(root, original)
            else:
                part = original([root])
            for name, entry in part.items():
                if name in index:  # lm-eval's merge of a later folder (lm_eval/tasks/_index.py, TaskIndex.build)
                    warn_override(name, entry.yaml_path, index[name].yaml_path)
                index[name] = entry
        return index

    build._tokrag = True  # type: ignore[attr-defined]
    build.__doc__, build.__wrapped__ = original.__doc__, original  # type: ignore[attr-defined]
    cls.build = staticmethod(build)
