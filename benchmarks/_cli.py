"""Shared by the benchmark scripts: one-line errors for bad options (``<script>: error: <message>``, exit 2).

A script raises :class:`retrieval.errors.ConfigError` (or any :class:`~retrieval.errors.TokragError`) for a bad
option before any expensive work (model load, sweeps); :func:`run` prints it as one line on stderr, as the
project's CLIs do (``tokrag_model/cli.py``), instead of a stack trace. ``TOKRAG_TRACEBACK=1`` keeps the trace.
Not a benchmark itself: ``python benchmarks/<script>.py`` imports it as ``benchmarks._cli`` (the repository
root is on ``sys.path``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run(main: Callable[[], int | None]) -> int:
    """``main()``'s exit status; a tokrag error becomes ``<script>: error: <message>`` on stderr and exit 2."""
    from retrieval.errors import TokragError

    try:
        return int(main() or 0)
    except TokragError as exc:
        if os.environ.get("TOKRAG_TRACEBACK", "") not in ("", "0"):
            raise
        from tokrag_model._lmeval_hook import _program  # the one naming of the command for error lines

        print(f"{_program()}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def at_least(option: str, value: int | None, low: int, why: str = "") -> None:
    """Refuse an integer option below ``low`` (None: not given, accepted)."""
    from retrieval.errors import ConfigError

    if value is not None and value < low:
        raise ConfigError(f"{option} {value}: expected an integer >= {low}{'; ' + why if why else ''}")


def existing_file(option: str, path: str, hint: str = "") -> None:
    """Refuse a path that is not an existing file (``hint``: where such files are, for the message)."""
    from retrieval.errors import ConfigError

    if not os.path.isfile(path):
        what = "is a folder" if os.path.isdir(path) else "does not exist"
        raise ConfigError(f"{option} {path}: {what}; give an existing file{' (' + hint + ')' if hint else ''}")


def existing_dir(option: str, path: str) -> None:
    """Refuse a path that is not an existing folder."""
    from retrieval.errors import ConfigError

    if not os.path.isdir(path):
        what = "is a file" if os.path.exists(path) else "does not exist"
        raise ConfigError(f"{option} {path}: {what}; give an existing folder")


def writable_dir(option: str, path: str) -> None:
    """Refuse a folder that cannot be created or written (a file in the way, a read-only parent), creating nothing
    (:func:`retrieval.io.check_writable`)."""
    from retrieval.io import check_writable

    check_writable(path, option, folder=True)
