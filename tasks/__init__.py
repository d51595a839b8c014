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

from pathlib import Path

TASK_DIR: Path = Path(__file__).resolve().parent
"""Absolute path of the folder that holds the task YAMLs (an lm-eval ``--include_path``)."""


def include_path() -> str:
    """The folder to pass to lm-eval's ``--include_path`` / ``TaskManager(include_path=...)``."""
    return str(TASK_DIR)


def add_include_path(include: str | list[str] | None) -> list[str]:
    """Return ``include`` (None, a path or a list of paths) with this package's task folder added once.

    For wrappers of lm-eval's CLI (``tokrag eval``): ``args.include_path = add_include_path(args.include_path)``
    before building the ``TaskManager``.
    """
    paths = [] if include is None else ([include] if isinstance(include, str) else list(include))
    if not any(Path(p).resolve() == TASK_DIR for p in paths):
        paths.append(str(TASK_DIR))
    return paths


__all__ = ["TASK_DIR", "include_path", "add_include_path"]
