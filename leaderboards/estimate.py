"""``tokrag leaderboard run SPEC --estimate``: the CPU time a grid will take, before starting it.

Every finished run folder under the runs directory (of any spec) is a measurement: its
``config.json`` says which method, model arguments and task it ran, its ``cost.json`` the wall
seconds (``wall_s``), the seconds inside the model's request methods (``model_s``) and the number of samples. A cell
of the spec that is not finished yet is estimated as its number of questions times the measured model seconds per
question of the most similar measurements, plus once the cell's fixed seconds (:func:`fixed_seconds`), in
this order (the first level that has a measurement wins, and is printed):

1. ``method+task``: same method name, weights (``pretrained``), ``k`` and task;
2. ``method+kind``: same method name, weights and ``k``, same kind of task (:func:`task_kind`: generation,
   ``output_type: generate_until``, or scoring, any other output type, from the task YAML);
3. ``model+kind``: same lm-eval model (e.g. ``tokrag`` for a labelled Tok-RAG variant) and weights;
4. ``model+kind, other weights``: same lm-eval model, any weights (a rough guess: printed as such);
5. ``--fallback-s-per-question`` if given; else the cell stays unestimated and is listed.

Fixed and per-question seconds are separated (s60 f1): a cell's ``wall_s`` holds, besides its questions, the task's
build (retrieval, a BM25 index and the JVM, the corpus), which the runner pays for the first cell of a task in a
process and much less for the next ones (:func:`leaderboards.runner.run_cell`: ``model_s`` leaves it out); the
estimate divided ``wall_s`` by the questions, so 4-question cells whose build took 12 s priced a 20-question cell of
the same task at 5x its time. Now the per-question rate is ``sum(model_s) / sum(n)`` of the measurements, and
``wall_s - model_s`` is counted once per cell: the largest such figure of the task's finished cells for the first
unfinished cell of each task (spec order), and of each seed of a task that draws passages at random
(:func:`leaderboards.spec.task_draws`: a noise or counterfactual task draws and scores a new seed's passages once, 8-10
s per seed with ToyLM over ``nq_oracle_bm25_noise60`` where a next cell took 1-2 s; s60 r6), the smallest for the
others (:func:`fixed_seconds`). A measurement
written before ``model_s`` existed has no split: where every similar measurement lacks it the rate is ``wall_s / n``
as before, no fixed part is added, and the cell is counted in ``cells_from_wall_rate`` (:func:`render` says that
those cells are over-estimated when they have more questions than the cells measured). The model load is in neither
figure (not in ``wall_s``: the runner loads a model before its cells, once for the methods that share it).

The question count is the cell's ``limit`` (the task's own, else the contract's) when it is a whole
number, capped at the task's size when a finished cell of the task shows it (one run without a limit, or one that
scored fewer questions than its limit: :func:`task_size`), else the ``n_samples`` of a finished cell of the same task
and limit; only finished cells of the task's current version (its YAML's ``metadata.version`` against the one
``results.json`` records: :func:`of_current_version`) tell a count, as an older version may have other documents. Otherwise a limit is an upper bound of the count (a task may have fewer documents: ``limit: 10**9`` read as
3e9 questions): unless a finished cell of the task scored at least that many questions, the cell is marked
``questions_upper_bound: true`` and the total says how many cells' counts are their limit (:func:`count_is_upper_bound`;
at the JSON's top level ``cells_with_questions_upper_bound``, also under its older name ``questions_upper_bound``: a
number of cells, not of questions). Cell seconds add up to
CPU-hours for one process per cell; with ``--jobs N`` the wall time is the cells scheduled as the runner
takes them (each of N processes on N free cores takes the next cell in spec order when free; a cell is never split):
never less than the longest cell nor than the cell-hours over N, more when the cells do not divide evenly over N, and
N above the number of cells counts as that number (:func:`_wall_seconds`; the line then names that many processes,
:func:`_processes`). The last printed line is one
JSON object; its ``cell_hours`` and ``wall_hours`` (and the same in seconds, ``cell_seconds`` and ``wall_seconds``) are
null when no unfinished cell could be estimated (unknown, not free). The printed table and totals give a time under an
hour in seconds or minutes (:func:`duration`), the JSON keeps its hours.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError

from .keys import _HashMemo, cell_key, model_target
from .runner import cell_device, cell_is_done, finished_folders, other_inputs_summary, resolve_runs_dir, run_command
from .spec import Cell, LeaderboardSpec, task_draws, task_generates, task_yaml_metadata

LEVELS = ["method+task", "method+kind", "model+kind", "model+kind, other weights", "fallback"]
FALLBACK_HINT = ("a rough S: SmolLM2-135M-Instruct at k=5, 16 new tokens, one process per cell on CPU took 3.4 s per "
                 "question averaged over five methods, from 0.9 (rag-none) to 6.3 (tokrag): wall_s / n in "
                 "leaderboards/nq-wiki-12k/leaderboard.csv")
"""Where a user without any finished cell finds a figure for ``--fallback-s-per-question`` (measured, committed)."""
SIMILAR = ("similar: the same method, or the same lm-eval model, on the same kind of task; a finished cell of another "
           "method and model class does not count")
"""What makes a finished cell a measurement for an unfinished one (:func:`estimate_cell`), as the advice says it."""
UNKNOWN_COUNT = " (unknown number of questions)"
"""The mark after an unestimated cell's id whose number of questions is unknown (:func:`questions_of` None)."""
COUNT_WHY = ("no whole-number limit in the spec, and no finished cell of the task in {runs_dir} shows how many "
             "questions it scores")
"""Why a cell's number of questions is unknown (:func:`questions_of`), as the estimate's advice says it."""


@dataclass(frozen=True)
class Measurement:
    """One finished cell: what ran and how long it took (seconds of wall time for ``n`` questions)."""

    method: str
    model: str
    pretrained: str
    k: Any
    task: str
    kind: str
    limit: Any
    n: int
    wall_s: float
    version: Any = None  # the task's version the cell ran (results.json ``versions``); None when not recorded
    size: int | None = None  # the task's number of documents (results.json ``n-samples.<task>.original``); None when not recorded
    model_s: float | None = None  # seconds inside the model's request methods (cost.json ``model_s``); None: not recorded

    @property
    def fixed_s(self) -> float | None:
        """Seconds of the cell outside its questions (``wall_s - model_s``: the task build, retrieval, index, lm-eval's
        work around the requests); None when ``model_s`` was not recorded."""
        return None if self.model_s is None else max(0.0, self.wall_s - self.model_s)


def task_kind(task: str, include_path: list[Path]) -> str:
    """The kind of ``task`` for the per-question cost: ``"qa"`` when lm-eval generates its answers
    (``output_type: generate_until``, lm-eval's default when no YAML of the chain names one, and a task of
    lm-eval's own registry, whose YAML is not found here), ``"lm"`` for every other output type
    (``loglikelihood``, ``loglikelihood_rolling``, ``multiple_choice``: scored by forward passes, no decoding,
    so a question costs about a prompt's prefill instead of a generation). The output type is
    :func:`leaderboards.spec.task_generates`'s (its YAML chain is read once per process for each
    ``(task, include_path)``)."""
    return "qa" if task_generates(task, include_path) else "lm"


def _positive(value: Any) -> float | None:
    """``value`` (a ``cost.json`` count or seconds: a number, or its text) as a finite float above 0, else None."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def measurements(runs: Path, include_path: list[Path]) -> list[Measurement]:
    """Every finished cell folder under ``runs`` (a ``DONE`` marker, readable config and cost). A ``cost.json`` that
    cannot be read as a JSON object (malformed, nested past Python's recursion limit, another shape) leaves its folder
    out, and so does one whose ``n_samples`` or ``wall_s`` is not a finite number above 0 (a damaged one: text,
    ``NaN``, ``Infinity``; a NaN ``wall_s`` made the fixed seconds 0, an infinite one an overflow blamed on
    ``--fallback-s-per-question``, text a ValueError traceback); an unreadable ``results.json`` only its task
    version and size. ``model_s`` is read when it is a finite number >= 0 (capped at ``wall_s``), else None (a
    folder written before it existed)."""
    out = []
    for d, cfg in finished_folders(runs):
        try:
            cost = json.loads((d / "cost.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, as malformed
            continue
        if not isinstance(cost, dict):  # JSON of another shape: as malformed (an AttributeError traceback)
            continue
        n, wall = _positive(cost.get("n_samples")), _positive(cost.get("wall_s"))
        if n is None or wall is None or int(n) <= 0:
            continue
        n = int(n)
        model_s = cost.get("model_s")  # a number only (not text: a folder before model_s existed has none)
        model_s = (_positive(model_s) if model_s != 0 else 0.0) if isinstance(model_s, (int, float)) and not isinstance(
            model_s, bool) else None  # an integer past float's range (a damaged file) is None, not an OverflowError
        model_s = None if model_s is None else min(model_s, wall)
        margs = cfg.get("model_args") or {}
        try:
            results = json.loads((d / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, as malformed
            results = None
        task = str(cfg.get("task"))
        versions = results.get("versions") if isinstance(results, dict) else None
        version = versions.get(task) if isinstance(versions, dict) else None
        counts = results.get("n-samples") if isinstance(results, dict) else None
        counts = counts.get(task) if isinstance(counts, dict) else None
        size = counts.get("original") if isinstance(counts, dict) else None  # lm-eval's count of the task's documents
        size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
        out.append(Measurement(method=str(cfg.get("method")), model=str(cfg.get("model")), pretrained=str(margs.get("pretrained")),
                               k=margs.get("k"), task=task, kind=task_kind(task, include_path),
                               limit=cfg.get("limit"), n=n, wall_s=wall, version=version, size=size,
                               model_s=model_s))
    return out


def _version(v: Any) -> Any:
    """A task version as comparable: ``3`` and ``3.0`` (YAML or JSON number, or its text) are one version."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def of_current_version(ms: list[Measurement], include_path: list[Path]) -> list[Measurement]:
    """The finished cells of ``ms`` that ran their task's current version: the ``metadata.version`` of the task's YAML
    chain now (:func:`leaderboards.spec.task_yaml_metadata`) equals the one their ``results.json`` records. A cell
    without a recorded version, or of a task whose YAML names none (lm-eval's own registry), is kept (as before).
    What :func:`questions_of` and :func:`count_is_upper_bound` read the task's size from: a leftover cell of an older
    version (``wiki_lm_bm25`` 1.0: 253 documents, 3.0: 231) capped the count and marked it exact."""
    out = []
    for m in ms:
        now = task_yaml_metadata(m.task, include_path).get("version")  # cached (spec._task_yaml_metadata)
        if m.version is None or now is None or _version(m.version) == _version(now):
            out.append(m)
    return out


def _split(ms: list[Measurement]) -> list[Measurement]:
    """The measurements of ``ms`` a rate is taken from: those that recorded ``model_s`` when any did (their fixed
    seconds are then counted apart, :func:`fixed_seconds`), else all of them (a wall rate)."""
    return [m for m in ms if m.model_s is not None] or ms


def _rate(ms: list[Measurement]) -> float:
    """Seconds per question of ``ms`` (:func:`_split`'s): ``sum(model_s) / sum(n)`` where ``model_s`` is recorded,
    else ``sum(wall_s) / sum(n)`` (the fixed seconds spread over the questions)."""
    ms = _split(ms)
    if all(m.model_s is not None for m in ms):
        return sum(m.model_s for m in ms) / sum(m.n for m in ms)
    return sum(m.wall_s for m in ms) / sum(m.n for m in ms)


def matching(cell: Cell, kind: str, ms: list[Measurement],
             keyed_pretrained: Any = None) -> tuple[str | None, list[Measurement]]:
    """``(level, measurements)``: the first level of :data:`LEVELS` (before ``fallback``) at which a finished cell
    of ``ms`` resembles ``cell`` (of task kind ``kind``), and all of that level's; ``(None, [])`` when none does."""
    pres = {str(cell.model_args.get("pretrained"))} | ({str(keyed_pretrained)} if keyed_pretrained is not None else set())
    k = cell.model_args.get("k")
    tests = [
        lambda m: m.method == cell.method.name and m.pretrained in pres and m.k == k and m.task == cell.task.task,
        lambda m: m.method == cell.method.name and m.pretrained in pres and m.k == k and m.kind == kind,
        lambda m: m.model == cell.method.model and m.pretrained in pres and m.kind == kind,
        lambda m: m.model == cell.method.model and m.kind == kind,
    ]
    for level, test in zip(LEVELS, tests):
        hit = [m for m in ms if test(m)]
        if hit:
            return level, hit
    return None, []


def fixed_seconds(task: str, used: list[Measurement], ms: list[Measurement]) -> tuple[float, float] | None:
    """``(first, next)``: the fixed seconds (:attr:`Measurement.fixed_s`, ``wall_s - model_s``) of an unfinished cell of
    ``task``, counted once per cell whatever its number of questions: ``first`` for the first unfinished cell of the
    task in the estimate, and of each of its seeds when the task draws passages at random (spec order; the largest
    fixed seconds measured: a first cell of a task in a process builds it, its retrieval, a BM25 index, the JVM; a
    new seed of a noise or counterfactual task draws and scores its passages: :func:`estimate`), ``next`` for the
    others (the smallest measured: the task's caches are
    warm). Read from the finished cells of the same task in ``ms`` (any method or model) that recorded ``model_s``,
    else from ``used`` (the measurements the cell's rate came from). None when none of them recorded ``model_s``:
    the rate is then ``wall_s / n`` (:func:`_rate`), which holds the fixed seconds already.

    Upper bound: ``first`` may hold a one-off build the cache now serves (a BM25 index built by the measured cell);
    with ``--jobs N`` each process's first cell of a task builds it again and is counted as ``next``."""
    if not any(m.model_s is not None for m in used):
        return None  # a wall rate: its fixed seconds are in it
    pool = [m.fixed_s for m in ms if m.task == task and m.fixed_s is not None] or \
           [m.fixed_s for m in used if m.fixed_s is not None]
    return max(pool), min(pool)


def estimate_cell(cell: Cell, kind: str, ms: list[Measurement], fallback: float | None,
                  keyed_pretrained: Any = None) -> tuple[float | None, str | None, int]:
    """``(seconds per question, level, measurements used)`` for one cell (None when nothing matches): the model
    seconds per question where the matching measurements recorded ``model_s`` (:func:`_rate`; the fixed seconds are
    :func:`fixed_seconds`'), else their wall seconds per question. A measurement's
    ``pretrained`` (its run's ``config.json``) matches the cell's as written or ``keyed_pretrained``, the cell's key
    material's (a local path there is ``local:<model fingerprint>``, :func:`leaderboards.keys.keyed_model_args`)."""
    level, hit = matching(cell, kind, ms, keyed_pretrained)
    if hit:
        return _rate(hit), level, len(_split(hit))
    if fallback is not None:
        return float(fallback), "fallback", 0
    return None, None, 0


def task_size(task: str, ms: list[Measurement]) -> int | None:
    """The number of documents of ``task`` when a finished cell of it (``ms``) shows it: the count lm-eval recorded
    (``results.json`` ``n-samples.<task>.original``, :attr:`Measurement.size`: also for a cell that scored only its
    limit), else one that ran without a limit, or scored fewer questions than its limit (lm-eval's limit takes the
    first N documents: fewer means the task ran out); the largest such count, None when no finished cell shows it
    (cells from before lm-eval recorded ``n-samples`` that all scored their limit)."""
    sizes = [m.size if m.size is not None else m.n for m in ms if m.task == task and (
        m.size is not None or m.limit is None or (isinstance(m.limit, (int, float)) and m.n < m.limit))]
    return max(sizes) if sizes else None


def questions_of(cell: Cell, ms: list[Measurement]) -> int | None:
    """The cell's number of questions: a whole-number limit, capped at the task's size where a finished cell shows it
    (:func:`task_size`: a 6-paragraph task at limit 24 has 6), else a finished cell's count for the same task and
    limit."""
    if isinstance(cell.limit, int) or (isinstance(cell.limit, float) and cell.limit >= 1 and cell.limit.is_integer()):
        size = task_size(cell.task.task, ms)
        return int(cell.limit) if size is None else min(int(cell.limit), size)
    same = [m.n for m in ms if m.task == cell.task.task and m.limit == cell.limit]
    return same[0] if same else None


def count_is_upper_bound(cell: Cell, ms: list[Measurement], n: int | None = None) -> bool:
    """Whether :func:`questions_of` is only the cell's whole-number limit, its task's size unknown: no finished cell of
    the task (``ms``) scored at least that many questions, and none showed the task's size (:func:`task_size`: then
    the count is capped at it, exact; a task with fewer documents scores fewer; its size is not known before a cell
    of it finishes). ``n``: the caller's ``questions_of(cell, ms)`` (None: computed here)."""
    if n is None:
        n = questions_of(cell, ms)
    if n is None or n != cell.limit or task_size(cell.task.task, ms) is not None:  # a known size makes it exact
        return False
    return not any(m.task == cell.task.task and m.n >= n for m in ms)


def _wall_seconds(cells: list[dict[str, Any]], jobs: int) -> float:
    """The wall seconds of the estimated ``cells`` (each ``{"seconds": ...}``, in spec order) on ``jobs`` runner
    processes, scheduled as the runner schedules them: a cell is never split (one process runs it), at most
    ``min(jobs, len(cells))`` processes work (:func:`leaderboards.runner.run_processes`), and each process, when free,
    takes the next unstarted cell in spec order (:func:`leaderboards.runner.run_spec`'s loop: a cell another process
    holds is skipped). The result is the makespan of that greedy list schedule: the finish time of the last process.
    It is never less than the longest cell nor than the total over the processes; it is more than the latter when
    the cells do not divide evenly: 4 cells of 277.78 h on ``--jobs 3`` take 555.56 h (two cells one after the
    other in one process), where ``max(total / min(jobs, cells), longest)`` printed 370.37 h. The helpers' start-up
    and the cells that could not be estimated are not counted (the caller says so).

    Returns:
        seconds (0.0 without cells).
    """
    if not cells:
        return 0.0
    free = [0.0] * max(1, min(int(jobs), len(cells)))  # when each process is free next, a heap (seconds)
    for c in cells:
        heapq.heapreplace(free, free[0] + c["seconds"])  # the first process free takes the next cell
    return max(free)


def estimate(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, *, jobs: int = 1,
             fallback: float | None = None) -> dict[str, Any]:
    """The estimate of every unfinished cell of ``spec`` (see the module docstring).

    Returns ``{"cells_total", "cells_done", "cells_todo", "questions", "cell_hours", "wall_hours",
    "jobs", "unestimated": [cell ids], "by_method": [...], "cells": [...]}`` (and ``"selection": {"methods": [...]}``
    for a selection, :meth:`LeaderboardSpec.select`, whose cells these counts are); ``cell_hours`` is the sum
    of the estimated cell wall times (CPU-hours for single-process cells), ``wall_hours`` that over ``jobs`` processes,
    a cell being one process's (:func:`_wall_seconds`: the cells scheduled in spec order as the runner's processes
    take them, never less than the longest cell, and ``--jobs`` above the number of cells runs no more of them at once).
    When unfinished cells exist and none of them could be estimated, ``questions``, ``cell_hours`` and
    ``wall_hours`` are None (unknown), not 0; with some estimated they are a lower bound (``complete`` False).
    ``cells_with_questions_upper_bound``: how many estimated cells count their limit as their questions, their task's
    size unknown (:func:`count_is_upper_bound`: then ``questions`` and the hours are upper bounds); ``questions_upper_bound``
    is the same count under its older name (kept for its readers; in ``cells`` the same key is each cell's bool).
    ``index_builds``: the dense indexes the unfinished cells need and the cache lacks (:func:`index_builds`), whose
    one-time encoding (``index_hours``, at :data:`DENSE_PASSAGES_PER_S`) is included in ``cell_hours`` and, once,
    in ``wall_hours`` (one process builds an index, before its cells; the other jobs wait for it).
    ``other_inputs``: the line of :func:`leaderboards.runner.other_inputs_summary` about unfinished cells that have a
    finished run under other inputs (a changed data folder, task, code: ``check`` names them), or "".
    ``by_method`` and ``cells`` give each group's/cell's ``pretrained`` model argument (None where not given), which
    names the model where the spec has no ``models:`` (``model`` None).
    ``first_runs``: per (model, method) with an unestimated cell, the ``tokrag leaderboard run`` command (this
    ``--runs-dir``) that runs one of its cells (``--methods M --tasks T --max-cells 1``), after which its cells of
    that kind of task are estimated; then one per task whose cells lack only their number of questions (no
    whole-number limit, no finished cell of the task: :func:`questions_of`), which one finished cell of it gives.
    ``first_runs_devices``: the device types other than ``cpu`` of the cells those commands run
    (:func:`leaderboards.runner.cell_device`), which :func:`render` names as the machine to run them on.
    ``unestimated_unmeasured``: how many unestimated cells have no rate (no similar finished cell, no ``fallback``);
    the others lack only their number of questions, and :func:`render` says so instead of advising the fallback.
    Each of ``cells``: ``s_per_question`` (the per-question rate: model seconds, or wall seconds per question where
    ``time_basis`` is ``wall``, or the ``fallback``), ``fixed_s`` (:func:`fixed_seconds`, once per cell: ``first``
    for the first cell of each task and, for a task that draws passages at random, of each seed; 0 for a
    ``wall`` or ``fallback`` basis) and ``seconds`` = ``s_per_question * questions + fixed_s``; ``by_method``'s
    ``s_per_question`` is its ``seconds / questions`` (fixed seconds included). ``cells_from_wall_rate``: how many
    estimated cells have the ``wall`` basis (their measurements recorded no ``model_s``; :func:`wall_rate_line`);
    ``fixed_hours``: the estimated cells' ``fixed_s`` summed (included in ``cell_hours``). ``cell_seconds`` and
    ``wall_seconds`` are ``cell_hours`` and ``wall_hours`` in seconds, to 0.1 s (the hours are rounded to 0.01 h, 36 s:
    a grid of a few small cells has 0.0), and ``by_method``'s ``seconds`` its ``hours``: :func:`render` prints a time
    under an hour from them, in seconds or minutes (:func:`duration`).

    Raises:
        ConfigError: the total overflows (a finite but huge ``fallback``, 1e308: it printed ``inf`` hours and JSON
            ``Infinity``).
    """
    runs = resolve_runs_dir(spec, runs_dir)
    ms = measurements(runs, spec.include_path)
    sized = of_current_version(ms, spec.include_path)  # what tells a task's size: its current version's cells
    cells, unest, unregistered = [], [], {}
    first: dict[tuple, str] = {}  # (model, method) of unestimated cells -> the command that runs one of its cells
    first_sized: dict[str, str] = {}  # task of cells lacking only their count -> the command that runs one cell of it
    first_devices: set[str] = set()  # the device types other than cpu of the cells those commands run
    unmeasured = 0  # unestimated cells without a rate (no similar finished cell, no fallback)
    done = 0
    keyed_todo: list[tuple[Cell, str, dict[str, Any]]] = []  # the unfinished cells with a key: other_inputs_summary
    todo: list[Cell] = []  # every unfinished cell: the dense indexes they need (index_builds)
    memo = _HashMemo()
    builds_started: set[tuple] = set()  # (task, seed or None) whose first estimated cell got the first-cell fixed seconds
    for cell in spec.cells():
        try:
            model_target(cell.method.model)
        except ConfigError as exc:  # a model not registered yet (e.g. a method still being written): estimate it anyway
            unregistered[cell.method.model] = str(exc)
            key = None
        else:  # an unknown task (or another spec error) is an error, not an unregistered model
            key, mat = cell_key(spec, cell, memo, runs)
        if key is not None and cell_is_done(runs / key, cell.cell_id):
            done += 1
            continue
        if key is not None:
            keyed_todo.append((cell, key, mat))
        todo.append(cell)
        kind = task_kind(cell.task.task, spec.include_path)
        keyed_pre = (mat.get("model_args") or {}).get("pretrained") if key is not None else None
        rate, level, used = estimate_cell(cell, kind, ms, fallback, keyed_pre)
        n = questions_of(cell, sized)
        if rate is None or n is None:
            unest.append(cell.cell_id + ("" if n is not None else UNKNOWN_COUNT))
            unmeasured += rate is None
            if rate is not None:  # only the count is missing: one finished cell of the task, any method, gives it
                if cell.task.task not in first_sized:
                    first_sized[cell.task.task] = run_command(
                        spec.whole or spec, runs, *(["--models", str(cell.model_name)] if cell.model_name else []),
                        "--methods", cell.method.name, "--tasks", cell.task.task, "--max-cells", "1")
                    first_devices.add(_device_type(cell_device(cell)))
                continue
            group = (cell.model_name, cell.method.name)
            if group not in first:  # one cell of this method, once finished, makes its cells of that kind estimable
                first[group] = run_command(spec.whole or spec, runs, *(["--models", str(cell.model_name)] if cell.model_name else []),
                                           "--methods", cell.method.name, "--tasks", cell.task.task, "--max-cells", "1")
                first_devices.add(_device_type(cell_device(cell)))
            continue
        pretrained = cell.model_args.get("pretrained")
        split = fixed_seconds(cell.task.task, matching(cell, kind, ms, keyed_pre)[1], ms) if level != "fallback" else None
        # a task that draws passages (noise, counterfactual) builds them once per seed: each seed's first cell pays it
        build = (cell.task.task, cell.seed if task_draws(cell.task.task, spec.include_path) else None)
        fixed = 0.0 if split is None else split[build in builds_started]
        builds_started.add(build)
        cells.append({"cell": cell.cell_id, "model": cell.model_name, "method": cell.method.name, "task": cell.task.task,
                      "pretrained": None if pretrained is None else str(pretrained),
                      "questions": n, "s_per_question": round(rate, 3), "level": level, "measurements": used,
                      "fixed_s": round(fixed, 1), "time_basis": "fallback" if level == "fallback" else
                      ("wall" if split is None else "model"),
                      "seconds": round(rate * n + fixed, 1), "questions_upper_bound": count_is_upper_bound(cell, sized, n)})
    builds = index_builds(spec, todo, memo)
    memo.save()
    by: dict[tuple, dict[str, Any]] = defaultdict(lambda: {"cells": 0, "questions": 0, "seconds": 0.0, "levels": set(),
                                                           "pretrained": set()})
    for c in cells:
        b = by[(c["model"], c["method"])]
        b["pretrained"].add(c["pretrained"])
        b["cells"] += 1
        b["questions"] += c["questions"]
        b["seconds"] += c["seconds"]
        b["levels"].add(c["level"])
    by_method = [{"model": mo, "method": me, "pretrained": ", ".join(sorted(p for p in b["pretrained"] if p)) or None,
                  "cells": b["cells"], "questions": b["questions"],
                  "s_per_question": round(b["seconds"] / b["questions"], 3) if b["questions"] else None,
                  "hours": round(b["seconds"] / 3600, 2), "seconds": round(b["seconds"], 1),
                  "levels": sorted(b["levels"], key=LEVELS.index)}
                 for (mo, me), b in by.items()]
    total = sum(c["seconds"] for c in cells)
    if not math.isfinite(total):  # a finite but huge --fallback-s-per-question (1e308) times the questions
        raise ConfigError(f"run --fallback-s-per-question {fallback}: the estimate of {spec.name} overflows (not a finite "
                          f"number of hours); give a realistic number of seconds per question ({FALLBACK_HINT})")
    jobs = max(1, int(jobs))
    unknown = bool(unest) and not cells  # nothing estimated: the time is unknown (None), not 0
    build_s = sum(b["seconds"] or 0 for b in builds)  # one process builds each index once, before its cells: not / jobs
    bound = sum(bool(c.get("questions_upper_bound")) for c in cells)  # cells, not questions: the per-cell key's count
    wall_s = _wall_seconds(cells, jobs) + build_s
    return {"spec": spec.name, "runs_dir": str(runs), "cells_total": done + len(cells) + len(unest), "cells_done": done,
            "cells_todo": len(cells) + len(unest), "questions": None if unknown else sum(c["questions"] for c in cells),
            "questions_upper_bound": bound, "cells_with_questions_upper_bound": bound,
            "cell_hours": None if unknown else round((total + build_s) / 3600, 2),
            "wall_hours": None if unknown else round(wall_s / 3600, 2), "jobs": jobs,
            "cell_seconds": None if unknown else round(float(total + build_s), 1), "wall_seconds": None if unknown else round(float(wall_s), 1),
            "index_builds": builds, "index_hours": round(build_s / 3600, 2),
            "measurements": len(ms), "unestimated": unest, "unregistered_models": sorted(unregistered),
            "unregistered_reasons": dict(sorted(unregistered.items())), "complete": not unest,
            "by_method": by_method, "cells": cells,
            "first_runs": list(first.values()) + [c for c in first_sized.values() if c not in first.values()],
            "first_runs_devices": sorted(first_devices - {"cpu"}),
            "unestimated_unmeasured": unmeasured,
            "cells_from_wall_rate": sum(c["time_basis"] == "wall" for c in cells),
            "fixed_hours": round(sum(c["fixed_s"] for c in cells) / 3600, 2),
            "other_inputs": other_inputs_summary(spec, runs, keyed_todo),
            **({"selection": {k: list(v) for k, v in spec.selection.items()}} if spec.selection else {})}


DENSE_PASSAGES_PER_S = 20.0
"""Passages that ``all-MiniLM-L6-v2`` (the default dense encoder, ``DENSE_PARAMS``: mean pooling, max_length 256)
encodes per second of one CPU core, as :func:`retrieval.dense.build_dense_index` encodes them (batches of 32 sorted
by length, ``torch.inference_mode``): measured on the project's machine (AMD EPYC, 2 cores) with torch on one
thread (``OMP_NUM_THREADS=1``), 384 seeded-random passages of nq-wiki-12k in 19.2 CPU-seconds (``process_time``;
the encoder load apart): 20.0 passages a CPU-second, so the 12,633 passages of nq-wiki-12k take about 10.5 min on
one free core (the README's "~10-20 min on 2 CPU cores" is the same build with other work on the cores). Used by
:func:`index_builds` for the one-time encoding a dense cell does when the index is not cached; another encoder's
rate is not known (a BERT-base one is several times slower)."""


def index_builds(spec: LeaderboardSpec, cells: list[Cell], memo: _HashMemo) -> list[dict[str, Any]]:
    """The dense indexes that the unfinished ``cells`` need and the cache lacks: their tasks retrieve with a
    ``dense`` or ``hybrid`` retriever over a local corpus, and the folder :func:`retrieval.dense.dense_index_dir`
    keys for that corpus and encoder holds no index built by the installed encoding libraries
    (:func:`retrieval.dense.encoding_versions`) and this index code (:func:`retrieval.dense.index_code`). The first cell over it encodes the whole corpus once, before its
    questions. One entry per index: ``{"corpus", "passages", "encoder", "folder", "tasks", "seconds", "command"}``;
    ``seconds`` is ``passages / DENSE_PASSAGES_PER_S`` for ``all-MiniLM-L6-v2``, None for another encoder (not
    measured); ``command``: the ``tokrag index build`` line that builds it beforehand (None when a setting it needs
    has no option there). An encoder given by hub id that is not in the local Hugging Face cache is not resolved (that
    would download it): online, its index is counted as to build (``folder`` None: keyed by the weights, it is not
    known before the first cell downloads them). A task whose corpus, encoder or parameters cannot be read here gets nothing: the run's own
    checks name the problem. A task whose cells need no index although it is not cached is left out
    (:func:`_served_from_run_cache`: its retrieval run is in the run cache and it attaches no passage to score)."""
    from retrieval.api import _resolve_params
    from retrieval.corpus import resolve_corpus
    from retrieval.dense import DENSE_PARAMS, MINILM_ALIASES, dense_index_dir, encoding_versions, index_code
    from retrieval.errors import TokragError
    from retrieval.io import read_index_meta
    from retrieval.paths import hub_offline
    from retrieval.prebuilt import _encoder_cached

    from .keys import DENSE_RETRIEVERS, _task_metadata

    out: dict[str, dict[str, Any]] = {}
    missing: dict[str, bool] = {}  # index folder (or key) -> whether the cache lacks it
    asked: set[tuple[str, str]] = set()  # (task, its metadata): a corpus is loaded once, not once per cell
    for cell in cells:
        meta = _task_metadata(cell.task.task, spec.include_path, memo, cell.task_metadata())
        retriever, name = str(meta.get("retriever") or "bm25").lower(), meta.get("corpus")
        if retriever not in DENSE_RETRIEVERS or not isinstance(name, str) or name.startswith("prebuilt:"):
            continue
        ask = (cell.task.task, json.dumps(meta, sort_keys=True, default=str))
        if ask in asked:
            continue
        asked.add(ask)
        params = meta.get("retriever_params")
        if isinstance(params, str):  # --metadata given as JSON text
            try:
                params = json.loads(params)
            except (ValueError, RecursionError):  # malformed, or past Python's digit or recursion limit: the run's
                continue  # own check names it
        try:
            p, _ = _resolve_params(retriever, params if isinstance(params, dict) else None)
            corpus = resolve_corpus(name, meta.get("data_dir"))
            enc = str(p["encoder"]).strip()
            if enc.lower() in MINILM_ALIASES or hub_offline() or _encoder_cached(enc):
                folder = dense_index_dir(corpus, p, meta.get("cache_dir"))
            else:  # a hub encoder not downloaded yet (resolving it would download it): the first cell downloads it,
                folder = None  # then encodes the corpus; its index folder, keyed by its weights, is not known here
        except (TokragError, OSError):
            continue
        where = str(folder) if folder is not None else f"{corpus.fingerprint} {enc} {meta.get('cache_dir')}"
        if where not in missing:
            have = read_index_meta(folder) if folder is not None and (folder / "index").is_file() else None
            missing[where] = not (have and have.get("encoding_versions") == encoding_versions()
                                  and have.get("code") == index_code())
        if not missing[where]:
            continue
        if folder is not None and _served_from_run_cache(spec, cell.task.task, meta, corpus, memo):
            continue  # its cells read their passages from the run cache and score no other: they need no index
        if where in out:
            out[where]["tasks"] = list(dict.fromkeys([*out[where]["tasks"], cell.task.task]))
            continue
        flags = [f"--{k.replace('_', '-')} {p[k]}" for k in ("encoder", "encoder_class", "pooling", "max_length")
                 if p.get(k) != DENSE_PARAMS.get(k)] + (["--no-l2-norm"] if p.get("l2_norm") is False else [])
        flags += [f"--data-dir {meta['data_dir']}"] if meta.get("data_dir") else []
        flags += [f"--cache-dir {meta['cache_dir']}"] if meta.get("cache_dir") else []
        # a passage prefix has no option in tokrag index build: the first cell builds that index
        command = None if p.get("prefix_passage") else " ".join(["tokrag index build --corpus", name, "--dense", *flags])
        minilm = str(p["encoder"]).strip().lower() in MINILM_ALIASES
        out[where] = {"corpus": name, "passages": len(corpus), "encoder": str(p["encoder"]),
                      "folder": None if folder is None else str(folder), "tasks": [cell.task.task], "command": command,
                      "seconds": round(len(corpus) / DENSE_PASSAGES_PER_S, 1) if minilm else None}
    return list(out.values())


def _served_from_run_cache(spec: LeaderboardSpec, task: str, meta: dict[str, Any], corpus: Any, memo: _HashMemo) -> bool:
    """Whether the docs of ``task`` (its metadata ``meta``, the cell's ``--metadata`` merged in; ``corpus``, the
    :class:`retrieval.Corpus` it names) are built without a
    dense index: its retrieval run is in the run cache, as :func:`retrieval.retrieve` would find it (the same config:
    :func:`retrieval.api._local_config` of the questions it retrieves for; a complete entry of the installed engine,
    :meth:`retrieval.cache.RunCache.check_run`, the test :meth:`~retrieval.cache.RunCache.load` applies, which
    discards nothing), and it attaches no passage that the retriever must score (noise, counterfactual or gold
    passages: :func:`retrieval.score_passages` reads the index). Decided only for tokrag's QA loader
    (``utils.load_qa`` of ``tasks/qa``) over NQ-open, the NQ oracle or WebQuestions read from the data folder, and
    encoders that are here (the question set is read, never downloaded); False otherwise, and whenever something
    cannot be read: the index is then counted, as the cell may need it."""
    import zlib

    from retrieval.api import _local_config, _resolve_params
    from retrieval.cache import RunCache
    from retrieval.dense import MINILM_ALIASES
    from retrieval.errors import TokragError
    from retrieval.paths import hub_offline
    from retrieval.prebuilt import _encoder_cached
    from tasks.data import NQ_OPEN_HUB, WEBQ_HUB, explicit_hub_id, load_qa_split
    from tasks.rag import check_qa_options
    from tasks.utils import qa_arguments, read_files

    from .keys import _custom_dataset

    found = _custom_dataset(memo.task_chain(task, spec.include_path))
    try:
        if found is None or read_files(found[0].parent, found[1], dict(meta), task) is None:
            return False  # another loader, or no data folder (the questions would come from the hub)
        kw, dataset = qa_arguments(dict(meta), task)[:2]
        if (dataset not in ("nq_open", "nq_oracle", "webq") or kw.get("noise") or kw.get("counterfactual")
                or kw.get("gold_only") or explicit_hub_id(kw.get("hub_id"), WEBQ_HUB if dataset == "webq" else NQ_OPEN_HUB)):
            return False
        retriever = kw.get("retriever") or "bm25"
        p, _ = _resolve_params(retriever, kw.get("retriever_params"))
        if not hub_offline() and not all(str(e).strip().lower() in MINILM_ALIASES or _encoder_cached(str(e).strip())
                                         for e in (p["encoder"], p.get("query_encoder") or p["encoder"])):
            return False  # the run key hashes the encoders' weights: not resolved when that would download them
        k = check_qa_options(dataset, retriever=retriever, corpus=kw.get("corpus", "nq-wiki-12k"), k=kw.get("k", 5))
        rows = load_qa_split(dataset, str(kw.get("split", "test")), kw.get("data_dir"), kw.get("oracle_file"),
                             kw.get("hub_id"))
        if kw.get("max_docs") not in (None, "", 0):
            rows = rows[: int(kw["max_docs"])]
        queries = {r["qid"]: r.get("query") or r["question"] for r in rows}  # as tasks.rag.build_qa_docs asks
        config = _local_config(retriever, p, corpus, k, queries, {})
        cache = RunCache(kw.get("cache_dir"))
        return cache.check_run(cache.folder(config), config.get("engine")).state == "complete"
    except (TokragError, OSError, ValueError, KeyError, TypeError, AttributeError, EOFError, zlib.error):
        return False  # EOFError, zlib.error: a truncated or corrupt .gz question file (tasks.data reads it as is)


def index_build_line(b: dict[str, Any]) -> str:
    """One line of ``run --estimate`` about a dense index to build (:func:`index_builds`): its time ``about 0.18 h (11
    min at 20 passages/s ...)``, or under a minute :func:`duration`'s ``about 15 s (at 20 passages/s ...)`` (it read
    ``about 0.00 h (0 min ...)`` for a small corpus, s61 r6); ``time not estimated`` without a measured rate."""
    from retrieval.dense import MINILM_ALIASES

    s = b["seconds"]
    if s is None:
        cost = (f"time not estimated (no measured rate for this encoder; all-MiniLM-L6-v2 encodes {DENSE_PASSAGES_PER_S:g} "
                "passages/s on one free core)")
    else:  # under a minute in seconds: '0.00 h (0 min' read as free
        took = f"{duration(s)} (at" if s < 59.5 else f"{s / 3600:.2f} h ({s / 60:.0f} min at"
        cost = f"about {took} {DENSE_PASSAGES_PER_S:g} passages/s on one free core, measured; included in the total)"
    first = f"; or build it first: {b['command']}" if b["command"] else ""
    fetch = ("" if b.get("folder") or str(b["encoder"]).strip().lower() in MINILM_ALIASES
             else " (the encoder is not downloaded yet: that cell downloads it first)")
    return (f"one-time index build (not in the cache): the dense index of {b['corpus']} ({b['passages']} passages, "
            f"encoder {b['encoder']}) for {', '.join(b['tasks'])}, {cost}; the first cell over it encodes the corpus "
            f"before its questions{fetch}{first}")


def wall_rate_line(n_wall: int, n_est: int) -> str:
    """The line of ``run --estimate`` about the ``n_wall`` of its ``n_est`` estimated cells whose similar finished
    cells did not record ``model_s`` (:func:`fixed_seconds` None): their rate is wall seconds per question, fixed
    seconds included."""
    of = ("the estimated cell is" if n_est == 1 else f"all {n_est} estimated cells are" if n_wall == n_est
          else f"{n_wall} of the {n_est} estimated cells {'is' if n_wall == 1 else 'are'}")
    return (f"{of} priced at wall seconds per question: the finished cells they are measured from record no model_s "
            "(cost.json written before it existed), so their fixed seconds (task build, retrieval, index) are spread "
            "over their questions; a cell with more questions than those is over-estimated (a cell run by this "
            "version records both, and the estimate then counts the fixed part once per cell)")


def _count(n: int, noun: str) -> str:
    """``1 cell``, ``2 cells``: a count with its noun in the right number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _processes(jobs: int, n_est: int, n_unest: int = 0) -> str:
    """The processes the wall time counts (:func:`_wall_seconds`: one per cell, at most ``jobs``), for the total line:
    ``2 free cores`` for ``--jobs 2``, and when ``jobs`` is above the ``n_est`` estimated cells ``4 processes (4 cells,
    one process per cell) on 4 free cores`` (``estimated cells`` when ``n_unest`` > 0). It named the given ``--jobs``
    whatever the cells, "on 1000 free cores" for 4 cells with ``--jobs 1000``, where only 4 cells can run at once."""
    if jobs <= n_est or n_est < 1:
        return _count(jobs, "free core")
    cells = _count(n_est, "estimated cell" if n_unest else "cell")
    return f"{n_est} process{'' if n_est == 1 else 'es'} ({cells}, one process per cell) on {_count(n_est, 'free core')}"


def duration(seconds: float | None) -> str:
    """A time in seconds as the printed estimate (:func:`render`) shows it, readable at any size: ``8.0 s`` under 10 s
    (``<0.1 s`` above 0 and below 0.05 s), ``42 s`` under a minute, ``12.5 min`` under an hour, else hours to 0.01 h
    (``277.78 h``); ``-`` for None (unknown). The table and the total printed a grid of a few small cells as ``0.00``
    hours, which read as free or unknown (s61 f1)."""
    if seconds is None:
        return "-"
    if 0 < seconds < 0.05:  # not 0.0 s
        return "<0.1 s"
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    if seconds < 3597:  # 59.95 min and above print as 1.00 h, not 60.0 min
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _seconds(d: dict[str, Any], seconds: str, hours: str) -> float | None:
    """``d[seconds]``, or ``d[hours]`` in seconds where ``d`` has no ``seconds`` key (an estimate JSON written before
    s61 f1, or one made by hand); None where the value is None."""
    if d.get(seconds) is not None:
        return float(d[seconds])
    return None if d.get(hours) is None else float(d[hours]) * 3600


def _cell_time(seconds: float | None) -> str:
    """The total line's cell time: ``1111.11 cell-hours (CPU-hours, one process per cell)`` from an hour on (as
    before), below it ``12.5 cell-minutes (CPU-minutes, ...)`` or ``42 cell-seconds (CPU-seconds, ...)``
    (:func:`duration`'s figure and unit); ``unknown cell-hours`` for None."""
    if seconds is None:
        return "unknown cell-hours"
    figure, unit = duration(seconds).split()
    noun = {"h": "hours", "min": "minutes", "s": "seconds"}[unit]
    return f"{figure} cell-{noun} (CPU-{noun}, one process per cell)"


def _device_type(device: Any) -> str:
    """The type of a device string (``cuda`` of ``cuda:1``; ``cpu`` for None), read without torch."""
    return str(device or "cpu").strip().split(":")[0].lower()


def _first_runs_where(est: dict[str, Any]) -> str:
    """Where :func:`estimate`'s ``first_runs`` commands can run, after them in the advice: "" for cells on ``cpu``;
    for cells on another device (``first_runs_devices``: the spec's ``device: cuda``, or a method's ``specific``
    device, merged into the cell's ``model_args``),
    a machine with it, since ``run`` refuses a device this machine lacks (:func:`leaderboards.runner.check_cell_devices`)
    while ``--estimate`` does not ask the machine; the finished run folder copied into the runs folder then counts
    here. Says nothing about this machine's devices (asking them would import torch)."""
    kinds = est.get("first_runs_devices") or []
    if not kinds:
        return ""
    n = len(est.get("first_runs") or [])
    return (f" on a machine with {' or '.join(kinds)} (the device of {'that cell' if n == 1 else 'those cells'}: run "
            f"refuses it on a machine without it; copy the finished run folder{'' if n == 1 else 's'} into "
            f"{est['runs_dir']} to estimate here)")


def render(est: dict[str, Any]) -> str:
    """A human-readable table of :func:`estimate` (per model and method: the model column names the spec's
    ``models:`` entry, or without one the cells' ``pretrained`` model argument; ``-`` where neither is given), then
    the totals. Its times (the ``time`` column, the cell time and the wall time) are :func:`duration`'s: seconds or
    minutes under an hour, hours to 0.01 h from an hour on; the JSON keeps its hours."""
    picked = " ".join(f"--{k} {','.join(v)}" for k, v in (est.get("selection") or {}).items())
    lines = [f"leaderboard {est['spec']}{f' (selection: {picked})' if picked else ''}: "
             f"{est['cells_done']} of {est['cells_total']} cells done; "
             f"estimating {est['cells_todo']} from {est['measurements']} finished cells in {est['runs_dir']}"]
    head = f"{'model':<24} {'method':<26} {'cells':>5} {'questions':>9} {'s/question':>10} {'time':>10}  source"
    if est["by_method"]:  # no header over an empty table
        lines += [head, "-" * len(head)]
    for b in est["by_method"]:
        lines.append(f"{str(b['model'] or b.get('pretrained') or '-'):<24} {b['method']:<26} {b['cells']:>5} {b['questions']:>9} "
                     f"{b['s_per_question'] if b['s_per_question'] is not None else '-':>10} {duration(_seconds(b, 'seconds', 'hours')):>10}  {', '.join(b['levels'])}")
    n_est, n_unest = len(est["cells"]), len(est["unestimated"])
    runs = est.get("first_runs") or []
    # why the unestimated cells are: no rate (no similar finished cell and no fallback), or no count of questions
    n_rate = est.get("unestimated_unmeasured", n_unest)
    first = "; ".join(runs[:3]) + (f"; ... ({len(runs) - 3} more {'methods' if n_rate else 'tasks'})" if len(runs) > 3 else "")
    where = _first_runs_where(est)  # a GPU spec's cells: a machine with the device
    n_count = sum(u.endswith(UNKNOWN_COUNT) for u in est["unestimated"])
    if n_unest and not n_est and not n_rate:  # a rate for every cell (the fallback): only the counts are missing
        their = "its" if n_unest == 1 else "their"
        lines.append(f"total: not estimated: {'the unfinished cell' if n_unest == 1 else f'the {n_unest} unfinished cells'} "
                     f"{'has' if n_unest == 1 else 'have'} an unknown number of questions ({COUNT_WHY.format(runs_dir=est['runs_dir'])}); "
                     f"give the spec a whole-number shared.limit, or run one cell of {their} task{'s' if len(runs) > 1 else ''} "
                     f"first ({first}){where} and estimate again")
    elif n_unest and not n_est:
        lines.append(f"total: not estimated: {'the unfinished cell does not resemble' if n_unest == 1 else f'none of the {n_unest} unfinished cells resembles'} a finished cell in {est['runs_dir']} "
                     f"({SIMILAR}); run one cell of {'each such method' if len(runs) > 1 else 'its method'} first "
                     f"({first}){where} and estimate again, or pass --fallback-s-per-question S ({FALLBACK_HINT})"
                     + (f"; {_count(n_count, 'cell')} marked below {'has' if n_count == 1 else 'have'} an unknown number of "
                        "questions too: give the spec a whole-number shared.limit" if n_count else ""))
    else:
        partial = f" of the {_count(n_est, 'estimated cell')} (a lower bound: {_count(n_unest, 'cell')} not estimated)" if n_unest else ""
        bound = est.get("questions_upper_bound") or 0
        counts = "counts its limit as its" if bound == 1 else "count their limit as their"
        at_most = (f" (at most: {_count(bound, 'cell')} {counts} number of questions; a task's size is known once a "
                   "cell of that task finishes)" if bound else "")
        lines.append(f"total{partial}: "
                     f"{est['questions']} questions{at_most}, {_cell_time(_seconds(est, 'cell_seconds', 'cell_hours'))}; "
                     f"about {duration(_seconds(est, 'wall_seconds', 'wall_hours'))} wall with --jobs {est['jobs']} on {_processes(est['jobs'], n_est, n_unest)}")
    lines += [index_build_line(b) for b in est.get("index_builds") or []]
    if est.get("cells_from_wall_rate"):
        lines.append(wall_rate_line(est["cells_from_wall_rate"], n_est))
    if est.get("other_inputs"):
        lines.append(est["other_inputs"])
    if est["unregistered_models"]:
        reasons = est.get("unregistered_reasons") or {}
        lines.append("models not registered in lm-eval (their cells count as not done): "
                     + "; ".join(reasons.get(m, m) for m in est["unregistered_models"]))
    if est["unestimated"]:
        if not n_rate:
            why = (f"an unknown number of questions; give the spec a whole-number shared.limit or run one cell of "
                   f"{'its' if n_unest == 1 else 'their'} task{f' ({first}){where}' if n_est else ''}")
        else:
            why = (f"no measurement of a similar cell; run one{f' ({first}){where}' if n_est else ''} or pass --fallback-s-per-question"
                   + (f"; the {_count(n_count, 'cell')} marked (unknown number of questions) need a whole-number "
                      "shared.limit or a finished cell of their task" if n_count else ""))
        lines.append(f"not estimated ({_count(n_unest, 'cell')}: {why}): " + ", ".join(est["unestimated"][:10])
                     + (" ..." if n_unest > 10 else ""))
    return "\n".join(lines)


__all__ = ["estimate", "render", "duration", "measurements", "fixed_seconds", "matching", "wall_rate_line", "index_builds", "DENSE_PASSAGES_PER_S", "count_is_upper_bound", "of_current_version", "questions_of", "task_size",
           "task_kind", "Measurement", "LEVELS"]
