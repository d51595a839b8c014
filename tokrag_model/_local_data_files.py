"""lm-eval's tasks read a local data file by its content, not by its modification time.

A task of lm-eval's standard form ``dataset_path: json`` (or ``csv``, ``parquet``, ``text``, a local data set folder)
with ``dataset_kwargs: {data_files: ...}`` is loaded by lm-eval 0.4.13 with ``datasets.load_dataset``
(``lm_eval/api/task.py``, ``ConfigurableTask.download``). ``datasets`` (5.2) keeps the rows it built in its cache folder
under a config id hashed from the resolved data files and their *origin metadata*, which for a local file is its
modification time alone (``datasets.data_files._get_single_origin_metadata``: ETag for S3/GCS, repo revision for the
hub, ``mtime`` for a local file). A file edited with its mtime put back (``cp -p``, ``rsync -a``, tar, ``touch -r``, a
same-second edit on a coarse-clock file system) kept the same config id, so lm-eval read the *old* rows: a plain
``lm_eval --model tokrag`` run and a leaderboard cell re-run because its key holds the file's SHA-256
(:mod:`leaderboards.keys`) both scored stale questions, silently.

:func:`patch_task_download` (installed by the start-up hook, :mod:`tokrag_model._lmeval_hook`, right after
``lm_eval.api.task`` is imported) wraps ``ConfigurableTask.download``: while it runs, a local data file's origin
metadata is ``("sha256=<hex>",)``, the SHA-256 of its bytes (:class:`retrieval.io.HashMemo`: memoised by path, size,
mtime_ns, ctime_ns and inode and kept in ``$TOKRAG_CACHE_DIR``, so a large file is hashed once, not once per process),
so the rows ``datasets`` builds and reuses are those of the file's content: an edit builds them again whatever its
mtime, a ``touch`` alone reuses them. Remote and hub files, a file inside an archive (``zip://...::``), a task with its
own ``custom_dataset`` loader (every tokrag task: it reads its files itself) and any ``datasets`` call outside an
lm-eval task download keep ``datasets``' own identity. A file that cannot be read keeps it too (``datasets`` then
reports the file itself). The hashing is the one cost: one read of each local data file whose stamp the memo does not
hold (``datasets`` reads the whole file anyway when it builds the rows).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.Lock()
_ACTIVE: list[Any] = []
"""The hash memo (:class:`_LazyMemo`) of each ``ConfigurableTask.download`` running now (a stack; empty: ``datasets``'
own origin metadata). ``datasets`` resolves the files in worker threads, so this is read under :data:`_LOCK`, not from
a thread-local or context variable."""

CONTENT_KEY = "sha256="
"""The prefix of a local data file's origin metadata while an lm-eval task downloads (``("sha256=<hex>",)``)."""


def local_data_file(data_file: str) -> str | None:
    """The path of ``data_file`` (a data file as ``datasets`` resolved it: an absolute path, or a URL) when it is a
    plain local file, else None (a URL, a hub path, a file inside an archive ``zip://...::...``, a missing file)."""
    if "::" in data_file:
        return None
    path = data_file[len("file://"):] if data_file.startswith("file://") else data_file
    if "://" in path:
        return None
    return path if os.path.isfile(path) else None


def task_local_data(cfg: Any) -> str | None:
    """The first local file or folder that lm-eval's own loading of the task config ``cfg`` (a task YAML's keys,
    includes resolved) reads with ``datasets.load_dataset``: a local ``dataset_path``, ``dataset_kwargs``' ``data_dir``
    and ``data_files`` as :func:`leaderboards.keys.lm_eval_dataset_paths` resolves them (relative paths against the
    working directory, globs expanded; URLs, hub files and missing paths left out). None for a task with its own
    ``custom_dataset`` loader (it reads its files itself) or one that names no local data. Reads no file. Raises
    nothing."""
    if not isinstance(cfg, dict) or cfg.get("custom_dataset"):
        return None
    from leaderboards.keys import lm_eval_dataset_paths

    found = lm_eval_dataset_paths([(None, cfg)])
    return str(found[0]) if found else None


def content_origin(data_file: str) -> tuple[str] | None:
    """``("sha256=<hex>",)``, the origin metadata of a local data file while an lm-eval task downloads
    (:func:`content_keys`), else None (no download running, not a local file, or a file that cannot be read)."""
    with _LOCK:
        if not _ACTIVE:
            return None
        path = local_data_file(data_file)
        if path is None:
            return None
        from pathlib import Path

        try:
            return (CONTENT_KEY + _ACTIVE[-1].sha(Path(path)),)
        except OSError:  # datasets reports the file itself
            return None


@contextlib.contextmanager
def content_keys() -> Iterator[None]:
    """Within this block, ``datasets`` identifies a local data file by its SHA-256 (:func:`content_origin`); the
    hashes computed are saved to the hash memo at the end (a memo that cannot be written is left as it is). The memo
    file is read at the first local data file (:class:`_LazyMemo`): a download of hub or remote files reads none."""
    memo = _LazyMemo()
    with _LOCK:
        _ACTIVE.append(memo)
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE.remove(memo)
        try:
            memo.save()
        except Exception as exc:  # noqa: BLE001 - a memo that cannot be written must not fail the load
            logging.getLogger("tokrag_model").debug("file hash memo not saved: %s", exc)


_SHARED: list[Any] = []
"""The process's :class:`retrieval.io.HashMemo` (one, or none yet), read once and kept for every later download while
``$TOKRAG_CACHE_DIR`` names the same memo file: an entry is served only while its file's stamp is the one it was
hashed at, so an in-process copy is never stale, only missing another process's newer hashes (a re-hash). Used under
:data:`_LOCK`."""


def _process_memo() -> Any:
    """The process's hash memo for the current ``$TOKRAG_CACHE_DIR`` (:data:`_SHARED`; read from disk when that names
    another memo file), or :class:`_PlainHashes` where the cache folder cannot be named. Raises nothing."""
    from retrieval.io import HASH_MEMO_FILE, HashMemo
    from retrieval.paths import cache_dir

    try:
        path = cache_dir() / HASH_MEMO_FILE
        if _SHARED and _SHARED[0].path == path:
            return _SHARED[0]
        memo = HashMemo(path)
    except Exception as exc:  # noqa: BLE001 - a cache folder that cannot be named: hash without the memo file
        logging.getLogger("tokrag_model").debug("file hash memo unavailable (%s); hashing without it", exc)
        return _PlainHashes()
    _SHARED[:] = [memo]
    return memo


class _LazyMemo:
    """The hash memo of one download: the process's (:func:`_process_memo`), taken at the first :meth:`sha`. The memo
    file holds every file hash of the leaderboard keys (megabytes, ~0.1 s to read): before s59 r5 each download read
    it, also a task of lm-eval's own hub data sets (each of mmlu's 57) that hashes nothing, and each of a group's
    local json tasks (20 such tasks, warm: 0.1-0.2 s before dbbf3c0, ~1 s after). :meth:`sha` is called under
    :data:`_LOCK`."""

    def __init__(self) -> None:
        self.memo: Any = None

    def sha(self, p: Any) -> str:
        """Hex SHA-256 of the file ``p``. Raises OSError when it cannot be read."""
        if self.memo is None:
            self.memo = _process_memo()
        return self.memo.sha(p)

    def save(self) -> None:
        """Save the hashes computed (nothing when none). Raises OSError when the memo cannot be written."""
        if self.memo is not None:
            with _LOCK:  # the memo is shared: no hash added to it while it is merged into the file
                self.memo.save()


class _PlainHashes:
    """A memo-less stand-in for :class:`retrieval.io.HashMemo` (its ``sha`` and ``save``)."""

    @staticmethod
    def sha(p: Any) -> str:
        from retrieval.io import sha256_file

        return sha256_file(p)

    def save(self) -> None:
        return None


def patch_origin_metadata(module: Any) -> bool:
    """Make ``datasets.data_files`` (``module``) give :func:`content_origin` as a local data file's origin metadata
    while an lm-eval task downloads. Returns whether ``module`` has the function (datasets 5.2 does). Idempotent."""
    original = getattr(module, "_get_single_origin_metadata", None)
    if original is None:
        return False
    if getattr(original, "_tokrag", False):
        return True

    def _get_single_origin_metadata(data_file, *args, **kwargs):
        found = content_origin(data_file) if isinstance(data_file, str) else None
        return found if found is not None else original(data_file, *args, **kwargs)

    _get_single_origin_metadata._tokrag = True  # type: ignore[attr-defined]
    _get_single_origin_metadata.__wrapped__ = original  # type: ignore[attr-defined]
    _get_single_origin_metadata.__doc__ = original.__doc__
    module._get_single_origin_metadata = _get_single_origin_metadata
    return True


_MARKER = "_tokrag_local_data_files"  # on the wrapped ``ConfigurableTask.download``: :func:`patch_task_download` ran


def patch_task_download(module: Any) -> None:
    """Wrap ``ConfigurableTask.download`` of ``lm_eval.api.task`` (``module``) in :func:`content_keys` and patch
    ``datasets``' origin metadata (:func:`patch_origin_metadata`). Without that function (a ``datasets`` other than
    the one ``pyproject.toml`` pins) the rows are read as ``datasets`` keys them, and the first download of a task
    over local data files (:func:`task_local_data`) logs one WARNING on the ``tokrag_model`` logger saying so (before
    s59 r5 a DEBUG line at import: a silent return of the stale rows). Idempotent, and independent of the other wrap of
    ``download``, :func:`tasks.provenance._patch_task` (the results' ``tokrag_data``): each has its own marker, so
    either may come first (with one shared ``_tokrag`` marker, whichever came second was skipped: the results of
    every task lost ``tokrag_data``, or the rows were read by mtime)."""
    cls = getattr(module, "ConfigurableTask", None)
    if cls is None or getattr(cls.download, _MARKER, False):
        return
    import datasets.data_files

    original = cls.download
    patched = patch_origin_metadata(datasets.data_files)
    warned: list[str] = []

    def download(self, *args, **kwargs):
        config = getattr(self, "config", None)
        if callable(getattr(config, "custom_dataset", None)):  # the task reads its own files
            return original(self, *args, **kwargs)
        if patched:
            with content_keys():
                return original(self, *args, **kwargs)
        if not warned:
            found = task_local_data({"dataset_path": getattr(config, "dataset_path", None),
                                     "dataset_kwargs": getattr(config, "dataset_kwargs", None)})
            if found is not None:
                warned.append(found)
                logging.getLogger("tokrag_model").warning(
                    "task '%s' reads local data %s, but datasets %s has no data_files._get_single_origin_metadata, so "
                    "its cache knows a local data file by its modification time only: after an edit that keeps the "
                    "mtime (cp -p, rsync -a, tar) this run reads the old rows; install the datasets version "
                    "tokrag's pyproject.toml pins, or delete the task's folder under HF_DATASETS_CACHE after such an "
                    "edit", getattr(config, "task", "?"), found, getattr(datasets, "__version__", "?"))
        return original(self, *args, **kwargs)

    setattr(download, _MARKER, True)
    download.__wrapped__ = original  # type: ignore[attr-defined]
    download.__doc__ = original.__doc__
    cls.download = download
