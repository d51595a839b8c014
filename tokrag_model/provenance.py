"""Which tokrag produced a result: its installed version and the git commit of its source tree.

Recorded by the models in the results JSON's ``config.tokrag_versions`` (``tokrag``, ``tokrag_commit``) and by the
tasks in ``configs.<task>.metadata.tokrag_data.tokrag`` (:mod:`tasks.provenance`), so a plain ``lm_eval`` run
says which code produced it, as a leaderboard's ``provenance.json`` does. lm-eval's own top-level ``git_hash`` is
the commit of the *working directory*, which is usually not tokrag's. Cheap to import (no torch, no lm-eval).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SOURCE_ROOT: Path = Path(__file__).resolve().parents[1]
"""The folder that holds the ``tokrag_model``, ``tasks`` and ``leaderboards`` packages (a checkout's root)."""


def tokrag_version() -> str | None:
    """The installed distribution's version (``importlib.metadata``), or None when tokrag is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tokrag")
    except PackageNotFoundError:
        return None


def git_commit(repo: Path | None = None) -> str:
    """``git rev-parse HEAD`` of the repository ``repo`` (default :data:`SOURCE_ROOT`), with ``+dirty`` when tracked
    files differ, or ``unknown`` (no git, not a checkout, git timed out after 10 s).

    ``$TOKRAG_GIT_COMMIT`` overrides it (for CI systems that check out without ``.git``, and for tests that compare
    provenance across runs while the repository moves). What a leaderboard cell's ``provenance.json`` records
    (re-exported as ``leaderboards.runner.git_commit``)."""
    if os.environ.get("TOKRAG_GIT_COMMIT"):
        return os.environ["TOKRAG_GIT_COMMIT"]
    repo = repo or SOURCE_ROOT
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def tokrag_commit() -> str | None:
    """The git commit of the tokrag source tree (``<40 hex>``, ``+dirty`` when tracked files differ), or None
    when the tree is not a git checkout (an installed wheel) or git cannot tell.

    :func:`git_commit` of :data:`SOURCE_ROOT`, the string a leaderboard's ``provenance.json`` records;
    ``$TOKRAG_GIT_COMMIT`` overrides it as there. Only a tree with its own ``.git`` is asked: a wheel installed in a
    virtual environment that lives inside some other checkout is not given that checkout's commit.
    """
    if not os.environ.get("TOKRAG_GIT_COMMIT") and not (SOURCE_ROOT / ".git").exists():
        return None
    commit = git_commit(SOURCE_ROOT)
    return None if commit in ("", "unknown") else commit


def tokrag_source() -> dict[str, str | None]:
    """``{"version": tokrag_version(), "commit": tokrag_commit()}``."""
    return {"version": tokrag_version(), "commit": tokrag_commit()}
