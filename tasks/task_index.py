"""Which YAML lm-eval runs for a task name, from lm-eval 0.4.13's own index code (``lm_eval.tasks._index``).

lm-eval's ``TaskManager`` builds its index with ``TaskIndex.build(paths)``: for each include folder, every
``**/*.yaml`` in sorted path order (``__pycache__`` and ``.ipynb_checkpoints`` left out) is loaded with includes
followed and ``!function`` lines not imported; a file that fails to load (an ``include:`` of a missing file, invalid
YAML) or has no ``task``/``group``/``class`` is skipped without a word, the first task or group of a name in a folder
wins, and a later folder's entry overrides an earlier folder's. Building a whole ``TaskManager`` also indexes
lm-eval's own task tree (~13 s), so this module runs the same per-file steps (``TaskIndex._iter_yaml_files``,
``load_yaml``, ``TaskIndex.process_cfg``) over the given folders only (our ``tasks/`` folder: ~20 ms). Used by
:func:`leaderboards.keys.find_task_yaml` (the YAML a run key fingerprints) and :mod:`tasks.precheck` (the YAML
whose files are checked before the model loads), so both name the YAML that lm-eval runs. A folder is indexed once
per process while its files stay as they are (:func:`index_folder`: a spec's key computation asks for each of its
tasks, ``--estimate`` for each cell).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Iterable

__all__ = ["folder_stamp", "index_folder", "task_yaml"]


class _Quiet(logging.Filter):
    """Drops lm-eval's index messages ("Duplicate task name ...") while we index again what lm-eval indexes itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


_MEMO: dict[tuple[str, str], tuple[Any, tuple[dict[str, Any], list[Path]]]] = {}  # folder -> (its stamp, its index); one per folder


def folder_stamp(root: Any) -> tuple | None:
    """What tells whether the index of folder ``root`` may have changed: the relative path and
    :func:`retrieval.io.file_stamp` (size, mtime_ns, ctime_ns, inode) of every file under it (YAMLs and the
    extensionless files they include, such as ``_qa_template``), in sorted order, ``__pycache__`` and
    ``.ipynb_checkpoints`` left out; None when ``root`` is no folder. Stats only, nothing is read (~1 ms for
    ``tasks/``). Files that vanish while it walks are left out. Raises nothing."""
    top = Path(str(root))
    if not top.is_dir():
        return None
    from lm_eval.tasks._index import _IGNORE_DIRS  # the folders lm-eval's index skips

    from retrieval.io import file_stamp

    out = []
    for folder, dirs, files in os.walk(top, followlinks=True):  # lm-eval's glob follows folder links too
        dirs[:] = sorted(d for d in dirs if d not in _IGNORE_DIRS)
        for name in files:
            path = os.path.join(folder, name)
            try:
                out.append((os.path.relpath(path, top), *file_stamp(path)))
            except OSError:  # a dangling link, or removed meanwhile: lm-eval cannot load it either
                out.append((os.path.relpath(path, top), "unreadable"))
    return tuple(sorted(out, key=lambda x: x[0]))


def index_folder(root: Any) -> tuple[dict[str, Any], list[Path]]:
    """lm-eval's index of one include folder ``root``, built as ``TaskIndex.build`` builds one path's entries.

    Memoised per process by the folder as given, its absolute path and :func:`folder_stamp`: a folder is indexed again only
    when a file under it was added, removed or written. (A YAML's ``include:`` of a file *outside* the folder that
    appears or changes later in the same process is not seen: lm-eval, which indexes once per ``TaskManager``,
    does not see it either.) The returned dict and list are fresh copies, so callers may change them.

    Args:
        root: a folder (str or Path); one that does not exist gives an empty index.

    Returns:
        ``({name: lm_eval.tasks._index.Entry}, [skipped YAML paths])``: the entries in lm-eval's order (tasks,
        Python tasks, groups and tags; the first of a name in the folder wins), and the ``*.yaml`` files whose
        ``load_yaml`` raised (a missing include, a YAML error), in path order. Files that load but are no task or
        group config are in neither.

    Raises:
        nothing for bad files (lm-eval skips them); ImportError when lm-eval's index module is missing.
    """
    # by the folder as given and where it resolves: the entries hold its paths as given (relative stays relative),
    # so "tasks" and "/repo/tasks" are two entries (one key for both returned whichever form came first)
    key, stamp = (str(root), os.path.abspath(str(root))), folder_stamp(root)
    hit = _MEMO.get(key)
    if hit is None or hit[0] != stamp:
        hit = _MEMO[key] = (stamp, _build_index(root))
    index, skipped = hit[1]
    return dict(index), list(skipped)


def _build_index(root: Any) -> tuple[dict[str, Any], list[Path]]:
    """:func:`index_folder` without the memo."""
    from lm_eval.tasks._index import TaskIndex
    from lm_eval.tasks._yaml_loader import load_yaml

    index: dict[str, Any] = {}
    skipped: list[Path] = []
    logger, quiet = logging.getLogger("lm_eval.tasks._index"), _Quiet()
    logger.addFilter(quiet)
    try:
        for path in TaskIndex._iter_yaml_files(Path(str(root))):
            try:
                cfg = load_yaml(path, resolve_func=False, recursive=True)
            except Exception:  # noqa: BLE001 - lm-eval's index skips the file (log.debug only)
                skipped.append(path)
                continue
            try:
                TaskIndex.process_cfg(cfg, path, index)
            except Exception:  # noqa: BLE001 - no task/group shape: skipped by lm-eval too
                continue
    finally:
        logger.removeFilter(quiet)
    return index, skipped


def task_yaml(task: str, folders: Iterable[Any]) -> Path | None:
    """The YAML file lm-eval's index gives task ``task`` over include ``folders`` (in the order lm-eval gets them):
    the last folder whose index (:func:`index_folder`) has the name wins; None when none has it, or when that entry
    is a group or tag (lm-eval then runs no task YAML of that name).

    Args:
        task: a task name (``nq_oracle_bm25``).
        folders: include folders (str or Path), earlier ones overridden by later ones.
    """
    for folder in reversed(list(folders)):
        entry = index_folder(folder)[0].get(task)
        if entry is not None:
            return entry.yaml_path if entry.kind.name in ("TASK", "PY_TASK") else None
    return None
