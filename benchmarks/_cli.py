"""Shared by the benchmark scripts: one-line errors for bad options (``<script>: error: <message>``, exit 2), and
the ``provenance`` object every script adds to its last JSON line (:func:`provenance`, with the :func:`checkout` it
took as it started).

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
from typing import Any


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


def checkout(now: bool = False) -> dict[str, str | None]:
    """The tokrag checkout: ``{"tokrag_commit": ..., "tokrag_changes": ...}``
    (:func:`tokrag_model.provenance.tokrag_commit` and :func:`~tokrag_model.provenance.tokrag_changes`; None outside a
    git checkout): the tree this process imported (read from git once per process, at its first reading), or with
    ``now`` the tree on disk now (:func:`tokrag_model.provenance.tokrag_tree`). A script takes it as it starts,
    before any expensive work, and gives it to :func:`provenance` as ``started``: the code that computed its figures
    was read then, not when its last line is printed (a checkout edited or committed during an hour-long run); the
    end's reading is ``now``. Costs a few ``git`` calls (well under a second). Raises nothing."""
    from tokrag_model.provenance import tokrag_tree

    return tokrag_tree(now)


def provenance(device: str | None = None, fingerprints: dict[str, Any] | None = None,
               started: dict[str, str | None] | None = None) -> dict[str, Any]:
    """What produced a benchmark's figures, for its last JSON line's ``provenance`` object (every script in
    ``benchmarks/`` adds it; its other keys are unchanged). The checkout is the one of ``started`` (:func:`checkout`,
    taken as the script started; read now when not given); the rest is read when called (the scripts call it as they
    print the line), from what the process already holds: nothing is loaded for it (no model, no corpus; torch is not
    imported when the benchmark did not import it). Costs well under a second (a few ``git`` calls and package
    metadata).

    Keys:

    * ``tokrag_commit``: the tokrag checkout's commit, ``+dirty`` when tracked files differ, None outside a git
      checkout (:func:`tokrag_model.provenance.tokrag_commit`, what results JSON and a leaderboard cell's
      ``provenance.json`` record; ``$TOKRAG_GIT_COMMIT`` overrides it); ``tokrag_changes``: the fingerprint of a
      modified checkout's changes, None for a clean one (:func:`tokrag_model.provenance.tokrag_changes`). Both as
      the script started (``started``).
    * ``tokrag_commit_at_end`` / ``tokrag_changes_at_end``: only when the checkout is no longer the one of
      ``started`` (a commit, checkout or edit during the run): the two now, and one warning line on stderr
      (``<script>: warning: ...``): the figures may come from code of either (modules imported late).
    * ``versions``: ``{package: version}`` of the libraries that can move a number, as a leaderboard cell's
      ``provenance.json`` (:func:`leaderboards.runner.library_versions`: python, tokrag, lm_eval and the run key's
      libraries that are installed) and the leaderboard run keys (:func:`leaderboards.keys.library_versions`: torch,
      transformers, tokenizers, pyserini, the Anserini jar, the FAISS distribution, jinja2, numpy, scipy,
      scikit-learn, rouge-score, rouge, datasets) record them; a library of the run key that is not installed is None
      (the Anserini jar when absent); tokrag and lm_eval, which the run key's list does not name, are left out then.
    * ``machine``: :func:`tokrag_model.provenance.compute_environment` of ``device`` (torch's intra-/inter-op threads
      now, ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` as given, ``arch``, ``cpu_capability``, ``cpu_model``,
      ``cuda_device``), plus ``cpu_count`` (``os.cpu_count()``) and ``cpus_usable`` (the CPUs this process may run
      on, ``os.sched_getaffinity``; ``cpu_count`` where the system cannot tell). When torch was never imported in
      this process (the figures come from child processes, or from no model), the torch fields
      (``torch_num_threads``, ``torch_num_interop_threads``, ``cpu_capability``, ``cuda_device``) are None: importing
      torch only to ask them would take seconds.
    * ``device``: the torch device the process computed its figures on (``cpu``, ``cuda:0``, ...), None when it ran
      no model itself (a leaderboard's cells record their own in ``provenance.json``).
    * ``fingerprints``: ``{name: fingerprint}`` of what the benchmark loaded (model weights and files, corpus,
      retrieval runs, leaderboard cell keys): only what it already had; ``{}`` when none is given.

    Raises nothing of its own (each part answers None where it cannot tell)."""
    import platform

    from leaderboards.keys import library_versions as key_versions
    from leaderboards.runner import library_versions
    from tokrag_model.provenance import THREAD_ENV_VARS, compute_environment, cpu_model_name

    if "torch" in sys.modules:
        machine = compute_environment(device)
    else:
        machine = {"torch_num_threads": None, "torch_num_interop_threads": None,
                   "env": {name: os.environ.get(name) for name in THREAD_ENV_VARS}, "arch": platform.machine(),
                   "cpu_capability": None, "cpu_model": cpu_model_name(), "cuda_device": None}
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        usable = os.cpu_count()
    source = dict(checkout() if started is None else started)
    now = checkout(now=True)
    if source != now:
        source.update({f"{k}_at_end": v for k, v in now.items()})
        from tokrag_model._lmeval_hook import _program

        def said(state: dict[str, str | None]) -> str:
            changes = state["tokrag_changes"]
            return f"{state['tokrag_commit']}" + (f" (changes {changes})" if changes else "")

        print(f"{_program()}: warning: the tokrag checkout changed during the run ({said(source)} at the start, "
              f"{said(now)} now): its figures may come from code of either; the JSON line's provenance records both",
              file=sys.stderr)
    return {
        **source,
        "versions": dict(sorted({**key_versions(), **library_versions()}.items())),
        "machine": {**machine, "cpu_count": os.cpu_count(), "cpus_usable": usable},
        "device": None if device is None else str(device),
        "fingerprints": dict(fingerprints or {}),
    }
