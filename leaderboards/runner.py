"""Run a leaderboard spec cell by cell through lm-eval's Python API, into resumable run folders.

Layout of ``<runs_dir>/<config-hash>/`` (one folder per cell; the hash is :mod:`leaderboards.keys`):

* ``config.json``: the key material (method, model, model_args, fingerprints, settings) + cell id;
* ``results.json``: lm-eval's results dict (``simple_evaluate`` output without ``samples``);
* ``samples_<task>.jsonl``: lm-eval's per-sample log (``doc``, ``resps``, per-sample metrics), by doc_id;
* ``cost.json``: wall time (s), ``model_s`` (the seconds inside the model's request methods, without the task
  build and retrieval), generated/prompt tokens, forward passes (from the model's ``stats``),
  peak resident memory (MiB, sampled every 20 ms during the cell), the process' max RSS and
  ``resumed_requests`` (requests replayed from the journal, 0 for a cell run in one go); a resumed cell's
  counts add the journal's counts of the replayed chunks, its ``wall_s`` and ``model_s`` their seconds (:func:`run_cell`);
  ``loadavg_start`` / ``loadavg_end``: the machine's 1/5/15-minute load averages around this attempt, and
  ``cpu_count``, the CPUs the process could run on (:func:`_cpu_count`), which they compare to;
* ``provenance.json``: ``loaded_weights_fingerprint`` (the model instance's ``fingerprint``: the weights as loaded,
  a converted folder's files for an alias; results' ``config.tokrag_model_fingerprint``; folders written before
  s53 name it ``model_fingerprint``, which :mod:`leaderboards.report` still reads; ``config.json``'s
  ``model_fingerprint`` is another hash, the run key's :func:`leaderboards.keys.weights_fingerprint` of what
  ``pretrained`` names, and keeps its name: renaming it would change every run key), the resolved config
  reported by the model instance (and ``model_hub_commit``, the hub
  commit a hub id resolved to; null for an alias or a local folder), retrieval fingerprint
  (hash of every question's ranked passage ids), library versions, git commit, ``machine`` (torch's thread counts
  at model load, ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``, CPU capability and model, CUDA device:
  :func:`tokrag_model.provenance.compute_environment`; not keyed);
* ``DONE``: a manifest with the SHA-256 of every file above, written last and atomically.

While a cell runs, its folder also holds ``journal.jsonl``, the request journal (a model that is :func:`replay_safe`
only): a header line (:func:`_journal_header`), then one JSON line per chunk of ``progress_chunk * batch_size``
requests with its SHA-256 (a line edited or damaged since is not replayed), appended and fsynced as each chunk is
computed (see :class:`_Journal`). It is deleted right after ``DONE`` is written; one left by a kill in between is
ignored (the folder is finished).

A cell's inputs (task YAMLs, data files, dense encoders) are checked again before it starts and before its ``DONE``
is written: an input edited during a run gives the later cells the key of the edited input, and a cell during whose
run it changed no ``DONE`` (:func:`run_spec`).

A folder without a valid ``DONE`` is incomplete: readers refuse it. The runner resumes it when its
``config.json`` has the same key and material and a journal is there (the journaled chunks are replayed, not
recomputed: a kill loses at most the chunk in progress); otherwise it deletes and redoes it.
Each cell is guarded by ``<config-hash>.lock`` (``filelock``, released by the OS when a process dies),
so two runners filling the same folder never run the same cell at once: a locked cell is skipped
and, at the end, waited for and picked up only if the other process died before finishing it.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import gc
import importlib
import json
import logging
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable, Iterator

from retrieval.errors import WRITE_MARK, ConfigError, DataError, OfflineError, TokragError
from retrieval.io import atomic_write_bytes, atomic_write_json, atomic_write_text, canonical_json, check_writable, file_lock, file_stamp, fingerprint, mark_own_write, no_room_naming, sha256_file  # noqa: F401 (check_writable: re-exported for leaderboards.cli/report)
from tasks import quiet_lm_eval
from tokrag_model.provenance import compute_environment, git_commit  # noqa: F401 (provenance.json's commit; leaderboards.runner.git_commit kept for callers)

from .keys import cell_keys, data_folder_change, model_target
from .spec import Cell, LeaderboardSpec, is_int, task_generates, task_output_type

log = logging.getLogger(__name__)

DONE = "DONE"
MANIFEST_SCHEMA = 1
_VERSIONED = ("tokrag", "lm_eval")
"""The packages :func:`library_versions` (``provenance.json``'s ``versions``) names besides ``python`` and the run key's
libraries (:func:`leaderboards.keys.library_versions`, one list for both since s57 r3)."""


@contextlib.contextmanager
def leaderboard_write(path: str | os.PathLike) -> Iterator[None]:
    """Mark an OSError of the block, one of the leaderboard programs' own writes of ``path`` that
    :mod:`retrieval.io` does not make (a folder created with its parents, files or folders removed, a file renamed
    into the report folder, truncated, or saved by matplotlib), as a write's (:func:`retrieval.errors.mark_write`), so
    that ``tokrag leaderboard run/report/rescore/check`` print it as their one line (program, file, reason, what to
    do: ``--runs-dir / --out / ...``), exit 2, whatever its errno (``EACCES``, ``EIO``, ``ENAMETOOLONG``, ...); before
    s57 g2 only ``EROFS`` and a full disk were. An error naming a file keeps that name (a parent folder that
    ``mkdir(parents=True)`` could not create, one file of a folder being removed); one naming none (a buffered
    write's flush, ``fsync``) is raised naming ``path`` (:func:`retrieval.io.no_room_naming`). Only writes go in the
    block: a read's error in it would be told as a write's. ``ENOENT`` (``FileNotFoundError``) is never marked, not
    even by ``no_room_naming``: no disk refuses a write that way here; a file or folder this command made itself (a
    staged report file, the staging folder, a cell's journal) is gone, a bug or a removal by hand meanwhile, and its
    traceback shows where (s57 r7), where the line would tell to check the disk and run again: the one rule of
    :func:`retrieval.io.mark_own_write` (s57 r11).

    Raises:
        OSError: the block's, marked (the same exception, or for a pathless one the same errno naming ``path``,
            raised ``from`` it); an ``ENOENT``, an OSError without an errno and any other exception pass unmarked.
    """
    try:
        with no_room_naming(path):  # marks an error naming path, but an ENOENT (mark_own_write)
            yield
    except OSError as exc:
        if isinstance(exc.errno, int) and not hasattr(exc, WRITE_MARK):  # one naming another file; the same rule
            mark_own_write(exc, exc.filename if isinstance(exc.filename, (str, bytes, os.PathLike)) else path)
        raise


class IncompleteRunError(TokragError, RuntimeError):
    """A cell's run folder is missing, unfinished or fails its checksums; the message says what to run."""


class MisplacedRunError(IncompleteRunError):
    """A finished run folder whose ``DONE`` is another folder's: its ``config_hash`` is not the folder's name, or its
    ``cell_id`` is another cell's (a folder copied or moved over another key), or a damaged ``DONE`` (one of these
    fields edited, missing or not a string). Never read as the cell's run, never redone over (it may be the only copy
    of the other cell's results): the message says to move it back or delete it (the marker, when it is damaged)."""


class RunInterrupted(KeyboardInterrupt):
    """:func:`run_spec` stopped by Ctrl-C (SIGINT) or, under ``tokrag leaderboard run``, SIGTERM (``signum``), at any
    moment after its cells' loop began (the helpers of ``run --jobs`` included: a second interrupt, or one while
    the main process waited for its helpers, ends the same way). On the way out no cell's file is written or removed;
    the helpers are stopped (:func:`_stop_helpers`) and the ``--max-cells`` folder of ``--jobs`` is removed. What the
    runs folder kept, read after the helpers stopped: ``finished``: the spec's (or selection's) cells with a ``DONE`` marker, of ``total``; ``journaled``:
    ``{cell id: requests in its journal}`` of the unfinished cells whose folder has one (a resumed run replays them);
    ``unjournaled``: unfinished cells whose folder exists without a journal (a model that keeps none: redone)."""

    def __init__(self, spec: LeaderboardSpec, runs: Path, signum: int, finished: int, total: int,
                 journaled: dict[str, int], unjournaled: list[str]) -> None:
        super().__init__(f"leaderboard {spec.label()} interrupted: {finished} of {total} cells finished in {runs}")
        self.spec, self.runs, self.signum = spec, runs, signum
        self.finished, self.total, self.journaled, self.unjournaled = finished, total, journaled, unjournaled


JOBS_HELPER_OPTION = "--jobs-helper"
"""The hidden ``run`` option of the helper processes of ``run --jobs N``: interrupted, they exit quietly (the main
process says what was kept and how to resume)."""

LEADER_ENV = "TOKRAG_LEADER_PID"
"""Set by ``run --jobs N`` in its helpers' environment: the main process's pid (:func:`follow_leader`)."""

CELL_LINES_ENV = "TOKRAG_LEADERBOARD_CELL_LINES"
"""Set by ``run --jobs N`` in its helpers' environment: ``1`` when the main process runs with ``--no-progress``
(the helpers, always without bars, then print their cells' start and finish lines too: :func:`_cell_line`), ``0``
when it shows bars (nothing extra among them)."""


def _cell_line(text: str) -> None:
    """One line on stderr (flushed) about a cell starting or finishing, for ``run --no-progress``'s log, whose
    only other lines are the runner's and lm-eval's log records (they never name the cell or its folder)."""
    print(f"leaderboard: {text}", file=sys.stderr, flush=True)


def follow_leader() -> None:
    """In a helper of ``run --jobs N``: end like an interrupted run (SIGTERM: its journal kept, exit 143) when the main
    process dies, even by SIGKILL or a second SIGTERM, which give it no time to stop its helpers (they ran their cells
    to the end, unseen, holding the cells' locks). Linux only (``prctl(PR_SET_PDEATHSIG, SIGTERM)``, see prctl(2));
    elsewhere, or when the call fails, nothing changes. A main process that died before the call (its pid in
    :data:`LEADER_ENV` is no longer the parent's) gets the same SIGTERM at once. Call it after SIGTERM's handler is
    installed."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, int(signal.SIGTERM), 0, 0, 0) != 0:  # 1 = PR_SET_PDEATHSIG
            log.debug("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
            return
    except (OSError, AttributeError) as exc:
        log.debug("prctl(PR_SET_PDEATHSIG) unavailable: %s", exc)
        return
    leader = os.environ.get(LEADER_ENV, "")
    if leader.isdigit() and os.getppid() != int(leader):
        os.kill(os.getpid(), signal.SIGTERM)


@dataclass
class RunSummary:
    """What one ``run_spec`` call did: cell ids run here, skipped as done, and run by another process;
    ``changed``: cells computed here whose inputs changed while they ran, left unfinished (:func:`run_cell`'s
    ``recheck``); ``selection``: the spec's :attr:`LeaderboardSpec.selection` (empty for a whole spec); ``left``: the
    cells (of the selection) that no process of a run stopped by ``max_cells`` started, in spec order (empty when
    the run was not stopped by it)."""

    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    by_other: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    forward_passes: int = 0
    replayed_requests: int = 0
    wall_s: float = 0.0
    selection: dict[str, tuple[str, ...]] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able view; ``selection`` (``{"methods": [...], ...}``) only for a run of a selection.
        ``forward_passes``: computed by this process (replayed chunks not counted); ``replayed_requests``: requests
        this process replayed from journals instead of computing them; with ``jobs > 1`` the main process's
        summary counts its helpers' too (:func:`_add_helper_summaries`). ``changed`` only when a cell was left
        unfinished because its inputs changed while it ran. ``stopped_by_max_cells`` (true) and ``left`` (how many
        cells were not started: :attr:`left`) only when ``--max-cells`` stopped the run with cells still to do."""
        return {"ran": self.ran, "skipped": self.skipped, "by_other": self.by_other,
                "forward_passes": self.forward_passes, "replayed_requests": self.replayed_requests,
                "wall_s": round(self.wall_s, 3),
                **({"changed": self.changed} if self.changed else {}),
                **({"stopped_by_max_cells": True, "left": len(self.left)} if self.left else {}),
                **({"selection": {k: list(v) for k, v in self.selection.items()}} if self.selection else {})}


def resolve_runs_dir(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None) -> Path:
    """``runs_dir`` argument, else the spec's ``runs_dir``, else ``$TOKRAG_RUNS_DIR``, else ``./runs``.

    Raises:
        ConfigError: the folder exists as something else than a folder (a file), or cannot be looked up (a name
            longer than the file system allows, ``ENAMETOOLONG``; a folder above it this user may not search,
            ``EACCES``), naming where it came from; before s57 g2 the lookup's OSError was a traceback.
    """
    runs, where = _runs_dir_choice(spec, runs_dir)
    try:
        is_file = runs.exists() and not runs.is_dir()
    except OSError as exc:  # Path.exists raises ENAMETOOLONG and EACCES (it ignores only ENOENT, ENOTDIR, ...)
        todo = "give a shorter path" if exc.errno == errno.ENAMETOOLONG else "give a folder this user can reach"
        raise ConfigError(f"the runs dir {runs} ({where}) cannot be looked up ([Errno {exc.errno}] {exc.strerror}); "
                          f"{todo}") from None
    if is_file:
        raise ConfigError(f"the runs dir {runs} ({where}) is a file, not a folder; give a folder of run folders")
    return runs


NOTHING_TO_RERUN = "nothing needs re-running"
"""The end of a message about a finished run that sits under another folder name (:func:`other_inputs_note`): its fix
is a move, so no run command is suggested after it (:class:`leaderboards.check.MissingCell`)."""


def shell_path(path: str | os.PathLike) -> str:
    """``path`` shell-quoted (:func:`shlex.quote`) for a command a message suggests (``mv A B``, ``rm F``), so that
    pasting it works in a runs folder whose name has spaces (``my runs/x y``)."""
    import shlex

    return shlex.quote(str(path))


def move_command(src: str | os.PathLike, dst: str | os.PathLike) -> str:
    """``mv SRC DST`` with both paths shell-quoted (:func:`shell_path`)."""
    return f"mv {shell_path(src)} {shell_path(dst)}"


def run_command(spec: LeaderboardSpec, runs: str | os.PathLike, *options: str, verb: str = "run",
                cwd: str | os.PathLike | None = None) -> str:
    """The ``tokrag leaderboard run SPEC --runs-dir RUNS`` command line that a message suggests (shell-quoted), with
    ``spec``'s selection (``--models/--methods/--tasks``, :meth:`LeaderboardSpec.select`) and ``options`` after
    it: following it runs into the folder the message is about, never the default ``./runs``. ``verb``: another
    subcommand (``report``) of the same spec and folder (give it a spec without a selection: only ``run`` has one).
    ``cwd``: the directory it must run from (``cd CWD && tokrag ...``), where the task data that the spec's tasks name
    by relative paths exist (:func:`leaderboards.keys.command_directory`): from elsewhere it would fail again."""
    import shlex

    words = ["tokrag", "leaderboard", verb, str(spec.path), "--runs-dir", str(runs)]
    for option, names in spec.selection.items():
        words += [f"--{option}", ",".join(names)]
    cd = f"cd {shlex.quote(str(cwd))} && " if cwd is not None else ""
    return cd + " ".join(shlex.quote(w) for w in [*words, *options])


def _runs_dir_choice(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None) -> tuple[Path, str]:
    """``(runs folder, where it came from)`` (:func:`resolve_runs_dir`, :func:`runs_dir_source`): the ``runs_dir``
    argument (``--runs-dir``), else the spec's ``runs_dir`` (``runs_dir of spec <path>``), else ``$TOKRAG_RUNS_DIR``,
    else ``./runs`` (``the default, ./runs of the working directory``)."""
    if runs_dir:
        return Path(runs_dir).resolve(), "--runs-dir"
    if spec.runs_dir:
        return spec.runs_dir, f"runs_dir of spec {spec.path}"
    if os.environ.get("TOKRAG_RUNS_DIR"):
        return Path(os.environ["TOKRAG_RUNS_DIR"]).resolve(), "$TOKRAG_RUNS_DIR"
    return Path("runs").resolve(), "the default, ./runs of the working directory"


def runs_dir_source(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None) -> str:
    """Where :func:`resolve_runs_dir` took the runs folder from, for a message: ``--runs-dir``, ``runs_dir of spec
    <path>``, ``$TOKRAG_RUNS_DIR`` or ``the default, ./runs of the working directory`` (:func:`_runs_dir_choice`)."""
    return _runs_dir_choice(spec, runs_dir)[1]


def likely_runs_dirs(spec: LeaderboardSpec, runs: Path) -> list[Path]:
    """The few folders other than ``runs`` where a spec's runs likely are (:func:`runs_elsewhere_note`), those that
    exist, in this order: ``runs/`` beside the spec file and beside its folder (a run started in the spec's folder,
    ``cd lb && tokrag leaderboard run velmora.yaml``), ``./runs`` of the working directory, ``$TOKRAG_RUNS_DIR`` and
    the spec's ``runs_dir`` (when not the folder in use). No run writes down its runs folder elsewhere, so these are
    guesses; none is read beyond its cells' ``DONE`` markers. A candidate that cannot be looked at (a symbolic-link
    loop, a folder one may not search, a working directory since removed) is left out: this never stops a command."""
    here = Path(spec.path).resolve().parent
    found = [here / "runs", here.parent / "runs"]
    try:
        found.append(Path.cwd() / "runs")
    except OSError:  # the working directory was removed
        pass
    if os.environ.get("TOKRAG_RUNS_DIR"):
        found.append(Path(os.environ["TOKRAG_RUNS_DIR"]))
    if spec.runs_dir:
        found.append(Path(spec.runs_dir))
    out: list[Path] = []
    skip = {Path(runs).resolve()}
    for folder in found:
        try:  # Python 3.11's resolve raises RuntimeError on a link loop (3.13: OSError); is_dir raises EACCES
            folder = folder.resolve()
            usable = folder not in skip and folder.is_dir()
        except (OSError, RuntimeError):
            continue
        if usable:
            skip.add(folder)
            out.append(folder)
    return out


def _marker_is_file(path: Path) -> bool:
    """``path.is_file()``, False where it cannot be told (Python 3.11 raises PermissionError for a ``DONE`` marker
    in a folder one may not search): :func:`runs_elsewhere_note` only guesses."""
    try:
        return path.is_file()
    except OSError:
        return False


def runs_elsewhere_note(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, *,
                        verb: str = "report") -> str | None:
    """One line when the runs folder in use holds none of ``spec``'s cells finished but a likely other one
    (:func:`likely_runs_dirs`) holds some: ``none of the 3 cells of spec 'velmora' is finished in /w/runs (the
    default, ./runs of the working directory); /w/lb/runs holds 3 of 3 finished: add --runs-dir /w/lb/runs`` and,
    per ``verb``, what else: ``report`` (also ``rescore``, ``check``) the command that computes them anew in the
    folder in use; ``run`` that this run computes them anew (it is not refused); ``estimate`` that they are
    counted as to do. None otherwise (also when the keys cannot be computed: the command says why itself; a folder
    or marker that cannot be looked at counts as holding nothing). Where the spec's task data are named by relative
    paths that exist only from another directory (``questions: q.jsonl`` in ``lb/``'s task YAML, read from ``lb``'s
    parent), every key from here differs: the keys are then also compared as computed from there
    (:func:`_keys_as_from_data_directory`), and the line says to run from there with that ``--runs-dir``.

    Cheap: the keys are :func:`leaderboards.keys.cell_keys` (memoised hashes), and only each cell's ``DONE`` marker is
    looked at (no checksum), in at most five folders. The folder with the most finished cells is named (the first
    of :func:`likely_runs_dirs` on a tie)."""
    runs = resolve_runs_dir(spec, runs_dir)
    others = likely_runs_dirs(spec, runs)
    if not others:
        return None
    try:
        keys = [key for _cell, key, _mat in cell_keys(spec)]  # no checksum read: the markers alone
        if not keys or any((runs / key / DONE).is_file() for key in keys):
            return None
        legacy = [key for _cell, key, _mat in cell_keys(spec, runs)]  # a cell finished there under its legacy key
    except (TokragError, OSError):
        return None
    if any(_marker_is_file(runs / key / DONE) for key in legacy):
        return None
    counts = [(sum(_marker_is_file(folder / key / DONE) for key in keys), folder) for folder in others]
    best, folder = max(counts, key=lambda c: c[0])  # max keeps the first of equal counts
    there = None  # the directory the keys were computed from when not this one (task data named by relative paths)
    if not best:
        keyed = _keys_as_from_data_directory(spec)
        if keyed is None or any(_marker_is_file(runs / key / DONE) for key in keyed[1]):
            return None  # the folder in use holds them as keyed from there: the command's own advice says to cd there
        there, keys = keyed
        counts = [(sum(_marker_is_file(folder / key / DONE) for key in keys), folder) for folder in others]
        best, folder = max(counts, key=lambda c: c[0])
        if not best:
            return None
    n = len(keys)
    them = "them" if n != 1 else "it"
    none = f"none of the {n} cells of spec {spec.name!r} is" if n != 1 else f"the 1 cell of spec {spec.name!r} is not"
    fix = (f"add --runs-dir {shell_path(folder)}" if there is None else
           f"run from {shell_path(there)} (the task data that the task YAML names by relative paths are there, and "
           f"the cells are keyed by them) and add --runs-dir {shell_path(folder)}")
    head = f"{none} finished in {runs} ({runs_dir_source(spec, runs_dir)}); {folder} holds {best} of {n} finished: {fix}"
    if verb == "run":
        return f"{head} to use {them} (stop this run: Ctrl-C); this run computes {them} anew in {runs}"
    if verb == "estimate":
        return f"{head} to use {them}; this estimate counts {them} as to do in {runs}"
    return f"{head}; or, to compute {them} anew in {runs}: {run_command(spec, runs, cwd=there)}"


def _keys_as_from_data_directory(spec: LeaderboardSpec) -> tuple[Path, list[str]] | None:
    """``(directory, keys)``: the run keys of ``spec``'s cells (:func:`leaderboards.keys.cell_keys`) as computed from
    the directory where its task data named by relative paths exist, when they do not from here
    (:func:`leaderboards.keys.command_directory`; the spec's folder is tried), as after ``cd lb && tokrag leaderboard
    run velmora.yaml`` with ``questions: q.jsonl`` in the task YAML: from ``lb``'s parent that file is absent and every
    key differs. None when no such directory exists, when ``$TOKRAG_CACHE_DIR`` / ``$TOKRAG_DATA_DIR`` is a relative
    path (it would name another folder from there), or when the keys cannot be computed. The working directory is
    changed for the computation and put back (``contextlib.chdir``)."""
    from .keys import command_directory, missing_task_data

    if any(os.environ.get(v) and not os.path.isabs(os.path.expanduser(os.environ[v]))
           for v in ("TOKRAG_CACHE_DIR", "TOKRAG_DATA_DIR")):
        return None
    try:
        missing = [m for task in dict.fromkeys(c.task.task for c in spec.cells())
                   for m in missing_task_data(task, spec.include_path, [Path(spec.path).parent])]
        there = command_directory(spec, missing) if missing else None
        if there is None:
            return None
        with contextlib.chdir(there):
            return Path(there), [key for _cell, key, _mat in cell_keys(spec)]
    except (TokragError, OSError):
        return None


# --------------------------------------------------------------------------- manifests

CELL_FILES = ("config.json", "results.json", "cost.json", "provenance.json")
"""The JSON files of every finished cell (besides its samples), each listed with its SHA-256 in ``DONE``."""


def _cell_tail(cell_id: str) -> list[str]:
    """``[method, task, seedN]`` of a cell id (:attr:`Cell.cell_id`, ``[model/]method/task/seedN``)."""
    return cell_id.split("/")[-3:]


def _own_config(cell_dir: Path) -> dict[str, Any]:
    """The folder's ``config.json`` as a mapping ({} when it cannot be read or is not one)."""
    try:
        cfg = json.loads((cell_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return cfg if isinstance(cfg, dict) else {}


def check_cell_identity(cell_dir: Path, manifest: dict[str, Any], cell_id: str | None = None) -> None:
    """Refuse a ``DONE`` manifest that belongs to another folder or cell: its ``config_hash`` must be the folder's
    name (the cell's run key, :func:`leaderboards.keys.cell_keys`), and with ``cell_id`` its ``cell_id`` must name
    the same method, task and seed. The spec's model name (``model/`` before the method) is not compared: the key
    leaves it out, so specs that name one model differently share a folder. Every ``DONE`` the runner writes names
    both (since its first version), so a ``DONE`` without a string ``config_hash`` (or, with ``cell_id``, without a
    string ``cell_id``) is a damaged or hand-written marker: when the folder's own ``config.json`` says it is this
    folder's (and this cell's) run, it is damage like an empty or unreadable ``DONE`` (``IncompleteRunError``: check
    says ``FAIL <cell> damaged run folder``, report ``--allow-missing`` lists the cell as missing, ``run`` redoes
    it with a warning and ``run --estimate`` counts it to do); otherwise it cannot be told whose run it is and is
    refused like an edited one. A folder that :func:`leaderboards.rescore.collect_for_rescore` matches with a cell
    under another key passes: it is checked against its own name.

    Raises:
        IncompleteRunError: the ``DONE`` lacks its identity but ``config.json`` says the run is this folder's.
        MisplacedRunError: one line naming the folder, what ``DONE`` says, what was expected and what to do.
    """
    have_key, have_id = manifest.get("config_hash"), manifest.get("cell_id")
    lacking = [f"{field} (got {have!r})" for field, have, wanted in
               (("config_hash", have_key, True), ("cell_id", have_id, cell_id is not None))
               if wanted and not isinstance(have, str)]
    if lacking:  # never accepted as finished: a marker that cannot say whose run it is
        own = _own_config(cell_dir)
        if own.get("config_hash") == cell_dir.name and (
                cell_id is None or (isinstance(own.get("cell_id"), str) and _cell_tail(own["cell_id"]) == _cell_tail(cell_id))):
            raise IncompleteRunError(f"{cell_dir / DONE}: damaged manifest: it names no {' and no '.join(lacking)}, "
                                     "though every DONE the runner writes names its folder's key and cell; re-run the cell")
        want = f"config_hash {cell_dir.name!r}" + (f", cell_id {cell_id!r}" if cell_id is not None else "")
        raise MisplacedRunError(f"{cell_dir}: its {DONE} has no string {' and no string '.join(lacking)}, expected "
                                f"{want}: the {DONE} marker was edited or is damaged; delete it (rm {shell_path(cell_dir / DONE)}) and "
                                "re-run the spec to compute this cell")
    wrong_key = have_key != cell_dir.name
    wrong_id = cell_id is not None and _cell_tail(have_id) != _cell_tail(cell_id)
    if not (wrong_key or wrong_id):
        return
    if wrong_key and not wrong_id:  # the folder's own config.json says it is in place: the marker, not the folder, is off
        own = _own_config(cell_dir).get("config_hash")
        if own == cell_dir.name:
            raise MisplacedRunError(f"{cell_dir}: its {DONE} says config_hash {have_key!r} but its config.json says "
                                    f"{own!r}, the folder's own key: the {DONE} marker was edited or is damaged; delete it "
                                    f"(rm {shell_path(cell_dir / DONE)}) and re-run the spec to compute this cell")
    expected = f"config_hash {cell_dir.name!r}" + (f", cell {cell_id!r}" if cell_id is not None else "")
    home = cell_dir.parent / have_key if wrong_key else None
    where = (f"delete it (a copy of {home})" if home is not None and home.exists()
             else f"move it back to the folder of its key ({move_command(cell_dir, home)}) or delete it"
             if home is not None else "delete it")
    raise MisplacedRunError(f"{cell_dir}: holds another cell's run: its {DONE} says config_hash {have_key!r}, cell "
                            f"{have_id!r}, expected {expected}; {where}, then re-run the spec to compute this cell "
                            "(nothing here is read or overwritten until then)")


def _json_kind(value: Any) -> str:
    """``list``/``string``/``number``/... : what a JSON value is, in JSON's words."""
    return ("list" if isinstance(value, list) else "string" if isinstance(value, str) else "true/false"
            if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else "null"
            if value is None else type(value).__name__)


_VERIFIED: dict[str, tuple[str, tuple[tuple[int, ...], ...]]] = {}
"""Per process: a cell folder's (``DONE`` text, :func:`retrieval.io.file_stamp` of ``DONE`` and of each file it
lists) when its checksums last passed (:func:`verify_cell_dir`): the files are not hashed again while all is
unchanged."""
_SETTLED_NS = 2_000_000_000
"""A passed verification is remembered only when every file's inode-change time is this much (2 s, ns) before it
began: a same-size rewrite within the file system's timestamp tick (a few ms; 1-2 s on FAT or some NFS servers)
could keep a just-written file's stamp, so such a file is hashed again next time."""


def _files_stamps(cell_dir: Path, names: list[str]) -> tuple[tuple[int, ...], ...] | None:
    """:func:`retrieval.io.file_stamp` of ``DONE`` and of each of ``names`` in ``cell_dir``; None when one cannot
    be stat'ed (the checks then say what is wrong)."""
    try:
        return tuple(tuple(file_stamp(cell_dir / name)) for name in (DONE, *names))
    except OSError:
        return None


def verify_cell_dir(cell_dir: Path, cell_id: str | None = None) -> dict[str, Any]:
    """Return the ``DONE`` manifest of a finished cell folder after checking every file's SHA-256 and that the
    manifest is this folder's (and, with ``cell_id``, this cell's; :func:`check_cell_identity`).

    The checksums are computed once per process while nothing changes: a folder that passed is not hashed again
    while its ``DONE`` text and the size, mtime, inode-change time and inode of ``DONE`` and of every listed file
    are the ones it passed with (:data:`_VERIFIED`; any write changes the inode-change time, a replaced file its
    inode), so the several checks of one command (key adoption, run, report) hash a finished cell once. The
    identity check runs every time.

    Raises:
        IncompleteRunError: no folder (never run), no ``DONE`` (killed or still running), unreadable
            manifest (also valid JSON past Python's digit or recursion limit: :func:`retrieval.io.json_limit_error`'s
            line), a listed file missing, or a checksum mismatch (a file changed or was truncated after the
            run). MisplacedRunError (a subclass): the folder holds another cell's run.
    """
    done = cell_dir / DONE
    if not cell_dir.is_dir():
        raise IncompleteRunError(f"{cell_dir}: not run yet (no run folder)")
    if not done.is_file():
        if done.exists() or done.is_symlink():  # a folder (or a dangling link) where the marker file belongs
            what = "a folder" if done.is_dir() else "not a file"
            raise IncompleteRunError(f"{done}: the {DONE} marker is {what}, not the manifest file the runner writes; "
                                     f"re-run the cell")
        raise IncompleteRunError(f"{cell_dir}: no {DONE} marker (the cell started but did not finish)")
    try:
        text = done.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise IncompleteRunError(f"{done}: unreadable manifest (the file cannot be read: {why}); re-run the cell") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        why = "the file is empty" if not text.strip() else f"not valid JSON at line {exc.lineno} column {exc.colno}"
        raise IncompleteRunError(f"{done}: unreadable manifest ({why}); re-run the cell") from None
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit: a RecursionError
        from retrieval.io import json_limit_error  # traceback, or 'not valid JSON at line ? column ?'

        raise IncompleteRunError(str(json_limit_error(exc, f"{done}: unreadable manifest", fix="re-run the cell"))) from None
    if not isinstance(manifest, dict):
        raise IncompleteRunError(f"{done}: unreadable manifest (it holds a JSON {_json_kind(manifest)}, not the object "
                                 "with 'files', 'config_hash' and 'cell_id' the runner writes); re-run the cell")
    if "files" not in manifest:
        raise IncompleteRunError(f"{done}: unreadable manifest (it has no 'files', the cell's files with their "
                                 "SHA-256); re-run the cell")
    files = manifest["files"]
    bad = (f"a JSON {_json_kind(files)}" if not isinstance(files, dict)
           else next((f"{k!r}: a JSON {_json_kind(v)}" for k, v in files.items() if not isinstance(v, str)), None))
    if bad:
        raise IncompleteRunError(f"{done}: unreadable manifest ('files' must map each file of the cell to its "
                                 f"SHA-256, got {bad}); re-run the cell")
    unlisted = [nm for nm in CELL_FILES if nm not in files]  # load_cell reads them: never unchecked
    if unlisted:
        raise IncompleteRunError(f"{done}: unreadable manifest (does not list {', '.join(unlisted)}); re-run the cell")
    began = time.time_ns()
    stamps = _files_stamps(cell_dir, sorted(files))  # before hashing: a write while hashing changes them
    memo_key = str(cell_dir.absolute())
    if stamps is None or _VERIFIED.get(memo_key) != (text, stamps):
        for name, digest in files.items():
            p = cell_dir / name
            if not p.is_file():
                raise IncompleteRunError(f"{cell_dir}: {name} listed in {DONE} is missing; re-run the cell")
            if sha256_file(p) != digest:
                raise IncompleteRunError(f"{p}: checksum mismatch with {DONE} (file changed or truncated); re-run the cell")
        if stamps is not None and all(st[2] < began - _SETTLED_NS for st in stamps):  # st[2]: ctime_ns
            _VERIFIED[memo_key] = (text, stamps)
    check_cell_identity(cell_dir, manifest, cell_id)
    return manifest


def cell_is_done(cell_dir: Path, cell_id: str | None = None) -> bool:
    """True when ``cell_dir`` holds a complete, checksum-valid run (of ``cell_id`` when given).

    Raises:
        MisplacedRunError: the folder holds another cell's finished run (:func:`check_cell_identity`): neither done
        nor to be redone over.
    """
    try:
        verify_cell_dir(cell_dir, cell_id)
        return True
    except MisplacedRunError:
        raise
    except IncompleteRunError:
        return False


def finished_folders(runs: Path) -> list[tuple[Path, dict[str, Any]]]:
    """``[(folder, config.json), ...]`` of the folders under ``runs`` (sorted by name) that have a ``DONE`` marker and
    a readable JSON object in ``config.json``. Cheap: no checksum is verified (:func:`cell_is_done` does that)."""
    out: list[tuple[Path, dict[str, Any]]] = []
    if not runs.is_dir():
        return out
    for d in sorted(runs.iterdir()):
        if not (d / DONE).is_file():
            continue
        try:
            cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(cfg, dict):
            out.append((d, cfg))
    return out


class FinishedRuns(dict):
    """``{cell_id: [(folder name, config.json), ...]}`` (:func:`finished_runs_by_cell`) that remembers the runs folder
    it was read from (``runs``), so that :func:`other_inputs_note` can tell a cell whose folder is absent from one
    whose folder is there but unfinished or damaged."""

    runs: Path | None = None


def finished_runs_by_cell(runs: Path, folders: list[tuple[Path, dict[str, Any]]] | None = None
                          ) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """``{cell_id: [(folder name, config.json), ...]}`` of :func:`finished_folders` (``folders`` when the caller read
    them already), for :func:`other_inputs_note`; a :class:`FinishedRuns` whose ``runs`` is ``runs``."""
    out: FinishedRuns = FinishedRuns()
    out.runs = Path(runs)
    for d, cfg in finished_folders(runs) if folders is None else folders:
        if isinstance(cfg.get("cell_id"), str):
            out.setdefault(cfg["cell_id"], []).append((d.name, cfg))
    return out


def _moved_here(entries: list[tuple[str, dict[str, Any]]], key: str) -> list[str]:
    """Names of the finished folders among ``entries`` (:func:`finished_runs_by_cell`'s of one cell) whose config
    says ``key`` while they sit under another name: that very run, moved or renamed by hand."""
    return sorted(name for name, cfg in entries if name != key and cfg.get("config_hash") == key)


def check_moved_runs(spec: LeaderboardSpec, runs: Path, cells: list[tuple[Cell, str]],
                     finished: dict[str, list] | None = None) -> None:
    """Refuse to run (or estimate) cells whose finished run sits in the runs folder under another folder name (its
    ``config.json`` says the cell's key: moved or renamed by hand): ``run`` recomputed them without a word.

    Args:
        cells: ``[(cell, key)]`` of the cells that are not finished under their own key.
        finished: :func:`finished_runs_by_cell` of ``runs`` when the caller has read it (else read here).

    Raises:
        ConfigError: one line naming the first such folder, the key it belongs to and the move back (with the count).
    """
    if not cells:
        return
    by_cell = finished_runs_by_cell(runs) if finished is None else finished
    moved = [(name, key) for cell, key in cells for name in _moved_here(by_cell.get(cell.cell_id, []), key)]
    if moved:
        name, key = moved[0]
        more = f" ({len(moved)} such folders; the first named)" if len(moved) > 1 else ""
        raise ConfigError(f"leaderboard spec {spec.path}: the finished run of a cell is in {runs / name}, not in "
                          f"{runs / key} (its config.json says config_hash {key}){more}: move it back "
                          f"({move_command(runs / name, runs / key)}); nothing was run")


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 20 else text[:16] + "..."


@functools.lru_cache(maxsize=64)
def _model_arg_defaults(model: Any, model_args: str, contents: str = "") -> dict[str, Any] | None:
    """The value of each model argument of method ``model`` given ``model_args`` (canonical JSON), those not given
    included: a tokrag method's resolved arguments (:func:`tokrag_model.args.resolved_args`: its schema's defaults, a
    Tok-RAG preset's params applied), else the keyword defaults of the model class's constructor (lm-eval passes
    ``model_args`` as keywords); None when that cannot be told (a model that does not import, arguments its method
    refuses now). ``contents``: the SHA-256 of the files ``model_args`` name (:func:`_content_keyed_as_files`), only
    part of the memo's key, so a file edited within a process is read again. Loads no model."""
    import inspect

    from tokrag_model.args import resolved_args

    try:
        cls = _model_class(model)
        out = resolved_args(cls, json.loads(model_args))
        if out is None:
            kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            out = {name: p.default for name, p in inspect.signature(cls).parameters.items()
                   if p.kind in kinds and p.default is not inspect.Parameter.empty}
        return out
    except Exception:  # noqa: BLE001 - only the wording of a difference depends on it
        log.debug("the model arguments of %r could not be resolved", model, exc_info=True)
        return None


def _default_phrase(model: Any, name: str) -> str | None:
    """What a tokrag method's argument ``name`` defaults to where its schema's default is None, as its help text says
    it (``max_length``: ``the model's, capped at 8192``; ``k``: ``all attached``); None for a model class without a
    schema, or an argument whose help says no ``default: ...``."""
    from tokrag_model.args import COMMON_ARGS

    try:
        cls = _model_class(model)
    except Exception:  # noqa: BLE001 - only the wording of a difference depends on it
        return None
    extra = getattr(cls, "EXTRA_ARGS", None)
    if not (isinstance(getattr(cls, "METHOD", None), str) and isinstance(extra, dict)):
        return None
    arg = {**COMMON_ARGS, **extra}.get(name)
    m = re.search(r"\bdefault: ([^;)]+)", getattr(arg, "help", "") or "")
    return m.group(1).strip() if m else None


def recorded_model_settings(folder: Path) -> dict[str, Any] | None:
    """The model settings a finished run folder recorded as resolved at its run: ``results.json``
    ``config.tokrag_resolved_config`` (a tokrag method's, with its ``<argument>_resolved`` values), else
    ``provenance.json`` ``model_resolved_config`` (any model's ``resolved_config``); None when the folder records none
    or cannot be read (only the wording of a difference depends on it). The lookup is the report's
    (:func:`leaderboards.provenance_view._resolved`), on those two files alone (no checksum, no samples)."""
    from .provenance_view import _resolved

    d: dict[str, Any] = {}
    for name in ("results", "provenance"):
        try:
            record = json.loads((Path(folder) / f"{name}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            d[name] = record
    return _resolved(d) or None


def _absent_model_arg(config: dict[str, Any], name: str, resolved: dict[str, Any] | None = None) -> str:
    """What model argument ``name``, absent from ``config`` (a run's ``config.json`` or a cell's key material), stood
    for: ``(absent: default 1.0)``, the value its method gives it when it is not given (:func:`_model_arg_defaults`),
    else ``(absent: not recorded)``. ``batch_size`` and ``device`` not given took the config's own ``batch_size`` /
    ``device`` (the spec's shared ones), which the run hands the model as lm-eval's ``--batch_size`` / ``--device``
    (:func:`_lm_eval_flags`), not the method's default.

    A default of None is no value: the method sets it at its run, often from the model (``max_length``: the model's
    context, capped). It reads ``(absent: default the model's, capped at 8192)``, the schema's help text
    (:func:`_default_phrase`; ``(absent: default left to the method)`` where the help says nothing), and where the run's
    records (``resolved``: :func:`recorded_model_settings` of that side's run folder) hold the value the run used, the
    argument's own or its ``<argument>_resolved`` key, that too: ``(absent: default the model's, capped at 8192; 8192
    in this run)``; before s55 it read ``(absent: default null)``, which looked like the value used. A ``preset`` the
    key holds by its content (:data:`leaderboards.keys.FILE_CONTENT`, since s61) is read from a file of that content
    (:func:`_content_keyed_as_files`), so an argument the preset sets reads ``(absent: default 14)``, the preset's, as
    before s61; ``(absent: not recorded)`` where no such file is known now."""
    if name in ("batch_size", "device") and config.get(name) is not None:
        return f"(absent: default {_short(config[name])})"
    args = config.get("model_args")
    model = config.get("model")
    files = config.get("model_arg_files")
    if isinstance(args, dict):  # a preset held by its content (keys.FILE_CONTENT): read a file of that content
        args = _content_keyed_as_files(args, files)
    defaults = (_model_arg_defaults(model, canonical_json(args), canonical_json(files) if isinstance(files, dict) else "")
                if isinstance(args, dict) and isinstance(model, str) else None)
    if not defaults or name not in defaults:
        return "(absent: not recorded)"
    if defaults[name] is not None:
        return f"(absent: default {_short(defaults[name])})"
    how = _default_phrase(model, name) or "left to the method"
    rec = resolved if isinstance(resolved, dict) else {}
    ran = rec.get(name) if rec.get(name) is not None else rec.get(f"{name}_resolved")
    return f"(absent: default {how}" + (f"; {_short(ran)} in this run)" if ran is not None else ")")


def _file_of_content(sha: str) -> str | None:
    """A file whose SHA-256 is ``sha`` (hex), as the hash memo knows it (:class:`retrieval.io.HashMemo`, through which
    every cell key hashes its argument files, :func:`leaderboards.keys.arg_file_fingerprints`): the path of an entry
    of that SHA-256 whose stamp is the file's current :func:`retrieval.io.file_stamp` (an edited or removed file is
    not taken); None where the memo holds none. Reads the memo file (parsed once a process while it does not
    change); a linear pass over its entries. Raises nothing."""
    from retrieval.io import HashMemo

    for key, entry in HashMemo().table.items():
        if isinstance(entry, list) and len(entry) == 5 and entry[-1] == sha and os.path.isabs(key):
            try:
                if file_stamp(key) == entry[:-1]:
                    return key
            except (OSError, ValueError):
                continue
    return None


def _content_keyed_as_files(args: dict[str, Any], files: Any) -> dict[str, Any]:
    """``args`` (a key material's ``model_args``) with each :data:`leaderboards.keys.CONTENT_KEYED_ARGS` value held as
    :data:`leaderboards.keys.FILE_CONTENT` replaced by a file of the SHA-256 that ``files`` (the material's
    ``model_arg_files``) records for it (:func:`_file_of_content`), so its method's resolved arguments can be read
    (:func:`_model_arg_defaults`: a preset's params); kept where none is found. ``args`` itself when nothing is
    replaced. Raises nothing."""
    from .keys import CONTENT_KEYED_ARGS, FILE_CONTENT

    out = args
    for arg in CONTENT_KEYED_ARGS:
        sha = files.get(arg) if isinstance(files, dict) else None
        if out.get(arg) == FILE_CONTENT and isinstance(sha, str):
            path = _file_of_content(sha)
            if path is not None:
                out = {**out, arg: path}
    return out


def config_differences(old: dict[str, Any], material: dict[str, Any],
                       resolved: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)) -> list[str]:
    """``key old -> new`` for each key of a run folder's ``config.json`` (``old``) that differs from a cell's key
    ``material`` (one level down in a mapping such as ``task_data_files``: its keys; long values cut). A model
    argument one side does not give is named with the value its method gave it, ``model_args[alpha] (absent: default
    1.0) -> 2.0`` (:func:`_absent_model_arg`; ``(absent: not recorded)`` when that cannot be told; a default the method
    sets at its run, ``(absent: default the model's, capped at 8192; 8192 in this run)``, the run's value from
    ``resolved``: the two sides' recorded settings, :func:`recorded_model_settings`, None where not run or not
    recorded)."""
    new = json.loads(canonical_json(material))

    def side(config: dict[str, Any], k: str, d: dict[str, Any], sub: str, rec: dict[str, Any] | None) -> str:
        if sub in d:
            return _short(d[sub])
        return _absent_model_arg(config, sub, rec) if k == "model_args" else "(absent)"

    out = []
    for k in sorted(set(old) | set(new)):
        if k in ("cell_id", "config_hash", "spec"):
            continue
        a, b = old.get(k, "(absent)"), new.get(k, "(absent)")
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{k}[{sub}] {side(old, k, a, sub, resolved[0])} -> {side(new, k, b, sub, resolved[1])}"
                    for sub in sorted(set(a) | set(b)) if a.get(sub, "(absent)") != b.get(sub, "(absent)")]
        else:
            out.append(f"{k} {_short(a)} -> {_short(b)}")
    return out


def _other_runs(cell_id: str, key: str, material: dict[str, Any], finished: dict[str, list[tuple[str, dict[str, Any]]]],
                spec: str | None) -> tuple[list[tuple[str, dict[str, Any]]], list[str], list[tuple[str, list[str]]]]:
    """``(mine, moved, others)`` of ``cell_id`` among ``finished`` (:func:`finished_runs_by_cell`), the one selection
    behind :func:`other_inputs_note` (``check``, ``report``) and :func:`other_inputs_summary` (``run``, ``run
    --estimate``): ``mine`` its finished folders (those another spec ran left out when ``spec`` is given), ``moved``
    those whose config says ``key`` (:func:`_moved_here`), ``others`` ``[(folder, config_differences)]`` of the folders
    under another key, closest first (fewest differences, then folder name), [] when the cell's own folder ``key``
    exists (in ``finished.runs``; for a plain mapping, among ``finished``'s folders)."""
    mine = [(name, cfg) for name, cfg in finished.get(cell_id, [])
            if spec is None or not isinstance(cfg.get("spec"), str) or cfg["spec"] == spec]
    runs = getattr(finished, "runs", None)
    here = (Path(runs) / key).exists() if runs is not None else any(name == key for name, _ in finished.get(cell_id, []))
    others = [] if here else [(name, config_differences(cfg, material)) for name, cfg in mine if name != key]
    return mine, _moved_here(mine, key), sorted(others, key=lambda o: (len(o[1]), o[0]))


def _same_files_from(missing: list[Any], had: Any, lost: list[str]) -> bool:
    """Whether every one of ``missing`` (:class:`leaderboards.keys.MissingTaskData`, relative values not found from
    here) has a ``found`` directory from which it names one of ``lost`` (the paths a finished run read, its config's
    ``task_data_files`` keys ``had``), whose content is still what that run recorded, and every one of ``lost`` is so
    named: run from there, the cell's key is that run's (as far as these files go)."""
    from .keys import _HashMemo, expand_user, tree_fingerprint

    if not isinstance(had, dict) or any(m.found is None or m.found != missing[0].found for m in missing):
        return False
    memo, named = _HashMemo(), set()
    for m in missing:
        path = Path(m.found) / expand_user(m.value)
        try:
            p = str(path.resolve())
            now = (memo.sha(path) if path.is_file() else tree_fingerprint(path, memo, None, max_bytes=None)
                   if path.is_dir() else None)
        except OSError:
            return False
        if p not in lost or now is None or had.get(p) != now:
            return False
        named.add(p)
    return named == set(lost)


def other_inputs_note(cell_id: str, key: str, material: dict[str, Any],
                      finished: dict[str, list[tuple[str, dict[str, Any]]]], missing: list[Any] | None = None,
                      spec: str | None = None, to_set: list[Path] | None = None) -> str:
    """For a cell that is not finished under its own key: ``a run of this cell with other inputs exists (key X): its
    config differs in ...; re-run it`` when ``finished`` (:func:`finished_runs_by_cell`) holds a folder of the same
    cell id under another key (an edited questions file, task YAML, model code, ...), the one with the fewest
    differences named; empty otherwise. With ``spec`` (the spec's name), folders that another spec ran are not
    this cell's (two specs in one runs folder, e.g. ``ci`` and ``reference-cells`` in the default ``./runs``, share
    cell ids such as ``rag-none/nq_oracle_bm25/seed1234``); folders that record no spec still count. A folder whose
    config says this very key (the run moved or copied to another name) is named as such, with the move back.

    The note about a run with other inputs is given only when the cell's own folder (``key``) is absent: a folder
    there that is unfinished (no ``DONE``) or damaged (a checksum mismatch) is the cause, said by its own message, and
    an earlier experiment with other inputs is not. The folder is looked up in ``finished.runs`` (a
    :class:`FinishedRuns`); for a plain mapping, a folder of ``key`` among ``finished``'s (it has ``DONE``) counts. The
    note is worded as a possibility: that folder may be an unrelated earlier experiment, not this cell's run.

    ``missing`` (:func:`leaderboards.keys.missing_task_data` of the cell's task): data files the task's metadata names
    that do not exist from this working directory. Then the note says so (and which files the finished run read)
    instead of blaming changed inputs for the ``task_data_files`` the key now lacks; other differences are still
    named. Likewise when the closest run's ``data_fingerprint`` differs because no data folder is set now, or
    ``$TOKRAG_DATA_DIR`` names another folder than the one that run read and that folder lacks a file the run read
    from its own (:func:`leaderboards.keys.data_folder_change`): the note says so and names that folder to set (ending
    in :data:`NOTHING_TO_RERUN` when nothing else differs); ``to_set``, when given, gets that folder (for
    :func:`data_folder_fix`)."""
    mine, moved, others = _other_runs(cell_id, key, material, finished, spec)
    if moved:  # this very run under another folder name (mv, a copy): nothing changed, nothing to re-run
        runs = getattr(finished, "runs", None)
        back = (f"move it back ({move_command(Path(runs) / moved[0], Path(runs) / key)})" if runs is not None
                else f"move it back to {key} in the runs folder")
        return (f"its finished run is in the folder {moved[0]} (its config.json says config_hash {key}): {back}; "
                f"{NOTHING_TO_RERUN}")
    if missing:
        gone = "; ".join(m.describe() for m in missing)
        fix = missing[0].fix()
        if not others:
            return f"{gone}; {fix}"
        cfgs = dict(mine)
        name, diff = others[0]
        had = cfgs.get(name, {}).get("task_data_files")
        now = material.get("task_data_files") or {}
        lost = sorted(p for p in had if p not in now) if isinstance(had, dict) else []
        read = f", which read {', '.join(lost)}" if lost else ""
        rest = [d for d in diff if not (d.startswith("task_data_files ") and not now)  # the key lacks them all
                and not any(d.startswith(f"task_data_files[{p}] ") for p in lost)]
        if not rest and lost and _same_files_from(missing, cfgs.get(name, {}).get("task_data_files"), lost):
            # only the working directory is wrong: from missing[0].found the paths name the files the run read
            return (f"a finished run of this cell exists (key {name}){read}, but {gone}; from {missing[0].found} "
                    f"{'these paths name the files' if len(missing) > 1 else 'this path names the file'} that run "
                    f"read, unchanged: run this command from {missing[0].found} (or give an absolute path as "
                    f"{missing[0].key} in {missing[0].yaml}); {NOTHING_TO_RERUN}")
        note = f"a finished run of this cell exists (key {name}){read}, but {gone}; {fix}"
        if rest:
            what = "; ".join(rest[:4]) + (f"; ... ({len(rest) - 4} more)" if len(rest) > 4 else "")
            note += f"; its config also differs in {what}"
        return note
    if not others:
        return ""
    name, diff = others[0]
    runs = getattr(finished, "runs", None)
    folder = (data_folder_change(material, dict(mine).get(name, {}), Path(runs) / name, to_set) if runs is not None
              else "")
    if folder:  # no data folder, or another one, rather than changed inputs: say so, and what to set
        rest = [d for d in diff if not d.startswith("data_fingerprint ")]
        what = "; ".join(rest[:4]) + (f"; ... ({len(rest) - 4} more)" if len(rest) > 4 else "")
        return (f"{folder}; its config also differs in {what} (set it before running the cell)" if rest
                else f"{folder}; {NOTHING_TO_RERUN}")
    more = f" ({len(others)} such folders; the closest named)" if len(others) > 1 else ""
    what = "; ".join(diff[:4]) + (f"; ... ({len(diff) - 4} more)" if len(diff) > 4 else "") if diff else "nothing recorded"
    why = ("the run key's definition changed (schema), or the spec's inputs, since then"
           if any(d.startswith("schema ") for d in diff)
           else "the spec's inputs (or a file or code the run key hashes) changed since then")
    return (f"a finished run of this cell with other inputs exists (key {name}){more}: its config differs in {what}; "
            f"if that is the run you expected here, {why}; it may also be an unrelated earlier experiment")


def data_folder_fix(folders: Iterable[Path]) -> str:
    """``export TOKRAG_DATA_DIR=F`` when one or more notes (:func:`other_inputs_note`) say to set the data folder
    (:func:`leaderboards.keys.data_folder_change`) and all name the same folder F; when they name several (finished runs
    that read different folders), ``TOKRAG_DATA_DIR=A (2 cells) or B (1 cell), as each cell's line says: no one
    folder finds them all``; "" otherwise. ``folders``: the folders those notes name, one per note, as
    :func:`other_inputs_note` gives them in its ``to_set`` (each written as the note writes it, quoted for a shell).
    For the line that ``report`` prints before its run command, which would fail without it."""
    import shlex

    counts: dict[str, int] = {}
    for f in folders:
        q = shlex.quote(str(f))
        counts[q] = counts.get(q, 0) + 1
    if len(counts) > 1:
        each = " or ".join(f"{f} ({n} cell{'' if n == 1 else 's'})" for f, n in counts.items())
        return f"TOKRAG_DATA_DIR={each}, as each cell's line says: no one folder finds them all"
    return f"export TOKRAG_DATA_DIR={next(iter(counts))}" if counts else ""


KEY_FIELD_CAUSES = {
    "data_fingerprint": "the data folder changed",
    "task_data_files": "a data file the task names changed",
    "task_fingerprint": "a task's YAML or code changed",
    "model_code": "the model code changed",
    "retrieval_code": "the retrieval code changed",
    "model_fingerprint": "the model weights changed",
    "model_arg_files": "a file a model argument names changed",
    "chat_template_sha256": "the chat template changed",
    "dense_encoders": "a dense encoder changed",
    "library_versions": "the libraries the run key records, or their versions, differ",
    "lm_eval_version": "lm-eval was upgraded",
    "schema": "the run key's definition changed",
}
"""Why a field of a cell's key material (:func:`leaderboards.keys.cell_key_material`) differs from a finished run's,
in the words of :func:`other_inputs_summary`; another field is a setting of the spec. The :data:`CODE_KEY_FIELDS`
get :data:`KEYED_ANOTHER_WAY` added where the two keys may hash the code differently (:func:`code_keyed_another_way`)."""

CODE_KEY_FIELDS = ("model_code", "retrieval_code", "task_fingerprint")
"""The key fields that hash source files (:func:`leaderboards.keys.code_fingerprint`, ``task_fingerprint``): since s57
g1 a ``.py`` file by its code (``retrieval.io.normalised_source``), before by its bytes, so every run finished before
moved with no file edited."""

CODE_HASH_SCHEMA = 3
"""The first ``KEY_SCHEMA`` (:data:`leaderboards.keys.KEY_SCHEMA`, a key's ``schema`` field) whose keys hash a ``.py``
file by its code; a key of an older schema hashed it by its bytes (or, made between s57 g1 and the bump, by its code:
the record cannot tell, so its code fields are told with :data:`KEYED_ANOTHER_WAY`)."""

KEYED_ANOTHER_WAY = " (or is keyed another way by this tokrag)"
"""Added to a :data:`CODE_KEY_FIELDS` cause when the finished run's key may hash the code another way than this
tokrag's (:func:`code_keyed_another_way`): the fingerprint then moves with no file edited."""

_SCHEMA_DIFF = re.compile(r"schema (?P<old>\S+) -> (?P<new>\S+)")


def code_keyed_another_way(diffs: Iterable[str] | None) -> bool:
    """Whether two run keys whose :func:`config_differences` are ``diffs`` may hash the source files differently
    (:data:`CODE_HASH_SCHEMA`): either side's ``schema`` (from a ``schema A -> B`` line, else this tokrag's
    ``KEY_SCHEMA`` for both) older than it, or not a number; ``diffs`` None (not known): True. Raises nothing."""
    from . import keys

    if diffs is None:
        return True
    for d in diffs:
        m = _SCHEMA_DIFF.fullmatch(d)
        if m is not None:
            sides = (m["old"], m["new"])
            return not all(s.isdigit() and int(s) >= CODE_HASH_SCHEMA for s in sides)
    return not (isinstance(keys.KEY_SCHEMA, int) and keys.KEY_SCHEMA >= CODE_HASH_SCHEMA)


def _cause(field_name: str, keyed_another_way: bool) -> str:
    """:data:`KEY_FIELD_CAUSES`' words for ``field_name`` (it must be a key), with :data:`KEYED_ANOTHER_WAY` for a
    :data:`CODE_KEY_FIELDS` field when ``keyed_another_way``."""
    return KEY_FIELD_CAUSES[field_name] + (KEYED_ANOTHER_WAY if keyed_another_way and field_name in CODE_KEY_FIELDS else "")

_LIBRARY_DIFF = re.compile(r"library_versions\[(?P<name>[^\]]+)\] (?P<old>.+?) -> (?P<new>.+)")
"""One library's line of :func:`config_differences`: ``library_versions[numpy] (absent) -> 2.4.6``."""


def _library_change(a: str, b: str, old: str, new: str) -> tuple[str, str]:
    """``(kind, words)`` of one library whose recorded value went from ``a`` to ``b`` (:func:`config_differences`'
    text: ``(absent)``: not in that side's run key; ``null``: not installed there); ``old``/``new`` name the sides."""
    if a == "(absent)":
        return "added", f"keyed for {new} but not for {old}, whose tokrag keyed other libraries"
    if b == "(absent)":
        return "removed", f"not keyed for {new}, whose tokrag keys other libraries, but for {old}"
    if a == "null":
        return "installed", f"installed for {new}, not for {old}"
    if b == "null":
        return "uninstalled", f"installed for {old}, not for {new}"
    return "changed", "another version installed"


def library_changes(diffs: Iterable[str], old: str = "the finished run", new: str = "this cell now") -> str:
    """What the ``library_versions[NAME] A -> B`` lines among ``diffs`` (:func:`config_differences` of ``old``'s
    config against ``new``'s key material; ``old``/``new`` name the two sides in the text) say changed, in words:
    ``torch 2.4.0 -> 2.5.1 (another version installed)``; ``numpy, scipy keyed for this cell now but not for the
    finished run, whose tokrag keyed other libraries`` (A ``(absent)``: that run's key did not record them, as the
    run keys before s57 f3 did not record numpy: not an upgrade); the converse ``not keyed for ..., whose tokrag keys
    other libraries, but for ...``; ``rouge installed for ..., not for ...`` (a ``null`` side: not installed). Each
    library once (its versions joined by ``or`` when the lines give several); "" when no line is a library's (then
    :data:`KEY_FIELD_CAUSES`' words apply). Raises nothing."""
    changed: dict[str, tuple[set[str], set[str]]] = {}
    groups: dict[str, tuple[str, set[str]]] = {}
    for d in diffs:
        m = _LIBRARY_DIFF.fullmatch(d)
        if m is None:
            continue
        kind, words = _library_change(m["old"], m["new"], old, new)
        if kind == "changed":
            olds, news = changed.setdefault(m["name"], (set(), set()))
            olds.add(m["old"])
            news.add(m["new"])
        else:
            groups.setdefault(kind, (words, set()))[1].add(m["name"])
    parts = [", ".join(f"{n} {' or '.join(sorted(a))} -> {' or '.join(sorted(b))}" for n, (a, b) in sorted(changed.items()))
             + " (another version installed)"] if changed else []
    parts += [f"{', '.join(sorted(groups[kind][1]))} {groups[kind][0]}"
              for kind in ("installed", "uninstalled", "added", "removed") if kind in groups]
    return "; ".join(parts)


def key_field_cause(diff: str, old: str = "the finished run", new: str = "this cell now",
                    diffs: Iterable[str] | None = None) -> str:
    """Why one :func:`config_differences` line ``diff`` (``field[sub] A -> B``, ``field A -> B``) differs, in the
    words of :data:`KEY_FIELD_CAUSES` (``a setting of the spec`` for another field); for one library's line, how it
    differs (:func:`library_changes`' words without the name: ``another version installed``, ``keyed for these runs
    but not for ..., whose tokrag keyed other libraries``, ...; ``old``/``new`` name the two sides). A code field's
    cause adds :data:`KEYED_ANOTHER_WAY` when the two keys may hash the code differently (:func:`code_keyed_another_way`
    of ``diffs``, all the differences of the comparison; None, not known: added). For ``check``'s NOTE
    (:class:`leaderboards.check.KeyChanged`)."""
    m = _LIBRARY_DIFF.fullmatch(diff)
    if m is not None:
        return _library_change(m["old"], m["new"], old, new)[1]
    f = re.split(r"[ \[]", diff, maxsplit=1)[0]
    return _cause(f, code_keyed_another_way(diffs)) if f in KEY_FIELD_CAUSES else "a setting of the spec"


def other_inputs_summary(spec: LeaderboardSpec, runs: Path, todo: list[tuple[Cell, str, dict[str, Any]]],
                         finished: dict[str, list] | None = None) -> str:
    """One line for ``run`` and ``run --estimate`` about the cells to do (``todo``: ``(cell, key, key material)`` of
    the unfinished cells) that have a finished run under other inputs, as :func:`other_inputs_note` finds it for
    ``check`` and ``report`` (the same cell id and spec, another key, the cell's own folder absent; the closest such
    run): ``N of the M cells to do have a finished run with other inputs (data_fingerprint differs: the data folder
    changed); ...``, the differing key fields counted over those cells and explained (:data:`KEY_FIELD_CAUSES`; for
    ``library_versions`` which libraries, :func:`library_changes`: ``numpy, scipy keyed for the cells now but not for
    their finished runs (...)``, not "a library was upgraded" when this tokrag keys libraries the runs' did not).
    Empty when there is none: then the cells were simply never run here. ``finished``: :func:`finished_runs_by_cell`
    of ``runs`` when the caller has read it (else read here)."""
    if not todo:
        return ""
    finished = finished_runs_by_cell(runs) if finished is None else finished
    counts: dict[str, int] = {}
    libraries: list[str] = []  # the library_versions lines of those runs: which libraries differ, and how
    rehashed = False  # a run's key may hash the code another way (code_keyed_another_way)
    n = 0
    for cell, key, mat in todo:
        _, moved, others = _other_runs(cell.cell_id, key, mat, finished, spec.name)
        if moved or not others:
            continue  # never run here, moved (check_moved_runs says so), or its own folder says why (unfinished)
        diffs = others[0][1]  # the run other_inputs_note names for this cell
        n += 1
        for field_name in dict.fromkeys(re.split(r"[ \[]", d, maxsplit=1)[0] for d in diffs):
            counts[field_name] = counts.get(field_name, 0) + 1
        libraries += [d for d in diffs if d.startswith("library_versions[")]
        rehashed = rehashed or code_keyed_another_way(diffs)
    if not n:
        return ""
    said = library_changes(libraries, "their finished runs" if n > 1 else "its finished run",
                           "the cells now" if n > 1 else "the cell now")

    def cause(f: str) -> str:
        if f == "library_versions" and said:
            return f": {said}"
        return f": {_cause(f, rehashed)}" if f in KEY_FIELD_CAUSES else " (a setting of the spec)"

    what = "; ".join(f"{f} differs{'' if c == n else f' in {c}'}{cause(f)}"
                     for f, c in sorted(counts.items(), key=lambda fc: (-fc[1], fc[0]))) or "nothing recorded differs"
    return (f"{n} of the {len(todo)} cells to do {'has' if n == 1 else 'have'} a finished run with other inputs in {runs} "
            f"({what}); run computes {'it' if n == 1 else 'them'} anew; `tokrag leaderboard check` or "
            "`report --allow-missing` names each cell's differences")


CELL_INPUT_FIELDS = ("task_fingerprint", "data_fingerprint", "task_data_files", "dense_encoders")
"""The fields of a cell's key material (:func:`leaderboards.keys.cell_key_material`) that name what the cell reads
when it starts (its task YAMLs and task code folder, its data files, its dense encoders:
:func:`leaderboards.keys.cell_input_material`), checked again before the cell starts and before its ``DONE`` is
written (:func:`inputs_now`). The other fields keep the values the run began with: the code and libraries this
process imported, and the model's weights, chat template and argument files, read when the model was loaded (a
model serves the cells after it)."""


def inputs_now(spec: LeaderboardSpec, cell: Cell, mat: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """``(key, material, differences)`` of ``cell`` with its inputs as they are now: ``mat`` (the material the cell
    runs under) with the :data:`CELL_INPUT_FIELDS` computed again (:func:`leaderboards.keys.cell_input_material`,
    with a fresh memo; the file hashes are memoised by size, mtime, ctime and inode, so this costs ~15-20 ms a cell:
    the task YAMLs parsed, the hash memo file read, the task folder's stamps walked; 18 ms a cell measured over
    ``nq-wiki-12k-v2``'s 99 cells on 2 shared CPU cores, 23 ms when it computed the whole key material),
    ``key`` its fingerprint (the run key) and ``differences`` :func:`config_differences` (``data_fingerprint a ->
    b``, ...; [] when nothing changed, then ``key`` is the key of ``mat``). Raises what ``cell_input_material``
    raises (a task YAML removed meanwhile: ConfigError)."""
    from .keys import _HashMemo, cell_input_material

    memo = _HashMemo()  # a fresh one each call: its trees, task chains and read lists are not checked by stamp
    fresh = cell_input_material(spec, cell, memo)
    memo.save()
    old = json.loads(canonical_json(mat))
    now = dict(old)
    for f in CELL_INPUT_FIELDS:
        now.pop(f, None)
        if f in fresh:
            now[f] = fresh[f]
    now = json.loads(canonical_json(now))
    return fingerprint(now, length=20), now, config_differences(old, now)


def inputs_changed_line(diffs: list[str]) -> str:
    """``data_fingerprint a -> b: the data folder changed; ...`` for :func:`inputs_now`'s differences (the first
    four, each with its cause from :data:`KEY_FIELD_CAUSES`; both keys are this process's, hashed one way, so no
    :data:`KEYED_ANOTHER_WAY`)."""
    said = [f"{d}: {KEY_FIELD_CAUSES[f]}" if (f := re.split(r"[ \[]", d, maxsplit=1)[0]) in KEY_FIELD_CAUSES else d
            for d in diffs[:4]]
    return "; ".join(said) + (f"; ... ({len(diffs) - 4} more)" if len(diffs) > 4 else "")


# --------------------------------------------------------------------------- provenance helpers

def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that can move a number: ``python``, :data:`_VERSIONED` (``tokrag``,
    ``lm_eval``), then every library of the run key's :func:`leaderboards.keys.library_versions` (torch,
    transformers, tokenizers, the retrieval engine: pyserini, the Anserini jar's name, the installed FAISS
    distribution; jinja2; numpy, scipy, scikit-learn, rouge-score, rouge; datasets), so that ``provenance.json`` names
    what the key holds. A package that is not installed is left out. ``provenance.json``'s ``versions`` and the
    journal header's (:func:`_journal_header`). Before s57 r3 a list of its own, which lacked tokenizers, the Anserini
    jar, scikit-learn, rouge-score and rouge, and named ``faiss-cpu`` only (a ``faiss-gpu`` install was left out).
    Read from package metadata, no import. Raises nothing."""
    from .keys import library_versions as keyed

    out = {"python": sys.version.split()[0]}
    for name in _VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    out.update((name, v) for name, v in keyed().items() if v is not None and name not in out)
    return out


def retrieval_fingerprint(samples: list[dict]) -> dict[str, Any]:
    """Fingerprint of what retrieval gave the model: every question's ranked passage ids and scores.

    Reads ``doc["ctxs"]`` (``[{docid, score, rank, ...}]``) of each logged sample; also collects any
    ``*fingerprint*`` fields the task put on its docs (corpus/index/run fingerprints).
    """
    ranked, extra = [], {}
    for s in samples:
        doc = s.get("doc") or {}
        ctxs = doc.get("ctxs") or []
        ranked.append([s.get("doc_id"), [[c.get("docid"), c.get("score")] for c in ctxs if isinstance(c, dict)]])
        for k, v in doc.items():
            if "fingerprint" in k and isinstance(v, (str, int)):
                extra.setdefault(k, set()).add(str(v))
    out: dict[str, Any] = {"ctxs": fingerprint(ranked) if any(r[1] for r in ranked) else "none"}
    for k, vs in sorted(extra.items()):
        out[k] = sorted(vs)[0] if len(vs) == 1 else sorted(vs)
    for fp in sorted(extra.get("run_fingerprint", set())):
        out.update(_run_cache_provenance(fp))
    return out


def _run_cache_provenance(run_fp: str) -> dict[str, str]:
    """Corpus, retriever and index identity of a cached TREC run (``retrieval``'s ``meta.json``), if present."""
    from retrieval.paths import cache_dir

    root = cache_dir()
    out: dict[str, str] = {}
    for meta_path in sorted((root / "runs").glob(f"*-{run_fp}/meta.json")):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            cfg = meta["config"]
            corpus = cfg["corpus"]
        except (OSError, ValueError, RecursionError, KeyError, TypeError):
            continue
        out["corpus"] = f"{corpus.get('name')}@{corpus.get('fingerprint')} ({corpus.get('size')} passages)"
        params = ",".join(f"{k}={v}" for k, v in sorted((cfg.get("params") or {}).items()))
        out["retriever"] = f"{cfg.get('retriever')}({params}) k={cfg.get('k')}"
        for idx_meta in sorted((root / "indexes").glob(f"*-{corpus.get('fingerprint')}*/*.json")):
            try:
                im = json.loads(idx_meta.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue
            if im.get("corpus_fingerprint") == corpus.get("fingerprint") and im.get("kind") == cfg.get("retriever"):
                out["index"] = f"{idx_meta.parent.name} ({im.get('num_docs')} docs)"
                break
        break
    return out


class _PeakRSS:
    """Samples this process' resident memory every ``interval`` seconds; ``peak_mib`` after ``stop``."""

    def __init__(self, interval: float = 0.02) -> None:
        import psutil

        self._proc = psutil.Process()
        self.interval = interval
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> _PeakRSS:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)

    @property
    def peak_mib(self) -> float:
        return self.peak / 2**20


# --------------------------------------------------------------------------- model handling

def _model_class(model: str):
    target = model_target(model)
    if ":" in model:
        mod, _, cls = target.partition(":")
        try:
            return getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"model {model!r}: cannot import {cls} from {mod} ({exc})") from None
    from lm_eval.api.registry import get_model

    return get_model(model)


def resolved_model_args(cell: Cell, given: dict[str, Any]) -> dict[str, Any] | None:
    """``given`` parsed by the cell's method schema (defaults filled in) and resolved by the method's
    ``resolve_args`` (a Tok-RAG preset's params applied), or None for a model class that declares no schema
    (only the tokrag models do: ``METHOD`` and ``EXTRA_ARGS``): :func:`tokrag_model.args.resolved_args`, which the
    ``lm_eval`` CLI's pre-load check uses too. Loads no model.

    Raises:
        ConfigError: from :func:`tokrag_model.args.parse_args` (unknown key, bad value, argument without effect)
        or the method's ``resolve_args`` (an unreadable preset, a dynamic-layer argument with a fixed layer).
    """
    from tokrag_model.args import resolved_args

    return resolved_args(_model_class(cell.method.model), given)


def check_task_data(spec: LeaderboardSpec, cells: list[Cell]) -> None:
    """Refuse a cell's task whose metadata names a data file or folder that does not exist
    (:func:`leaderboards.keys.missing_task_data`: ``questions``, ``corpus``, ``oracle_file``, a ``hub_id`` that is a
    local path; a relative value is read from the working directory, as the task's loader reads it), before any
    model loads or cell folder is made: such a cell would fail only after its model loaded, and its run key would
    leave the file out.

    Raises:
        ConfigError: one line naming the spec, the task, the metadata key, the path, the working directory it was
        resolved against and the fix.
    """
    from .keys import missing_task_data

    seen: set[str] = set()
    for cell in cells:
        if cell.task.task in seen:
            continue
        seen.add(cell.task.task)
        gone = missing_task_data(cell.task.task, spec.include_path, [spec.path.parent])
        if gone:
            g = gone[0]
            if g.key == "corpus" and "/" not in g.value and not Path(g.value).suffix:  # meant as a named corpus
                from retrieval.corpus import check_corpus_path

                try:
                    check_corpus_path(g.value)
                except ConfigError as exc:  # unknown corpus 'nq-wiki12k' (did you mean 'nq-wiki-12k'?) ...
                    raise ConfigError(f"leaderboard spec {spec.path}: task {g.task}: {exc}") from None
            raise ConfigError(f"leaderboard spec {spec.path}: {g.describe()}; {g.fix()}")


def _task_data_problems(spec: LeaderboardSpec, cells: list[Cell], managers: dict[str, Any] | None = None) -> list[str]:
    """``task T: <error>`` for each task of ``cells`` (once per task and contract metadata) whose data the task build
    would refuse, told before any model loads: the checks of ``tokrag eval``
    (:func:`tasks.precheck.check_selected_tasks`: the metadata, a bring-your-own questions file read line by line, a
    corpus's first lines, a ``prebuilt:`` index not cached and not reachable, for a QA family of
    :data:`tasks.sources.FAMILIES` or ``wikitext103_bm25_wiki`` a hub data set that cannot be read offline, and the
    prebuilt index of ``wikitext103_bm25_wiki``), the first problem of each of a task's inputs (its questions, its
    corpus or index: :func:`tasks.precheck.every_problem`), one line each."""
    from tasks.precheck import check_selected_tasks

    problems: list[str] = []
    seen: set[str] = set()
    managers = {} if managers is None else managers
    for cell in cells:
        meta = cell.task_metadata()  # without the draw seed (Cell.lm_eval_metadata): the data checks do not depend on it
        once = fingerprint([cell.task.task, meta, cell.gen_kwargs, cell.num_fewshot])
        if once in seen:
            continue
        seen.add(once)
        tm, task = _task_manager(spec, meta, managers), cell.task.task
        try:
            check_selected_tasks(tm, [task], meta, gen_kwargs=dict(cell.gen_kwargs), num_fewshot=cell.num_fewshot)
        except TokragError as exc:  # the spec's num_fewshot key, not lm-eval's flag, which a leaderboard does not take
            for line in getattr(exc, "problems", None) or [str(exc)]:  # several inputs' problems: one line each
                problems.append(f"task {task}: " + " ".join(line.split()).replace("--num_fewshot", "the spec's num_fewshot"))
    return list(dict.fromkeys(problems))  # one line per problem, also for a task of several contracts


def check_task_files(spec: LeaderboardSpec, cells: list[Cell]) -> None:
    """Refuse a task of ``cells`` whose YAML in one of the spec's ``include_path`` folders misses a file lm-eval needs
    beside it (a copied ``nq_oracle_bm25.yaml`` without ``_qa_template`` or ``utils.py``): lm-eval's index skips
    such a copy without a word and ran our task of that name instead, exit 0. The rule is the CLI's
    (:func:`tasks.precheck.check_include_path_tasks`, the one for ``--include_path DIR --tasks NAME``).

    Raises:
        ConfigError: one line naming the spec, then the folder, the YAML, its missing file and what to copy where.
    """
    from tasks.precheck import check_include_path_tasks

    names = list(dict.fromkeys(cell.task.task for cell in cells))
    try:
        check_include_path_tasks(names, [str(p) for p in spec.include_path], spec=True)
    except ConfigError as exc:
        raise ConfigError(f"leaderboard spec {spec.path}: {exc}") from None


def check_spec_data(spec: LeaderboardSpec, cells: list[Cell], managers: dict[str, Any] | None = None) -> None:
    """Refuse a run whose tasks cannot read their data, before its first cell (:func:`_task_data_problems`: what
    ``tokrag eval`` refuses before its model load, and a hub data set that cannot be read offline), so that a bad
    task at the end of a grid stops it at once, not hours in, and ``run --estimate`` stops on it too.

    Raises:
        ConfigError: one line per task with a problem, naming the spec.
    """
    problems = _task_data_problems(spec, cells, managers)
    if problems:
        raise ConfigError(f"leaderboard spec {spec.path}: {len(problems)} problem(s) with the data of its tasks; nothing "
                          "was run:\n  " + "\n  ".join(problems))


def check_model_max_gen_toks(spec: LeaderboardSpec, cells: list[Cell], managers: dict[str, Any] | None = None) -> None:
    """Refuse a cell of a tokrag method (:data:`tokrag_model.methods.METHODS`) whose ``model_args`` set
    ``max_gen_toks`` while its task's generation kwargs (the YAML's ``generation_kwargs`` with the spec's
    ``gen_kwargs`` over them, as lm-eval merges them) set another: the request's value wins (lm-eval's ``hf``), so the
    method refused it only at its first ``generate_until``, after the model load. The rule is the lm-eval CLI's
    (:func:`tasks.precheck.model_max_gen_toks_conflict`, as ``--model_args max_gen_toks``), told in the spec's words;
    a task manager is loaded only for cells that set it (``managers``: :func:`_task_manager`'s, shared with
    :func:`check_spec_data`). Nothing else of the cells is checked here.

    Raises:
        ConfigError: one line naming the spec, the method, the task, both values and the spec's ``gen_kwargs`` to
            set instead.
    """
    from tasks.precheck import model_max_gen_toks_conflict

    from .spec import _tokrag_methods

    ours = _tokrag_methods()
    managers = {} if managers is None else managers
    seen: set[str] = set()
    for cell in cells:
        given = cell.model_args.get("max_gen_toks")
        if given is None or cell.method.model not in ours:
            continue
        meta = cell.task_metadata()
        once = fingerprint([cell.method.model, cell.task.task, meta, cell.gen_kwargs, given])
        if once in seen:
            continue
        seen.add(once)
        conflict = model_max_gen_toks_conflict(_task_manager(spec, meta, managers), [cell.task.task],
                                               {"max_gen_toks": given}, dict(cell.gen_kwargs))
        if conflict is not None:
            where = f"{cell.model_name}/" if cell.model_name else ""  # another spec gen_kwargs: refused by load_spec
            raise ConfigError(
                f"leaderboard spec {spec.path}: method {where}{cell.method.name}: model_args max_gen_toks {given} has "
                f"no effect on task {cell.task.task}: its generation_kwargs set max_gen_toks {conflict[2]}, which wins "
                "as in lm-eval's hf (the model would refuse it at its first generate_until, after the load); set "
                f"gen_kwargs: {{max_gen_toks: {given}}} in the spec (shared or the method's) instead of model_args "
                "max_gen_toks"
            )


def check_generation_only(spec: LeaderboardSpec, cell: Cell, cls: Any, cfg: dict[str, Any]) -> None:
    """Refuse ``cell`` when its method's resolved model arguments ``cfg`` only generate (the class's
    ``generation_only``: :meth:`tokrag_model.base.RAGMethodLM.generation_only`, e.g. ``replug_mode=answer_vote``)
    and its task does not (:func:`leaderboards.spec.task_generates` false: a ``task_output_type`` other than
    ``generate_until``): such a cell failed only at its first request, after the weights loaded. A class without
    ``generation_only`` is not checked.

    Raises:
        ConfigError: one line naming the spec, the cell, the argument, the task's output type and what to do.
    """
    ask = getattr(cls, "generation_only", None)
    arg = ask(cfg) if callable(ask) else None
    if not arg:
        return
    task = cell.task.task
    if task_generates(task, spec.include_path):
        return
    raise ConfigError(
        f"leaderboard spec {spec.path}: cell {cell.cell_id}: model argument {arg} of method {cell.method.name} only "
        f"generates (generate_until requests), but task {task} has output_type "
        f"{task_output_type(task, spec.include_path)} (it scores, it "
        f"does not generate), so the cell would fail at its first request after the model load; drop {arg} for "
        f"this task (the default {arg.partition('=')[0]} scores), or leave {task} out of this method's cells (a "
        "models: entry with its own tasks: or methods: list)")


def check_cell_args(spec: LeaderboardSpec, cells: list[Cell]) -> None:
    """Check every cell's model arguments against its method's declared schema before anything runs, so that
    a typo in the last method of a grid (``rat: 2``) stops the run at once instead of after the cells before it.

    Only methods that declare a schema (the tokrag models: ``METHOD`` and ``EXTRA_ARGS``) are checked here;
    nothing is loaded. Their ``pretrained`` (with ``revision``) must pass
    :func:`tokrag_model.loading.check_model_available` (what the load would certainly refuse, told without a
    conversion or a download: an empty value, a path that does not exist, a folder without a valid ``config.json``,
    an alias whose package (or a chunk package) is not installed, a ``revision`` with an alias, offline a hub id not
    in the local Hugging Face cache; online a hub id passes); a cell under the contract's ``apply_chat_template: true``
    must have a model with a chat template, where its files tell it (:func:`check_chat_templates`); their ``dtype``
    is checked by the schema's caster
    (:func:`tokrag_model.args.to_dtype`, the load's own rule: ``float64`` failed only at its cell's load). A method with a ``check_shape`` (``tokrag``: its ``layer``, ``js_min_layer``,
    ``layer_fallback``, ``rag_top``, ``pure_top`` and ``preset``) is checked against the model's
    depth and vocabulary size read from its config (:func:`model_shape`, once per model; skipped where they are
    not known without loading weights). A method whose arguments only generate (``generation_only``:
    ``replug_mode=answer_vote``, ``selection=rank``) is refused on a task that does not generate
    (:func:`check_generation_only`), and a model argument ``max_gen_toks`` that its task's generation kwargs
    override is refused (:func:`check_model_max_gen_toks`). First, the cells' task YAMLs must have the files they
    include beside them (:func:`check_task_files`) and name only existing data files (:func:`check_task_data`); then
    their data must be readable (:func:`check_spec_data`, every task of ``cells``); last, ``rag-selfrag-filter`` is
    refused a rolling task whose docs lack its ``query_field`` (:func:`check_lm_questions`).
    Raises ConfigError naming the spec, the method and the argument (with a did-you-mean), or the task, the
    metadata key and the missing path.
    """
    from lm_eval.api.model import LM

    from tokrag_model.args import merge_lm_eval_flags
    from tokrag_model.loading import ModelShape, check_model_available, model_shape

    check_task_files(spec, cells)
    check_task_data(spec, cells)
    classes: dict[str, Any] = {}
    for cell in cells:  # an importable class that is no lm-eval model failed only after --estimate, at its load
        if cell.method.model in classes:
            continue
        try:
            cls = classes[cell.method.model] = _model_class(cell.method.model)
        except (ConfigError, ValueError) as exc:
            raise ConfigError(f"leaderboard spec {spec.path}: method {cell.method.name}: {exc}") from None
        if not (isinstance(cls, type) and issubclass(cls, LM)):
            raise ConfigError(f"leaderboard spec {spec.path}: method {cell.method.name}: model {cell.method.model!r} is "
                              f"{cls!r}, not an lm-eval model (a subclass of lm_eval.api.model.LM); give an lm-eval "
                              "registry name or 'package.module:Class' of an LM subclass")
    resolved: dict[str, dict[str, Any] | None] = {}  # the resolved arguments of each distinct (method, model, args)
    available: set[tuple[Any, Any]] = set()  # (pretrained, revision) that passed check_model_available
    shapes: dict[tuple[str, str | None], ModelShape | None] = {}
    with_args: list[tuple[Cell, dict[str, Any]]] = []  # each cell of a method with a schema, its resolved arguments
    for cell in cells:
        extra = {"batch_size": cell.batch_size, "device": cell.device}  # merged as make_model's constructor call does
        given = merge_lm_eval_flags(cell.method.name, dict(cell.model_args), extra, warn=False)
        key = fingerprint([cell.method.name, cell.method.model, given])
        if key in resolved:  # checked with another task: only the task's output type is new
            if resolved[key] is not None:
                check_generation_only(spec, cell, classes[cell.method.model], resolved[key])
                with_args.append((cell, resolved[key]))
            continue
        try:
            cfg = resolved[key] = resolved_model_args(cell, given)
            if cfg is not None:  # pretrained=/nonexistent failed only at its cell's load, after the other models' cells
                at = (cfg.get("pretrained"), cfg.get("revision"))
                if at not in available:  # an alias not installed, offline a hub id not cached: the load's own line
                    check_model_available(*at)
                    available.add(at)
            check_shape = getattr(classes[cell.method.model], "check_shape", None)
            if cfg is not None and callable(check_shape):  # layer=99, rag_top=60000 failed only at their cell's load
                model = (str(cfg["pretrained"]), cfg.get("revision"))
                if model not in shapes:
                    shapes[model] = model_shape(*model)
                if shapes[model] is not None:
                    check_shape(cfg, shapes[model].n_layers, shapes[model].vocab_size)
        except (ConfigError, OfflineError) as exc:  # OfflineError: offline, a hub id not in the local cache
            where = f"{cell.model_name}/" if cell.model_name else ""
            raise type(exc)(f"leaderboard spec {spec.path}: method {where}{cell.method.name}: {exc}") from None
        if cfg is not None:  # answer_vote / selection=rank on a scoring task failed at its first request, after the load
            check_generation_only(spec, cell, classes[cell.method.model], cfg)
            with_args.append((cell, cfg))
    check_chat_templates(spec, with_args, classes)
    managers: dict[str, Any] = {}  # one task manager per contract metadata for the checks (:func:`_task_manager`)
    check_model_max_gen_toks(spec, cells, managers)
    check_spec_data(spec, cells, managers)
    check_lm_questions(spec, with_args, classes, managers)


def device_unavailable(device: str) -> str | None:
    """Why this machine cannot run ``device`` (a device string torch knows; the spec's load refused the others), as
    one clause without the fix; None where it can (``cpu``, and any device whose backend says it is there).

    ``cuda`` / ``cuda:N``: ``torch.cuda.is_available()``, and ``N`` below ``torch.cuda.device_count()``; ``mps``:
    ``torch.backends.mps.is_available()`` (both asked by :func:`tokrag_model.loading.backend_unavailable`, the check
    ``resolve_device`` and ``lm_eval --device cuda:0``'s pre-load check make too); another type torch knows (``xpu``, ``npu``, ``hpu``):
    :func:`tokrag_model.args.to_device`'s rule (its backend's ``is_available()``). Loads no model.
    """
    import torch

    from tokrag_model.args import to_device
    from tokrag_model.loading import backend_unavailable

    try:
        dev = torch.device(device.strip())
    except (RuntimeError, ValueError):
        return None  # not a device name: the spec's load and the model's argument check name it
    if dev.type == "cpu":
        return None
    if dev.type in ("cuda", "mps"):
        why = backend_unavailable(dev.type)
        if why is not None or dev.type == "mps":
            return why
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            have = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            return f"this machine has {count} CUDA device{'' if count == 1 else 's'} ({have}), no {dev}"
        return None
    try:
        to_device(device)
    except ValueError as exc:
        return re.sub(r"; use cpu$", "", str(exc))
    return None


def cell_device(cell: Cell) -> Any:
    """The device the cell's model gets: its ``model_args`` ``device`` where given (a method's ``specific``, the one
    place a spec may give it; not None: it wins, as
    :func:`tokrag_model.args.merge_lm_eval_flags` merges it in :func:`make_model`), else the spec's ``device:`` (its
    ``shared:`` or its model's ``models[i].shared:``; ``cpu`` where neither gives one). Imports no torch."""
    own = cell.model_args.get("device")
    return own if own is not None else cell.device


def check_cell_devices(spec: LeaderboardSpec, cells: list[Cell]) -> None:
    """Refuse, before any model loads and any cell starts, a device of ``cells`` that this machine cannot run
    (:func:`device_unavailable`): the device each cell's model gets, the spec's ``device:`` (its ``shared:`` or its
    model's ``models[i].shared:``) unless the cell's ``model_args`` name one (a method's ``specific: {device: ...}``,
    merged into them; they win, as :func:`tokrag_model.args.merge_lm_eval_flags` merges them). Before this, a spec's
    ``device: cuda:0`` on a machine without CUDA ran its cells on CPU without a word
    (:func:`tokrag_model.loading.resolve_device`'s fallback for lm-eval's default) and ``cuda`` failed at its cell's
    load. Only ``tokrag leaderboard run`` (its main process, each ``--jobs`` helper, a resumed run) calls this; the spec's load checks only what does not depend on the machine
    (:func:`leaderboards.spec._check_device`), so ``report``, ``rescore``, ``check`` and ``run --estimate`` of a spec
    written for another machine work here.

    Raises:
        ConfigError: one line ``leaderboard spec <path>[:<line>]: <where> '<device>': <reason>; set device: cpu in the
            spec, or run it on a machine with <type>`` (``where``: ``shared.device``, ``models[i].shared.device`` or
            ``methods[i].specific.device``, whose fix is ``set device: cpu in its specific``; ``<line>``
            where the spec file has it; ``<type>``: ``cuda``, ``mps``, ``xpu``, ...).
    """
    from .spec import _yaml_line

    whole = spec.whole or spec
    seen: set[tuple[str | None, str | None, str]] = set()  # (model, method where model_args name it, device)
    for cell in cells:
        own = cell.model_args.get("device")
        device = cell_device(cell)
        at_key = (cell.model_name, cell.method.name if own is not None else None, device)
        if not isinstance(device, str) or at_key in seen:
            continue
        seen.add(at_key)
        reason = device_unavailable(device)
        if reason is None:
            continue
        kind = device.strip().split(":")[0]
        fix = (f"set device: cpu in the spec, or run it on a machine with {kind}" if own is None
               else f"set device: cpu in its specific (or drop it there for the contract's device), or run it on a "
                    f"machine with {kind}")
        line, where = None, "shared.device"
        if own is not None:  # a method's printed deviation: the spec's load refuses a device in any model_args
            index = next((i for i, m in enumerate(whole.methods) if m.name == cell.method.name), None)
            where = (f"methods[{index}].specific.device" if index is not None
                     else f"method {cell.method.name}: specific device")
            line = _yaml_line(spec.path, where) if index is not None else None
        else:
            index = next((i for i, m in enumerate(whole.models) if m.name == cell.model_name), None)
            if index is not None and _yaml_line(spec.path, f"models[{index}].shared.device") is not None:
                where = f"models[{index}].shared.device"
            line = _yaml_line(spec.path, where)
        at = f"{spec.path}:{line}" if line is not None else str(spec.path)
        raise ConfigError(f"leaderboard spec {at}: {where} {device!r}: {reason}; {fix}")


def _contract_where(cell: Cell) -> str:
    """Where the contract of ``cell`` is written: the spec's ``shared:`` or, for a spec with ``models:``, its model's
    entry (whose ``shared:`` is merged over the spec's)."""
    return (f"model {cell.model_name}'s contract (its shared: under models:, or the spec's shared:)" if cell.model_name
            else "the contract (shared:)")


def is_rag_method(cls: Any) -> bool:
    """Whether ``cls`` is a tokrag method class (a subclass of :class:`tokrag_model.base.RAGMethodLM`), asked without
    importing ``tokrag_model.base`` (which imports torch and lm-eval's model utilities: about 1.3 of the 2.4 CPU-s of
    a toy spec's ``--estimate`` on a 2-core machine, s61 e1): such a class exists only once that module is imported,
    so where it is not, ``cls`` (a user's ``LM``, the test ToyLM) is none and ``run --estimate`` of its spec imports
    no torch."""
    base = sys.modules.get("tokrag_model.base")
    return base is not None and isinstance(cls, type) and issubclass(cls, base.RAGMethodLM)


def check_chat_templates(spec: LeaderboardSpec, with_args: list[tuple[Cell, dict[str, Any]]],
                         classes: dict[str, Any]) -> None:
    """Refuse a cell of a tokrag method (a :class:`tokrag_model.base.RAGMethodLM`, ``classes[cell.method.model]``)
    that applies the chat template (the contract's ``apply_chat_template: true``; a plain-text task's cells do not)
    while its model's tokenizer has none, or has named templates without a ``"default"``, where the model's files
    tell it without a load: the reading of ``lm_eval --apply_chat_template``'s pre-load check
    (:func:`tokrag_model.base.check_chat_template_before_load`: :func:`tokrag_model.loading.has_chat_template`, then
    :func:`tokrag_model.loading.chat_template_before_load`), once per model (``pretrained``, ``revision``, resolved
    arguments ``with_args``). ``gemma-3-270m`` (a base model) was refused only inside its first cell, after its
    conversion and load (338 s on the project's machine), and after any cells before it; the answer for an alias
    not converted yet is its pinned GGUF's (``ALIASES[...]["chat_template"]``), nothing is converted.

    Raises:
        ConfigError: one line naming the spec, the method, the contract's ``apply_chat_template: true`` and the fix.
    """
    from tokrag_model.loading import chat_template_before_load, has_chat_template, select_chat_template

    seen: set[tuple[Any, Any]] = set()
    for cell, cfg in with_args:
        cls = classes.get(cell.method.model)
        if not cell.apply_chat_template or not is_rag_method(cls):
            continue
        pretrained, revision = str(cfg.get("pretrained")), cfg.get("revision")
        revision = str(revision) if revision else None
        if (pretrained, revision) in seen:
            continue
        seen.add((pretrained, revision))
        where = f"{cell.model_name}/" if cell.model_name else ""
        head = (f"leaderboard spec {spec.path}: method {where}{cell.method.name}: apply_chat_template: true in "
                f"{_contract_where(cell)}")
        if has_chat_template(pretrained, revision) is False:
            own = "" if cell.model_name else ", or give this model a models: entry of its own with it false"
            raise ConfigError(f"{head}, but the tokenizer of pretrained={pretrained!r} has no chat template (a base "
                              "model?); set apply_chat_template: false in that contract (with prompt: base for a base "
                              f"model){own}")
        template = chat_template_before_load(pretrained, revision=revision)
        if isinstance(template, dict):  # named templates: a leaderboard applies the "default" one
            try:
                select_chat_template(template, True)
            except ValueError as exc:
                raise ConfigError(f"{head}, with pretrained={pretrained!r}: {' '.join(str(exc).split())}") from None


def check_lm_questions(spec: LeaderboardSpec, with_args: list[tuple[Cell, dict[str, Any]]], classes: dict[str, Any],
                       managers: dict[str, Any] | None = None) -> None:
    """Refuse a cell of ``rag-selfrag-filter`` (its class or a subclass, ``classes[cell.method.model]``) on a
    ``loglikelihood_rolling`` task whose docs carry passages but no ``query_field`` (the cell's resolved model
    arguments, ``with_args``): the model refused it at its first request, after the load and the cells before it. The
    rule and the line are the lm-eval CLI's (:func:`tasks.precheck.selfrag_lm_question_refusal`: the task's first
    docs, up to the cell's ``limit``, built by the cell's task manager, ``managers``), told after the spec and method.

    Raises:
        ConfigError: one line naming the spec, the method, then the model's refusal (task, doc, query_field).
    """
    from tasks.precheck import _expand_selected, _is_selfrag_filter, selfrag_lm_question_refusal

    managers = {} if managers is None else managers
    seen: set[str] = set()
    for cell, cfg in with_args:
        cls = classes.get(cell.method.model)
        if not _is_selfrag_filter(cls) or task_output_type(cell.task.task, spec.include_path) != "loglikelihood_rolling":
            continue
        meta = cell.task_metadata()
        args = {k: cfg.get(k) for k in ("query_field", "pretrained", "revision", "trust_remote_code")}
        once = fingerprint([cls.METHOD, cell.task.task, meta, args, cell.limit])
        if once in seen:
            continue
        seen.add(once)
        tm = _task_manager(spec, meta, managers)
        why = selfrag_lm_question_refusal(tm, _expand_selected(tm, [cell.task.task]), cls.METHOD, args, cell.limit)
        if why:
            where = f"{cell.model_name}/" if cell.model_name else ""
            raise ConfigError(f"leaderboard spec {spec.path}: method {where}{cell.method.name}: {why}")


def check_distinct_methods(spec: LeaderboardSpec, cells: list[Cell]) -> None:
    """Refuse two methods that would run the same configuration within one model's contract.

    A labelled variant whose own arguments are missing or ignored (a calibrated row without its preset, a
    top-2 row whose ``top_m`` the threshold filter ignores) would otherwise be published as a second row
    with the base method's numbers. Cells are compared on :meth:`Cell.config` with the method's name left
    out and, for methods that declare a schema, its model arguments resolved (defaults filled in), so
    ``{}`` and ``{selection: threshold}`` (the default) compare equal. A layer argument of a method with a
    ``check_shape`` (``tokrag``'s ``layer``, ``js_min_layer``, ``layer_fallback``) is compared as the decoder layer
    index it selects (:func:`_layer_indices`: ``layer: 0.625`` and ``layer: 19`` are one layer of the 30-layer
    SmolLM2) where the model's depth is read from its config without loading weights (``model_shape``); for a
    model whose depth only a load would tell, layer arguments are compared as written. Nothing is loaded.

    Raises:
        ConfigError: naming the spec, the model and both methods (and the layer arguments that select one layer).
    """
    seen: dict[str, tuple[Cell, dict[str, tuple[Any, int]]]] = {}
    shapes: dict[tuple[str, str | None], Any] = {}
    for cell in cells:
        try:
            args = resolved_model_args(cell, dict(cell.model_args)) or dict(cell.model_args)
        except ConfigError:
            args = dict(cell.model_args)  # check_cell_args names it
        layers = _layer_indices(cell, args, shapes)
        cfg = {**cell.config(), "model_args": {**args, **{k: idx for k, (_, idx) in layers.items()}},
               "model_name": cell.model_name}
        cfg.pop("method")
        key = fingerprint(cfg)
        other, other_layers = seen.setdefault(key, (cell, layers))
        if other.method.name != cell.method.name:
            where = f" for model {cell.model_name}" if cell.model_name else ""
            depth = getattr(shapes.get((str(args.get("pretrained")), args.get("revision"))), "n_layers", None)
            same = [f"{k} {other_layers[k][0]} and {w} are both decoder layer {i} of the model's {depth}"
                    for k, (w, i) in sorted(layers.items()) if k in other_layers and other_layers[k][0] != w]
            raise ConfigError(
                f"leaderboard spec {spec.path}: methods {other.method.name!r} and {cell.method.name!r} run the same "
                f"configuration{where} (model {cell.method.model}, same resolved model arguments"
                + (f"; {'; '.join(same)}" if same else "") + "), so their rows would "
                f"be the same numbers; give {cell.method.name!r} its own model_args (or the model's method_args)"
            )



def _declared_chat(spec: LeaderboardSpec, cell: Cell) -> str:
    """The chat settings ``cell``'s model's contract declares, as :meth:`leaderboards.spec.LeaderboardSpec.cells`
    resolves them (``apply_chat_template``, ``system_instruction``, ``fewshot_as_multiturn``; JSON text), whether or
    not the cell uses them: a plain-text or ``loglikelihood_rolling`` cell runs without them
    (:func:`leaderboards.spec.task_unchatted`), so its run key does not tell a chat contract from a plain one."""
    sh = cell.model.shared if cell.model is not None else spec.shared
    return json.dumps([bool(sh.get("apply_chat_template", False)), sh.get("system_instruction"),
                       bool(sh.get("fewshot_as_multiturn", True))], default=str)


def check_distinct_models(spec: LeaderboardSpec, keyed: list[tuple[Cell, str, Any]]) -> None:
    """Refuse a model of the spec every cell of which would run in the run folder of another model's cell.

    ``keyed``: ``(cell, run key, ...)`` of every cell (:func:`leaderboards.keys.cell_keys`). A cell's run key holds
    its configuration but not its model's name, so two ``models:`` entries with the same weights and contract (an
    entry copied and renamed, its ``pretrained`` left as it was) shared their run folders: the second model's cells
    were served the first one's runs (``by_other``) and the report printed a second model section with the first
    model's numbers under the other name. Some shared folders are right and stay allowed: a chat and a plain contract
    over one model's weights (or two contracts that differ only in ``system_instruction`` or ``fewshot_as_multiturn``)
    share the cells of a plain-text or ``loglikelihood_rolling`` task, which run without the chat template
    (:func:`leaderboards.spec.task_unchatted`), so two models are compared by each cell's run key together with the
    chat settings its model's contract declares (:func:`_declared_chat`): such models are never refused, even when
    every task of the spec (or of one of them) is such a task and both sections hold the same, right, numbers. Checked
    by ``run`` and ``run --estimate`` before any cell starts; nothing is loaded.

    Raises:
        ConfigError: one line naming the spec, both models, a pair of their cells and the shared run key.
    """
    by_model: dict[Any, dict[tuple[str, str], Cell]] = {}
    for cell, key, *_ in keyed:
        by_model.setdefault(cell.model_name, {}).setdefault((key, _declared_chat(spec, cell)), cell)
    names = list(by_model)
    for j, later in enumerate(names):
        for earlier in names[:j]:
            if set(by_model[later]) <= set(by_model[earlier]):
                orig, dup = earlier, later
            elif set(by_model[earlier]) <= set(by_model[later]):  # a copy limited to some of the tasks or methods
                orig, dup = later, earlier
            else:
                continue
            (key, chat), cell = next(iter(by_model[dup].items()))
            other = by_model[orig][(key, chat)]
            raise ConfigError(
                f"leaderboard spec {spec.path}: models {orig!r} and {dup!r} run the same configuration (every "
                f"cell of {dup!r} has the run key of a cell of {orig!r}: {other.cell_id} and {cell.cell_id} "
                f"have {key}; the same weights, contract and method arguments), so {dup!r}'s section would be "
                f"{orig!r}'s numbers under another name; give {dup!r} its own shared.model_args.pretrained "
                "(or another contract), or drop one of the two models")

_LAYER_ARGS = ("layer", "js_min_layer", "layer_fallback")
"""The layer arguments (a fraction of the depth in (0, 1) or a layer index) of a method with a ``check_shape``."""


def _layer_indices(cell: Cell, args: dict[str, Any], shapes: dict[tuple[str, str | None], Any]
                   ) -> dict[str, tuple[Any, int]]:
    """``{argument: (value as written, decoder layer index)}`` for the cell's layer arguments (:data:`_LAYER_ARGS`,
    resolved as the load resolves them: :func:`tokrag_model.methods.tokrag.resolve_layer`) when its method has a
    ``check_shape`` and the model's depth can be read from its config without loading weights
    (:func:`tokrag_model.loading.model_shape`, memoised in ``shapes`` per (pretrained, revision)); empty otherwise.
    A value that is not a layer (``dynamic``) or lies outside the model is left out (:func:`check_cell_args` names
    the latter). Nothing is loaded or raised."""
    try:
        cls = _model_class(cell.method.model)
    except (ConfigError, ValueError):
        return {}
    if not callable(getattr(cls, "check_shape", None)) or not any(k in args for k in _LAYER_ARGS):
        return {}
    from tokrag_model.loading import model_shape
    from tokrag_model.methods.tokrag import resolve_layer

    model = (str(args.get("pretrained")), args.get("revision"))
    if model not in shapes:
        shapes[model] = model_shape(*model)
    n_layers = getattr(shapes[model], "n_layers", None)
    if not isinstance(n_layers, int) or n_layers < 1:
        return {}
    out: dict[str, tuple[Any, int]] = {}
    for k in _LAYER_ARGS:
        v = args.get(k)
        if v is None or isinstance(v, (str, bool)):
            continue
        try:
            out[k] = (v, resolve_layer(v, n_layers, k))
        except (ValueError, TypeError):
            continue
    return out


def _lm_eval_flags(cell: Cell) -> dict[str, Any]:
    """The spec's shared ``batch_size``/``device`` as lm-eval's ``--batch_size``/``--device`` (None: not given)."""
    extra = {"batch_size": cell.batch_size, "device": cell.device}
    return {k: v for k, v in extra.items() if v is not None}


def model_flags(cell: Cell) -> dict[str, Any]:
    """The ``batch_size`` and ``device`` the cell's model gets (None: neither gives one): its ``model_args``' where
    given, else the spec's shared ones, merged by :func:`tokrag_model.args.merge_lm_eval_flags` as :func:`make_model`
    merges them. :func:`run_cell` hands these to ``lm_eval.simple_evaluate``, which only records them in
    ``results.json``'s ``config`` (the model is built already); before s61 r2 it recorded the spec's, so a cell of
    ``hf`` or ToyLM whose ``model_args: {device: cpu}`` won over ``device: cuda`` read as a CUDA run in its compute
    setting (:func:`leaderboards.provenance_view.compute_setting`: ``cuda GPU not recorded``). Loads no model."""
    from tokrag_model.args import merge_lm_eval_flags

    merged = merge_lm_eval_flags(cell.method.model, dict(cell.model_args), _lm_eval_flags(cell), warn=False)
    return {"batch_size": merged.get("batch_size"), "device": merged.get("device")}


def _model_batch_size(cell: Cell) -> int:
    """The batch size the cell's model runs at (:func:`model_flags`, read by :func:`tokrag_model.args.to_batch_size`:
    ``auto`` / ``auto:N`` are 1), of which :func:`run_cell`'s journal chunk is ``progress_chunk`` batches; the spec's
    ``batch_size:`` where the model's own cannot be read so (a value only a user's ``LM`` takes). Before s61 r2 the chunk
    followed the spec's ``batch_size:`` alone, so a cell whose ``model_args: {batch_size: 4}`` won over the default 1
    was handed chunks of ``progress_chunk`` requests (``progress_chunk: 1``: one request a call, never a batch of 4)."""
    from tokrag_model.args import to_batch_size

    try:
        return to_batch_size(model_flags(cell)["batch_size"])
    except ValueError:
        return max(1, cell.batch_size)


def make_model(cell: Cell):
    """Instantiate the cell's lm-eval model: ``cls.create_from_arg_obj(args, {})``, ``args`` the cell's
    ``model_args`` merged with the spec's shared ``batch_size``/``device`` (lm-eval's ``--batch_size``/``--device``)
    by :func:`tokrag_model.args.merge_lm_eval_flags`: a key the ``model_args`` give wins (logged where the shared one
    differs), for every model class alike. The tokrag methods' own ``create_from_arg_obj`` merged so already, while
    lm-eval's (``hf``, a user's ``LM`` subclass) passed the key twice: ``model_args: {device: cpu}`` failed inside the
    cell with ``TypeError: ... got multiple values for keyword argument 'device'`` (the spec's ``device`` defaults to
    ``cpu``, so it is always given), although :func:`check_cell_devices` already checked that device as the one that
    wins. Since s61 d1 such a key comes from a method's ``specific`` alone (:func:`_built_model_args`)."""
    return _model_class(cell.method.model).create_from_arg_obj(_built_model_args(cell), {})


def _built_model_args(cell: Cell) -> dict[str, Any]:
    """The keyword arguments :func:`make_model` and :func:`model_over` build the cell's model with: its ``model_args``
    merged with the spec's shared ``batch_size``/``device`` (:func:`_lm_eval_flags`) by
    :func:`tokrag_model.args.merge_lm_eval_flags`, the ``model_args``' winning. The spec's load refuses both keys in
    any ``model_args`` (:func:`leaderboards.spec._refuse_model_flags`), so one there is a method's ``specific``, its
    printed deviation: logged at INFO as ``cell <cell id>: method <name>'s specific batch_size=2 over the contract's
    batch_size=4 (its printed deviation)``. Before s61 rt the merge logged lm-eval's WARNING, ``... (lm-eval's
    --batch_size, or a leaderboard spec's shared batch_size) is overridden by model_args batch_size=2``, naming
    ``model_args``, where the spec's load refuses it. Raises nothing."""
    from tokrag_model.args import merge_lm_eval_flags

    flags = _lm_eval_flags(cell)
    for key, value in flags.items():
        own = cell.model_args.get(key)
        if own is not None and str(own) != str(value):
            log.info("cell %s: method %s's specific %s=%s over the contract's %s=%s (its printed deviation)",
                     cell.cell_id, cell.method.name, key, own, key, value)
    return merge_lm_eval_flags(cell.method.model, dict(cell.model_args), flags, warn=False)


_LOAD_ARGS = ("pretrained", "dtype", "device", "revision", "trust_remote_code", "weight_layout")
"""The model arguments :class:`tokrag_model.base.RAGMethodLM` passes to ``Backbone.load``, in its order."""


def backbone_key(cell: Cell) -> dict[str, Any] | None:
    """What the cell's model would load its weights with, where the runner may build it over an already loaded
    :class:`tokrag_model.base.Backbone` instead (:func:`model_over`): the arguments ``RAGMethodLM.__init__`` passes
    to ``Backbone.load`` (:data:`_LOAD_ARGS`, as parsed; ``device`` resolved as the load resolves it, CUDA
    unavailable -> ``cpu``) plus the resolved ``batch_invariant``. Two cells with equal keys get equal backbones.
    ``batch_invariant=auto`` resolves by the model's own rule (:func:`tokrag_model.decoder.auto_batch_invariant`:
    true on CPU for ``dtype=float32`` only), so a bfloat16 CPU cell's key says false, as its model records (with
    true here, :func:`_built_as_keyed` failed and every such cell of a grid loaded the weights again);
    with ``dtype=auto`` the weights' dtype is the checkpoint's, not known before the load: the key's
    ``batch_invariant`` is None, and :func:`_built_as_keyed` checks the loaded model against the rule instead.

    ``batch_invariant`` is in the key because it is the one thing a method changes on the model it is built over
    (``tokrag_model.decoder.MultiContextDecoder``): with it on, the model is switched to the row-wise attention
    implementation (``config._attn_implementation`` renamed, attention functions registered) and every
    ``nn.Linear`` gets a oneDNN-prepacked weight copy and a patched ``forward``. Both are idempotent and meant to
    leave the model as it was for callers without row spans, but a model so changed is not handed to a method
    that would get a fresh, unchanged one (``batch_invariant=false``); with the flag in the key it never is.
    Nothing else is changed on the model or the tokenizer (audited in ``tokrag_model/base.py``, ``decoder.py``,
    ``loading.py``, ``methods/*.py``): the weights' layout is set once, by the load; the tokenizer only encodes,
    decodes and renders chats; ``generation_config`` and the config are only read; no hooks are registered; the
    methods' caches (token texts, Tok-RAG's token classes, the filter's critic cache) live on the method instance,
    and the packed products are switched on only inside a ``try``/``finally`` block.

    Returns None (the cell's model is built by :func:`make_model`, a full load, as before) for a model that is
    not a ``RAGMethodLM`` (lm-eval's ``hf``, a user's class), a ``RAGMethodLM`` subclass defined outside
    ``tokrag_model.methods`` (the audit above covers ours only: a user's ``setup()`` may add an adapter, a hook or
    change ``padding_side`` on the shared model, and the next cells would run on that model while recording the
    plain one), a subclass with its own ``__init__`` or
    ``create_from_arg_obj`` (what it does with the arguments is not known here), and under a data-parallel
    launcher (``WORLD_SIZE`` > 1: each process's device is the launcher's).

    Raises:
        ConfigError: from :func:`tokrag_model.args.parse_args`, as the model's own constructor would.
    """
    from tokrag_model.args import COMMON_ARGS, merge_lm_eval_flags, parse_args
    from tokrag_model.base import RAGMethodLM
    from tokrag_model.decoder import auto_batch_invariant
    from tokrag_model.distributed import world_size_from_env
    from tokrag_model.loading import dtype_name, resolve_device

    cls = _model_class(cell.method.model)
    if not (isinstance(cls, type) and issubclass(cls, RAGMethodLM)) or not cls.__module__.startswith(_SHAREABLE_MODULE) \
            or cls.__init__ is not RAGMethodLM.__init__ \
            or getattr(cls.create_from_arg_obj, "__func__", None) is not RAGMethodLM.create_from_arg_obj.__func__ \
            or world_size_from_env() > 1:
        return None
    given = merge_lm_eval_flags(cls.METHOD, dict(cell.model_args), _lm_eval_flags(cell), warn=False)
    cfg = parse_args(cls.METHOD, {**COMMON_ARGS, **cls.EXTRA_ARGS}, given)
    key = {k: cfg[k] for k in _LOAD_ARGS}
    key["device"] = resolve_device(cfg["device"])
    key["batch_invariant"] = cfg["batch_invariant"]
    if cfg["batch_invariant"] == "auto":  # None: the checkpoint's dtype (dtype=auto), known after the load only
        dtype = dtype_name(cfg["dtype"])  # None: not a dtype (the load refuses it)
        key["batch_invariant"] = None if dtype in (None, "auto") else auto_batch_invariant(key["device"], dtype)
    return key


_SHAREABLE_MODULE = "tokrag_model.methods."  # the audited methods: a model built over a shared Backbone only for these


def holds_torch(obj: Any, depth: int = 6) -> bool:
    """Whether ``obj`` (a model a leaderboard run is done with) holds a ``torch.nn.Module`` or ``torch.Tensor`` within
    ``depth`` levels of attributes (``__dict__``/``__slots__``) and container items (dict values, lists, tuples,
    sets), walked breadth first: a tokrag method's ``backbone.model`` (level 2), lm-eval's ``hf`` ``_model`` (1), a
    user's wrapper a few levels further. The run collects garbage
    when it drops such a model (its packed Linear forwards, :func:`tokrag_model.decoder.pack_linear_weights`, are
    reference cycles, freed only by a collection) and not for one without (a user's model of no torch object, the
    tests' ToyLM: a full collection took ~0.18 s of CPU a model switch in a pytest process). False when torch was
    never imported. Raises nothing."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    kinds = (torch.nn.Module, torch.Tensor)
    seen: set[int] = set()
    level = [obj]
    for _ in range(depth + 1):
        nxt: list = []
        for o in level:
            if isinstance(o, kinds):
                return True
            if isinstance(o, (str, bytes, bytearray, int, float, complex, bool, type(None), type)) or id(o) in seen:
                continue
            seen.add(id(o))
            if isinstance(o, dict):
                nxt += list(o.values())
            elif isinstance(o, (list, tuple, set, frozenset)):
                nxt += list(o)
            else:
                try:
                    nxt += list(vars(o).values())
                except TypeError:  # no __dict__
                    pass
                for name in getattr(type(o), "__slots__", ()):
                    nxt.append(getattr(o, name, None))
        level = nxt
    return False


def _built_as_keyed(lm, key: dict[str, Any]) -> bool:
    """Whether ``lm`` (a fresh :func:`make_model` of a cell with :func:`backbone_key` ``key``) recorded the key's
    values: its backbone is kept for the next cells only then (a constructor that came to load otherwise is not
    trusted with another's backbone). A key's ``batch_invariant`` of None (``dtype=auto``) is compared with the rule
    (:func:`tokrag_model.decoder.auto_batch_invariant`) applied to the loaded weights: every cell of that key then
    resolves the same over them."""
    from tokrag_model.decoder import auto_batch_invariant, non_float32_linear_dtype

    cfg = getattr(lm, "resolved_config", None) or {}
    device = getattr(getattr(lm, "backbone", None), "device", None)
    if device != key["device"]:
        return False
    want = dict(key)
    if want["batch_invariant"] is None:
        model = getattr(lm, "model", None)
        if model is None:
            return False
        want["batch_invariant"] = auto_batch_invariant(device, non_float32_linear_dtype(model))
    return all(cfg.get(k) == want[k] for k in (*_LOAD_ARGS, "batch_invariant") if k not in ("device", "weight_layout"))


def model_over(cell: Cell, backbone):
    """The cell's model (a ``RAGMethodLM``, :func:`backbone_key` not None) built over ``backbone`` instead of
    loading one: the constructor call of :func:`make_model` with ``backbone=`` added. Not ``with_backbone``, which
    replaces ``pretrained`` by the backbone's folder: the resolved config (in results and provenance) keeps the
    cell's ``pretrained`` as given, as a fresh load records it."""
    cls = _model_class(cell.method.model)
    return cls(backbone=backbone, **_built_model_args(cell))


_STAT_KEYS = ("forward_passes", "generated_tokens", "prompt_tokens", "branch_tokens")
_REQUEST_TYPES = ("generate_until", "loglikelihood", "loglikelihood_rolling")


def _stats(lm) -> dict[str, int]:
    st = getattr(lm, "stats", None) or {}
    return {k: int(st.get(k, 0)) for k in _STAT_KEYS}


# --------------------------------------------------------------------------- the request journal

JOURNAL = "journal.jsonl"
"""A running cell's request journal, in its run folder; deleted right after ``DONE`` is written."""
JOURNAL_SCHEMA = 2  # 2: a header line first (1 had none; such a journal is discarded)
REPLAY_SAFE_ATTR = "JOURNAL_REPLAY_SAFE"
"""The class attribute by which a model declares that its cells may be replayed from a journal (:func:`replay_safe`)."""


def replay_safe(lm) -> bool:
    """True when the model's class declares ``JOURNAL_REPLAY_SAFE = True``: each response depends only on its
    request and on the global random states the journal restores (Python's, NumPy's, torch's), not on state the
    model keeps (its own ``random.Random``, an engine seed, a cache that changes outputs), so a cell can replay
    journaled chunks the model never saw. tokrag's methods declare it (``tokrag_model.base.RAGMethodLM``; ``rag-selfrag-filter``
    keys its critic cache on the doc's whole passage list); lm-eval's models (``hf``, ``vllm``) and a user's
    do not, and their cells keep no journal: an interrupted one is deleted and redone, as before journals."""
    return getattr(type(lm), REPLAY_SAFE_ATTR, False) is True


class _Unjournalable(Exception):
    """A chunk whose responses or appended arguments would not come back from JSON exactly."""


def _is_trace(arg: Any) -> bool:
    """The element a tokrag model appends to ``Instance.arguments`` (``tokrag_model.base._attach_trace``)."""
    return isinstance(arg, dict) and "tokrag_trace" in arg


def _plain_args(req) -> tuple:
    """``req.args`` without the trace elements a model appended: what the task asked."""
    return tuple(a for a in req.args if not _is_trace(a))


def request_fingerprint(request_type: str, req) -> str:
    """SHA-256 (64 hex digits) of what one lm-eval request asks: its type, its arguments without the
    ``tokrag_trace`` element a model appended, its doc, ``doc_id``, ``idx``, ``repeats`` and task name.

    Raises:
        TypeError, ValueError: a doc or argument that JSON cannot order (mixed key types, circular).
    """
    key = [request_type, list(_plain_args(req)), getattr(req, "doc", None), getattr(req, "doc_id", None),
           getattr(req, "idx", None), getattr(req, "repeats", None), getattr(req, "task_name", None)]
    return fingerprint(key, length=64)


def _encode_response(x: Any) -> Any:
    """A response as JSON that :func:`_decode_response` turns back into an equal object of the same type:
    ``str``, ``float`` (exact: JSON floats round-trip), ``bool``, ``int``, ``None``, lists, tuples
    (``{"tuple": [...]}``) and tokrag's ``LogLikelihood`` (``{"float": x, "n_tokens": n}``)."""
    if x is None or type(x) in (bool, str, int, float):
        return x
    if type(x).__name__ == "LogLikelihood" and isinstance(x, float) and isinstance(getattr(x, "n_tokens", None), int):
        return {"float": float(x), "n_tokens": x.n_tokens}
    if type(x) is tuple:
        return {"tuple": [_encode_response(v) for v in x]}
    if type(x) is list:
        return [_encode_response(v) for v in x]
    raise _Unjournalable(f"a response of type {type(x).__name__}")


def _decode_response(x: Any) -> Any:
    if isinstance(x, list):
        return [_decode_response(v) for v in x]
    if isinstance(x, dict):
        if "tuple" in x:
            return tuple(_decode_response(v) for v in x["tuple"])
        from tokrag_model.base import LogLikelihood

        return LogLikelihood(x["float"], x["n_tokens"])
    return x


def _rng_state() -> dict[str, Any]:
    """The global random states lm-eval seeds (Python's ``random``, NumPy's, torch's CPU and, once initialised,
    CUDA generators), as JSON: a sampling model draws from them, so a resumed cell restores them."""
    import numpy as np
    import torch

    py = random.getstate()
    st = np.random.get_state()
    out: dict[str, Any] = {
        "python": [py[0], list(py[1]), py[2]],
        "numpy": [st[0], st[1].tolist(), int(st[2]), int(st[3]), float(st[4])],
        "torch": base64.b64encode(torch.get_rng_state().numpy().tobytes()).decode("ascii"),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = [base64.b64encode(s.numpy().tobytes()).decode("ascii") for s in torch.cuda.get_rng_state_all()]
    return out


def _set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`_rng_state` recorded."""
    import numpy as np
    import torch

    v, internal, gauss = state["python"]
    random.setstate((v, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))

    def tensor(b64: str):
        return torch.frombuffer(bytearray(base64.b64decode(b64)), dtype=torch.uint8).clone()

    torch.set_rng_state(tensor(state["torch"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([tensor(s) for s in state["cuda"]])


def _valid_entry(e: Any) -> bool:
    """A journal line of the shape :meth:`_Journal.record` writes."""
    if not (isinstance(e, dict) and e.get("schema") == JOURNAL_SCHEMA and e.get("type") in _REQUEST_TYPES):
        return False
    fps, resps, extra = e.get("fingerprints"), e.get("responses"), e.get("appended")
    return (isinstance(fps, list) and fps and all(isinstance(f, str) for f in fps)
            and isinstance(resps, list) and isinstance(extra, list) and len(resps) == len(extra) == len(fps)
            and all(isinstance(a, list) for a in extra)
            and isinstance(e.get("stats"), dict) and all(isinstance(e["stats"].get(k), int) for k in _STAT_KEYS)
            and isinstance(e.get("wall_s"), (int, float)) and (e.get("rng") is None or isinstance(e["rng"], dict)))


CHECKSUM = "sha256"
"""The key of a journal chunk line that holds :func:`_entry_checksum` of the line (written by :meth:`_Journal.record`)."""


def _entry_checksum(entry: dict) -> str:
    """SHA-256 (hex, all 64 digits: :func:`retrieval.io.fingerprint`) of a journal chunk line's canonical JSON, its own
    :data:`CHECKSUM` key left out: the same for the line in memory and as read back from the file."""
    return fingerprint({k: v for k, v in entry.items() if k != CHECKSUM}, length=64)


def _verified(entry: dict) -> bool:
    """Whether a journal chunk line carries its own :func:`_entry_checksum` (False for one without: an older runner's,
    which is not replayed: its responses cannot be told from a hand-edited line's)."""
    return entry.get(CHECKSUM) == _entry_checksum(entry)


def _unverified_message(entries: list[dict], index: int) -> str:
    """The WARNING for cutting a journal at its chunk line ``index`` (0-based; line ``index + 2`` of the file) whose
    checksum does not match or is missing: how many lines (chunks) and requests are dropped and computed again, and,
    when lines after it are dropped too, on how many of the dropped lines the checksum is wrong or missing (a count of
    lines, not of requests: a line holds a chunk of one or more requests)."""
    e, rest = entries[index], entries[index:]
    why = ("has no checksum (written by an older runner: not verified)" if CHECKSUM not in e
           else "fails its checksum (edited or damaged after it was written)")
    after = f" and the {len(rest) - 1} line(s) after it" if len(rest) > 1 else ""
    bad = (f"; checksum wrong or missing on {sum(not _verified(x) for x in rest)} of these {len(rest)} lines"
           if len(rest) > 1 else "")
    return (f"the journal's line {index + 2} {why}: it{after} ({len(rest)} chunk(s), "
            f"{sum(len(x['fingerprints']) for x in rest)} request(s){bad}) "
            f"{'are' if len(rest) > 1 else 'is'} dropped and computed again")


def _verified_requests(entries: list[dict]) -> int:
    """The requests of the chunk lines before the first that fails its checksum (:func:`_verified`): what can replay."""
    n = 0
    for e in entries:
        if not _verified(e):
            break
        n += len(e["fingerprints"])
    return n


def _chunk_difference(entry: dict, request_type: str, fps: list[str]) -> str:
    """What differs between a journal line and the chunk of requests in its place, for the log."""
    if entry["type"] != request_type:
        return f"the journal has {entry['type']} requests there, the cell asks {request_type}"
    have = entry["fingerprints"]
    if len(have) != len(fps):
        same = next((i for i, (a, b) in enumerate(zip(have, fps)) if a != b), min(len(have), len(fps)))
        return (f"the journal's chunk has {len(have)} requests, this one {len(fps)}: another progress_chunk or "
                f"batch_size" + (f"; request {same + 1} of the chunk also differs" if same < min(len(have), len(fps)) else ""))
    i = next(i for i, (a, b) in enumerate(zip(have, fps)) if a != b)
    return (f"request {i + 1} of the chunk has another fingerprint: its arguments, doc, doc id, index or repeats "
            f"differ from the journaled one's")


def _valid_header(h: Any) -> bool:
    """A journal's first line of the shape :meth:`_Journal.load` writes."""
    return (isinstance(h, dict) and h.get("schema") == JOURNAL_SCHEMA and isinstance(h.get("header"), dict)
            and isinstance(h.get("attempts"), list) and all(isinstance(a, dict) for a in h["attempts"]))


def _machine(device: Any = None) -> dict[str, Any]:
    """The hardware a cell runs on, as far as it can move a number: ``arch`` (``platform.machine()``), torch's CPU
    kernel capability ``cpu_capability`` (``AVX512``, ``DEFAULT``, ...; left out where torch cannot tell; the values
    :func:`tokrag_model.provenance.compute_environment` records, from its :func:`tokrag_model.provenance.cpu_kernels`:
    its CPU model and thread counts are not needed here) and, when the model's own ``device`` is a CUDA one, ``cuda``: each GPU's name (all of them, not
    just ``device``'s as ``compute_environment``'s ``cuda_device``). Decided from the model, not from whether the
    process has initialised CUDA: a CPU cell after a GPU cell in one process must give the header of the same CPU
    cell run first in a fresh one (else its journal never resumes)."""
    import torch

    from tokrag_model.provenance import cpu_kernels

    kernels = cpu_kernels()
    out: dict[str, Any] = {"arch": kernels["arch"]}
    if kernels["cpu_capability"] is not None:
        out["cpu_capability"] = kernels["cpu_capability"]
    if str(device or "").startswith("cuda") and torch.cuda.is_available():
        out["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return out


def _model_device(lm) -> Any:
    """The device the model computes on: its ``resolved_config['device']``, else its ``device`` attribute."""
    return (getattr(lm, "resolved_config", None) or {}).get("device") or getattr(lm, "device", None)


def _model_threads(lm) -> int:
    """torch's intra-op thread count the model computes with: the one it recorded at load (``lm.machine``'s
    ``torch_num_threads``, :func:`tokrag_model.provenance.compute_environment`; the decoder's MKL probe holds for
    it), else ``torch.get_num_threads()`` now (a model that records none, lm-eval's or a toy)."""
    machine = getattr(lm, "machine", None)
    n = machine.get("torch_num_threads") if isinstance(machine, dict) else None
    if isinstance(n, int) and not isinstance(n, bool):
        return n
    import torch

    return torch.get_num_threads()


def _model_args_text(model_args: dict[str, Any]) -> str:
    """A cell's model arguments as lm-eval's ``--model_args`` text (``k=v,k=v``, keys sorted; lists and dicts as
    compact JSON), for the results' ``config.model_args`` (lm-eval leaves it null for a model object passed to
    ``simple_evaluate``)."""
    def text(v: Any) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        return json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict)) or v is None else str(v)
    return ",".join(f"{k}={text(v)}" for k, v in sorted(model_args.items()))


def _journal_header(key: str, lm) -> dict[str, Any]:
    """What a journal's responses depend on beyond the cell key: the config hash, the model instance's
    ``fingerprint`` (its weights: an unpinned hub id's may move) and ``resolved_config`` (the device and dtype it
    resolved to, ...), :func:`library_versions` (as provenance.json records them) and :func:`_machine` with
    ``torch_num_threads`` (:func:`_model_threads`): on CPU a forward pass's bits depend on the thread count (0870fe6),
    so a cell killed at 1 thread and resumed at 2 recomputes its chunks rather than combining bits of both (a CUDA
    cell too: a needless recompute, never mixed bits). As JSON."""
    device = _model_device(lm)
    return json.loads(canonical_json({
        "config_hash": key, "model_fingerprint": str(getattr(lm, "fingerprint", None)),
        "resolved_config": getattr(lm, "resolved_config", None), "versions": library_versions(),
        "machine": {**_machine(device), "torch_num_threads": _model_threads(lm)},
    }))


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``name old -> new`` for each key of two headers that differs (one level down in a dict: its keys)."""
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out.append(f"{k}: " + ", ".join(f"{s} {a.get(s)!r} -> {b.get(s)!r}" for s in sorted(set(a) | set(b))
                                             if a.get(s) != b.get(s)))
        else:
            out.append(f"{k} {a!r} -> {b!r}")
    return out


def _chunk_lines(data: bytes, pos: int) -> tuple[list[dict], list[bytes], int]:
    """The journal's chunk lines from byte ``pos`` (after its header line) on, up to the first torn (no newline),
    unreadable or misshapen one: ``(entries, raw lines with their newline, byte offset where they end)``."""
    entries: list[dict] = []
    raws: list[bytes] = []
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            break  # torn: killed while the line was written
        try:
            entry = json.loads(data[pos:end])
        except (ValueError, RecursionError):
            break
        if not _valid_entry(entry):
            break
        entries.append(entry)
        raws.append(data[pos:end + 1])
        pos = end + 1
    return entries, raws, pos


def _dropped_lines(data: bytes, pos: int, line: int) -> str:
    """What cutting the journal at byte ``pos`` (its line number ``line``, the header being line 1) drops, for the
    log: the line and why it is not read (torn, unreadable, not a chunk line), and the complete chunk lines after it
    that are dropped with it (their chunks are computed again)."""
    end = data.find(b"\n", pos)
    if end < 0:
        return (f"line {line} (its last {len(data) - pos} bytes) is torn (no end of line: killed while it was written); "
                "ignored, its chunk is computed again")
    try:
        json.loads(data[pos:end])
        why = "not a chunk line"  # JSON of another shape (:func:`_valid_entry`)
    except (ValueError, RecursionError):
        why = "unreadable JSON"
    after = [raw for raw in data[end + 1:].split(b"\n") if raw.strip()]
    chunks, requests = 0, 0
    for raw in after:
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if _valid_entry(entry):
            chunks, requests = chunks + 1, requests + len(entry["fingerprints"])
    tail = (f": its chunk and the {len(after)} line(s) after it (lines {line + 1}-{line + len(after)}: {chunks} complete "
            f"chunk(s), {requests} request(s)) are dropped and computed again" if after
            else ", the last line: its chunk is computed again")
    return f"line {line} is {why} ({end - pos} bytes){tail}"


class _Journal:
    """The request journal of one cell (``<cell_dir>/journal.jsonl``): one JSON line per computed chunk.

    A line holds ``schema``, the request ``type``, the ``fingerprints`` of its requests
    (:func:`request_fingerprint`), their ``responses`` (:func:`_encode_response`), the arguments the model
    ``appended`` to each request (the ``tokrag_trace`` element), the chunk's ``stats`` (deltas of the model's
    ``forward_passes``, ``generated_tokens``, ``prompt_tokens``, ``branch_tokens``: :data:`_STAT_KEYS`), its ``wall_s`` (seconds) and ``rng`` (the
    random states after the chunk, :func:`_rng_state`, or null when the chunk drew nothing) and ``sha256``
    (:func:`_entry_checksum` of the rest). Lines are appended, flushed and fsynced one chunk at a time, so a kill loses at most the chunk in progress.

    The first line is the header: ``schema``, ``header`` (:func:`_journal_header`; a journal whose header differs
    from the new attempt's is discarded) and ``attempts`` (one dict per attempt at the cell, for provenance.json).
    A new attempt at the cell replays the lines in order while each chunk's fingerprints equal the line's:
    the stored responses are returned, the stored arguments re-appended as ``_attach_trace`` does, the random
    states restored, and nothing is computed. From the first chunk that differs on, the journal is cut there
    and every chunk is computed. A line is replayed only if its ``sha256`` (:data:`CHECKSUM`) is the
    :func:`_entry_checksum` of the rest of it: from a line that fails it or has none (an older runner's) on, the
    journal is cut, with one WARNING saying how many lines and requests are computed again. A torn line (killed mid-write) or one of another shape is cut off when loaded,
    with the lines after it.
    ``replayed``, ``stats`` and ``wall_s`` add up what was replayed.
    """

    def __init__(self, path: Path, label: str) -> None:
        self.path, self.label = path, label
        self.entries: list[dict] = []
        self.starts: list[int] = []  # byte offset of each entry's line
        self.end = 0
        self.cursor = 0
        self.writable = True
        self.replayed = 0
        self.stats = dict.fromkeys(_STAT_KEYS, 0)
        self.wall_s = 0.0
        self.attempts: list[dict] = []

    @classmethod
    def off(cls, path: Path, label: str, attempt: dict[str, Any]) -> _Journal:
        """No journal (a model that is not :func:`replay_safe`): nothing is read, written or replayed."""
        j = cls(path, label)
        j.writable = False
        j.attempts = [{**attempt, "journaled_requests": 0}]
        return j

    @classmethod
    def load(cls, path: Path, label: str, header: dict[str, Any], attempt: dict[str, Any]) -> _Journal:
        """Read the valid lines of ``path`` (none when it does not exist) and rewrite it (atomically) as its header
        line, ``attempt`` added to its ``attempts``, and those lines: a torn or unreadable line is dropped with the
        lines after it. A journal whose header is not ``header`` (:func:`_journal_header`: another environment) or
        that has none is discarded with a WARNING naming what differed; its ``attempts`` are kept."""
        j = cls(path, label)
        data = path.read_bytes() if path.is_file() else b""
        raws: list[bytes] = []
        if data:
            nl = data.find(b"\n")
            try:
                old = json.loads(data[:nl]) if nl >= 0 else None
            except (ValueError, RecursionError):
                old = None
            if not _valid_header(old):
                log.warning("%s: the journal has no readable header line (an older runner's, or torn); discarded, "
                            "the cell is computed from the start", label)
            elif old["header"] != header:
                j.attempts = list(old["attempts"])
                log.warning("%s: the journal was written in another environment (%s); discarded, the cell is computed "
                            "from the start", label, "; ".join(_differences(old["header"], header)))
            else:
                j.attempts = list(old["attempts"])
                j.entries, raws, pos = _chunk_lines(data, nl + 1)
                if pos < len(data):  # a torn last line is what a kill leaves; anything else is a damaged journal
                    torn = data.find(b"\n", pos) < 0
                    log.log(logging.INFO if torn else logging.WARNING, "%s: the journal's %s", label,
                            _dropped_lines(data, pos, len(j.entries) + 2))
        j.attempts.append({**attempt, "journaled_requests": _verified_requests(j.entries)})
        head = (json.dumps({"schema": JOURNAL_SCHEMA, "header": header, "attempts": j.attempts}, sort_keys=True,
                           ensure_ascii=False) + "\n").encode("utf-8")
        atomic_write_bytes(path, head + b"".join(raws))
        j.end = len(head)
        for raw in raws:
            j.starts.append(j.end)
            j.end += len(raw)
        return j

    def _cut(self, index: int) -> None:
        """Drop the entries from ``index`` on, in memory and in the file."""
        self.end = self.starts[index] if index < len(self.entries) else self.end
        del self.entries[index:], self.starts[index:]
        with leaderboard_write(self.path), open(self.path, "r+b") as f:
            f.truncate(self.end)
            f.flush()
            os.fsync(f.fileno())

    def plan(self, request_type: str, fingerprints: list[list[str]]) -> int:
        """How many of the chunks (``fingerprints``: one list per chunk, in order) replay from the cursor on;
        the journal is cut at the first line that differs (request type or any fingerprint) or that fails its checksum
        (:func:`_verified`; a WARNING)."""
        n = 0
        while self.cursor + n < len(self.entries) and n < len(fingerprints):
            e = self.entries[self.cursor + n]
            if e["type"] != request_type or e["fingerprints"] != fingerprints[n]:
                break
            if not _verified(e):
                log.warning("%s: %s", self.label, _unverified_message(self.entries, self.cursor + n))
                self._cut(self.cursor + n)
                return n
            n += 1
        if n < len(fingerprints) and self.cursor + n < len(self.entries):
            at = sum(len(e["fingerprints"]) for e in self.entries[: self.cursor + n])
            log.info("%s: the journal differs from its request %d on (%s); recomputing from there",
                     self.label, at + 1, _chunk_difference(self.entries[self.cursor + n], request_type, fingerprints[n]))
            self._cut(self.cursor + n)
        return n

    def replay(self, requests: list) -> list:
        """The responses of the next line (its requests are ``requests``), with its arguments re-appended and its
        random states restored."""
        e = self.entries[self.cursor]
        self.cursor += 1
        for req, extra in zip(requests, e["appended"]):
            if extra:
                req.arguments = (*_plain_args(req), *extra)
        if e["rng"] is not None:
            _set_rng_state(e["rng"])
        self.replayed += len(requests)
        for k in _STAT_KEYS:
            self.stats[k] += e["stats"][k]
        self.wall_s += float(e["wall_s"])
        return [_decode_response(r) for r in e["responses"]]

    def record(self, request_type: str, requests: list, fingerprints: list[str], before: list[tuple[int, str]],
               responses: list, stats: dict[str, int], wall_s: float, rng: dict[str, Any] | None) -> None:
        """Append one computed chunk (``before``: for each request, the number of its :func:`_plain_args` before the
        call and their JSON text, :func:`retrieval.io.canonical_json`, taken before the call: a model that edits an argument in place,
        ``gen_kwargs.pop("until")``, edits the objects themselves), flushed and fsynced. A chunk that would not come back from JSON exactly (a response type outside
        :func:`_encode_response`, arguments the model changed other than by appending, appended arguments
        whose JSON is not stable) stops the journal for the cell, with a WARNING: the lines before it still replay.

        Raises:
            OSError: the append failed (a full disk's ``ENOSPC``, a quota's ``EDQUOT``, ``ulimit -f``'s ``EFBIG``,
                a disk's ``EIO``, any errno): an error without a path is raised as the same errno naming the journal
                (``[Errno 28] No space left on device: '<cell>/journal.jsonl'``; :func:`retrieval.io.no_room_naming`,
                the rule of every tokrag write: the buffered write's flush raised it without a path, so the command's
                one line, :func:`retrieval.errors.no_room_line`, named no file), any part of the line written cut off
                again (the journal ends with its last whole chunk, which a resumed run replays). An error that names
                a file is raised as it is.
        """
        if not self.writable:
            return
        try:
            if len(responses) != len(requests):
                raise _Unjournalable(f"{len(responses)} responses to {len(requests)} requests")
            appended = []
            for req, (n_pre, pre) in zip(requests, before):
                post = req.args
                if canonical_json(list(post[:n_pre])) != pre:
                    raise _Unjournalable("a request whose arguments the model changed")
                extra = list(post[n_pre:])
                text = canonical_json(extra)
                if canonical_json(json.loads(text)) != text:
                    raise _Unjournalable("appended arguments whose JSON does not round-trip")
                appended.append(json.loads(text))
            line = {"schema": JOURNAL_SCHEMA, "type": request_type, "fingerprints": fingerprints,
                    "responses": [_encode_response(r) for r in responses], "appended": appended,
                    "stats": stats, "wall_s": round(wall_s, 6), "rng": rng}
            line[CHECKSUM] = _entry_checksum(line)
            text = json.dumps(line, ensure_ascii=False, default=str, allow_nan=True) + "\n"
        except (_Unjournalable, TypeError, ValueError) as exc:
            log.warning("%s: %s cannot be journaled; the journal stops here for the rest of the cell (a kill from here on "
                        "recomputes from this chunk)", self.label, exc)
            self.writable = False
            return
        data = text.encode("utf-8")
        try:  # a full disk, a quota, ulimit -f, EIO: the buffered flush names no file (no_room_naming names the journal)
            with no_room_naming(self.path), open(self.path, "ab") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError:
            with contextlib.suppress(OSError):  # the part of the line written: cut back to the last whole chunk
                os.truncate(self.path, self.end)
            raise
        self.entries.append(line)
        self.starts.append(self.end)
        self.end += len(data)
        self.cursor = len(self.entries)


class _ModelClock:
    """Seconds spent inside a model's request methods (``generate_until``, ``loglikelihood``,
    ``loglikelihood_rolling``) over the chunks computed in this attempt (``seconds``): the task build, retrieval and
    lm-eval's own work around the requests are not in it. A request method called from inside another (``depth``)
    is not counted twice."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.depth = 0


def _takes_disable_tqdm(fn: Any) -> bool:
    """Whether the request method ``fn`` takes lm-eval's ``disable_tqdm`` keyword (a user model's may not)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "disable_tqdm" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _with_progress(lm, bar, chunk: int, journal: _Journal | None = None, clock: _ModelClock | None = None,
                   quiet: bool = False) -> list[str]:
    """Wrap the model's request methods (as instance attributes) so that they run in chunks of ``chunk``
    requests (multiples of the batch size), update ``bar`` per chunk and, with a ``journal``, replay the chunks
    it holds and append the others to it (:class:`_Journal`); with a ``clock`` (:class:`_ModelClock`), add the
    seconds of every computed chunk, journaled or not, to it (replayed chunks are not timed: their recorded seconds
    are the journal's ``wall_s``); with ``quiet`` (``run --no-progress``), call a method that takes lm-eval's
    ``disable_tqdm`` with ``disable_tqdm=True`` (the model's own bars); returns the names to remove afterwards."""
    patched = []
    for name in _REQUEST_TYPES:
        orig = getattr(lm, name, None)
        if orig is None:
            continue
        hush = quiet and _takes_disable_tqdm(orig)

        def wrapped(requests, _orig=orig, _name=name, _hush=hush, **kw):
            if _hush:
                kw.setdefault("disable_tqdm", True)
            out = []
            bar.total = (bar.total or 0) + len(requests)
            bar.refresh()
            parts = [requests[i : i + chunk] for i in range(0, len(requests), chunk)]
            fps, n_replay = None, 0
            if journal is not None and journal.writable:
                try:
                    fps = [[request_fingerprint(_name, r) for r in part] for part in parts]
                except (TypeError, ValueError) as exc:
                    log.warning("%s: requests without a fingerprint (%s) are not journaled", journal.label, exc)
                    journal.writable = False
                if fps is not None:
                    n_replay = journal.plan(_name, fps)
                if n_replay:
                    log.info("%s: resuming, %d of %d requests from the journal", journal.label,
                             sum(len(p) for p in parts[:n_replay]), len(requests))
            for j, part in enumerate(parts):
                if j < n_replay:
                    out.extend(journal.replay(part))
                elif fps is None or not journal.writable:
                    t0 = _clock_in(clock)
                    try:
                        out.extend(_orig(part, **kw))
                    finally:
                        _clock_out(clock, t0)
                else:
                    pre = [(len(a), canonical_json(list(a))) for a in map(_plain_args, part)]  # text: a model may edit them in place
                    before, rng0 = _stats(lm), _rng_state()
                    t0 = _clock_in(clock)
                    try:
                        res = list(_orig(part, **kw))
                    finally:
                        wall = _clock_out(clock, t0)
                    after, rng1 = _stats(lm), _rng_state()
                    journal.record(_name, part, fps[j], pre, res, {k: after[k] - before[k] for k in _STAT_KEYS},
                                   wall, None if rng1 == rng0 else rng1)
                    out.extend(res)
                bar.update(len(part))
            return out

        setattr(lm, name, wrapped)
        patched.append(name)
    return patched


def _clock_in(clock: _ModelClock | None) -> float:
    """Start timing one chunk: the current :func:`time.perf_counter` (``clock``'s depth raised)."""
    if clock is not None:
        clock.depth += 1
    return time.perf_counter()


def _clock_out(clock: _ModelClock | None, t0: float) -> float:
    """End timing one chunk started at ``t0``: its seconds, added to ``clock`` when it is the outermost request call."""
    wall = time.perf_counter() - t0
    if clock is not None:
        clock.depth -= 1
        if clock.depth == 0:
            clock.seconds += wall
    return wall


_ENV_INFO: list[str] = []  # torch's environment report, collected once per process


@contextlib.contextmanager
def _env_info_once():
    """While a cell runs, lm-eval's ``add_env_info`` gets torch's ``get_pretty_env_info()`` (recorded in
    results.json as ``pretty_env_info``) from a per-process cache: collecting it starts a dozen subprocesses
    (``pip list``, ``nvidia-smi``, ...), ~0.7 s of a toy cell's 1 s, and it cannot change while the process runs."""
    import torch.utils.collect_env as collect_env

    original = collect_env.get_pretty_env_info

    def cached() -> str:
        if not _ENV_INFO:
            _ENV_INFO.append(original())
        return _ENV_INFO[0]

    collect_env.get_pretty_env_info = cached
    try:
        yield
    finally:
        collect_env.get_pretty_env_info = original


class _NoCliGenKwargsWarning(logging.Filter):
    """Drops exactly lm-eval's ``generation_kwargs: ... specified through cli ... Ensure 'do_sample=True' for
    non-greedy decoding!`` WARNING (``lm_eval.evaluator``): the runner passes the spec's ``gen_kwargs`` to
    ``simple_evaluate``, which logs it as if the user had typed a CLI option, once per cell. The settings are the
    spec's contract (greedy, printed in every report), so the warning says nothing the user did not write."""

    PREFIX = "generation_kwargs: %s specified through cli"

    def filter(self, record: logging.LogRecord) -> bool:
        """False (drop) for that one record, True for every other."""
        return not (isinstance(record.msg, str) and record.msg.startswith(self.PREFIX))


@contextlib.contextmanager
def _no_cli_gen_kwargs_warning():
    """While a cell runs, :class:`_NoCliGenKwargsWarning` sits on lm-eval's ``lm_eval.evaluator`` logger (removed
    afterwards: a user's own ``lm_eval --gen_kwargs`` keeps its warning); every other record passes."""
    logger = logging.getLogger("lm_eval.evaluator")
    f = _NoCliGenKwargsWarning()
    logger.addFilter(f)
    try:
        yield
    finally:
        logger.removeFilter(f)


# --------------------------------------------------------------------------- one cell

def _resumable(cell_dir: Path, key: str, material: dict[str, Any], label: str = "") -> bool:
    """True when ``cell_dir`` holds a request journal and a ``config.json`` with config hash ``key`` and the
    same ``material`` (compared as JSON, as it was written): an interrupted attempt at this very cell. A journal
    beside a ``config.json`` that cannot be read as a JSON object (damaged after it was written: it is written
    atomically) is not replayed, said in one WARNING (``label``: the cell's)."""
    if not (cell_dir / JOURNAL).is_file() or (cell_dir / DONE).exists():
        return False
    try:
        cfg = json.loads((cell_dir / "config.json").read_text(encoding="utf-8"))
        if not isinstance(cfg, dict):
            raise ValueError(f"not a JSON object but {type(cfg).__name__}")
    except (OSError, ValueError, RecursionError) as exc:
        why = "missing" if isinstance(exc, FileNotFoundError) else f"unreadable ({exc})"
        log.warning("%s: %s is %s; the request journal %s is not replayed (discarded), the cell is computed from the "
                    "start", label or cell_dir, cell_dir / "config.json", why, cell_dir / JOURNAL)
        return False
    want = json.loads(canonical_json(material))
    return isinstance(cfg, dict) and cfg.get("config_hash") == key and all(k in cfg and cfg[k] == v for k, v in want.items())


class InputsChangedError(TokragError):
    """A cell's inputs changed while it ran (:func:`run_cell`'s ``recheck``): its folder was left without ``DONE``."""


def _cpu_count() -> int | None:
    """The CPUs this process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``): what cost.json's load
    averages compare to (a load above it means runnable work waited for a CPU); None where neither says."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _loadavg() -> list[float] | None:
    """``os.getloadavg()`` (the 1, 5 and 15 minute load averages, rounded to 2 places), None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def run_cell(spec: LeaderboardSpec, cell: Cell, key: str, material: dict[str, Any], cell_dir: Path, lm,
             *, progress: bool = True, task_manager=None, resume: bool = True,
             recheck=None) -> dict[str, Any]:
    """Evaluate one cell with ``lm_eval.simple_evaluate`` and write its run folder (``DONE`` last).

    Returns the cost dict (``cost.json``): ``forward_passes``, ``generated_tokens`` (the returned answers' tokens),
    ``prompt_tokens``, ``branch_tokens`` (every decoded branch's tokens, candidates not returned included) (the model's
    counts of the chunks computed here + the journal's counts of the replayed ones), ``wall_s`` (seconds: this
    attempt's + what earlier attempts spent computing the replayed chunks; time a kill wasted is not counted),
    ``model_s`` (seconds inside the model's request methods only, :class:`_ModelClock`, + the replayed chunks' seconds
    as in ``wall_s``: without the task build, retrieval and corpus loading that ``wall_s`` charges to the first
    cell of a task in a process; ``model_s <= wall_s``),
    ``resumed_requests`` (replayed requests, 0 for a cell run in one go), ``n_samples``, ``peak_rss_mib`` and
    ``process_max_rss_mib`` (MiB, this attempt), ``stats_available``, ``loadavg_start`` / ``loadavg_end``
    (:func:`os.getloadavg` right before and after this attempt's evaluation, None where the OS has none) and
    ``cpu_count`` (:func:`_cpu_count`).

    The returned dict also has ``live_forward_passes`` (this attempt's own, not written to ``cost.json``).

    The caller holds the cell's lock. With a model that is :func:`replay_safe`, an interrupted attempt whose
    ``config.json`` has the same ``key`` and ``material`` and left a request journal is resumed (unless
    ``resume`` is False): the folder is kept (all but the journal and ``config.json`` is deleted; every file is
    rewritten) and the journaled chunks are replayed (:class:`_Journal`) when the journal's header matches this
    attempt's (:func:`_journal_header`); any other previous content of ``cell_dir`` is deleted first. Every chunk
    computed here is journaled (a model that is not replay-safe: none), and the journal is deleted right after
    ``DONE`` is written. ``provenance.json`` lists the attempts at the cell (``attempts``).

    ``recheck``: called with no argument right before ``DONE`` is written; a non-empty line it returns (the inputs
    that changed since ``key`` was computed, :func:`inputs_now`) means the results may have been computed from other
    inputs than ``key`` names: ``DONE`` is not written (the folder stays as an interrupted attempt: not done,
    resumable under ``key`` while its journal is there) and :class:`InputsChangedError` is raised with that line.
    """
    import lm_eval
    from tqdm.auto import tqdm

    journal_path = cell_dir / JOURNAL
    safe = replay_safe(lm)
    if (cell_dir / DONE).is_file():  # a finished run that failed its verification: say so before redoing it
        try:
            verify_cell_dir(cell_dir, cell.cell_id)
        except MisplacedRunError:
            raise
        except IncompleteRunError as exc:
            log.warning("%s: the finished run folder %s is damaged (%s); it is recomputed (its files are replaced)",
                        cell.label, cell_dir, str(exc).removesuffix("; re-run the cell"))
    if resume and safe and _resumable(cell_dir, key, material, cell.label):
        for p in cell_dir.iterdir():  # an earlier attempt's files go, all rewritten below; its journal and config stay
            if p.name in (JOURNAL, "config.json"):  # config.json: a kill here must leave the folder resumable
                continue
            with leaderboard_write(p):  # EACCES, EIO: one line; the journal stays, the same command resumes
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
    else:
        if cell_dir.exists():
            why = ("run --no-resume" if not resume else
                   f"model class {type(lm).__module__}.{type(lm).__qualname__} does not declare {REPLAY_SAFE_ATTR} = True "
                   "(its outputs may depend on state a journal does not restore), so its cells keep no journal"
                   if not safe else None)
            if why and not (cell_dir / DONE).exists():
                log.info("%s: the interrupted attempt's folder is deleted and the cell redone from the start: %s",
                         cell.label, why)
            with leaderboard_write(cell_dir):
                shutil.rmtree(cell_dir)
        with leaderboard_write(cell_dir):  # the runs folder's parents too: EACCES, EIO, ENAMETOOLONG are one line
            cell_dir.mkdir(parents=True)
    atomic_write_json(cell_dir / "config.json", {"cell_id": cell.cell_id, "config_hash": key, "spec": spec.name, **material})
    versions = library_versions()
    attempt = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "git_commit": git_commit(),
               "versions_sha256": fingerprint(versions)}
    journal = (_Journal.load(journal_path, cell.label, _journal_header(key, lm), attempt) if safe
               else _Journal.off(journal_path, cell.label, attempt))

    if hasattr(lm, "reset_stats"):
        lm.reset_stats()
    before = _stats(lm)
    bar = tqdm(total=0, desc=f"  {cell.label}", unit="req", leave=False, disable=not progress, position=1)
    chunk = max(1, spec.progress_chunk) * _model_batch_size(cell)
    clock = _ModelClock()
    patched = _with_progress(lm, bar, chunk, journal, clock, quiet=not progress)
    load_start = _loadavg()
    t0 = time.perf_counter()
    try:
        with _PeakRSS() as mem, _env_info_once(), _no_cli_gen_kwargs_warning():
            results = lm_eval.simple_evaluate(
                model=lm, tasks=[cell.task.task], task_manager=task_manager, limit=cell.limit,
                num_fewshot=cell.num_fewshot, gen_kwargs=dict(cell.gen_kwargs) or None,
                **model_flags(cell), log_samples=True,
                bootstrap_iters=0, apply_chat_template=cell.apply_chat_template,
                system_instruction=cell.system_instruction, fewshot_as_multiturn=cell.fewshot_as_multiturn,
                random_seed=cell.seed, numpy_random_seed=cell.seed, torch_random_seed=cell.seed,
                fewshot_random_seed=cell.seed, use_cache=None,
            )
    finally:
        for name in patched:
            delattr(lm, name)
        bar.close()
    wall = time.perf_counter() - t0
    load_end = _loadavg()
    if results is None:
        raise TokragError(f"{cell.label}: lm-eval returned no results (not rank 0?)")
    after = _stats(lm)
    samples_all = results.pop("samples", {}) or {}
    files = {}
    for task_name, samples in sorted(samples_all.items()):
        samples = sorted(samples, key=lambda s: (s.get("doc_id", 0), json.dumps(s.get("arguments"), sort_keys=True, default=str)))
        name = f"samples_{task_name}.jsonl"
        atomic_write_text(cell_dir / name, "".join(json.dumps(s, sort_keys=True, ensure_ascii=False, default=str) + "\n" for s in samples))
        files[name] = None
    if not files:
        raise TokragError(f"{cell.label}: lm-eval logged no samples for task {cell.task.task}")
    # the prompt a result used (lm-eval's CLI records these through its tracker; simple_evaluate does not)
    results.setdefault("config", {})["tokrag_prompt"] = {
        "prompt": cell.prompt or "instruct", "apply_chat_template": cell.apply_chat_template,
        "chat_template_sha256": (getattr(lm, "resolved_config", None) or {}).get("chat_template_sha256")
        if cell.apply_chat_template else None,
        "system_instruction": cell.system_instruction, "fewshot_as_multiturn": cell.fewshot_as_multiturn,
        "num_fewshot": cell.num_fewshot,
    }
    if results["config"].get("model_args") is None:  # lm-eval records the model_args string it built a model from:
        # none for the built model passed here; the arguments the cell built it with (config.json's, as lm-eval's text)
        results["config"]["model_args"] = _model_args_text(cell.model_args)
    atomic_write_json(cell_dir / "results.json", results)
    n = sum(len(v) for v in samples_all.values())
    cost = {  # a resumed cell: what this attempt computed + what the journal's replayed chunks cost when computed
        "wall_s": round(wall + journal.wall_s, 3),
        "model_s": round(min(clock.seconds, wall) + journal.wall_s, 3),  # the requests only (task build, retrieval out)
        **{k: after[k] - before[k] + journal.stats[k] for k in _STAT_KEYS},
        "n_samples": n,
        "resumed_requests": journal.replayed,
        "peak_rss_mib": round(mem.peak_mib, 1),
        "process_max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "stats_available": hasattr(lm, "stats"),
        # the machine's load (1, 5, 15 min) around this attempt's evaluation: timings taken under load
        "loadavg_start": load_start,
        "loadavg_end": load_end,
        "cpu_count": _cpu_count(),  # what the load averages compare to (the report's Cost note)
    }
    atomic_write_json(cell_dir / "cost.json", cost)
    retr = retrieval_fingerprint([s for v in samples_all.values() for s in v])
    prov = {
        "config_hash": key,
        # not "model_fingerprint": config.json's (the run key's hash of what pretrained names) is another value
        "loaded_weights_fingerprint": str(getattr(lm, "fingerprint", material.get("model_fingerprint"))),
        # as the results' tokrag_resolved_config (max_gen_toks_default: the budget only where a task gives none)
        "model_resolved_config": (lm.recorded_config() if hasattr(lm, "recorded_config")
                                  else getattr(lm, "resolved_config", None)),
        "model_hub_commit": getattr(getattr(lm, "backbone", None), "hub_commit", None),  # a hub id's resolved commit
        "retrieval": retr,
        "versions": versions,
        "git_commit": attempt["git_commit"],
        "task_version": (results.get("versions") or {}).get(cell.task.task),
        # threads and hardware that computed it (at model load; not keyed): a forward pass's bits depend on them
        "machine": getattr(lm, "machine", None) or compute_environment(_model_device(lm)),
        # every attempt at the cell, this one last: what code and libraries computed which requests
        "attempts": [*journal.attempts[:-1], {**journal.attempts[-1], "resumed_requests": journal.replayed}],
    }
    atomic_write_json(cell_dir / "provenance.json", prov)
    names = [*CELL_FILES, *sorted(files)]
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "cell_id": cell.cell_id,
        "config_hash": key,
        "files": {nm: sha256_file(cell_dir / nm) for nm in names},
    }
    changed = recheck() if recheck is not None else ""
    if changed:  # results of other inputs than the key names must not be finished under it
        raise InputsChangedError(f"{cell.label}: its inputs changed while it ran ({changed}); its results were not "
                                 f"marked done under key {key} (the folder {cell_dir} stays unfinished); run the "
                                 "spec again to compute it from the current inputs")
    atomic_write_json(cell_dir / DONE, manifest)  # written last: the cell is complete from here on
    with leaderboard_write(journal_path):
        journal_path.unlink(missing_ok=True)  # after DONE: a kill between the two leaves a finished folder (the journal is ignored)
    return {**cost, "live_forward_passes": after["forward_passes"] - before["forward_passes"]}


# --------------------------------------------------------------------------- the spec

def seed_notes(spec: LeaderboardSpec, cells: list[Cell]) -> list[str]:
    """What a run says once about the seed of ``cells``' random draws (:meth:`Cell.lm_eval_metadata`): the tasks whose
    YAML metadata ``seed`` a cell's seed replaces, and the methods whose ``model_args`` ``seed`` goes to the model
    only (lm-eval's own CLI would merge it into the task metadata, where it would draw the passages)."""
    from .spec import task_yaml_metadata

    replaced: dict[str, tuple[Any, set[int]]] = {}
    margs: dict[str, Any] = {}
    for cell in cells:
        meta = cell.lm_eval_metadata()
        if "seed" not in meta:
            continue
        yaml_seed = task_yaml_metadata(cell.task.task, spec.include_path).get("seed")
        if yaml_seed is not None and str(yaml_seed) != str(meta["seed"]):
            replaced.setdefault(cell.task.task, (yaml_seed, set()))[1].add(int(meta["seed"]))
        if "seed" in cell.model_args:
            margs.setdefault(cell.method.name, cell.model_args["seed"])
    notes = [f"task {task}: its noise/counterfactual passages are drawn with each cell's seed "
             f"({', '.join(map(str, sorted(seeds)))}), not its YAML's metadata seed {old}"
             for task, (old, seeds) in sorted(replaced.items())]
    notes += [f"method {name}: model_args seed={value} goes to the model only; the task's noise/counterfactual passages "
              "are drawn with each cell's seed, the same for every method" for name, value in sorted(margs.items())]
    return notes


def _task_manager(spec: LeaderboardSpec, meta: dict[str, Any], managers: dict[str, Any]) -> Any:
    """The task manager of ``meta`` (a cell's :meth:`Cell.task_metadata`) from ``managers`` (keyed by the metadata's
    fingerprint), loaded there once (:func:`_load_task_manager`)."""
    mkey = fingerprint(meta)
    if mkey not in managers:
        managers[mkey] = _load_task_manager(spec, meta)
    return managers[mkey]


def _load_task_manager(spec: LeaderboardSpec, metadata: dict[str, Any] | None = None):
    """lm-eval's ``TaskManager`` over the spec's ``include_path`` with tokrag's ``tasks/`` added first when absent
    (:func:`tasks.add_include_path`, also without the start-up hook), so it runs the YAML that
    :func:`leaderboards.keys.find_task_yaml` keys (a later folder's task overrides an earlier one's)."""
    from lm_eval.tasks import TaskManager

    from tasks import add_include_path

    return TaskManager(include_path=add_include_path([str(p) for p in spec.include_path]), include_defaults=False,
                       metadata=metadata or None)


def check_run_args(jobs: Any, max_cells: Any = None) -> None:
    """The one check of ``run --jobs`` and ``--max-cells`` (the CLI calls it before any work, :func:`run_spec` again).

    Raises:
        ConfigError: one line naming the option and the value.
    """
    if not is_int(jobs, 1):
        raise ConfigError(f"run --jobs must be an integer >= 1 (runner processes), got {jobs!r}")
    if max_cells is not None and not is_int(max_cells, 1):
        raise ConfigError(f"run --max-cells must be an integer >= 1, got {max_cells!r}")


BUDGET_OPTION = "--cell-budget-dir"
"""The hidden ``run`` option by which :func:`run_spec` gives its ``--jobs`` helper processes the folder of the run's
shared ``max_cells`` (``<runs>/.max-cells-<host>-<pid>-<random>``, of the main process)."""
_BUDGET_PREFIX = ".max-cells-"
_JOBS_PREFIX = ".jobs-"
"""Prefix of a ``run --jobs N`` main process's folder of its helpers' summaries, in the runs folder."""


def journaled_requests(path: Path) -> int:
    """The requests in the complete chunk lines of the journal ``path`` (its header line and a torn last line not
    counted, nor the lines from the first that fails its checksum on: :func:`_verified`); read only, as
    :meth:`_Journal.load` would keep them if the header matches. 0 when unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    nl = data.find(b"\n")
    if nl < 0:
        return 0
    return _verified_requests(_chunk_lines(data, nl + 1)[0])


HELPER_GRACE_S = 3.0
"""Seconds the helpers of ``run --jobs`` get to stop by themselves after the main process stopped (on an interrupt
they were sent SIGTERM at once, :func:`_stop_helpers`) before they get SIGTERM (again)."""
HELPER_TERM_S = 10.0
"""Seconds a helper gets to end after its SIGTERM before it is killed (SIGKILL): one stuck in native code."""


def _stop_helpers(helpers: list[subprocess.Popen], interrupted: bool = False) -> KeyboardInterrupt | None:
    """Stop the helper processes of ``run --jobs`` that still run, in steps: with ``interrupted`` (the main process
    got Ctrl-C or SIGTERM) SIGTERM at once, which a helper handles as its own interrupt (it stops between two
    bytecodes, its journal kept, and ignores any later SIGINT/SIGTERM: the Ctrl-C a terminal sent its whole process
    group included); then wait up to :data:`HELPER_GRACE_S` and :data:`HELPER_TERM_S` more (no second SIGTERM: the
    helper ignores it), then SIGKILL (and wait up to 5 s). Without ``interrupted`` (an error in the main process) the
    SIGTERM comes after the grace, then up to :data:`HELPER_TERM_S`, then SIGKILL. Before this, a SIGTERM to the main process alone reached no helper until the grace was over.
    Returns at once when none runs (the end of a run that was not interrupted). Never raises: a Ctrl-C (or SIGTERM)
    during a step ends that step (the next one starts at once; after the last, the helpers still running are
    killed) and is returned (the first one), for the caller to raise after its own clean-up."""
    caught: KeyboardInterrupt | None = None
    steps = (("signal", 0.0),) if interrupted else ()
    for step, seconds in (*steps, ("wait", HELPER_GRACE_S), ("term", HELPER_TERM_S), ("kill", 5.0)):
        try:
            live = [h for h in helpers if h.poll() is None]
            if not live:
                return caught
            for h in live:
                if step == "signal":
                    h.send_signal(signal.SIGTERM)
                elif step == "term" and interrupted:  # it ignores a second SIGTERM (it handles the first as its stop)
                    log.info("helper process %d still running %.0f s after its SIGTERM: SIGKILL in %.0f s", h.pid,
                             HELPER_GRACE_S, HELPER_TERM_S)
                elif step == "term":
                    log.info("helper process %d still running %.0f s after the run stopped: SIGTERM", h.pid,
                             HELPER_GRACE_S)
                    h.send_signal(signal.SIGTERM)
                elif step == "kill":
                    log.warning("helper process %d did not end %.0f s after SIGTERM: killed", h.pid, HELPER_TERM_S)
                    h.kill()
            deadline = time.monotonic() + seconds
            for h in live:
                h.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt as exc:
            caught = caught or exc
    while True:  # the kill step cut short by a Ctrl-C
        try:
            for h in helpers:
                if h.poll() is None:
                    h.kill()
            return caught
        except KeyboardInterrupt as exc:
            caught = caught or exc


def _interrupted(spec: LeaderboardSpec, runs: Path, keyed: list, exc: KeyboardInterrupt) -> RunInterrupted:
    """What an interrupted run kept (read only: ``DONE`` markers and journals), read after its helpers stopped; a
    further Ctrl-C while it reads starts the reading again (milliseconds)."""
    while True:
        try:
            finished, journaled, unjournaled = 0, {}, []
            for cell, key, _ in keyed:
                d = runs / key
                if (d / DONE).is_file():
                    finished += 1
                elif (d / JOURNAL).is_file():
                    journaled[cell.cell_id] = journaled_requests(d / JOURNAL)
                elif d.is_dir():
                    unjournaled.append(cell.cell_id)
            return RunInterrupted(spec, runs, int(getattr(exc, "signum", signal.SIGINT)), finished, len(keyed),
                                  journaled, unjournaled)
        except KeyboardInterrupt:
            continue


@contextlib.contextmanager
def _interrupts_deferred():
    """SIGINT and SIGTERM that arrive inside the block take effect at its end (their Python handlers are swapped for
    ones that note the signal, which is raised again after): ``helpers.append(Popen(...))`` is never cut between
    the helper's start and its being known. Only for signals with a Python handler, in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    saved = {s: h for s in (signal.SIGINT, signal.SIGTERM) if callable(h := signal.getsignal(s))}
    for s in saved:
        signal.signal(s, lambda signum, _frame: got.append(signum))
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
        for s in dict.fromkeys(got):
            signal.raise_signal(s)


SUMMARY_OPTION = "--summary-file"
"""The hidden ``run`` option by which :func:`run_spec` has each ``--jobs`` helper write its :class:`RunSummary`
(``as_dict``, JSON) to a file instead of stdout: the main process adds them into the one summary the command
prints (:func:`_add_helper_summaries`)."""


def _helper_summaries(helpers: list[subprocess.Popen], folder: Path) -> list[dict[str, Any] | None]:
    """The summaries the ended ``helpers`` wrote into ``folder`` (``helper-<i>.json``); None for one that wrote none
    (still running, failed, interrupted) or an unreadable one."""
    out: list[dict[str, Any] | None] = []
    for i, h in enumerate(helpers):
        try:
            out.append(json.loads((folder / f"helper-{i}.json").read_text(encoding="utf-8")) if h.poll() == 0 else None)
        except (OSError, ValueError, RecursionError):
            out.append(None)
    return out


def _add_helper_summaries(summary: RunSummary, parts: list[dict[str, Any] | None], order: list[str]) -> None:
    """Make the main process's ``summary`` the whole ``run --jobs N``'s: ``ran`` every cell some process of the run
    computed; ``skipped`` the cells done when the main process started (its own); ``by_other`` the cells finished
    by a process outside this run (another command on the same folder): neither skipped nor run by one of ours;
    ``forward_passes`` and ``replayed_requests`` summed; ``wall_s`` the main process's (it waits for its helpers).
    Cell lists in spec order (``order``).

    Raises:
        TokragError: a helper that ended with exit status 0 but left no readable summary.
    """
    if any(p is None for p in parts):
        raise TokragError(f"a helper runner process ended without writing its summary ({SUMMARY_OPTION})")
    ran = set(summary.ran).union(*(p["ran"] for p in parts))
    other = set(summary.by_other).union(*(p["by_other"] + p["skipped"] for p in parts)) - ran - set(summary.skipped)
    summary.ran = [c for c in order if c in ran]
    summary.by_other = [c for c in order if c in other]
    changed = set(summary.changed).union(*(p.get("changed", []) for p in parts))
    summary.changed = [c for c in order if c in changed]
    summary.forward_passes += sum(int(p["forward_passes"]) for p in parts)
    summary.replayed_requests += sum(int(p["replayed_requests"]) for p in parts)


def _helper_end(h: subprocess.Popen) -> str:
    """How a helper ended: ``killed by SIGKILL`` (a negative return code), else ``exited with status N``."""
    if h.returncode is not None and h.returncode < 0:
        try:
            return f"killed by {signal.Signals(-h.returncode).name}"
        except ValueError:
            return f"killed by signal {-h.returncode}"
    return f"exited with status {h.returncode}"


class HelpersFailed(TokragError):
    """:func:`run_spec` with ``jobs`` > 1 whose helper processes failed and left cells unfinished
    (:func:`_helpers_failed`). ``what``: the line up to its resume command; the message ends ``; resume with:
    <command>``, the command :func:`run_command` builds from the spec, runs folder and ``--jobs N`` (all a runner
    knows); ``tokrag leaderboard run`` puts the command the user gave in its place (:meth:`resume_with`,
    :func:`leaderboards.cli.given_command`)."""

    def __init__(self, what: str, command: str) -> None:
        super().__init__(f"{what}; resume with: {command}")
        self.what = what

    def resume_with(self, command: str) -> "HelpersFailed":
        """The same error, ``command`` as its resume command."""
        return HelpersFailed(self.what, command)


def _helpers_failed(spec: LeaderboardSpec, runs: Path, keyed: list, failed: list[subprocess.Popen], summary: RunSummary,
                    jobs: int, *, started_only: bool) -> None:
    """After ``run --jobs N`` whose helpers in ``failed`` ended badly (killed by a signal, or a non-zero exit): when
    every cell is finished (this process took over and resumed from its journal any cell a helper left, once its
    lock was freed), one WARNING, and the run goes on to its summary; else the error naming the unfinished cells
    and the resume command. Cells left unfinished on purpose (``summary.changed``) are not counted; with
    ``started_only`` (``--max-cells``) only the cells some process started (their folder exists).

    Raises:
        HelpersFailed: a cell is unfinished (a :class:`TokragError`; its resume command keeps only the spec, runs
            folder, selection and ``--jobs N``: ``tokrag leaderboard run`` replaces it by the command given).
    """
    how = "; ".join(f"helper process {h.pid} {_helper_end(h)}" for h in failed)
    if any(h.returncode == -signal.SIGKILL for h in failed):
        how += " (out of memory?)"
    unfinished = []
    for cell, key, _ in keyed:
        if cell.cell_id in summary.changed or (started_only and not (runs / key).is_dir()):
            continue
        try:
            done = cell_is_done(runs / key, cell.cell_id)
        except TokragError:
            done = False
        if not done:
            unfinished.append(cell.cell_id)
    if unfinished:
        first = ", ".join(unfinished[:5]) + (f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else "")
        raise HelpersFailed(f"a helper runner process of --jobs {jobs} failed ({how}); {len(unfinished)} of {len(keyed)} "
                            f"cells are unfinished ({first}), their journals kept", run_command(spec, runs, "--jobs", str(jobs)))
    log.warning("leaderboard %s: a helper runner process of --jobs %d failed (%s); every cell is finished: this process "
                "resumed from its journal any cell it left; its own summary is lost (the cells it finished count as "
                "by_other, its forward passes are not counted)", spec.label(), jobs, how)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _budget_name(prefix: str = _BUDGET_PREFIX) -> str:
    """``<prefix><host>-<pid>-<random>`` (``.max-cells-...``, ``.jobs-...``): a ``run --jobs N`` main process's
    scratch folder in the runs folder, unique across machines sharing a runs folder (NFS) and pid reuse."""
    import secrets
    import socket

    return f"{prefix}{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


def _remove_stale_budgets(runs: Path) -> None:
    """Delete the ``.max-cells-<host>-<pid>-<random>`` and ``.jobs-<host>-<pid>-<random>`` folders of this host's
    runs whose main process is gone (SIGKILLed before its clean-up). Another host's folders are never touched (its
    pids mean nothing here)."""
    import socket

    host = socket.gethostname()
    for prefix in (_BUDGET_PREFIX, _JOBS_PREFIX):
        for d in runs.glob(prefix + "*"):
            parts = d.name[len(prefix):].rsplit("-", 2)
            if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
                continue
            if d.is_dir() and int(parts[1]) != os.getpid() and not _pid_alive(int(parts[1])):
                shutil.rmtree(d, ignore_errors=True)


class _CellBudget:
    """How many more cells a run may start: ``limit`` in all (None: no limit). With a ``folder`` the limit is
    shared by every process of one ``run --jobs N``: a cell is counted by creating ``claim-<i>`` for the first
    free ``i < limit`` with ``O_CREAT | O_EXCL``, which exactly one process wins; ``limit`` is in ``folder/limit``."""

    def __init__(self, limit: int | None, folder: Path | None = None) -> None:
        self.limit, self.folder, self.used = limit, folder, 0

    @classmethod
    def shared(cls, folder: Path) -> _CellBudget:
        """The budget the main process wrote into ``folder``.

        Raises:
            ConfigError: no such folder, or no readable ``limit`` in it, naming the option.
        """
        try:
            return cls(int((folder / "limit").read_text(encoding="ascii")), folder)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"run {BUDGET_OPTION} {folder}: not the shared --max-cells folder of a running "
                              f"'run --jobs N --max-cells M' ({exc}); the option is for its helper processes") from None

    def take(self) -> bool:
        """Count one more cell; False when the limit is reached (nothing counted)."""
        if self.limit is None:
            return True
        if self.folder is None:
            if self.used >= self.limit:
                return False
            self.used += 1
            return True
        for i in range(self.limit):
            try:
                with leaderboard_write(self.folder / f"claim-{i}"):
                    os.close(os.open(self.folder / f"claim-{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return True
            except FileExistsError:
                continue
            except FileNotFoundError:  # the folder was removed under us (its main process died, a clean-up ran)
                log.warning("the shared --max-cells folder %s is gone; this process starts no more cells", self.folder)
                return False
        return False


NO_PROGRESS_ENV = {"TQDM_DISABLE": "1"}
"""The environment that turns tqdm's bars off in a process that imports tqdm after it is set (a ``run --jobs`` helper,
``tokrag leaderboard run --no-progress`` before its imports): tqdm (>= 4.66) reads ``TQDM_*`` as default arguments
when it is imported; a bar created with an explicit ``disable=False`` still shows."""


@contextlib.contextmanager
def no_progress_bars():
    """Turn the progress bars off while the block runs (``run --no-progress``), and back as they were after it:
    :data:`NO_PROGRESS_ENV` in the environment (tqdm imported later: lm-eval's bar over a task's documents under
    ``tokrag leaderboard run --no-progress``, which enters this before anything imports tqdm, and the ``run --jobs``
    helpers); the switches of huggingface_hub, datasets (imported here: lm-eval reads every task's data with it) and
    transformers (``Loading weights``; imported later, it starts from huggingface_hub's switch, and is switched back
    after the block). The models' own bars (``rag-none prompts``, ``generate_until``) are turned off by the runner's
    request wrapper, which passes ``disable_tqdm=True`` (:func:`_with_progress`)."""
    saved_env = {k: os.environ.get(k) for k in NO_PROGRESS_ENV}
    os.environ.update(NO_PROGRESS_ENV)  # first: the imports below may import tqdm
    import datasets
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    undo = []
    hub_on = not are_progress_bars_disabled()
    if hub_on:
        disable_progress_bars()
        undo.append(enable_progress_bars)
    if datasets.is_progress_bar_enabled():
        datasets.disable_progress_bars()
        undo.append(datasets.enable_progress_bars)
    had_transformers = "transformers" in sys.modules
    if had_transformers:
        from transformers.utils import logging as tlogging

        if tlogging.is_progress_bar_enabled():
            tlogging.disable_progress_bar()
            undo.append(tlogging.enable_progress_bar)
    try:
        yield
    finally:
        if not had_transformers and hub_on and "transformers" in sys.modules:  # imported in the block: off since
            from transformers.utils import logging as tlogging

            tlogging.enable_progress_bar()
        for fn in reversed(undo):
            fn()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_processes(jobs: int, cells: int, max_cells: int | None = None) -> tuple[int, str]:
    """The processes ``run --jobs`` starts for ``cells`` cells left to run (the finished ones skipped): ``min(jobs,
    cells, max_cells)`` (``max_cells`` None: no bound), at least 1 (the main process), each a Python process that
    imports torch and loads its cells' models; and the line a run says when that is fewer than ``jobs`` (``--jobs
    1000: 4 cells to run, so 4 processes``), else ``""``. Before, ``jobs - 1`` helpers started however few cells
    were left: ``--jobs 1000`` on 4 cells started 999 processes, 996 of them for nothing.

    Args:
        jobs: ``--jobs`` (processes asked for, >= 1); cells: cells left to run (>= 0); max_cells: ``--max-cells``.
    """
    n = max(1, min(jobs, cells, max_cells if max_cells is not None else jobs))
    if n >= jobs:
        return n, ""
    bound = f"--max-cells {max_cells}, " if max_cells is not None and max_cells < cells else ""
    return n, (f"--jobs {jobs}: {cells} cell{'s' if cells != 1 else ''} to run, {bound}so {n} "
               f"process{'es' if n != 1 else ''}" + (" (no helper)" if n == 1 else ""))


def run_spec(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, *, progress: bool = True,
             jobs: int = 1, max_cells: int | None = None, resume: bool = True,
             cell_budget_dir: str | os.PathLike | None = None, jobs_helper: bool = False) -> RunSummary:
    """Run every unfinished cell of ``spec`` into ``runs_dir`` (see the module docstring).

    Finished cells (valid ``DONE``) are skipped without loading anything heavy. ``jobs > 1`` starts up to
    ``jobs - 1`` extra runner processes on the same folder (cells are claimed by lock): the processes are
    :func:`run_processes` (``jobs``, never more than the cells left to run or ``max_cells``; a log line says so when
    that is fewer than ``jobs``), so no helper starts that would get no cell. ``max_cells``
    stops after that many cells were started, counted over all ``jobs`` processes together (the helpers share
    the count through the folder ``<runs>/.max-cells-<host>-<pid>-<random>``, given to them as ``cell_budget_dir``, the hidden
    option ``--cell-budget-dir``; it is removed at the end, and a run removes those of dead processes; the helpers'
    summaries go to ``<runs>/.jobs-<host>-<pid>-<random>``, removed the same way); a cell
    another process finished is not counted. ``jobs_helper`` (the hidden option ``--jobs-helper``, which the main
    process gives every helper, with or without ``--max-cells``): a helper, which neither removes the dead runs'
    folders nor logs the seed notes and the other-inputs warning the main process said once for the run. ``resume=False`` (``--no-resume``) deletes an interrupted cell's
    folder, journal included, instead of resuming it (:func:`run_cell`). A selection (:meth:`LeaderboardSpec.select`) runs only
    its cells, after the whole spec's methods passed :func:`check_distinct_methods`.

    Models: consecutive cells of one model (method, model arguments, batch size, device) share one instance. A
    tokrag method's model is built over the ``Backbone`` of the tokrag model before it when their
    :func:`backbone_key` (the load's arguments, ``batch_invariant``) is equal, so a grid of methods on one base
    model loads its weights once per run of equal keys (same run keys, configs, results and samples as a load per
    method); any other model is loaded by :func:`make_model`. A model is dropped before the next one is loaded.

    Inputs: the keys are computed at the start, and each cell's inputs (:data:`CELL_INPUT_FIELDS`: task YAMLs, data
    files, dense encoders) again before it starts and before its ``DONE`` is written (:func:`inputs_now`, ~15-20 ms).
    A cell whose inputs changed since the start runs under the key of the current inputs (a warning names the change
    once), so every finished folder's key names what its results were computed from; one whose inputs changed while
    it ran gets no ``DONE`` (a warning names the change; ``RunSummary.changed``) and stays resumable under its key.

    Ending: the main process waits for its helpers' cells; on any exception (an interrupt, an error) the helpers
    still running are stopped (:func:`_stop_helpers`: a grace, SIGTERM, SIGKILL), never left behind, and the
    ``.max-cells-*`` folder is removed.

    Raises:
        ConfigError: unknown model/task names, two methods of the (whole) spec that run the same configuration,
            two models whose cells would share run folders (:func:`check_distinct_models`);
        TokragError from the models and tasks, or a helper that failed.
        RunInterrupted: a KeyboardInterrupt (Ctrl-C; SIGTERM under the CLI) at any moment after the helpers' start
        and the cells' loop began (in a cell, while waiting for the helpers, while stopping them); one before that
        is raised as it came (nothing was computed).

    ``progress=False`` (``--no-progress``) also silences the progress bars of lm-eval, transformers, datasets and the
    models' decoders, in this process and its helpers (:func:`no_progress_bars`), and prints one stderr line when a
    cell starts (``leaderboard: cell <cell id> started in <run folder>``) and one when it finishes (``... finished in
    <run folder>: <wall_s> s, <forward_passes> forward passes``, as its ``cost.json`` records them, with the requests
    replayed from its journal when resumed), in this process and its helpers; nothing extra with bars.
    """
    with no_progress_bars() if not progress else contextlib.nullcontext():
        return _run_spec(spec, runs_dir, progress=progress, jobs=jobs, max_cells=max_cells, resume=resume,
                         cell_budget_dir=cell_budget_dir, jobs_helper=jobs_helper)


def _run_spec(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None, *, progress: bool, jobs: int,
              max_cells: int | None, resume: bool, cell_budget_dir: str | os.PathLike | None,
              jobs_helper: bool = False) -> RunSummary:
    """:func:`run_spec`'s work, inside its progress-bar switches."""
    from tqdm.auto import tqdm

    check_run_args(jobs, max_cells)
    budget = _CellBudget.shared(Path(cell_budget_dir)) if cell_budget_dir is not None else None  # a helper's
    t_start = time.perf_counter()
    quiet_lm_eval()
    runs = resolve_runs_dir(spec, runs_dir)
    with leaderboard_write(runs):  # EACCES, EIO, ENAMETOOLONG: one line naming the folder (and --runs-dir)
        runs.mkdir(parents=True, exist_ok=True)
    main = cell_budget_dir is None and not jobs_helper  # a helper of run --jobs N gets --jobs-helper, not always the
    if main:  # budget folder; the main process: clean up after runs killed before their own clean-up
        _remove_stale_budgets(runs)
    keyed = cell_keys(spec, runs)  # runs: a run finished under the legacy data key is served (keys.cell_keys)
    whole = spec.whole or spec  # a selection: the whole spec's methods (two equal ones outside it are refused too)
    check_distinct_methods(whole, whole.cells())
    check_distinct_models(whole, keyed if not spec.selection else cell_keys(whole, runs))
    summary = RunSummary(selection=dict(spec.selection))
    # run --no-progress: a line per cell start and finish (in a helper of run --jobs N: as its main process says)
    cell_lines = not progress and os.environ.get(CELL_LINES_ENV) != "0"
    todo = []
    for cell, key, mat in keyed:
        if cell_is_done(runs / key, cell.cell_id):  # MisplacedRunError: another cell's run in its folder, before any cell
            summary.skipped.append(cell.cell_id)
        else:
            todo.append((cell, key, mat))
    if not todo:
        summary.wall_s = time.perf_counter() - t_start
        log.info("leaderboard %s: all %d cells done in %s", spec.label(), len(keyed), runs)
        return summary

    finished = finished_runs_by_cell(runs) if todo else {}  # read once for the two checks below
    check_moved_runs(spec, runs, [(c, k) for c, k, _ in todo], finished)
    check_cell_devices(spec, [c for c, _, _ in todo])  # this machine's devices: run only (not --estimate, report)
    check_cell_args(spec, [c for c, _, _ in todo])
    if main:  # the main process says it once (not each helper of run --jobs, with or without --max-cells)
        for note in seed_notes(spec, [c for c, _, _ in todo]):
            log.info("leaderboard %s: %s", spec.label(), note)
        note = other_inputs_summary(spec, runs, todo, finished)
        if note:
            log.warning("leaderboard %s: %s", spec.label(), note)
    helpers: list[subprocess.Popen] = []
    budget_dir = summaries_dir = None
    parts: list[dict[str, Any] | None] = []
    procs, line = run_processes(jobs, len(todo), max_cells)  # a helper starts only for a cell left to run
    if line:
        log.info("leaderboard %s: %s", spec.label(), line)
    if budget is None and not (procs > 1 and max_cells is not None):
        budget = _CellBudget(max_cells)

    managers: dict[str, Any] = {}  # lm-eval task managers by task metadata (a noise task's seed: one per seed)
    lm, lm_key = None, None
    backbone, bb_key = None, None  # the tokrag Backbone of the last tokrag model, kept for the next (backbone_key)
    bar = tqdm(total=len(keyed), initial=len(summary.skipped), desc=f"leaderboard {spec.name}", unit="cell",
               disable=not progress, position=0)
    deferred = []

    said: set[str] = set()

    def _current(cell: Cell, key: str, mat: dict) -> tuple[str, dict]:
        """The key and material of ``cell``'s inputs now (:func:`inputs_now`); a cell whose inputs changed since
        the run began runs under the key of the current inputs, said once per change."""
        new_key, new_mat, diffs = inputs_now(spec, cell, mat)
        if new_key == key:
            return key, mat
        line = inputs_changed_line(diffs)
        if line not in said:
            said.add(line)
            log.warning("leaderboard %s: inputs changed since the run began (%s); %s and the cells after it with "
                        "these inputs run under the keys of the current inputs (this one: %s, was %s)",
                        spec.label(), line, cell.label, new_key, key)
        for i, (c, _, _) in enumerate(keyed):  # what an interrupt reports (_interrupted) looks at the new folder
            if c.cell_id == cell.cell_id:
                keyed[i] = (c, new_key, new_mat)
        return new_key, new_mat

    def _attempt(cell: Cell, key: str, mat: dict, blocking: bool) -> str:
        nonlocal lm, lm_key, backbone, bb_key
        was = key
        key, mat = _current(cell, key, mat)  # before the lock: the folder is the current inputs' key
        if key != was and cell_is_done(runs / key, cell.cell_id):
            return "done"  # finished earlier under the current inputs (e.g. an edit undone)

        def recheck() -> str:
            new_key, _, diffs = inputs_now(spec, cell, mat)
            return inputs_changed_line(diffs) if new_key != key else ""

        try:
            with file_lock(runs / key, timeout=-1 if blocking else 0):
                if cell_is_done(runs / key, cell.cell_id):
                    return "other"
                if not budget.take():
                    return "limit"
                meta = cell.lm_eval_metadata()
                mkey = canonical_json(meta)
                if mkey not in managers:
                    managers[mkey] = _load_task_manager(spec, meta)
                tm = managers[mkey]
                want = fingerprint([cell.method.model, cell.model_args, cell.batch_size, cell.device])
                if lm_key != want:
                    # the patched Linear forwards of a model (decoder.pack_linear_weights) are cycles: collected
                    # before the next load, and only for a model of torch objects (a full collection costs)
                    collect, lm = lm is not None and holds_torch(lm), None
                    reuse = backbone_key(cell)
                    if backbone is not None and reuse != bb_key:  # never two models in memory: the old one goes first
                        backbone, bb_key, collect = None, None, True
                    if collect:
                        gc.collect()
                    if reuse is not None and backbone is not None:
                        bar.set_postfix_str(f"building {cell.method.name} over the loaded model")
                        lm = model_over(cell, backbone)
                    else:
                        bar.set_postfix_str(f"loading {cell.method.name}")
                        lm = make_model(cell)
                        if reuse is not None and _built_as_keyed(lm, reuse):
                            backbone, bb_key = lm.backbone, reuse
                    lm_key = want
                bar.set_postfix_str(cell.label)
                if cell_lines:
                    _cell_line(f"cell {cell.cell_id} started in {runs / key}")
                try:
                    cost = run_cell(spec, cell, key, mat, runs / key, lm, progress=progress, task_manager=tm,
                                    resume=resume, recheck=recheck)
                except InputsChangedError as exc:
                    log.warning("leaderboard %s: %s", spec.label(), exc)
                    if cell_lines:
                        _cell_line(f"cell {cell.cell_id} left unfinished in {runs / key}: its inputs changed while "
                                   f"it ran")
                    return "changed"
                if cell_lines:
                    replayed = int(cost["resumed_requests"])
                    _cell_line(f"cell {cell.cell_id} finished in {runs / key}: {cost['wall_s']:.1f} s, "
                               f"{cost['forward_passes']} forward passes"
                               + (f" ({replayed} requests replayed from its journal)" if replayed else ""))
                summary.forward_passes += int(cost["live_forward_passes"])
                summary.replayed_requests += int(cost["resumed_requests"])
                return "ran"
        except TimeoutError:
            return "locked"

    def _outcome_list(outcome: str) -> list[str]:
        return {"ran": summary.ran, "changed": summary.changed, "done": summary.skipped}.get(outcome, summary.by_other)

    def _cells() -> None:
        """Start the helpers (``procs > 1``, :func:`run_processes`), run or claim the cells, then wait for the
        helpers' cells."""
        nonlocal budget, budget_dir, summaries_dir, deferred
        if procs > 1:
            if budget is None:  # run --jobs N --max-cells M: one count for every process, in the runs folder
                budget_dir = runs / _budget_name()
                with leaderboard_write(budget_dir):
                    budget_dir.mkdir()
                with leaderboard_write(budget_dir / "limit"):
                    (budget_dir / "limit").write_text(str(max_cells), encoding="ascii")
                budget = _CellBudget.shared(budget_dir)
            cmd = [sys.executable, "-m", "leaderboards.cli", "run", str(spec.path), "--runs-dir", str(runs), "--no-progress"]
            for option, names in spec.selection.items():  # helpers run the same selected cells
                cmd += [f"--{option}", ",".join(names)]
            if not resume:
                cmd.append("--no-resume")
            if budget_dir:
                cmd += [BUDGET_OPTION, str(budget_dir)]
            cmd.append(JOBS_HELPER_OPTION)
            summaries_dir = runs / _budget_name(_JOBS_PREFIX)  # each helper's summary (not its stdout); in the runs
            with leaderboard_write(summaries_dir):
                summaries_dir.mkdir()  # folder, so that a main process killed before its clean-up leaves nothing in /tmp
            for i in range(procs - 1):
                with _interrupts_deferred():
                    helpers.append(subprocess.Popen([*cmd, SUMMARY_OPTION, str(summaries_dir / f"helper-{i}.json")],
                                                    env={**os.environ, LEADER_ENV: str(os.getpid()),
                                                         CELL_LINES_ENV: "1" if cell_lines else "0"}))
        for cell, key, mat in todo:
            outcome = _attempt(cell, key, mat, blocking=False)
            if outcome == "limit":
                deferred = []
                break
            if outcome == "locked":
                deferred.append((cell, key, mat))
                continue
            _outcome_list(outcome).append(cell.cell_id)
            bar.update(1)
        for cell, key, mat in deferred:
            outcome = _attempt(cell, key, mat, blocking=True)
            if outcome == "limit":
                break
            _outcome_list(outcome).append(cell.cell_id)
            bar.update(1)
        for h in helpers:  # they run their cells to the end
            h.wait()

    try:  # from here on every KeyboardInterrupt (Ctrl-C, SIGTERM under the CLI) ends as RunInterrupted
        try:
            _cells()
        finally:  # on any exception the helpers still running are stopped (in steps), never left behind or waited for
            late = _stop_helpers(helpers, interrupted=isinstance(sys.exc_info()[1], KeyboardInterrupt))
            bar.close()
            if budget_dir:
                shutil.rmtree(budget_dir, ignore_errors=True)
            if summaries_dir:
                parts = _helper_summaries(helpers, summaries_dir)
                shutil.rmtree(summaries_dir, ignore_errors=True)
            if late is not None and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                raise late  # a Ctrl-C while the helpers were stopped after another error: the run was interrupted
    except KeyboardInterrupt as exc:  # say what was kept; no cell's file is written here
        raise _interrupted(spec, runs, keyed, exc) from None
    failed = [h for h in helpers if h.returncode]
    if failed:  # killed (the OOM killer's SIGKILL) or failed: this process took over any cell it held (its lock freed)
        _helpers_failed(spec, runs, keyed, failed, summary, jobs, started_only=max_cells is not None)
    if helpers:
        _add_helper_summaries(summary, [p for p, h in zip(parts, helpers) if not h.returncode],
                              [cell.cell_id for cell, _, _ in keyed])
    if max_cells is not None and cell_budget_dir is None:  # the main process: what --max-cells left unstarted
        started = {*summary.ran, *summary.skipped, *summary.by_other, *summary.changed}
        summary.left = [cell.cell_id for cell, _, _ in keyed if cell.cell_id not in started]
    summary.wall_s = time.perf_counter() - t_start
    return summary


def load_cell(cell_dir: Path, cell_id: str | None = None) -> dict[str, Any]:
    """Read a finished cell folder (after :func:`verify_cell_dir`, of ``cell_id`` when given): config, results, cost,
    provenance, samples.

    Raises:
        IncompleteRunError: unfinished or corrupted folder; MisplacedRunError: another cell's run.
        DataError: a samples file that is not valid JSONL.
    """
    manifest = verify_cell_dir(cell_dir, cell_id)
    out: dict[str, Any] = {"manifest": manifest, "dir": str(cell_dir)}
    for name in ("config", "results", "cost", "provenance"):
        out[name] = json.loads((cell_dir / f"{name}.json").read_text(encoding="utf-8"))
    from retrieval.io import read_jsonl

    out["samples"] = {}
    for name in sorted(manifest["files"]):
        if name.startswith("samples_") and name.endswith(".jsonl"):
            try:
                out["samples"][name[len("samples_"):-len(".jsonl")]] = [obj for _, obj in read_jsonl(cell_dir / name)]
            except DataError:
                raise
    return out
