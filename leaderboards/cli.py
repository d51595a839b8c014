"""``tokrag leaderboard run|report|rescore|check SPEC``: the leaderboard command line.

    tokrag leaderboard run leaderboards/specs/ci.yaml [--runs-dir runs] [--jobs 2]
    tokrag leaderboard run leaderboards/specs/nq-wiki-12k-v2.yaml --estimate [--jobs 2]
    tokrag leaderboard run leaderboards/specs/nq-wiki-12k-v2.yaml --methods rag-none,tokrag --tasks nq_oracle_bm25
    tokrag leaderboard report leaderboards/specs/ci.yaml [--out DIR] [--no-timings] [--no-questions] [--allow-missing] [--replace]
    tokrag leaderboard rescore leaderboards/specs/ci.yaml [--out DIR] [--allow-missing] [--replace]
    tokrag leaderboard check leaderboards/specs/ci.yaml --baseline leaderboards/baselines/ci.json [--write [--allow-partial]]
    tokrag leaderboard check leaderboards/specs/ci.yaml --baseline leaderboards/baselines/ci.json --methods rag-none --tasks nq_oracle_bm25

``run`` prints one JSON summary line last (cells run / skipped / done by another process, forward
passes, wall seconds, and the ``selection`` of ``--models/--methods/--tasks`` when given; ``stopped_by_max_cells``
and ``left``, the count of cells not started, when ``--max-cells N`` stopped it, which also prints one stderr line
``stopped after N cells (--max-cells N); M cells remain: <the run command>``, the command given minus
``--max-cells``, :func:`max_cells_message`), also when ``--report``'s report is
refused (a folder that is not a tokrag report, unfinished cells), whose error then ends the command (exit 2); with ``--jobs N`` it is
the whole run's (its helpers write theirs to a file the main process adds up, never to stdout). Without ``--report``,
a run that leaves no cell of its selection to do (none left by ``--max-cells``, none left unfinished because its inputs
changed while it ran) then prints one stderr line, once (by the main process of ``--jobs N``): the cells run, found
finished and finished by another process, the runs folder and the ``report`` command that reads it
(:func:`finished_message`); ``run --estimate``
runs nothing, checks the spec's model arguments as ``run`` does before its first cell, and prints the
estimated CPU time of the unfinished cells (:mod:`leaderboards.estimate`), JSON last. ``rescore`` re-scores
every logged sample with the tasks' current metric code and rebuilds the report without loading a model. ``report`` and
``rescore`` refuse (exit 2, nothing written) to overwrite a report whose results for some cell the new one
would lack, or the report of another spec file (:func:`leaderboards.report.check_report_spec`), unless
``--replace``. ``check``
prints OK/FAIL per cell and metric plus one FAIL per broken invariant and exits 1 on any FAIL; with
``--models/--methods/--tasks`` (read as ``run`` reads them) it checks the selected cells only; a
report of run folders that break an invariant is refused (exit 2), and so is a check that would compare nothing (a
baseline holding no value of the checked cells: ``"cells": {}``, never written by ``--write``). ``check --write``
is refused while a cell of the spec is unfinished (so a baseline never silently loses a cell); ``--allow-partial``
writes the finished cells and keeps the existing baseline's entries of the unfinished ones unchanged.
``run`` interrupted by Ctrl-C or SIGTERM prints one line instead of a traceback: the cells finished, the requests
the journals of unfinished cells kept, and the command that resumes (:func:`interrupted_message`); the command then
dies by that signal, as a shell loop expects (:func:`main` returns 130/143 to an in-process caller instead). A
helper of ``--jobs N`` that failed and left cells unfinished ends the run with one line (exit 2) whose resume command
is built by the same rule, the command given minus ``--max-cells`` and ``--no-resume`` (:func:`given_command`,
:class:`~leaderboards.runner.HelpersFailed`). A suggested command carries the ``--runs-dir`` it was given.
When the runs folder holds none of the spec's cells finished but a likely other one does (``runs/`` beside the spec,
as after ``cd lb && tokrag leaderboard run velmora.yaml``; :func:`leaderboards.runner.likely_runs_dirs`), one line
says which and how many, and to add ``--runs-dir`` (:func:`leaderboards.runner.runs_elsewhere_note`): ``report``,
``rescore`` and ``check --write`` are refused with it instead of the list of cells "not run yet" (with
``--allow-missing`` / ``--allow-partial`` it is a ``note:`` on stderr), ``check`` prints it first, and ``run`` and
``run --estimate`` print it (stderr) and go on.
Also runnable as ``python -m leaderboards.cli``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import threading
from typing import Any, Callable

from .spec import LeaderboardSpec, load_spec


SPEC_HELP = "the leaderboard spec, a YAML file (e.g. leaderboards/specs/ci.yaml)"
RUNS_HELP = "run folders (default: spec runs_dir, $TOKRAG_RUNS_DIR or ./runs)"
REPLACE_HELP = ("overwrite an existing report in the output folder even when it has results for cells the new one "
                "lacks (they are lost) or was written by another spec file (two spec files with one name:); without "
                "this flag such a report is refused and nothing is written")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tokrag leaderboard", description="Run, report and check leaderboards from a YAML spec.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every unfinished cell (resumable; finished cells are skipped)")
    r.add_argument("spec", help=SPEC_HELP)
    r.add_argument("--runs-dir", default=None, help=RUNS_HELP)
    r.add_argument("--jobs", type=int, default=1,
                   help="runner processes sharing the run folder (cells claimed by lock); at most the cells left to "
                        "run (and --max-cells)")
    r.add_argument("--max-cells", type=int, default=None,
                   help="stop after this many cells were started, counted over all --jobs processes together (testing)")
    r.add_argument("--no-resume", action="store_true",
                   help="do not resume an interrupted cell from its request journal: delete its folder and redo it")
    r.add_argument("--cell-budget-dir", default=None, help=argparse.SUPPRESS)  # run --jobs N --max-cells M: its helpers' count
    r.add_argument("--jobs-helper", action="store_true", help=argparse.SUPPRESS)  # a helper of run --jobs N: quiet when interrupted
    r.add_argument("--summary-file", default=None, help=argparse.SUPPRESS)  # a helper of run --jobs N: its summary, not on stdout
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bars: neither the run's nor lm-eval's, transformers', datasets' or the models' (logs only)")
    r.add_argument("--report", action="store_true",
                   help="build the report afterwards; after --models/--methods/--tasks the whole spec's, its unfinished "
                        "cells reported as missing (as report --allow-missing)")
    r.add_argument("--replace", action="store_true", help=REPLACE_HELP)
    r.add_argument("--estimate", action="store_true",
                   help="run nothing: estimate the CPU time of the unfinished cells from the finished ones in --runs-dir")
    r.add_argument("--fallback-s-per-question", type=float, default=None,
                   help="with --estimate: seconds per question for cells with no similar finished cell")
    _add_selection(r, "run (or estimate) only these {what}, comma-separated (repeats add up): a grid in parts, the "
                      "cells that matter first; the cells and run folders are those of the whole spec")
    for name, helptext in (("report", "build Markdown/CSV/JSON/HTML from the run folders only"),
                           ("rescore", "re-score the logged samples with the current metric code (no model) and rebuild the report")):
        q = sub.add_parser(name, help=helptext)
        q.add_argument("spec", help=SPEC_HELP)
        q.add_argument("--runs-dir", default=None, help=RUNS_HELP + "; the report reads only these")
        q.add_argument("--out", default=None, help="output folder (default: spec report_dir or <runs-dir>/reports/<name>)")
        q.add_argument("--no-timings", action="store_true", help="leave out wall time and peak memory (they vary between runs)")
        q.add_argument("--no-questions", action="store_true", help="leave out the per-question pages (questions/*.html)")
        q.add_argument("--allow-missing", action="store_true",
                       help="report unfinished cells as missing (counted and listed at the top) instead of failing")
        q.add_argument("--replace", action="store_true", help=REPLACE_HELP)
    c = sub.add_parser("check", help="compare the runs with a baseline: OK/FAIL per cell and metric, exit 1 on FAIL "
                       "(exit 2 if the baseline holds none of the checked cells)")
    c.add_argument("spec", help=SPEC_HELP)
    c.add_argument("--baseline", required=True,
                   help="the baseline JSON file (e.g. leaderboards/baselines/ci.json): values and tolerances per cell and metric")
    c.add_argument("--runs-dir", default=None, help=RUNS_HELP)
    c.add_argument("--write", action="store_true",
                   help="write the current values as the baseline instead of checking; refused while any cell of the "
                        "spec is unfinished (a baseline never loses a cell), unless --allow-partial")
    c.add_argument("--allow-partial", action="store_true",
                   help="with --write: write the finished cells and keep the existing baseline's entries of the "
                        "unfinished ones as they are (a cell neither finished nor in the baseline stays absent)")
    _add_selection(c, "check only the cells of these {what}, comma-separated (repeats add up), as run selects them: "
                      "a run made in parts is checked part by part; the baseline's other cells are not checked "
                      "(not with --write)")
    return p


def _add_selection(parser: argparse.ArgumentParser, helptext: str) -> None:
    """``--models/--methods/--tasks A,B`` (:func:`_names`, extended when repeated) on ``parser`` (``run``, ``check``):
    the selection :meth:`leaderboards.spec.LeaderboardSpec.select` makes; ``helptext`` names them by ``{what}``."""
    for option, what in (("models", "models (names under models:)"), ("methods", "methods"), ("tasks", "tasks")):
        parser.add_argument(f"--{option}", type=_names, action="extend", default=None, metavar="A,B",
                            help=helptext.format(what=what))


def _names(text: str) -> list[str]:
    """``--methods a,b``: the comma-separated names (argparse type; empty names are an error)."""
    names = [x.strip() for x in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return names


def _check_args(args: argparse.Namespace) -> None:
    """Numeric arguments argparse cannot range-check, and output paths, before any work (one-line errors). ``run``
    started by a launcher as several processes (``torchrun``/``accelerate launch``: ``WORLD_SIZE`` > 1) is refused:
    one process held a cell's lock and waited in lm-eval's collectives for the other, which waited for the lock (a
    silent deadlock)."""
    from retrieval.errors import ConfigError
    from tokrag_model.distributed import world_size_from_env

    if args.cmd == "run" and world_size_from_env() > 1:
        raise ConfigError(f"leaderboard run was started as {world_size_from_env()} processes (WORLD_SIZE, by torchrun or "
                          "accelerate launch): run the leaderboard in one process (--jobs N for parallel cells); "
                          "data-parallel runs of one cell are `torchrun ... -m lm_eval` (leaderboards/README.md, Scale-out)")

    from .runner import check_run_args, check_writable

    for option in ("runs_dir", "out", "baseline", "spec"):  # '' (an unset shell variable) silently meant the default
        value = getattr(args, option, None)
        if value is not None and not value.strip():
            flag = "the spec argument" if option == "spec" else f"--{option.replace('_', '-')}"
            raise ConfigError(f"{args.cmd} {flag} is empty (an unset shell variable?); give "
                              f"{'a file' if option in ('baseline', 'spec') else 'a folder'}"
                              f"{'' if option in ('baseline', 'spec') else ', or leave the option out for the default'}")
    check_run_args(getattr(args, "jobs", 1), getattr(args, "max_cells", None))
    fb = getattr(args, "fallback_s_per_question", None)
    if fb is not None and not (fb > 0 and math.isfinite(fb)):  # also NaN, inf
        raise ConfigError(f"run --fallback-s-per-question must be a number of seconds > 0, got {fb}; give a finite "
                          "number such as 3.4 (the seconds one question takes)")
    if getattr(args, "out", None):
        check_writable(args.out, f"{args.cmd} --out", folder=True)
    if args.cmd == "check":
        if args.allow_partial and not args.write:
            raise ConfigError("check --allow-partial is only used with --write")
        chosen = [f"--{k}" for k in ("models", "methods", "tasks") if getattr(args, k, None) is not None]
        if args.write and chosen:
            raise ConfigError(f"check --write writes the whole spec's baseline: drop {'/'.join(chosen)} (they select "
                              "the cells a check compares); --write --allow-partial writes the finished cells")
        if args.write:
            check_writable(args.baseline, "check --write --baseline", folder=False)


class _Signalled(KeyboardInterrupt):
    """SIGTERM during ``run``, raised as an interrupt so that it ends the run as Ctrl-C does (``signum``: 15)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _sigterm_as_interrupt() -> Callable[[], None]:
    """While ``run`` runs, SIGTERM (``kill``) raises :class:`_Signalled` (a KeyboardInterrupt) in the main thread, so it
    ends with the one-line message of Ctrl-C instead of silently; a second SIGTERM kills as before. Left alone when
    SIGTERM already has a handler of the caller's, or off the main thread. Returns the function that restores it.

    The handler stays installed after the first SIGTERM and kills on the next (``SIG_DFL`` and ``os.kill``) instead
    of setting ``SIG_DFL`` for it in the first one's handler: a second SIGTERM caught at the moment that change was
    made (inside ``signal.signal``) was ignored, with CPython's ``OSError: Signal 15 ignored due to race condition``
    and a traceback (the race of :func:`_helper_signals`), and one caught in the handler before it (a nested call of
    the handler, from ``signal.signal``'s check of pending signals) was lost: the run went on to its message."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None
    fired = False

    def handler(signum, _frame):
        nonlocal fired
        if fired:  # the second SIGTERM: its default action, at once (no flush: this may run inside a write)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return  # SIGTERM blocked in this thread: it ends the process once unblocked
        fired = True  # first, before any call (where a nested SIGTERM would be handled)
        raise _Signalled(signum)

    signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is handler:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore


def _helper_signals() -> Callable[[], None]:
    """In a helper of ``run --jobs N``: the first SIGINT or SIGTERM raises :class:`_Signalled` (a KeyboardInterrupt:
    the helper stops as an interrupted run, its journal kept) and every later one is ignored, so the main process's
    SIGTERM (sent at once when it is interrupted, :func:`~leaderboards.runner._stop_helpers`) after the Ctrl-C a
    terminal sent the whole process group does not cut the helper's way out. SIGINT is handled even when the helper
    inherited it ignored. Off the main thread nothing changes. Returns the function that restores the handlers,
    a no-op once a signal came (the helper then ignores both until it exits).

    "Ignored" is a Python handler that does nothing, not ``SIG_IGN``: the main's SIGTERM often arrives before the
    interpreter has run the handler of the Ctrl-C, and CPython then found ``SIG_IGN`` installed for a signal already
    caught and printed ``OSError: Signal 15 ignored due to race condition`` with a traceback in the run's log."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    fired: list[int] = []

    def ignore(_signum, _frame):
        pass

    def handler(signum, _frame):
        for s in saved:
            signal.signal(s, ignore)
        fired.append(signum)
        raise _Signalled(signum)

    for s in saved:
        signal.signal(s, handler)

    def restore() -> None:
        if not fired:
            for s, h in saved.items():
                signal.signal(s, h if h is not None else signal.SIG_DFL)

    return restore


def interrupted_message(args: argparse.Namespace, spec: LeaderboardSpec, whole: LeaderboardSpec, exc: KeyboardInterrupt,
                        stage: str) -> str:
    """The one line an interrupted ``run`` prints: which signal, what the runs folder kept (finished cells, the
    requests journaled for unfinished ones) and the exact command that resumes (:func:`given_command`: the command
    given minus ``--max-cells`` and ``--no-resume``, whose journals are what resumes; interrupted before any cell
    started, the command given).

    ``exc``: a :class:`~leaderboards.runner.RunInterrupted` when :func:`~leaderboards.runner.run_spec` had begun its
    cells (whenever the interrupt came after that: in a cell, while the helpers of ``--jobs`` ran, while they were
    stopped); any other KeyboardInterrupt with ``stage`` ``"run"`` came before (nothing was computed), with
    ``"report"`` while ``--report`` built the report after the run, with ``"done"`` after the run returned."""
    from .runner import RunInterrupted, resolve_runs_dir, run_command

    how = "Ctrl-C" if int(getattr(exc, "signum", signal.SIGINT)) == signal.SIGINT else "SIGTERM"
    runs = resolve_runs_dir(spec, args.runs_dir)
    resume = given_command(args, spec, drop=("--max-cells", "--no-resume"))
    if not isinstance(exc, RunInterrupted):
        if stage == "report":
            report = run_command(whole, runs, *(["--allow-missing"] if spec.selection else []),
                                 *(["--replace"] if args.replace else []), verb="report")
            return (f"tokrag leaderboard: interrupted ({how}) while building the report: the run folders are finished "
                    f"and kept in {runs}; build the report with: {report}")
        if stage == "done":
            return f"tokrag leaderboard: interrupted ({how}) after the run finished: the run folders are kept in {runs}"
        return (f"tokrag leaderboard: interrupted ({how}) before any cell started; nothing was computed; "
                f"run again with: {given_command(args, spec)}")
    parts = [f"{exc.finished} of {exc.total} cells are finished and kept in {runs}"]
    done = {c: n for c, n in exc.journaled.items() if n}
    replay = "replayed when resumed on this machine with the same software; otherwise recomputed"
    if len(done) == 1:
        (cid, n), = done.items()
        parts.append(f"the unfinished cell {cid} kept {n} requests in its journal ({replay})")
    elif done:
        parts.append(f"{len(done)} unfinished cells kept {sum(done.values())} requests in their journals ("
                     + ", ".join(f"{c}: {n}" for c, n in done.items()) + f"; {replay})")
    empty = [c for c, n in exc.journaled.items() if not n] + list(exc.unjournaled)
    if empty:
        parts.append(f"{', '.join(empty)} kept no request (no journaled chunk; redone from the start)")
    return f"tokrag leaderboard: interrupted ({how}): " + "; ".join(parts) + f"; resume with: {resume}"


def finished_message(spec: LeaderboardSpec, whole: LeaderboardSpec, runs_dir: str | None, summary: Any) -> str:
    """The stderr line after a ``run`` (without ``--report``) that left no cell of its selection to do: the summary
    on stdout is one JSON object, which said neither where the run folders are nor how to read them (s61 nu1,
    new-user trial). E.g. ``tokrag leaderboard: 2 cells ran, 0 were finished already; the run folders are in
    /abs/runs; build the report with: tokrag leaderboard report tiny.yaml --runs-dir /abs/runs`` (cells another
    process finished meanwhile are counted as ``finished by another process``; the report command is
    :func:`~leaderboards.runner.run_command`'s, of the whole spec, with ``--allow-missing`` after a selection, whose
    cells outside it may be unfinished). ``runs_dir``: ``--runs-dir`` as given (None: the spec's, else
    ``$TOKRAG_RUNS_DIR``, else ``./runs``, as the run resolved it). Raises nothing."""
    from .runner import resolve_runs_dir, run_command

    runs = resolve_runs_dir(spec, runs_dir)
    report = run_command(whole, runs, *(["--allow-missing"] if spec.selection else []), verb="report")
    done = len(summary.skipped)
    parts = [f"{_n_cells(len(summary.ran))} ran", f"{done} {'was' if done == 1 else 'were'} finished already"]
    if summary.by_other:
        parts.append(f"{len(summary.by_other)} finished by another process")
    return (f"tokrag leaderboard: {', '.join(parts)}; the run folders are in {runs}; build the report with: "
            f"{report}")


def _n_cells(n: int) -> str:
    """``1 cell``, ``3 cells``: :func:`leaderboards.estimate._count`, one rule for the counts the CLI prints."""
    from .estimate import _count

    return _count(n, "cell")


def given_command(args: argparse.Namespace, spec: LeaderboardSpec, drop: tuple[str, ...] = ()) -> str:
    """The ``run`` command the user gave (shell-quoted, :func:`~leaderboards.runner.run_command`), minus the options
    in ``drop``: the one rule of the commands a ``run`` prints to go on (:func:`max_cells_message`,
    :func:`interrupted_message`, and a failed helper of ``--jobs``: :class:`~leaderboards.runner.HelpersFailed`, minus
    ``--max-cells`` and ``--no-resume`` as after an interrupt, its journals being what resumes). It holds the spec, the resolved runs folder as ``--runs-dir`` (the folder this run
    wrote, whatever chose it), the selection and every other option given, in this order: ``--max-cells M``,
    ``--jobs N`` (when N > 1), ``--no-resume``, ``--no-progress``, ``--report``, ``--replace``,
    ``--fallback-s-per-question S``; never the hidden options of a ``--jobs`` helper. Built from the parsed options, so
    an abbreviation (``--max 1``) or ``--max-cells=1`` is dropped as ``--max-cells`` is.

    Args:
        drop: option names to leave out (``--max-cells``: the command goes on with the cells left; ``--no-resume``:
            after an interrupt, the journals it names are what resumes).

    Raises:
        ValueError: a name in ``drop`` that is no option of this command (a caller's mistake, not a user's).
    """
    from .runner import resolve_runs_dir, run_command

    opts = {"--max-cells": [str(args.max_cells)] if args.max_cells is not None else None,
            "--jobs": [str(args.jobs)] if args.jobs > 1 else None,
            "--no-resume": [] if args.no_resume else None,
            "--no-progress": [] if args.no_progress else None,
            "--report": [] if args.report else None,
            "--replace": [] if args.replace else None,
            "--fallback-s-per-question": ([repr(args.fallback_s_per_question)]
                                          if args.fallback_s_per_question is not None else None)}
    unknown = set(drop) - set(opts)
    if unknown:
        raise ValueError(f"given_command: no option {', '.join(sorted(unknown))} to drop")
    words = [w for name, values in opts.items() if values is not None and name not in drop for w in (name, *values)]
    return run_command(spec, resolve_runs_dir(spec, args.runs_dir), *words)


def max_cells_message(args: argparse.Namespace, spec: LeaderboardSpec, left: int) -> str:
    """The stderr line of ``run --max-cells N`` stopped with ``left`` (>= 1) cells of its selection not started:
    ``stopped after 1 cell (--max-cells 1); 3 cells remain: <command>`` (``1 cell remains`` for one). The command is
    the user's ``run`` minus ``--max-cells`` (:func:`given_command`); it keeps ``--no-resume``: every cell this run
    started is finished (a finished cell is skipped, with or without it), so it applies only to the cells left, as
    the user asked."""
    command = given_command(args, spec, drop=("--max-cells",))
    return (f"stopped after {_n_cells(args.max_cells)} (--max-cells {args.max_cells}); {_n_cells(left)} "
            f"{'remains' if left == 1 else 'remain'}: {command}")


def n_per_task(rows: list[dict]) -> str:
    """``n per task: t1 30, t2 30`` (documents scored per cell, over the methods; a range when they differ)."""
    ns: dict[str, set] = {}
    for r in rows:
        ns.setdefault(r["task"], set()).add(r.get("n"))
    parts = []
    for task, vals in ns.items():
        known = sorted(v for v in vals if v is not None)
        text = "-" if not known else str(known[0]) if len(known) == 1 else f"{known[0]}-{known[-1]} (differs between methods)"
        parts.append(f"{task} {text}")
    return "n per task: " + ", ".join(parts)


def print_cells(data: dict) -> None:
    """Print (stdout) the report's cells summary as its top shows it (:func:`leaderboards.report.cells_lines`): the
    ``Cells with results: N of M`` line, then each further line indented by two spaces (the missing cells, one line
    per model or per model and task; the partly finished rows; the rows whose seeds repeat one run). Printing the
    first line alone left ``... their values show as -):`` with nothing after the colon."""
    from .report import cells_lines

    lines = cells_lines(data)
    for i, line in enumerate(lines):
        print(line if i == 0 else f"  {line}")


def _runs_elsewhere(spec: LeaderboardSpec, runs_dir: str | None, verb: str) -> str | None:
    """:func:`leaderboards.runner.runs_elsewhere_note` (``verb``: ``run``, ``estimate``, ``report``; ``check`` and
    ``rescore`` read as ``report``): the line saying that another likely runs folder holds the cells that the one in
    use lacks; None when it does not apply."""
    from .runner import runs_elsewhere_note

    return runs_elsewhere_note(spec, runs_dir, verb=verb if verb in ("run", "estimate") else "report")


def _note_runs_elsewhere(spec: LeaderboardSpec, runs_dir: str | None, verb: str) -> None:
    """``run`` / ``run --estimate``: print :func:`_runs_elsewhere`'s line (``note: ...``, stderr) when it applies; the
    command goes on (a new runs folder may be what is wanted)."""
    line = _runs_elsewhere(spec, runs_dir, verb)
    if line is not None:
        print(f"note: {line}", file=sys.stderr, flush=True)


def _refuse_runs_elsewhere(spec: LeaderboardSpec, runs_dir: str | None, allow_missing: bool) -> None:
    """``report``/``rescore``/``check --write`` with none of the spec's cells finished in the runs folder but some in
    another likely one: refused with :func:`_runs_elsewhere`'s one line (it would be refused anyway, with one
    "not run yet" line per cell and the command that computes them all again); with ``allow_missing`` (their
    ``--allow-missing``, ``--allow-partial``) the line is printed (stderr) and the command goes on.

    Raises:
        IncompleteRunError: that line, unless ``allow_missing``."""
    from .runner import IncompleteRunError

    line = _runs_elsewhere(spec, runs_dir, "report")
    if line is None:
        return
    if allow_missing:
        print(f"note: {line}", file=sys.stderr, flush=True)
        return
    raise IncompleteRunError(line)


def _refuse_copied_models(whole: LeaderboardSpec, runs_dir: str | None) -> None:
    """``report``, ``rescore``, ``check`` and ``check --write``: refuse a ``models:`` entry every cell of which has the
    run key of another model's cell (a renamed copy), as ``run`` and ``run --estimate`` do
    (:func:`leaderboards.runner.check_distinct_models`, on the whole spec, a selection of ``check`` included). Its
    cells were served the other model's runs, so the report printed that model's numbers under the copy's name and
    ``check --write`` recorded them, with exit 0, when the runs existed before the copy was added (or before ``run``
    refused it). Models that share only some run folders (a chat and a plain contract on plain-text or
    ``loglikelihood_rolling`` tasks) pass. Nothing is loaded or written.

    Raises:
        ConfigError: :func:`~leaderboards.runner.check_distinct_models`'s one line (naming both models, a pair of their
            cells and the shared run key).
    """
    from .keys import cell_keys
    from .runner import check_distinct_models, resolve_runs_dir

    check_distinct_models(whole, cell_keys(whole, resolve_runs_dir(whole, runs_dir)))


def main(argv: list[str] | None = None, *, die_by_signal: bool = False) -> int:
    """``tokrag leaderboard`` for an in-process caller (a test, a script); returns the exit code (1 = a check failed).

    An interrupted ``run`` (Ctrl-C or SIGTERM) prints its one line and returns 130 (SIGINT) or 143 (SIGTERM); with
    ``die_by_signal`` (the commands: :func:`command`, ``python -m leaderboards.cli``) it then ends the process by that
    signal instead (:func:`retrieval.errors.die_by`), except in a helper of ``run --jobs``, which exits quietly."""
    args = _parser().parse_args(argv)
    if args.cmd == "run" and args.no_progress and not args.estimate:
        from .runner import no_progress_bars

        with no_progress_bars():  # before anything imports tqdm or huggingface_hub: they read the environment then
            return _main(args, die_by_signal)
    return _main(args, die_by_signal)


def _main(args: argparse.Namespace, die_by_signal: bool) -> int:
    """:func:`main` after the arguments are parsed (and, for ``run --no-progress``, the progress bars turned off)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    _check_args(args)
    spec = whole = load_spec(args.spec)
    if args.cmd in ("run", "check"):
        spec = whole.select(models=args.models, methods=args.methods, tasks=args.tasks, verb=args.cmd)
    if args.cmd == "run" and args.estimate:
        from .estimate import estimate, render
        from .runner import check_cell_args, check_distinct_methods, check_distinct_models

        from .runner import resolve_runs_dir

        from .keys import cell_keys
        from .runner import cell_is_done, check_moved_runs

        runs = resolve_runs_dir(spec, args.runs_dir)  # a file given as the runs dir: the error run would stop on
        check_distinct_methods(whole, whole.cells())  # the errors a run would stop on (the whole spec's), before its estimate
        # run checks the cells it has to run (finished ones are skipped, their data not needed): the same here
        keyed = cell_keys(spec, runs)
        check_distinct_models(whole, keyed if not spec.selection else cell_keys(whole, runs))
        todo = [(c, key) for c, key, _ in keyed if not cell_is_done(runs / key, c.cell_id)]
        check_moved_runs(spec, runs, todo)
        check_cell_args(spec, [c for c, _ in todo])
        est = estimate(spec, args.runs_dir, jobs=args.jobs, fallback=args.fallback_s_per_question)
        _note_runs_elsewhere(spec, args.runs_dir, "estimate")
        print(render(est))
        print(json.dumps({k: v for k, v in est.items() if k not in ("cells", "by_method", "unestimated", "unregistered_reasons",
                                                                 "first_runs", "first_runs_devices", "other_inputs")}
                         | {"unestimated_cells": len(est["unestimated"])}, sort_keys=True, allow_nan=False))
        return 0
    if args.cmd == "run":
        from .runner import run_spec

        stage = "run"
        restore = _helper_signals() if args.jobs_helper else _sigterm_as_interrupt()
        try:
            if args.jobs_helper:  # SIGTERM when the main process dies, however it dies
                from .runner import follow_leader

                follow_leader()
            else:  # the cells finished in another likely runs folder: say so before computing them anew
                _note_runs_elsewhere(spec, args.runs_dir, "run")
            from .runner import HelpersFailed

            try:
                summary = run_spec(spec, args.runs_dir, progress=not args.no_progress, jobs=args.jobs,
                                   max_cells=args.max_cells, resume=not args.no_resume,
                                   cell_budget_dir=args.cell_budget_dir, jobs_helper=args.jobs_helper)
            except HelpersFailed as exc:  # its resume command: the one given, as after Ctrl-C (interrupted_message)
                raise exc.resume_with(given_command(args, spec, drop=("--max-cells", "--no-resume"))) from None
            stage = "done"
            refused = None  # the report step's refusal: raised after the run's summary (the cells computed are kept)
            if args.report:  # the whole spec's; after a selection the cells outside it may be unfinished: missing
                from retrieval.errors import TokragError

                from .report import build_report

                stage = "report"
                try:
                    out = build_report(whole, args.runs_dir, replace=args.replace, allow_missing=bool(spec.selection))
                except TokragError as exc:
                    refused = exc
                else:
                    print(f"report: {out}")
                    if spec.selection:
                        print_cells(json.loads((out / "leaderboard.json").read_text(encoding="utf-8")))
                stage = "done"
            if summary.left:  # run --max-cells N stopped with cells of the selection unrun: say so, and how to go on
                print(max_cells_message(args, spec, len(summary.left)), file=sys.stderr)
            if args.summary_file:  # a helper of run --jobs N: the main process prints the run's one summary
                from retrieval.io import atomic_write_text

                atomic_write_text(args.summary_file, json.dumps(summary.as_dict(), sort_keys=True) + "\n")
            else:
                print(json.dumps(summary.as_dict(), sort_keys=True))
                if not args.report and not summary.left and not summary.changed:  # where the cells are, what next
                    print(finished_message(spec, whole, args.runs_dir, summary), file=sys.stderr)
            if refused is not None:  # the command's exit status still says the report failed (exit 2)
                raise refused
        except KeyboardInterrupt as exc:  # one line, not a traceback: what was kept and how to go on
            restore()
            signum = int(getattr(exc, "signum", signal.SIGINT))
            if args.jobs_helper:  # the main process of run --jobs N speaks for its helpers
                return 128 + signum
            while True:  # a further Ctrl-C while the line is made (milliseconds) makes it again, not a traceback
                try:
                    line = interrupted_message(args, spec, whole, exc, stage)
                    break
                except KeyboardInterrupt:
                    continue
            print(line, file=sys.stderr)
            if die_by_signal:
                from retrieval.errors import die_by

                die_by(signum)
            return 128 + signum
        finally:
            restore()
        return 0
    _refuse_copied_models(whole, args.runs_dir)  # report, rescore, check (--write): before anything is written
    if args.cmd in ("report", "rescore"):
        _refuse_runs_elsewhere(spec, args.runs_dir, args.allow_missing)
    if args.cmd == "report":
        from .report import build_report

        out = build_report(spec, args.runs_dir, args.out, timings=not args.no_timings, allow_missing=args.allow_missing,
                           questions=not args.no_questions, replace=args.replace)
        print(f"report written to {out} (leaderboard.md, leaderboard.csv, leaderboard.json, index.html)")
        data = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
        print(n_per_task(data["rows"]))
        print_cells(data)
        return 0
    if args.cmd == "rescore":
        from .rescore import rescore

        out, changes = rescore(spec, args.runs_dir, args.out, timings=not args.no_timings, questions=not args.no_questions,
                               allow_missing=args.allow_missing, replace=args.replace)
        for note in changes["notes"]:
            print(f"note: {note}")
        for why in changes["missing"]:  # --allow-missing: each cell left out says why (e.g. several candidate folders)
            print(f"note: missing {why}", file=sys.stderr)
        for cid, moved in sorted(changes["changed"].items()):
            for metric, (old, new) in sorted(moved.items()):
                print(f"changed {cid}  {metric}: {old} -> {new}")
        print(f"re-scored report written to {out}")
        print_cells(json.loads((out / "leaderboard.json").read_text(encoding="utf-8")))
        print(json.dumps({k: v for k, v in changes.items() if k not in ("changed", "notes", "missing")}
                         | {"cells_changed": len(changes["changed"]), "cells_from_earlier_task_code": len(changes["notes"])},
                         sort_keys=True))
        return 0
    from .check import (check_against_baseline, next_steps, refuse_no_checks, summary_line, tolerance_line,
                        write_baseline)

    if args.write:
        _refuse_runs_elsewhere(spec, args.runs_dir, args.allow_partial)
        b = write_baseline(spec, args.runs_dir, args.baseline, allow_partial=args.allow_partial)
        for cid in b["_dropped"]:
            print(f"note: dropped {cid} from the baseline: not a cell of spec {spec.name!r}")
        if b["_unfinished"]:
            kept = sum(cid in b["cells"] for cid in b["_unfinished"])
            print(f"note: {len(b['_unfinished'])} unfinished cell(s) not updated ({kept} kept as the baseline had them, "
                  f"{len(b['_unfinished']) - kept} absent); first: {b['_unfinished'][0]}")
        print(f"baseline written to {args.baseline}: {len(b['cells'])} cells, metrics {sorted(b['tolerances'])}")
        print(tolerance_line(b))
        if b["_not_recorded_note"]:  # a metric of the runs left out (no tolerance names it)
            print(b["_not_recorded_note"])
        return 0
    run_from: list = []
    lines = check_against_baseline(spec, args.runs_dir, args.baseline, run_from)
    refuse_no_checks(spec, args.runs_dir, args.baseline, lines, run_from[0] if run_from else None)
    elsewhere = _runs_elsewhere(spec, args.runs_dir, "check")
    if elsewhere is not None:  # before the cells' FAIL lines, which say to run them again
        print(f"note: {elsewhere}")
    for line in lines:
        print(line.render())
    print(summary_line(lines))
    for line in next_steps(spec, args.runs_dir, args.baseline, lines, run_from[0] if run_from else None):
        print(line)
    return 0 if all(x.ok for x in lines) else 1


def command(argv: list[str] | None = None) -> int:
    """The command ``tokrag leaderboard ...`` (the console entry point, :mod:`tokrag_model.cli`) and ``python -m
    leaderboards.cli``: :func:`main` that ends the process by the signal that interrupted ``run``, so that a shell
    loop over specs stops at Ctrl-C (bash stops a ``for`` loop only when the child died of SIGINT)."""
    return main(argv, die_by_signal=True)


if __name__ == "__main__":  # also the helper runners of run --jobs N (runner.py starts them so)
    from retrieval.errors import TokragError, print_no_room

    try:
        sys.exit(command())
    except TokragError as exc:
        print(f"tokrag leaderboard: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:  # a failed write (a full disk, read-only, EIO, ...; wrapped or not): the line tokrag prints
        if not print_no_room(exc, "tokrag leaderboard"):
            raise
        sys.exit(2)
