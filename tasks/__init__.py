"""lm-eval tasks of tokrag: retrieval-augmented QA, noise-robustness variants, wiki_lm_bm25, analyze.

The YAML files under this folder are lm-eval task configs; their Python hooks live in
:mod:`tasks.utils`. lm-eval 0.4.13 has no plugin discovery for tasks, so callers pass this folder as an
include path: ``lm_eval --include_path $(python -c 'import tasks; print(tasks.TASK_DIR)') ...``, or
``TaskManager(include_path=tasks.include_path())``. ``tokrag eval`` and the package's start-up hook add
it for the user (see :func:`include_path`).

Data: every task reads its data set from a local folder laid out like the repository's
``../shared/data`` when one is named (task metadata ``data_dir`` via ``--metadata '{"data_dir": ...}'``,
or ``$TOKRAG_DATA_DIR``), otherwise from the hub id a user expects (``google-research-datasets/nq_open``,
``stanfordnlp/web_questions``). See ``tasks/README.md``.
"""

from __future__ import annotations

import logging
import os
import weakref
from pathlib import Path
from typing import Any

TASK_DIR: Path = Path(__file__).resolve().parent
"""Absolute path of the folder that holds the task YAMLs (an lm-eval ``--include_path``)."""


def include_path() -> str:
    """The folder to pass to lm-eval's ``--include_path`` / ``TaskManager(include_path=...)``."""
    return str(TASK_DIR)


def add_include_path(include: str | list[str] | None) -> list[str]:
    """Return ``include`` (None, a path or a list of paths) with this package's task folder added once, in
    front: lm-eval's ``TaskManager`` lets a later path's task override an earlier one of the same name, so a
    user's own ``--include_path`` copy of one of our tasks (an edited ``nq_oracle_bm25.yaml``) is the one run,
    with lm-eval's "overrides existing task" warning (appended last, ours silently won over the user's edit).

    For wrappers of lm-eval's CLI (``tokrag eval``): ``args.include_path = add_include_path(args.include_path)``
    before building the ``TaskManager``.
    """
    paths = [] if include is None else ([include] if isinstance(include, str) else list(include))
    if not any(Path(p).resolve() == TASK_DIR for p in paths):
        paths.insert(0, str(TASK_DIR))
    return paths


_MANAGER = "lm_eval.tasks.manager"
DISABLE_ENV = "TOKRAG_NO_TASK_PATH"


def _patch_manager(module) -> None:
    cls = getattr(module, "TaskManager", None)  # None: the module is still being executed (register_task_path)
    if cls is None or getattr(cls.__init__, "_tokrag_include", False):
        return
    original = cls.__init__

    def __init__(self, *args, **kwargs):
        if len(args) >= 2:  # (verbosity, include_path, ...) given positionally
            args = (args[0], add_include_path(args[1]), *args[2:])
        else:
            kwargs["include_path"] = add_include_path(kwargs.get("include_path"))
        original(self, *args, **kwargs)
        cls._tokrag_last = weakref.ref(self)

    __init__._tokrag_include = True  # type: ignore[attr-defined]
    __init__.__doc__ = original.__doc__
    cls.__init__ = __init__


def last_task_manager() -> Any:
    """The last lm-eval ``TaskManager`` built in this process (the one that resolved ``--tasks``), or None."""
    import sys

    module = sys.modules.get(_MANAGER)
    ref = getattr(getattr(module, "TaskManager", None), "_tokrag_last", None)
    return ref() if ref is not None else None


def indexed_task_names() -> list[str]:
    """Task, group and tag names of the last lm-eval ``TaskManager`` built in this process (empty if none
    was): what ``--tasks`` accepts, for did-you-mean messages without indexing every YAML again."""
    manager = last_task_manager()
    if manager is None:
        return []
    return sorted(set(manager.all_tasks))


class _NoCustomDatasetHint:
    """A logging filter that drops lm-eval's warning "<task>: Custom kwargs can be passed to `--metadata` ...
    For example --metadata='{"max_seq_lengths":[4096, 8192]}'", logged each time a task with a
    ``custom_dataset`` builds its data. Every tokrag task has one, so every run printed it, with RULER's keys
    (none of ours), right above our own one-line errors."""

    def filter(self, record) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


def quiet_lm_eval() -> None:
    """Install :class:`_NoCustomDatasetHint` on lm-eval's task logger (idempotent; imports nothing heavy)."""
    import logging

    logger = logging.getLogger("lm_eval.api.task")
    if not any(isinstance(f, _NoCustomDatasetHint) for f in logger.filters):
        logger.addFilter(_NoCustomDatasetHint())


def register_task_path() -> None:
    """Make every lm-eval ``TaskManager`` also index this folder, so ``lm_eval --tasks nq_open_bm25`` works
    without ``--include_path``.

    lm-eval 0.4.13 has no plugin discovery for tasks: this wraps ``TaskManager.__init__`` to pass
    ``include_path=add_include_path(include_path)`` (our folder added once). If lm-eval's task manager is
    not imported yet, the patch is applied right after it is (``tokrag_model._lmeval_hook.after_import``); called while
    that module is still being executed (it imports lm-eval's registry half-way), it does nothing, and the start-up
    hook calls it again once the module is done (``_lmeval_hook._after_task_manager``). Idempotent, never
    raises, imports nothing heavy; set ``TOKRAG_NO_TASK_PATH=1`` to turn it off. Called by the
    package's lm-eval start-up hook (``tokrag_model``'s ``.pth``).
    """
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return
    try:
        quiet_lm_eval()
        from tokrag_model._lmeval_hook import after_import

        after_import(_MANAGER, _patch_manager)
    except Exception:
        pass


def register_provenance() -> None:
    """Make lm-eval record where a tokrag task's data came from (files with absolute paths and SHA-256, corpus and
    run fingerprints, tokrag's version and commit) in the results JSON's ``configs.<task>.metadata.tokrag_data``
    (:mod:`tasks.provenance`). Independent of :data:`DISABLE_ENV`; idempotent, imports nothing heavy, never raises (an
    error is logged at DEBUG with its traceback and the results then lack ``tokrag_data``).
    Called by the package's lm-eval start-up hook (``tokrag_model.register_tasks``)."""
    try:
        from .provenance import register

        register()
    except Exception as exc:  # provenance is a record, never a reason for lm-eval not to start
        logging.getLogger(__name__).debug("tasks.register_provenance: results will not record tokrag_data: %r", exc,
                                          exc_info=True)


__all__ = ["TASK_DIR", "include_path", "add_include_path", "register_task_path", "register_provenance",
           "indexed_task_names", "quiet_lm_eval"]
