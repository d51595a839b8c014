"""Build a leaderboard report from run folders only: Markdown, CSV, JSON and a static HTML page.

Nothing is recomputed from models: every number comes from the cells' ``samples_*.jsonl``,
``results.json`` and ``cost.json`` (each verified against its ``DONE`` manifest), so the same run
folders always give byte-identical reports. Wall time and peak memory are measurements that vary
between runs and machines; ``timings=False`` leaves them out (used to compare two fresh runs).
Before anything is computed the invariants of :mod:`leaderboards.invariants` are checked; a report
of run folders that break one is refused (:class:`~leaderboards.invariants.InvariantError`).

Statistics (:mod:`leaderboards.stats`; per model x method x task row; questions matched by
``doc_id``; several seeds are averaged per question first):

* mean of each per-sample metric (EM, F1, answer match, retrieval answer recall, ...) with a
  percentile bootstrap CI over questions, ``bootstrap.iters`` resamples, seeded per (spec seed, metric, the row's
  per-question values in question order), so the same runs give the same CI in any report, and identical values the
  same CI (the recipe, :data:`SEED_DERIVATION`, is in the JSON's ``bootstrap`` and the report's footer, beside the
  code that generated the report, :func:`generator_source`);
* for every method against each ``reference`` (rag-standard and rag-none in the v2 spec): the mean
  per-question difference, its paired bootstrap CI, the two-sided p-value of a paired sign-flip
  permutation test, and that p-value Holm-adjusted within the (model, task, metric) family of all
  distinct method pairs compared there;
* per task, the minimum detectable paired difference of the primary metric at the task's n (80%
  power, two-sided alpha = 0.05), from the root mean square of the pairs' sds, leaving out a pair without spread
  (identical answers); a paired comparison whose differences are all equal (no question differs) has no CI, not the
  bootstrap's zero-width one;
* the noise of a row: the share of passages its task actually replaces at the cells' ``k``
  (:meth:`~leaderboards.spec.LeaderboardSpec.noise_share`: 1 of 3 for ``_noise20`` at ``k: 3``), with the task's
  nominal level as ``noise_nominal`` when the two differ (a line under the results table names them);
* per question against the closed-book row (``rag-none``): helped / hurt / neutral counts; on a noisy
  task, noise sensitivity (questions right on the clean twin and wrong here); these are not taken from the
  seed-averaged values: with several seeds they are counted per seed (seed s against seed s) and averaged over the
  seeds, so helped - hurt = n x the difference of means for a 0/1 metric, as with one seed;
* method-specific trace columns where the traces carry them (:mod:`leaderboards.traces`) and the
  hygiene metrics ``empty_pred`` / ``overlong_pred`` where the task logs them;
* corpus metrics that are ratios of sums (``word_perplexity``, ``bits_per_byte`` of a language-modelling
  task) are the ratio of the summed per-document log-likelihoods and lengths (averaged over seeds; for one
  seed lm-eval's aggregate), with a CI and paired tests that resample or swap whole documents and
  recompute the ratio (:func:`stats.ratio_ci`, :func:`stats.paired_ratio_test`); other metrics that are not
  per-sample means are shown without a CI.

Views: the pivot (methods x tasks per model, primary metric, best value per column in bold, an average
column) comes first in every format, then plots (:mod:`leaderboards.plots`), the long tables and the
provenance; the HTML page and the per-question pages are :mod:`leaderboards.page`.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import functools
import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import stat
import string
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from retrieval.errors import ConfigError, TokragError, mark_write
from retrieval.io import atomic_write_bytes, atomic_write_json, atomic_write_text, file_lock, fingerprint
from tasks import rag as task_rag

from .invariants import InvariantError, Violation, cell_violations, nonfinite, nonfinite_message, sibling_violations
from .keys import cell_keys, command_directory, missing_task_data, recorded_task_data
from . import provenance_view as pv
from .runner import (IncompleteRunError, MisplacedRunError, check_writable, data_folder_fix, finished_runs_by_cell, leaderboard_write, load_cell,
                     other_inputs_note, resolve_runs_dir, run_command)
from .spec import LeaderboardSpec, multi_filter_message
from .stats import (EXACT_MAX_DIFFERENCES, RATIO_METRICS, bootstrap_ci, exact_binomial_ci, exact_min_one_way, helped_hurt,
                    holm, min_detectable_difference, monte_carlo_p_floor, noise_flips, paired_ratio_test, paired_test, ratio_ci)
from .traces import TRACE_COLUMNS, sample_gen_kwargs, trace_columns, trace_label

log = logging.getLogger(__name__)

PREFERRED = ["em", "f1", "answer_match", "cf_match", "answer_recall", "gold_at_k", "word_perplexity", "bits_per_byte"]
PAIRED = ["em", "f1", "answer_match", "cf_match"]
RATIO_PAIRED = ["word_perplexity", "bits_per_byte"]  # corpus metrics of language-modelling tasks (stats.RATIO_METRICS)
HYGIENE = ["empty_pred", "overlong_pred"]
"""Per-sample answer-hygiene metrics of the QA tasks (issue 10): shown as rates beside the diagnostics, not as results."""
LOWER_IS_BETTER = {"word_perplexity", "bits_per_byte", "cf_match", "empty_pred", "overlong_pred"}
"""Fallback direction when results.json does not record ``higher_is_better``."""
MDE_ALPHA, MDE_POWER = 0.05, 0.8
LABELS = {
    "em": "EM", "f1": "F1", "answer_match": "answer match", "answer_recall": "answer recall@k",
    "gold_at_k": "gold@k", "word_perplexity": "word ppl", "bits_per_byte": "bits/byte", "cf_match": "cf match",
    "empty_pred": "empty answer", "overlong_pred": "overlong answer",
}
UNITS = {
    "em": "fraction of questions", "f1": "mean token F1 (0-1)", "answer_match": "fraction of questions",
    "answer_recall": "fraction of questions with a gold answer in the top-k passages of the task's retrieval (the same "
                     "for every method of a task, including methods shown no passages, such as rag-none)",
    "gold_at_k": "fraction of the questions with a known gold passage that have it in the task's top k retrieved "
                 "passages (the same for every method of a task, including methods shown no passages; its own n where "
                 "only some questions have one)",
    "word_perplexity": "perplexity per word", "bits_per_byte": "bits per UTF-8 byte",
    "cf_match": "fraction of questions answered with the planted (counterfactual) answer",
    "empty_pred": "fraction of questions with an empty extracted answer",
    "overlong_pred": "fraction of questions with an overlong answer (tasks/README.md)",
}


def _seed_for(base: int, *parts: Any) -> int:
    """The bootstrap seed of one statistic: the spec's ``bootstrap.seed`` (``base``) plus a hash of ``parts``: the
    metric and the values the statistic is computed from (:func:`_values_id`, :func:`_paired_id`), never the spec's
    model or method labels nor the runs' config hashes: the same values (so the same run folders) give the same CI in
    every report, and two rows with identical per-question values the same CI."""
    return (base + int(fingerprint(list(parts), length=8), 16)) % (2**32)


SEED_DERIVATION = (
    "a row's CI of metric m over its per-question values v (floats in doc-id order, the mean over the seeds with "
    "several; a corpus ratio: [loglik, length] per document) uses numpy.random.default_rng((seed + int(H([m, "
    "H(v)[:16]])[:8], 16)) % 2**32), where H(x) = the SHA-256 hex digest of Python's json.dumps(x, sort_keys=True, "
    "separators=(',', ':'), ensure_ascii=False) in UTF-8; a paired test of metric m over the per-question differences "
    "d uses H(['paired', m, H(min(d, [0.0 - x for x in d]))[:16]]) instead (a corpus ratio: "
    "H(sorted([pairs of one row, pairs of the other]))[:16]), and that seed + 1 for a Monte Carlo sign-flip p; then "
    "scipy.stats.bootstrap((v,), numpy.mean, n_resamples=iters, confidence_level=confidence, method='percentile', "
    "vectorized=True, rng=that generator), with d in place of v for a paired test; a corpus ratio's bootstrap resamples "
    "the document indices i instead, its statistic the ratio of the resampled documents' sums (word or byte perplexity "
    "exp(-sum(loglik[i]) / sum(length[i])), bits per byte -sum(loglik[i]) / sum(length[i]) / ln 2; paired: one row's "
    "ratio minus the other's on the same i) (leaderboards/stats.py; leaderboards/README.md, \"Reading a leaderboard\", "
    "item 2)")
"""How each bootstrap (and Monte Carlo permutation) stream is seeded (:func:`_seed_for`, :func:`_values_id`,
:func:`_paired_id`), exactly enough to recompute a printed bound without tokrag: the report JSON's
``bootstrap.seed_derivation`` and the Markdown / HTML footer (:func:`generated_lines`)."""
BOOTSTRAP_METHOD = "percentile"
RESAMPLED = "questions (paired: the same resample for both methods)"
"""The report JSON's ``bootstrap.method`` / ``bootstrap.resampled`` (``; documents for <ratio metrics>`` added when a
corpus ratio is shown: its bootstrap resamples whole documents)."""


def _values_id(values: Any) -> str:
    """A hash of a row's per-question values in question (doc id) order, for its bootstrap seed: floats, or (loglik,
    length) pairs of a corpus ratio."""
    return fingerprint([[float(x) for x in v] if isinstance(v, (tuple, list)) else float(v) for v in values])


def _paired_id(*rows: list) -> str:
    """A hash of a paired comparison's values in question order, for its seed, the same whichever of the two rows is
    subtracted from the other: ``rows`` is the per-question differences (one list: it or its negation, whichever sorts
    first) or the two rows' (loglik, length) pairs (two lists, in sorted order)."""
    if len(rows) == 1:
        d = [float(x) for x in rows[0]]
        return fingerprint(min(d, [0.0 - x for x in d]))  # 0.0 - x: no -0.0
    return fingerprint(sorted([[[float(x) for x in v] for v in r] for r in rows]))


def _runs_id(keys: list[str]) -> str:
    """What identifies the runs a row is computed from: their config hashes (run folder names, one per seed), sorted
    and joined (no longer part of a bootstrap seed: :func:`_seed_for`)."""
    return "+".join(sorted(keys))


def _bootstrap_record(iters: int, conf: float, seed: int, ratios: list[str]) -> dict[str, Any]:
    """The report JSON's ``bootstrap``: the spec's ``iters`` / ``confidence`` / ``seed``, and what a reviewer needs to
    recompute a bound: ``method`` (:data:`BOOTSTRAP_METHOD`), ``resampled`` (:data:`RESAMPLED`, naming the corpus
    ratios ``ratios`` whose documents are resampled) and ``seed_derivation`` (:data:`SEED_DERIVATION`)."""
    resampled = RESAMPLED + (f"; documents (paragraphs) for {', '.join(ratios)}" if ratios else "")
    return {"iters": iters, "confidence": conf, "seed": seed, "method": BOOTSTRAP_METHOD, "resampled": resampled,
            "seed_derivation": SEED_DERIVATION}


@functools.lru_cache(maxsize=None)
def _source(override: str | None) -> dict[str, str | None]:
    from tokrag_model.provenance import tokrag_changes, tokrag_commit, tokrag_version

    return {"tokrag": tokrag_version(), "tokrag_commit": tokrag_commit(), "tokrag_changes": tokrag_changes()}


def generator_source() -> dict[str, str | None]:
    """The code that generates this report, as the runs' provenance records theirs (``config.tokrag_versions``,
    :mod:`tokrag_model.provenance`): ``tokrag`` (the installed version), ``tokrag_commit`` (the git commit of the
    source tree, ``+dirty`` when tracked files differ; None outside a checkout) and ``tokrag_changes`` (a fingerprint
    of a modified checkout's changes; None for a clean one). Asked of git once per process (and per
    ``$TOKRAG_GIT_COMMIT``, which overrides the commit): the code that runs is the code imported."""
    return dict(_source(os.environ.get("TOKRAG_GIT_COMMIT")))


def generator_text(data: dict) -> str:
    """``tokrag 0.1.0, commit <40 hex>`` (``+dirty, changes <fingerprint>`` for a modified checkout) of a report's
    ``generated_by`` (:func:`generator_source`); ``code not recorded`` for a report written before it."""
    g = data.get("generated_by")
    if not isinstance(g, dict):
        return "code not recorded"
    commit = g.get("tokrag_commit") or "unknown (not a git checkout)"
    return (f"tokrag {g.get('tokrag') or 'not installed'}, commit {commit}"
            + (f", changes {g['tokrag_changes']}" if g.get("tokrag_changes") else ""))


def generated_lines(data: dict) -> list[str]:
    """The report's closing lines (Markdown and HTML): the command and the code that generated it
    (:func:`generator_text`), and how its bootstrap was run and seeded, so that a bound can be recomputed from the
    report's text and its run folders (:data:`SEED_DERIVATION`)."""
    b = data["bootstrap"]
    how = (f"{b.get('method', BOOTSTRAP_METHOD)} bootstrap, {b['iters']} resamples of "
           f"{b.get('resampled', RESAMPLED)}, seed {b['seed']}")
    seeding = ("; each row's and each paired test's resampling stream is seeded by the seed plus a SHA-256 of the "
               "metric and the row's per-question values (the differences, for a paired test), not by the seed alone: "
               + b["seed_derivation"]) if b.get("seed_derivation") else ""
    return [f"Generated by `tokrag leaderboard report` ({generator_text(data)}) from run folders only.",
            f"Bootstrap: {how}{seeding}."]


def _check_samples_one_filter(samples: list[dict], task: str, cell_id: str, run_dir: Any) -> None:
    """Refuse the samples of a task run with more than one lm-eval filter (one sample per question and filter, each
    naming its ``filter``): :func:`_per_question` keys by question and the row's aggregates by metric, so the row
    showed the last filter's per-question values beside a blend of every filter's aggregates, naming neither.
    :func:`leaderboards.spec.load_spec` refuses such a task when its YAML is found; this catches one of lm-eval's
    own registry.

    Raises:
        ConfigError: naming the cell, its run folder, the task and its filters, and what to run instead
            (:func:`leaderboards.spec.multi_filter_message`).
    """
    names = sorted({str(s["filter"]) for s in samples if "filter" in s})
    if len(names) > 1:
        raise ConfigError(f"cell {cell_id} ({run_dir}): " + multi_filter_message(task, names, was_run=True))


def _check_filters(loaded: dict[str, Any]) -> None:
    """:func:`_check_samples_one_filter` of every finished cell of ``loaded`` (:func:`collect`), in its order."""
    for cell, key, d in loaded.values():
        if d is not None:
            _check_samples_one_filter(d["samples"].get(cell.task.task, []), cell.task.task, cell.cell_id,
                                      d.get("dir") or key)


def _refuse_nonfinite(cell_id: str, sample: dict, metric: str) -> None:
    """Raise the invariant's FAIL line (:func:`leaderboards.invariants.sample_violations`) when ``sample``'s
    ``metric`` is NaN or infinite: :func:`build_report` and ``check`` refuse such a cell in :func:`verify`; this
    keeps :func:`compute`, called without it, from turning it into a NaN mean, CI and test."""
    if nonfinite(sample.get(metric)):
        raise InvariantError(Violation(cell_id, sample.get("doc_id"), nonfinite_message(metric, sample[metric])).render())


def _per_question(samples: list[dict], metric: str, cell_id: str = "?") -> dict[int, float] | None:
    """``{doc_id: value}`` of a per-question metric of the cell ``cell_id``; None when a sample lacks it or its value
    is not a number.

    Raises:
        InvariantError: a value is NaN or infinite (naming the cell and the doc id)."""
    out = {}
    for s in samples:
        v = s.get(metric)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        _refuse_nonfinite(cell_id, s, metric)
        out[int(s["doc_id"])] = float(v)
    return out


def _per_document_ratio(samples: list[dict], metric: str, cell_id: str = "?") -> dict[int, tuple[float, float]] | None:
    """``{doc_id: (loglik, length)}`` of a corpus metric (:data:`stats.RATIO_METRICS`) as lm-eval logs it per
    sample (``[loglik, words]`` for ``word_perplexity``); None when the metric is not one or a sample lacks it.
    Documents of length 0 (an empty target: 0 bytes) are left out: they add nothing to either sum, and a
    resample made of them alone would be 0/0. Raises InvariantError for a NaN or infinite one (:func:`_per_question`)."""
    if metric not in RATIO_METRICS:
        return None
    out = {}
    for s in samples:
        v = s.get(metric)
        if not (isinstance(v, (list, tuple)) and len(v) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
            return None
        _refuse_nonfinite(cell_id, s, metric)
        if float(v[1]) > 0:
            out[int(s["doc_id"])] = (float(v[0]), float(v[1]))
    return out


def _being_computed(cell_dir: Path) -> bool:
    """True when a runner holds the cell folder's lock (``<cell_dir>.lock``, :func:`retrieval.io.file_lock`, as
    :func:`leaderboards.runner.run_spec` takes it while it runs the cell) now. Creates no lock file; False when the
    lock cannot be tried (a read-only runs folder)."""
    if not Path(f"{cell_dir}.lock").is_file():
        return False
    try:
        with file_lock(cell_dir, timeout=0):
            return False
    except TimeoutError:
        return True
    except OSError:
        return False


def collect(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, *, allow_missing: bool = False,
            reasons: dict[str, str] | None = None, run_from: list[Path] | None = None) -> dict[str, Any]:
    """Load every cell of ``spec`` from its run folder: ``{cell_id: (cell, config_hash, loaded or None)}``;
    ``reasons`` (if given) receives ``{cell_id: why it is not loaded}`` for each unfinished cell (one a runner is
    computing now, its lock held: "being computed by another process now"). ``run_from`` (if given) receives the
    directory that commands for the unfinished cells must run from (:func:`leaderboards.keys.command_directory`:
    their tasks' data, named by relative paths, are not found from here but are there), if there is one.

    Raises:
        IncompleteRunError: listing the unfinished cells (unless ``allow_missing``) with the command
            that finishes them and the ``report ... --allow-missing`` that reports the finished ones (not offered
            when no cell is finished, from here or from the directory or data folder the line names). MisplacedRunError: a cell's folder holds another cell's run
            (:func:`leaderboards.runner.check_cell_identity`), also with ``allow_missing``.
    """
    runs = resolve_runs_dir(spec, runs_dir)
    loaded, missing = {}, []
    finished = None  # the finished folders by cell id, read once when a cell is missing
    gone: dict[str, list] = {}  # task -> its metadata's data files that do not exist from here (missing_task_data)
    to_set: list[Path] = []  # the data folders the notes say to set, one per note (data_folder_fix)
    for cell, key, mat in cell_keys(spec, runs):
        try:  # MisplacedRunError (another cell's run in the folder) is raised, even with allow_missing
            loaded[cell.cell_id] = (cell, key, load_cell(runs / key, cell.cell_id))
        except MisplacedRunError:
            raise
        except IncompleteRunError as exc:
            finished = finished_runs_by_cell(runs) if finished is None else finished
            if cell.task.task not in gone:
                gone[cell.task.task] = missing_task_data(cell.task.task, spec.include_path, [spec.path.parent],
                                                         recorded_task_data(finished, cell.task.task))
            note = other_inputs_note(cell.cell_id, key, mat, finished, gone[cell.task.task], spec.name, to_set)
            why = str(exc)
            if _being_computed(runs / key):
                why = f"{runs / key}: being computed by another process now (it holds {runs / key}.lock); wait for it"
            why = f"{why}; {note}" if note else why
            missing.append(f"{cell.cell_id} ({why})")
            if reasons is not None:
                reasons[cell.cell_id] = why
            loaded[cell.cell_id] = (cell, key, None)
    cwd = command_directory(spec, [m for ms in gone.values() for m in ms]) if missing else None
    if run_from is not None and cwd is not None:
        run_from.append(cwd)
    if missing and not allow_missing:
        fix = data_folder_fix(to_set)
        # no cell finished, and none is found from another directory or data folder: --allow-missing would write a
        # report of "-" only (0 of N cells), so it is not offered
        partial = len(missing) < len(loaded) or cwd is not None or bool(fix)
        raise IncompleteRunError(
            f"{len(missing)} of {len(loaded)} cells are not finished in {runs}:\n  " + "\n  ".join(missing)
            + (f"\nfirst set the data folder the finished runs read: {fix}" if fix else "")
            + "\nrun: " + run_command(spec, runs, cwd=cwd)
            + ("\nor report the finished ones: "
               + run_command(spec.whole or spec, runs, "--allow-missing", verb="report", cwd=cwd) if partial else "")
        )
    return loaded


def verify(loaded: dict[str, Any], *, compare_results: bool = True) -> list[Violation]:
    """Every invariant of :mod:`leaderboards.invariants` over the loaded cells (missing cells are skipped):
    per sample and per cell, then n and doc ids equal across the cells of each (model, task)."""
    out: list[Violation] = []
    groups: dict[tuple, dict[str, list[dict]]] = {}
    folders: dict[str, str] = {}
    for cid, (cell, _key, data) in loaded.items():
        if data is None:
            continue
        samples = data["samples"].get(cell.task.task, [])
        out += cell_violations(cid, cell.task.task, samples, data["results"], compare_results=compare_results)
        groups.setdefault((cell.model_name, cell.task.task), {})[cid] = samples
        if data.get("dir"):
            folders[cid] = str(data["dir"])
    for (model, task), cells in groups.items():
        out += sibling_violations(f"{model}/{task}" if model else task, cells, folders)
    return out


def _lower_better(data_hib: dict[str, dict[str, bool]], task: str, metric: str) -> bool:
    hib = (data_hib.get(task) or {}).get(metric)
    return (not hib) if hib is not None else metric in LOWER_IS_BETTER


def compute(spec: LeaderboardSpec, loaded: dict[str, Any], *, timings: bool = True) -> dict[str, Any]:
    """The report's data (JSON-able): per-model contracts, pivot, rows with metrics / CIs / paired tests /
    diagnostics / cost, the minimum detectable differences, and provenance.

    Raises:
        ConfigError: a cell's task was run with more than one lm-eval filter (:func:`_check_samples_one_filter`)."""
    _check_filters(loaded)
    return _compute(spec, loaded, timings=timings)


def _compute(spec: LeaderboardSpec, loaded: dict[str, Any], *, timings: bool = True) -> dict[str, Any]:
    """:func:`compute` of ``loaded`` whose filters are checked (:func:`_check_filters`): ``build_report`` checks
    them before the invariants."""
    iters, conf, bseed = spec.bootstrap_iters, spec.confidence, spec.bootstrap_seed
    primary = spec.primary_metric
    by_group: dict[tuple, list] = {}
    for cell, key, d in loaded.values():
        by_group.setdefault((cell.model_name, cell.method.name, cell.task.task), []).append((cell, key, d))
    rows: list[dict[str, Any]] = []
    per_q: dict[tuple, dict[str, dict[int, float]]] = {}
    per_q_ratio: dict[tuple, dict[str, dict[int, tuple[float, float]]]] = {}
    qids: dict[tuple, dict[int, str]] = {}
    per_seed: dict[tuple, dict[int, dict[str, dict[int, float]]]] = {}  # (model, method, task) -> seed -> metric -> doc -> v
    per_seed_ratio: dict[tuple, dict[int, dict[str, dict[int, tuple[float, float]]]]] = {}  # the same, (loglik, length)
    seed_keys: dict[tuple, dict[int, str]] = {}  # (model, method, task) -> seed -> config hash of its finished run
    run_ids: dict[tuple, str] = {}  # (model, method, task) -> the config hashes of its finished runs
    gen_seen: dict[tuple, set[str]] = {}  # (model, task) -> generation kwargs lm-eval passed, as logged in the samples
    as_run: dict[tuple, list[dict]] = {}  # (model, task) -> per finished cell, what it ran with (_cell_as_run)
    metric_names: set[str] = set()
    hib: dict[str, dict[str, bool]] = {}
    for mod in spec.model_list():
        for m in spec.methods_of(mod):
            for t in spec.tasks_of(mod):
                cells = by_group.get((mod.name, m.name, t.task), [])
                done = [c for c in cells if c[2] is not None]
                share = spec.noise_share(mod, m, t)  # the share of passages replaced (a whole number of the k)
                row: dict[str, Any] = {"model": mod.name, "method": m.name, "task": t.task, "noise": share,
                                       "family": t.family, "seeds": [c[0].seed for c in done],
                                       "missing": len(done) < len(cells)}
                if share != t.noise:  # only then, so rows at k 5 or 10 (the nominal shares) keep their JSON
                    row["noise_nominal"] = t.noise
                rows.append(row)
                if not done:
                    continue
                if len(done) < len(cells):  # some seeds finished: a partial row (only then, so complete rows' JSON is as before)
                    row["seeds_expected"] = sorted(c[0].seed for c in cells)
                run_ids[(mod.name, m.name, t.task)] = _runs_id([c[1] for c in done])
                seed_vals: dict[str, list[dict[int, float]]] = {}
                seed_ratio: dict[str, list[dict[int, tuple[float, float]]]] = {}
                aggregates: dict[str, list[float]] = {}
                all_samples: list[dict] = []
                for seed_cell, seed_key, data in done:
                    samples = data["samples"].get(t.task, [])
                    seed_keys.setdefault((mod.name, m.name, t.task), {})[seed_cell.seed] = seed_key
                    all_samples += samples
                    gen_seen.setdefault((mod.name, t.task), set()).update(_generation_kwargs(samples))
                    as_run.setdefault((mod.name, t.task), []).append(_cell_as_run(seed_cell, data, samples))
                    qids.setdefault((mod.name, t.task), {int(s["doc_id"]): str((s.get("doc") or {}).get("qid", s["doc_id"]))
                                                          for s in samples})
                    for name in sorted({k for s in samples for k in (s.get("metrics") or [])}):
                        pq = _per_question(samples, name, seed_cell.cell_id)
                        if pq is not None:
                            seed_vals.setdefault(name, []).append(pq)
                            per_seed.setdefault((mod.name, m.name, t.task), {}).setdefault(seed_cell.seed, {})[name] = pq
                        pr = _per_document_ratio(samples, name, seed_cell.cell_id)
                        if pr is not None:
                            seed_ratio.setdefault(name, []).append(pr)
                            per_seed_ratio.setdefault((mod.name, m.name, t.task), {}).setdefault(seed_cell.seed, {})[name] = pr
                    res = (data["results"].get("results") or {}).get(t.task, {})
                    for k, v in res.items():
                        if "," in k and "_stderr" not in k and isinstance(v, (int, float)) and not isinstance(v, bool):
                            aggregates.setdefault(k.split(",")[0], []).append(float(v))
                    for k, v in ((data["results"].get("higher_is_better") or {}).get(t.task) or {}).items():
                        if isinstance(v, bool):
                            hib.setdefault(t.task, {})[k] = v
                seeds_pq = list((per_seed.get((mod.name, m.name, t.task)) or {}).values())
                if len(done) > 1 and len(seeds_pq) == len(done) and all(v == seeds_pq[0] for v in seeds_pq[1:]):
                    row["seeds_identical"] = True  # every metric, every question: the seeds repeat one run
                qvals = {name: _seed_mean(lst) for name, lst in seed_vals.items()}
                per_q[(mod.name, m.name, t.task)] = qvals
                rvals = {name: _seed_mean_ratio(lst) for name, lst in seed_ratio.items()}
                per_q_ratio[(mod.name, m.name, t.task)] = rvals
                metrics = {}
                for name in sorted(set(qvals) | set(aggregates)):
                    metric_names.add(name)
                    if name in qvals and qvals[name]:
                        arr = np.array(list(qvals[name].values()))
                        parts = [name, _values_id(arr)]
                        lo, hi = bootstrap_ci(arr, iters, conf, _seed_for(bseed, *parts))
                        metrics[name] = {"mean": float(arr.mean()), "lo": lo, "hi": hi, "n": int(len(arr))}
                    elif name in rvals and rvals[name] and name in aggregates:  # a corpus ratio: documents resampled
                        ll, ln = (np.array(x) for x in zip(*rvals[name].values()))
                        parts = [name, _values_id(rvals[name].values())]
                        lo, hi = ratio_ci(name, ll, ln, iters, conf, _seed_for(bseed, *parts))
                        # the ratio of the seed-averaged sums (lm-eval's aggregate for one seed), so that the mean, its
                        # CI and the paired differences are one estimate
                        mean = float(RATIO_METRICS[name](ll.sum(), ln.sum()))
                        metrics[name] = {"mean": mean, "lo": lo, "hi": hi, "n": int(len(ll))}
                    else:  # results.json's aggregate: lm-eval's mean over the samples that carry the metric
                        metrics[name] = {"mean": float(np.mean(aggregates[name])), "lo": None, "hi": None,
                                         "n": _carried(done, t.task, name)}
                row["metrics"] = metrics
                row["n"] = len(done[0][2]["samples"].get(t.task, []))
                tr = trace_columns(all_samples)
                if tr:
                    row["trace"] = tr
                costs = [c[2]["cost"] for c in done]
                cost: dict[str, Any] = {
                    "forward_passes": int(sum(c.get("forward_passes", 0) for c in costs)),
                    "generated_tokens": int(sum(c.get("generated_tokens", 0) for c in costs)),
                    "prompt_tokens": int(sum(c.get("prompt_tokens", 0) for c in costs)),
                }
                n_all = int(sum(c.get("n_samples", 0) for c in costs)) or None
                cost["fp_per_token"] = round(cost["forward_passes"] / cost["generated_tokens"], 3) if cost["generated_tokens"] else None
                cost["fp_per_question"] = round(cost["forward_passes"] / n_all, 2) if n_all else None
                if timings:
                    wall = float(sum(c.get("wall_s", 0.0) for c in costs))
                    cost["wall_s"] = round(wall, 1)
                    cost["s_per_question"] = round(wall / n_all, 3) if n_all else None
                    if all(isinstance(c.get("model_s"), (int, float)) for c in costs):  # older run folders lack it
                        model = float(sum(c["model_s"] for c in costs))
                        cost["model_s"] = round(model, 1)
                        cost["model_s_per_question"] = round(model / n_all, 3) if n_all else None
                    cost["peak_rss_mib"] = round(float(max(c.get("peak_rss_mib", 0.0) for c in costs)), 0)
                    cost.update(_load_fields([(c[2]["cost"], c[2].get("provenance") or {}) for c in done]))
                row["cost"] = cost
    _degenerate_cis(rows, per_seed, conf)
    byrow = {(r["model"], r["method"], r["task"]): r for r in rows}
    mde = _paired(spec, rows, byrow, per_q, per_q_ratio, iters, conf, bseed, run_ids,
                  per_seed=per_seed, per_seed_ratio=per_seed_ratio, seed_keys=seed_keys)
    _diagnostics(spec, rows, per_seed, qids, hib)
    order = [n for n in PREFERRED if n in metric_names] + sorted(metric_names - set(PREFERRED) - set(HYGIENE))
    order += [n for n in HYGIENE if n in metric_names]
    models = []
    contracts = {mod.name: _contract_as_run(spec, mod, as_run) for mod in spec.model_list()}
    for mod in spec.model_list():
        tasks = [t.task for t in spec.tasks_of(mod)]
        models.append({"name": mod.name, "label": mod.label,
                       "contract": contracts[mod.name] + _generation_lines(mod.name, tasks, gen_seen),
                       "notes": mod.notes,
                       "methods": [m.name for m in spec.methods_of(mod)], "tasks": tasks,
                       "method_args": [f"{m}: " + ", ".join(f"{k}={v}" for k, v in sorted(a.items()))
                                       for m, a in mod.method_args.items()]})
        held = _held_out_json(tasks, {t: as_run.get((mod.name, t)) or [] for t in tasks})
        if held:  # only then, so the JSON of a report without bring-your-own questions is as before
            models[-1]["held_out"] = held
    data = {
        "generator": GENERATOR, "generated_by": generator_source(), "spec": spec.name, "description": spec.description, "notes": spec.notes,
        "contract": contracts[spec.model_list()[0].name],  # the first model's, as spec.contract_lines() gives it
        "models": models, "multi_model": bool(spec.models),
        "specific_settings": spec.specific_settings(), "reference": spec.reference, "references": spec.references,
        "closed_book": spec.closed_book, "primary_metric": primary,
        "method_args": {m.name: {"model": m.model, **({"model_args": m.model_args} if m.model_args else {})} for m in spec.methods},
        "bootstrap": _bootstrap_record(iters, conf, bseed, [n for n in order if n in RATIO_METRICS]), "metrics": order,
        "units": {k: UNITS.get(k, "") for k in order}, "higher_is_better": hib,
        "trace_columns": [k for k in TRACE_COLUMNS if any(k in (r.get("trace") or {}) for r in rows)],
        "rows": rows, "mde": mde, "timings": timings, "time_basis": time_basis(rows) if timings else None,
    }
    data["pivot"] = _pivot(spec, data)
    data["provenance"] = _provenance(loaded)
    pv.annotate(data, loaded)  # compute settings, resolved settings, chat template hash, passage-marker rates
    data["cells"] = _cell_counts(loaded)
    return data


def unit_interval_metrics(per_seed: dict) -> set[str]:
    """The metrics of a report whose every per-question value, in every row and seed (``per_seed``: (model, method,
    task) -> seed -> metric -> doc -> value), lies in [0, 1]: every tokrag metric (EM, F1, answer match, answer
    recall@k, gold@k, the hygiene rates), so a row's exact interval (:func:`_degenerate_cis`) depends on that row
    alone; a bring-your-own metric only where no value of it in the report is outside [0, 1]."""
    seen: set[str] = set()
    outside: set[str] = set()
    for seeds in per_seed.values():
        for metrics in seeds.values():
            for name, vals in metrics.items():
                seen.add(name)
                if any(not 0.0 <= v <= 1.0 for v in vals.values()):
                    outside.add(name)
    return seen - outside


EXACT_CI = "clopper-pearson"
"""``metrics[name]["ci"]`` of a row whose CI is the exact binomial one (:func:`_degenerate_cis`); absent otherwise."""


def _degenerate_cis(rows: list[dict], per_seed: dict, conf: float) -> None:
    """Replace the two CIs a percentile bootstrap cannot give (it returns ``[v, v]``), in place:

    * a metric in [0, 1] (:func:`unit_interval_metrics`) whose questions all score 0, or all 1 (mean 0 or 1: every
      seed of the row agrees): the exact Clopper-Pearson interval of 0 or n of n (:func:`stats.exact_binomial_ci`;
      0 of 30 is [0, 0.116], not [0, 0]), marked ``"ci": "clopper-pearson"``. For a graded metric such as F1 it is
      the interval of the share of questions that score above 0 (below 1), which bounds the mean: a mean of values
      in [0, 1] is at most the share above 0 (at least the share at 1). Taking F1 too keeps a row's interval the same
      in any report that holds its runs (a rule on "every value is 0 or 1" made it depend on the other rows);
    * any other metric, or such a one not at 0 or 1 (seeds that disagree), over one question (or paragraph), or over
      several whose values are all the same (F1 0.5 on every question, a 0/1 metric whose two seeds disagree on every
      question, a bring-your-own metric scoring 3.0 everywhere): no CI (``lo``/``hi`` None): the values have no spread,
      and the bootstrap's ``[v, v]`` would read as a 95% interval of zero width, a certainty no sample gives (the
      paired comparisons' rule for per-question values: :func:`_no_paired_ci`). A corpus ratio over several
      documents keeps its interval, as its paired comparisons do.

    Every other row keeps its bootstrap CI."""
    bounded = unit_interval_metrics(per_seed)
    for r in rows:
        for name, m in (r.get("metrics") or {}).items():
            if m["lo"] is None or not m["n"]:
                continue  # a results.json aggregate without per-question values: no CI anyway
            if name in bounded and m["mean"] in (0.0, 1.0):
                m["lo"], m["hi"] = exact_binomial_ci(round(m["mean"] * m["n"]), m["n"], conf)
                m["ci"] = EXACT_CI
            elif m["n"] == 1 or (m["lo"] == m["hi"] and name not in RATIO_METRICS):  # stats.bootstrap_ci's [v, v]
                m["lo"] = m["hi"] = None


def _cell_counts(loaded: dict[str, Any]) -> dict[str, Any]:
    """``{"total", "with_results", "seeds", "missing": [{"cell", "model", "method", "task", "seed"}]}`` over the
    spec's cells (one per model x method x task x seed)."""
    missing = [{"cell": cid, "model": cell.model_name, "method": cell.method.name, "task": cell.task.task, "seed": cell.seed}
               for cid, (cell, _key, d) in loaded.items() if d is None]
    return {"total": len(loaded), "with_results": len(loaded) - len(missing),
            "seeds": sorted({cell.seed for cell, _k, _d in loaded.values()}), "missing": missing}


def cells_lines(data: dict) -> list[str]:
    """``cells with results: N of M`` and, when some are missing, one line per model (all its cells missing)
    or per model and task naming the missing methods (with the seed when the spec has several)."""
    c = data.get("cells")
    if not c:
        return []
    head = f"Cells with results: {c['with_results']} of {c['total']}"
    if not c["missing"]:
        return [head + " (all finished)"] + identical_seed_lines(data)
    partial = partial_rows(data)
    head += (f"; {len(c['missing'])} missing (not finished in the run folders when this report was built; "
             + ("a row none of whose seeds finished shows as -, a row with some of its seeds finished shows their values "
                f"marked {PARTIAL}, listed below):" if partial else "their values show as -):"))
    several = len(c.get("seeds") or []) > 1
    per_model: dict[Any, dict[str, list[str]]] = {}
    total_of: dict[Any, int] = {}
    for mod in data["models"]:
        total_of[mod["name"]] = len(mod["methods"]) * len(mod["tasks"]) * max(1, len(c.get("seeds") or []))
    for m in c["missing"]:
        per_model.setdefault(m["model"], {}).setdefault(m["task"], []).append(
            m["method"] + (f" (seed {m['seed']})" if several else ""))
    lines = []
    for model, tasks in per_model.items():
        n = sum(len(v) for v in tasks.values())
        label = f"{model}: " if model else ""
        if model is not None and n == total_of.get(model):
            lines.append(f"{model}: all {n} cells")
            continue
        n_methods = next((len(mod["methods"]) for mod in data["models"] if mod["name"] == model), None)
        for task, methods in tasks.items():
            whole = n_methods is not None and len(methods) == n_methods * max(1, len(c.get("seeds") or [])) and n_methods > 1
            lines.append(f"{label}{task}: " + (f"all {n_methods} methods" if whole else ", ".join(methods)))
    for (model, method, task), (done, total) in partial.items():
        left = ", ".join(str(x) for x in total if x not in done)
        lines.append(f"{PARTIAL} {model + ': ' if model else ''}{method} on {task}: {len(done)} of {len(total)} seeds "
                     f"(seed {left} not finished): its values, CIs, paired tests, helped/hurt and noise flips are over "
                     f"the finished seed{'' if len(done) == 1 else 's'} only")
    return [head] + lines + identical_seed_lines(data)


def identical_seed_lines(data: dict, show: int = 12) -> list[str]:
    """One line naming the rows whose seeds gave the same per-question value of every metric (``seeds_identical``):
    greedy decoding on a task without a random draw (no noise or counterfactual passages) gives the same answers
    whatever the seed, so such a row's seeds are repeats of one run, not replicates; empty when there is none."""
    same = [r for r in data.get("rows") or [] if r.get("seeds_identical")]
    if not same:
        return []
    several = [r for r in data.get("rows") or [] if len(r.get("seeds") or []) > 1]
    names = [f"{r['model'] + ': ' if r.get('model') else ''}{r['method']} on {r['task']}" for r in same]
    shown = ", ".join(names[:show]) + (f", … ({len(names) - show} more)" if len(names) > show else "")
    return [f"Seeds that repeat one run: {len(same)} of the {len(several)} rows with several seeds gave the same "
            "per-question scores in every seed (greedy decoding, and no random draw of passages in the task), so their "
            f"seeds are not replicates and their CIs and tests are over questions only: {shown}"]


PARTIAL = "†"
"""Marks a value of a row that has only some of the spec's seeds (``report --allow-missing``)."""

PARTIAL_NOTE = (f"{PARTIAL} = a row, or a row it is compared with, over only some of the spec's seeds (report "
                "--allow-missing): its values are over the finished seeds only (listed at the top)")


def partial_rows(data: dict) -> dict[tuple, tuple[list[int], list[int]]]:
    """``{(model, method, task): (finished seeds, the spec's seeds)}`` of the rows with some but not all seeds finished."""
    return {(r["model"], r["method"], r["task"]): (r["seeds"], r["seeds_expected"])
            for r in data.get("rows") or [] if r.get("seeds_expected") and r.get("seeds")}


def _carried(done: list, task: str, metric: str) -> int | float | None:
    """How many samples of the finished cells ``done`` ((cell, key, data) of one row, one per seed) carry ``metric`` as
    a number: the denominator of lm-eval's mean of a metric some questions lack (``gold_at_k`` averages over the
    questions whose gold passage is known), per seed (:func:`_mean_count` over the seeds); None when none does."""
    counts = [sum(1 for s in d["samples"].get(task, []) if isinstance(s.get(metric), (int, float))
                  and not isinstance(s.get(metric), bool)) for _c, _k, d in done]
    return _mean_count(counts) if any(counts) else None


def subset_metrics(data: dict) -> list[str]:
    """The metrics of :func:`_cell_metric`'s ``(n=N)``: some row's value of them is a mean over another number of
    questions than the row's ``n`` (a metric some questions lack: :func:`_carried`)."""
    return [m for m in data["metrics"] if any(_own_n(r, m) is not None for r in data["rows"])]


def _own_n(row: dict, name: str) -> int | float | None:
    """The number of questions ``row``'s value of ``name`` is a mean over, when it is not the row's ``n``; else None."""
    m = (row.get("metrics") or {}).get(name) or {}
    return m["n"] if m.get("lo") is None and m.get("n") is not None and m["n"] != row.get("n") else None


def _seed_mean(lst: list[dict[int, float]]) -> dict[int, float]:
    """``{doc_id: mean over the seeds}`` of per-seed per-question values ``lst`` (one dict per seed), over the
    questions every seed has. The mean is math.fsum's correctly rounded sum over the count, the same float in any
    order of the seeds: a row's values seed its bootstrap (:func:`_values_id`), so one ulp from the spec listing its
    seeds in another order would draw other resamples."""
    common = sorted(set.intersection(*(set(d) for d in lst)))
    return {q: math.fsum(d[q] for d in lst) / len(lst) for q in common}


def _seed_mean_ratio(lst: list[dict[int, tuple[float, float]]]) -> dict[int, tuple[float, float]]:
    """``{doc_id: (mean loglik, mean length) over the seeds}`` of per-seed per-document pairs ``lst`` (one dict per
    seed), over the documents every seed has (in any order of the seeds the same floats: :func:`_seed_mean`)."""
    common = sorted(set.intersection(*(set(d) for d in lst)))
    return {q: (math.fsum(d[q][0] for d in lst) / len(lst), math.fsum(d[q][1] for d in lst) / len(lst)) for q in common}


def _pair_values(key_a: tuple, key_b: tuple, metric: str, src: dict, per_seed: dict | None, seed_keys: dict | None,
                 run_ids: dict[tuple, str]) -> tuple[dict, dict, str, str, list[int] | None] | None:
    """The per-question values of rows ``key_a`` and ``key_b`` ((model, method, task)) that a paired test of ``metric``
    compares, with the run ids that seed it: each row averaged over the seeds BOTH finished, so question q of seed s
    (its draw of noise passages) meets question q of seed s. When the two rows have the same seeds (every complete
    report) these are the rows' own values (``src``) and ids (``run_ids``), and the last item is None; else the
    average over the common seeds (from ``per_seed``: key -> seed -> metric -> doc -> value), the config hashes of
    those seeds' runs (``seed_keys``), and the common seeds. None when the rows share no seed."""
    sa = {s for s, v in ((per_seed or {}).get(key_a) or {}).items() if metric in v}
    sb = {s for s, v in ((per_seed or {}).get(key_b) or {}).items() if metric in v}
    if per_seed is None or sa == sb:
        return src[key_a][metric], src[key_b][metric], run_ids[key_a], run_ids[key_b], None
    common = sorted(sa & sb)
    if not common:
        return None
    mean = _seed_mean_ratio if metric in RATIO_METRICS else _seed_mean
    qa, qb = (mean([per_seed[k][s][metric] for s in common]) for k in (key_a, key_b))
    ids = (_runs_id([seed_keys[k][s] for s in common]) for k in (key_a, key_b))
    return qa, qb, *ids, common


def _paired(spec: LeaderboardSpec, rows: list[dict], byrow: dict, per_q: dict, per_q_ratio: dict, iters: int, conf: float,
            bseed: int, run_ids: dict[tuple, str], *, per_seed: dict | None = None, per_seed_ratio: dict | None = None,
            seed_keys: dict | None = None) -> list[dict]:
    """Paired tests of every method against each reference, Holm-adjusted per (model, task, metric), each seeded by
    the metric and the compared values (:func:`_paired_id`);
    fills ``row["paired"][ref][metric]`` and returns the minimum detectable differences per (model, task).
    Per-question means (``per_q``) use :func:`stats.paired_test`; corpus ratios of language-modelling tasks
    (``per_q_ratio``: per document (loglik, length)) use :func:`stats.paired_ratio_test`.

    When the two rows finished different seeds (a partial row, ``report --allow-missing``), the test is over the
    seeds both finished (:func:`_pair_values`, from ``per_seed`` / ``per_seed_ratio``: (model, method, task) -> seed
    -> metric -> doc -> value, and ``seed_keys``: -> seed -> config hash), as helped/hurt (:func:`_diagnostics`) is:
    each seed draws its own noise passages, so seed 1 of one row against the seed average of the other is not a
    paired comparison. The result then records those ``seeds``; without ``per_seed`` the rows' own values are used."""
    mde = []
    for mod in spec.model_list():
        method_names = [m.name for m in spec.methods_of(mod)]
        refs = [r for r in spec.references if r in method_names]
        for t in spec.tasks_of(mod):
            tests: dict[tuple[str, str, str], dict] = {}  # (a, b, metric) with a < b: test of a - b
            for ref in refs:
                for name in method_names:
                    if name == ref:
                        continue
                    for metric in PAIRED + RATIO_PAIRED:
                        src = per_q_ratio if metric in RATIO_METRICS else per_q
                        if metric not in (src.get((mod.name, ref, t.task)) or {}) or metric not in (src.get((mod.name, name, t.task)) or {}):
                            continue
                        a, b = sorted((name, ref))
                        if (a, b, metric) not in tests:
                            got = _pair_values((mod.name, a, t.task), (mod.name, b, t.task), metric, src,
                                               per_seed_ratio if metric in RATIO_METRICS else per_seed, seed_keys, run_ids)
                            if got is None:
                                continue
                            qa, qb, _id_a, _id_b, seeds = got
                            common = sorted(set(qa) & set(qb))
                            if not common:
                                continue
                            if metric in RATIO_METRICS:
                                parts = ["paired", metric, _paired_id([qa[q] for q in common], [qb[q] for q in common])]
                                tests[(a, b, metric)] = paired_ratio_test(
                                    metric, [qa[q][0] for q in common], [qa[q][1] for q in common], [qb[q][0] for q in common],
                                    [qb[q][1] for q in common], iters, conf, _seed_for(bseed, *parts))
                                why = _no_paired_ci([qa[q] for q in common], [qb[q] for q in common], "paragraph")
                            else:
                                diff = np.array([qa[q] - qb[q] for q in common])
                                parts = ["paired", metric, _paired_id(diff)]
                                tests[(a, b, metric)] = paired_test(diff, iters, conf, _seed_for(bseed, *parts))
                                why = _no_paired_ci([qa[q] for q in common], [qb[q] for q in common], "question")
                            if why:  # the percentile bootstrap's [d, d]: no interval (only then: other JSON unchanged)
                                tests[(a, b, metric)].update(lo=None, hi=None, no_ci=why)
                            if seeds is not None:  # only then: the JSON of a report whose rows share their seeds is unchanged
                                tests[(a, b, metric)]["seeds"] = seeds
                            # an exact p (the binomial count, or every sign pattern: at most 16 differing questions or
                            # paragraphs) that equals the Monte Carlo floor 2/(iters+1) (iters one less than a power of
                            # two: 2/128 is 7 of 7 one way at 127) is no bound; only then: other JSON unchanged
                            exact = (len(common) <= EXACT_MAX_DIFFERENCES if metric in RATIO_METRICS
                                     else "n_plus" in tests[(a, b, metric)]
                                     or int(np.count_nonzero(diff)) <= EXACT_MAX_DIFFERENCES)
                            if exact and _at_floor(tests[(a, b, metric)]["p"], monte_carlo_p_floor(iters)):
                                tests[(a, b, metric)]["p_exact"] = True
                        res = dict(tests[(a, b, metric)])
                        if name != a:  # the stored test is ref - method: flip it (+ 0.0: no "-0.000")
                            res.update(diff=-res["diff"] + 0.0)
                            if res["lo"] is not None:
                                res.update(lo=-res["hi"] + 0.0, hi=-res["lo"] + 0.0)
                            if "n_plus" in res:
                                res.update(n_plus=res["n_minus"], n_minus=res["n_plus"])
                        byrow[(mod.name, name, t.task)].setdefault("paired", {}).setdefault(ref, {})[metric] = res
            floor = monte_carlo_p_floor(iters)
            for metric in PAIRED + RATIO_PAIRED:
                fam = sorted(k for k in tests if k[2] == metric)
                adj = dict(zip(fam, holm_with_bounds([tests[k]["p"] for k in fam], floor,
                                                     [bool(tests[k].get("p_exact")) for k in fam])))
                for ref in refs:
                    for name in method_names:
                        res = (byrow[(mod.name, name, t.task)].get("paired") or {}).get(ref, {}).get(metric)
                        if res is not None:
                            k = (*sorted((name, ref)), metric)
                            res["p_holm"], bound = adj[k]
                            res["family"] = len(fam)
                            if bound:  # only then: the JSON of a report without such a value is unchanged
                                res["p_holm_bound"] = True
                if metric == spec.primary_metric and fam and metric not in RATIO_METRICS:
                    n = min(tests[k]["n"] for k in fam)
                    # the RMS of the pairs' sds, leaving out a pair without spread (identical answers: sd 0), which
                    # would pull it towards 0 and so understate the difference the others' tests can detect
                    spread = [k for k in fam if tests[k]["sd"] > 0]
                    sd = math.sqrt(float(np.mean([tests[k]["sd"] ** 2 for k in spread]))) if spread else 0.0
                    # no question differs between any two methods: the spread, so the MDE, is not estimable
                    value = round(min_detectable_difference(sd, n, MDE_ALPHA, MDE_POWER), 4) if sd > 0 else None
                    # at the level Holm's step-down tests its smallest p against (alpha / family size)
                    strict = round(min_detectable_difference(sd, n, MDE_ALPHA / len(fam), MDE_POWER), 4) if sd > 0 else None
                    entry = {"model": mod.name, "task": t.task, "metric": metric, "n": n, "sd": round(sd, 4), "mde": value,
                             "mde_holm_first_step": strict, "alpha": MDE_ALPHA, "power": MDE_POWER, "comparisons": len(fam),
                             "sd_comparisons": len(spread)}
                    # only where a pair is left out beside others, or every pair is and some pair's answers differ (each
                    # question by the same amount: sd 0 but not identical): the JSON of another report is unchanged
                    if (spread and len(spread) < len(fam)) or (not spread and n >= 2 and any(tests[k]["diff"] != 0 for k in fam)):
                        entry["sd_left_out"] = [f"{a} vs {b}: {tests[(a, b, m)].get('no_ci') or 'no spread'}"
                                                for a, b, m in fam if (a, b, m) not in spread]
                    if value is not None:
                        entry.update(_exact_minimum(n, value, len(fam), _is_binary(per_q, mod.name, fam, t.task, metric)))
                    mde.append(entry)
    return mde


def _no_paired_ci(a: list, b: list, unit: str) -> str | None:
    """Why a paired comparison of the per-question (``unit``: per-paragraph) values ``a`` and ``b`` (same order) has no
    CI, or None when it has one: the percentile bootstrap of differences that are all equal is ``[d, d]``, a zero-width
    "95% CI" that claims certainty from any number of questions (``[+0.000, +0.000]`` for 16 identical answers). ``one
    question`` (a single one, ``one paragraph``), ``no question differs`` (every pair equal; p is then 1), or ``every
    question differs by the same amount`` (per-question values only). A corpus ratio's pairs are
    (loglik, length): only identical pairs, or a single one, make its bootstrap degenerate."""
    if len(a) == 1:
        return f"one {unit}"
    if all(x == y for x, y in zip(a, b)):
        return f"no {unit} differs"
    if unit == "question":
        d = [x - y for x, y in zip(a, b)]
        if all(x == d[0] for x in d):  # unsigned: the same reason serves both directions of the pair
            return "every question differs by the same amount"
    return None


SMALL_N = 30
"""Below this many questions the normal approximation of the minimum detectable difference understates what an exact
test needs (leaderboards/README.md); a metric that is not 0/1 then gets the exact test's caveat (a 0/1 metric gets it
wherever its exact minimum exceeds the normal figure: :func:`_exact_minimum`)."""


def _is_binary(per_q: dict, model: str, fam: list, task: str, metric: str) -> bool:
    """Whether every per-question value of ``metric`` in the rows of the family ``fam`` ((a, b, metric) pairs) is 0 or 1
    (EM, answer match with one seed): a difference of k discordant questions is then k / n."""
    methods = {m for a, b, _ in fam for m in (a, b)}
    return all(v in (0.0, 1.0) for m in methods for v in ((per_q.get((model, m, task)) or {}).get(metric) or {}).values())


def _exact_minimum(n: int, mde: float, comparisons: int, binary: bool) -> dict:
    """What the exact paired test needs at ``n`` questions, beside the normal figure ``mde``: ``exact_min_questions``
    (:func:`stats.exact_min_one_way` at alpha 0.05, and ``exact_min_questions_holm`` at 0.05/``comparisons``), for a
    0/1 metric (``binary``) ``exact_min_diff`` (that many of n, all one way: the smallest difference it can detect,
    None when n is fewer), and ``normal_understates``: true when n is fewer than the exact minimum, for a 0/1 metric
    when its exact minimum difference exceeds ``mde``, otherwise when n < :data:`SMALL_N`."""
    need = exact_min_one_way(MDE_ALPHA)
    out: dict = {"exact_min_questions": need}
    if comparisons > 1:
        out["exact_min_questions_holm"] = exact_min_one_way(MDE_ALPHA / comparisons)
    if binary:
        out["exact_min_diff"] = round(need / n, 4) if n >= need else None
    out["normal_understates"] = bool(n < need or (need / n > mde if binary else n < SMALL_N))
    return out


def _exact_caveat(x: dict) -> str:
    """The minimum-detectable-difference line's caveat where the normal figure understates what the exact test needs
    (:func:`_exact_minimum`); empty elsewhere and for a report written before it."""
    if not x.get("normal_understates"):
        return ""
    n, need, holm = x["n"], x["exact_min_questions"], x.get("exact_min_questions_holm")
    if n < need:
        return (f"; a normal approximation: with {n} questions the exact test cannot reach p < 0.05 at all (it needs at "
                f"least {need} questions differing, all one way)")
    at_holm = ""
    if holm is not None:
        level = f"alpha 0.05/{x['comparisons']}"
        at_holm = ((f" ({holm}, {100 * holm / n:.1f} points, at {level})" if "exact_min_diff" in x else f" ({holm} at {level})")
                   if holm <= n else f" (at {level} {holm}, more than the {n} questions)")
    if "exact_min_diff" in x:
        return (f"; a normal approximation, which understates what the exact test needs here: the exact McNemar test "
                f"reaches p < 0.05 only with at least {need} of the {n} questions discordant, all one way, a difference "
                f"of at least {100 * x['exact_min_diff']:.1f} points{at_holm}")
    return (f"; a normal approximation, which understates what the exact test needs below {SMALL_N} questions: the exact "
            f"sign-flip test reaches p < 0.05 only with at least {need} of the {n} questions differing, all one way{at_holm}")


def holm_with_bounds(pvalues: list[float], floor: float, exact: list[bool] | None = None) -> list[tuple[float, bool]]:
    """Holm-adjusted ``pvalues`` (:func:`stats.holm`, same order), each with whether it is only an upper bound: a p at
    the Monte Carlo ``floor`` (:func:`stats.monte_carlo_p_floor`) is one, and Holm's values are non-decreasing in every
    p, so a pair's Holm value is exact only when it is the same with those p at 0 (else a floor p, its own or another
    pair's, raised it: ``[2/2001, 0.0015]`` at 2000 resamples gives ``[(0.0020, True), (0.0020, True)]``). ``exact``
    (same order; default none): the p's computed exactly, never a bound even at the floor's value (at 127 resamples
    the floor 2/128 is also the exact p of 7 of 7 questions one way)."""
    exact = exact or [False] * len(pvalues)
    adj = holm(pvalues)
    low = holm([0.0 if _at_floor(p, floor) and not x else p for p, x in zip(pvalues, exact)])
    return [(a, not math.isclose(a, b, rel_tol=1e-9)) for a, b in zip(adj, low)]


def _generation_kwargs(samples: list[dict]) -> set[str]:
    """The generation kwargs of the ``generate_until`` samples (:func:`traces.sample_gen_kwargs`) as canonical
    JSON strings; empty for log-likelihood tasks."""
    return {json.dumps(g, sort_keys=True) for g in map(sample_gen_kwargs, samples) if g is not None}


def _generation_lines(model: str | None, tasks: list[str], gen_seen: dict[tuple, set[str]]) -> list[str]:
    """Contract lines for the generation settings as run (stops from the task's prompt format included), grouped
    by identical settings over the model's tasks; a task whose methods ran with different settings says so."""
    groups: dict[str, list[str]] = {}
    for t in tasks:
        seen = sorted(gen_seen.get((model, t)) or ())
        if not seen:
            continue
        text = " | ".join(", ".join(f"{k}={v!r}" for k, v in sorted(json.loads(g).items())) for g in seen)
        if len(seen) > 1:
            text = f"DIFFERS between methods: {text}"
        groups.setdefault(text, []).append(t)
    return [f"generation as run (from the samples) on {', '.join(ts)}: {text}" for text, ts in groups.items()]


ROLLING = "loglikelihood_rolling"
"""lm-eval's output type whose requests carry the document text alone (``ConfigurableTask.construct_requests``:
``arguments = (doc_to_target(doc),)``): the context lm-eval builds, chat template and system instruction included,
never reaches the model."""
_PROMPT_KEYS = ("apply_chat_template", "system_instruction")
"""Contract settings that shape the context lm-eval renders (:func:`_contract_as_run` says where they applied)."""


def _cell_as_run(cell: Any, data: dict[str, Any], samples: list[dict]) -> dict[str, Any]:
    """What one finished cell ran with, from its run folder: ``method`` (its name), ``prompt`` (per
    :data:`_PROMPT_KEYS`, ``"applied"``, ``"rolling"``: set but the task's requests carry no context, or ``"off"``: its
    cells ran without it; the setting as ``results.json``'s ``config.tokrag_prompt`` records it, else the cell's own,
    which its run key holds), ``n`` (documents evaluated), ``original`` (the task's documents before the limit,
    lm-eval's ``n-samples``; None if not recorded), ``passages`` (the fewest and most passages a document carried,
    ``doc.ctxs``; None without), ``retrieval`` (:func:`retrieval_text`), ``questions`` (:func:`questions_text`) and
    ``held_out`` (:func:`held_out_record`)."""
    res = data.get("results") or {}
    task = cell.task.task
    prompt = ((res.get("config") or {}).get("tokrag_prompt") or {})
    rolling = ((res.get("configs") or {}).get(task) or {}).get("output_type") == ROLLING
    status = {}
    for key in _PROMPT_KEYS:
        on = prompt[key] if key in prompt else getattr(cell, key)
        status[key] = "off" if not on else "rolling" if rolling else "applied"
    counts = [len(s["doc"]["ctxs"]) for s in samples if isinstance(s.get("doc"), dict) and isinstance(s["doc"].get("ctxs"), list)]
    original = ((res.get("n-samples") or {}).get(task) or {}).get("original")
    meta = (((res.get("configs") or {}).get(task) or {}).get("metadata")) or {}
    return {"method": cell.method.name, "prompt": status, "n": len(samples),
            "original": original if isinstance(original, int) else None,
            "passages": (min(counts), max(counts)) if counts else None,
            "retrieval": retrieval_text(meta, data.get("provenance") or {}),
            "questions": questions_text(meta, len(samples), original if isinstance(original, int) else None),
            "held_out": held_out_record(meta)}


def questions_text(meta: dict, n: int, original: int | None) -> str | None:
    """Which questions a QA cell scored, from its results: the questions file (bring-your-own; the path the run read) or
    the data set, the evaluated split's size and, for a file, how many of its questions the 1-in-10 rule held out
    (``tokrag_data.questions``, :func:`tasks.rag.split_record`; "not recorded" for a run from before s53), and which
    of them were scored (``n`` of lm-eval's ``original``: its limit takes the first n). ``<file>, 21 of 24 in split
    test (3 held out by hash: 2 dev: q05, q21; 1 few-shot: q10), first 8 of 21 scored`` (the held-out ids, since
    s55's ``held_out`` record: at most :data:`tasks.rag.HELD_OUT_NAMED` per part, as lm-eval's INFO line names them,
    then ``and N more``; the report's JSON has them all, :func:`held_out_record`; a run from before names the counts
    only, ``2 dev, 1 few-shot``); for task metadata ``split: dev`` the dev / few-shot pool's ids by the same rule,
    ``<file>, 2 of 24 in split dev (by hash: 21 test; 2 dev: q05, q21; 1 few-shot: q10), all 2 scored`` (the test
    questions' ids are not recorded, and :func:`held_out_record` gives None for such a cell, so the report's JSON lists
    no pool ids beyond the line's first :data:`tasks.rag.HELD_OUT_NAMED` per part: the scored ones are in its samples;
    a run from before: ``(by hash: 21 test, 2 dev, 1 few-shot)``); for ``split:
    all`` (every question of the file, s55) ``<file>, 24 of 24 in split all (none held out: the 3 of the dev /
    few-shot pool are scored too), all 24 scored``. None for a task that is not a QA task (its
    metadata names neither ``questions`` nor ``dataset``)."""
    td = meta.get("tokrag_data") if isinstance(meta.get("tokrag_data"), dict) else {}
    rec = td.get("questions") if isinstance(td.get("questions"), dict) else None
    path = ((td.get("files") or {}).get("questions") or {}).get("path") if isinstance(td.get("files"), dict) else None
    if meta.get("questions") not in (None, ""):
        source = f"questions {path or meta['questions']}"
    elif meta.get("dataset") not in (None, ""):
        source = f"dataset {meta['dataset']}"
    else:
        return None
    split = (rec or {}).get("split") or meta.get("split") or "test"
    cap = None
    if rec is None:
        held = f"split {split} (its size and the questions held out by hash: not recorded, a run from before s53)"
    else:
        size = cap = rec.get("in_split")
        if rec.get("total") is not None:
            dev, shot = rec.get("dev") or 0, rec.get("fewshot") or 0
            ids = rec.get("held_out") if isinstance(rec.get("held_out"), dict) else None
            named = f"{dev} dev, {shot} few-shot" if ids is None else _held_out_names(ids, dev, shot)
            held = f"{size} of {rec['total']} in split {split} " + (
                f"({dev + shot} held out by hash: {named})" if split == "test"
                else f"(none held out: the {dev + shot} of the dev / few-shot pool are scored too)" if split == "all"
                else f"(by hash: {rec['total'] - dev - shot} test, {named})" if ids is None
                else f"(by hash: {rec['total'] - dev - shot} test; {named})")
        elif meta.get("dataset") == "webq":  # test is all of test.json when there is training data (tasks.data)
            held = (f"{size} in split {split} (the dev / few-shot pool is WebQuestions' training data, a 10% hash slice "
                    f"of test.json where the data folder has none: tasks/README.md, \"Splits\")")
        else:
            held = f"{size} in split {split} (dev / few-shot held out by hash: tasks/README.md, \"Splits\")"
        if rec.get("max_docs") is not None and rec["max_docs"] < size:
            cap = rec["max_docs"]
            held += f", max_docs keeps the first {cap}"
    built = original if original is not None else cap  # the docs lm-eval's limit took the first n of
    scored = f"{n} scored" if built is None else f"all {n} scored" if n == built else f"first {n} of {built} scored"
    if cap is not None and original is not None and original != cap:  # questions the task left out (counterfactual)
        scored += f" (the task built {original} docs of the {cap})"
    return f"{source}, {held}, {scored}"


def _held_out_names(ids: dict, dev: int, shot: int) -> str:
    """``2 dev: q05, q21; 1 few-shot: q10`` (``ids``: the results' ``tokrag_data.questions.held_out``, ``dev`` and
    ``shot``: its counts): each part's count and its first :data:`tasks.rag.HELD_OUT_NAMED` ids (those the run's INFO
    line names), then ``and N more``; ``0 few-shot`` for a part without any."""
    out = []
    for part, label, count in (("dev", "dev", dev), ("fewshot", "few-shot", shot)):
        names = _id_list(ids.get(part))
        shown = task_rag.HELD_OUT_NAMED  # tasks.rag's, read at each call as its INFO line reads it
        more = len(names) - shown
        out.append(f"{count} {label}" + (f": {', '.join(names[:shown])}" if names else "")
                   + (f" and {more} more" if more > 0 else ""))
    return "; ".join(out)


def held_out_record(meta: dict) -> dict[str, Any] | None:
    """The questions a bring-your-own QA cell held out of its scored split, from its results' task metadata
    (``tokrag_data.questions``, :func:`tasks.rag.split_record`): ``{"questions": <file, the path the run read>,
    "dev": [ids], "fewshot": [ids]}``, every id in file order; None when the cell scored split ``all`` or ``dev`` (the
    contract's line says which), its task reads no questions file, or its run recorded no ids (before s55)."""
    td = meta.get("tokrag_data") if isinstance(meta.get("tokrag_data"), dict) else {}
    rec = td.get("questions") if isinstance(td.get("questions"), dict) else {}
    ids = rec.get("held_out")
    if meta.get("questions") in (None, "") or not isinstance(ids, dict) or (rec.get("split") or "test") != "test":
        return None
    files = td.get("files") if isinstance(td.get("files"), dict) else {}
    record = files.get("questions") if isinstance(files.get("questions"), dict) else {}
    path = record.get("path")
    return {"questions": str(path or meta["questions"]), "dev": _id_list(ids.get("dev")),
            "fewshot": _id_list(ids.get("fewshot"))}


def _id_list(ids: Any) -> list[str]:
    """A recorded list of question ids as text (``[5, "q7"]`` -> ``["5", "q7"]``); anything else (a damaged or
    hand-edited ``results.json``: a string, a number, null) is no list of ids: ``[]``, not its characters."""
    return [str(x) for x in ids] if isinstance(ids, list) else []


def _held_out_json(tasks: list[str], runs: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """``models[i].held_out`` of the report's JSON: per task whose cells recorded held-out ids
    (:func:`held_out_record`), each distinct record with the methods whose cells ran with it (``methods``, in the
    spec's order; one record unless the task's methods read different questions files, when the contract's line says
    ``DIFFERS between methods``); tasks without a record are left out."""
    out: dict[str, list[dict]] = {}
    for t in tasks:
        for r in runs.get(t) or []:
            rec = r.get("held_out")
            if rec is None:
                continue
            same = next((x for x in out.setdefault(t, []) if {k: x[k] for k in rec} == rec), None)
            if same is None:
                out[t].append({**rec, "methods": [r["method"]]})
            elif r["method"] not in same["methods"]:
                same["methods"].append(r["method"])
    return out


def _as_run_lines(field: str, tasks: list[str], runs: dict[str, list[dict]]) -> list[str]:
    """``<field>.<task> (as run, from the results): ...`` per task whose cells recorded ``field`` (``questions``:
    :func:`questions_text`, QA tasks; ``retrieval``: :func:`retrieval_text`); ``DIFFERS between methods: a | b`` where
    a task's methods recorded different values; nothing for a task without a record."""
    lines = []
    for t in tasks:
        seen = sorted({r[field] for r in runs[t] if r.get(field)})
        if seen:
            lines.append(f"{field}.{t} (as run, from the results): "
                         + (seen[0] if len(seen) == 1 else "DIFFERS between methods: " + " | ".join(seen)))
    return lines


_K_RE = re.compile(r" k=(\d+)$")


def retrieval_text(meta: dict, prov: dict) -> str | None:
    """What retrieved a cell's passages, from its results (``configs.<task>.metadata``: ``tokrag_data.retrieval``, the
    retriever and its resolved parameters, a dense encoder's name and weights hash; ``hits``) or, for a folder whose
    results lack that record, provenance.json's ``retrieval.retriever`` (the cached run's ``bm25(b=0.4,k1=0.9) k=5``).
    ``bm25 k1=0.9 b=0.4, k=5``; ``dense encoder all-MiniLM-L6-v2 (weights sha256 852d031e81868b3f), ..., k=5``;
    a hybrid names both; a prebuilt dpr / hybrid (``prebuilt:wikipedia-dpr-100w``) names its question encoder
    (``query encoder facebook/dpr-question_encoder-multiset-base (weights sha256 ...)``), the only one it loads.
    None when the cell records neither (a task without retrieval, a gold-only task)."""
    rec = (meta.get("tokrag_data") or {}).get("retrieval") if isinstance(meta.get("tokrag_data"), dict) else None
    shown = str((prov.get("retrieval") or {}).get("retriever") or "") if isinstance(prov.get("retrieval"), dict) else ""
    k = meta.get("hits")
    if k is None and _K_RE.search(shown):
        k = int(_K_RE.search(shown).group(1))
    if not isinstance(rec, dict) or not rec.get("retriever"):
        return shown or None
    params = dict(rec.get("params") or {})
    enc = rec.get("encoder") if isinstance(rec.get("encoder"), dict) else {}
    bm25 = [f"{x}={params[x]}" for x in ("k1", "b") if params.get(x) is not None]  # BM25's, in the usual order
    rest = [f"{x}={v}" for x, v in sorted(params.items())
            if x not in ("k1", "b", "encoder", "query_encoder") and v is not None]
    text = str(rec["retriever"]) + (" " + " ".join(bm25) if bm25 else "")
    name = enc.get("encoder") or params.get("encoder")
    if name:
        text += f", encoder {name}" + (f" (weights sha256 {enc['encoder_sha256']})" if enc.get("encoder_sha256") else "")
    query = enc.get("query_encoder") or params.get("query_encoder")
    # a prebuilt dpr / hybrid has only a question encoder (its passages are in Pyserini's FAISS index, dense_index)
    if query and (not name or query != name or enc.get("query_encoder_sha256") != enc.get("encoder_sha256")):
        text += f", query encoder {query}" + (f" (weights sha256 {enc['query_encoder_sha256']})"
                                              if enc.get("query_encoder_sha256") else "")
    text += "".join(f", {p}" for p in rest)
    return text + (f", k={k}" if k is not None else "")


def _contract_as_run(spec: LeaderboardSpec, mod: Any, as_run: dict[tuple, list[dict]]) -> list[str]:
    """The contract of ``mod`` (:meth:`LeaderboardSpec.contract_lines`) with the lines that a setting stated for the
    whole model would over-generalise said as run, from the finished cells (``as_run``, :func:`_cell_as_run`):

    * ``apply_chat_template`` / ``system_instruction``, when set: the tasks they were applied to, and those where
      they were not (a ``loglikelihood_rolling`` task, whose requests carry the text alone, or a task whose cells ran
      without them); unchanged when every task with results ran as the contract says: applied, or, on a task the
      contract already lists without them (``apply_chat_template.<task>: false``, a plain-text one), not applied;
    * ``subset`` (the spec's text, written for the spec's tasks): for a model that runs only some of them, the
      documents its own tasks evaluated (lm-eval limit, in each task's order), as the results count them,
      "identical for every method" only when no task's methods differ ("identical for every method with results"
      when some method has none on a task others have results on, naming it; nothing when the model has no results
      on any of its tasks, as the claim would compare nothing); for a model that runs them all, the
      spec's text, with the tasks and methods that have no results named after it (a partial run, ``report
      --allow-missing``: the text speaks for every method). A method with some of its seeds finished has results;
    * a line naming the tasks where a document carried fewer passages than the contract's ``k`` (a gold-only task's
      one, a language-modelling task's own depth, a retrieval that returned fewer), with the fewest and most, from
      the samples.
    Tasks without results are named as such."""
    lines = spec.contract_lines(mod)
    sh = mod.shared
    tasks = [t.task for t in spec.tasks_of(mod)]
    runs = {t: as_run.get((mod.name, t)) or [] for t in tasks}
    waiting = [t for t in tasks if not runs[t]]
    methods = [m.name for m in spec.methods_of(mod)]
    lacking: dict[str, list[str]] = {}  # methods without results -> the tasks with results of other methods
    for t in tasks:
        have = {r["method"] for r in runs[t]}
        if have and len(have) < len(methods):
            lacking.setdefault(", ".join(m for m in methods if m not in have), []).append(t)
    no_results = [f"no results yet for {ms} on {', '.join(ts)}" for ms, ts in lacking.items()]
    for key in _PROMPT_KEYS:
        value = sh.get(key)
        line = f"{key}: {value}"
        if not value or line not in lines:
            continue
        groups: dict[str, list[str]] = {}
        for t in tasks:
            seen = {r["prompt"][key] for r in runs[t]}
            status = seen.pop() if len(seen) == 1 else "differs" if seen else None
            if any(x.startswith(f"{key}.{t}: ") for x in lines):  # the contract lists the task without it
                if status == "off":
                    continue  # as the contract says
                status = "unlisted" if status == "applied" else status
            if status:
                groups.setdefault(status, []).append(t)
        if set(groups) <= {"applied"}:
            continue
        why = {"applied": "on {}",
               "unlisted": f"also on {{}}: its cells ran with it, unlike the contract's {key}.<task> line",
               "rolling": f"not on {{}}: {ROLLING}, whose requests carry the text without the context lm-eval renders",
               "off": "not on {}: its cells ran without it",
               "differs": "DIFFERS between methods on {}"}
        parts = [why[s].format(", ".join(groups[s])) for s in why if s in groups]
        if waiting:
            parts.append(f"no results yet on {', '.join(waiting)}")
        lines[lines.index(line)] = f"{line} (as run, from the results: {'; '.join(parts)})"
    whole = [t.task for t in (spec.whole or spec).tasks]
    if spec.subset and tasks != whole:
        groups = {}
        for t in tasks:
            seen = {(r["n"], r["original"]) for r in runs[t]}
            if len(seen) == 1:
                n, original = seen.pop()
                groups.setdefault(f"the first {n}" + (f" of {original}" if original is not None else "")
                                  + " documents of {}", []).append(t)
            elif seen:
                groups.setdefault("DIFFERING numbers of documents between methods on {}", []).append(t)
            else:  # the limit its cells run with
                own = next(x.limit for x in spec.tasks_of(mod) if x.task == t)
                groups.setdefault(f"limit {sh.get('limit') if own is None else own} on {{}} (no results yet)", []).append(t)
        parts = [text.format(", ".join(ts)) for text, ts in groups.items()]
        same = "" if len(waiting) == len(tasks) or any(text.startswith("DIFFERING") for text in groups) else (
            ", identical for every method" + (" with results" if lacking else ""))  # no results at all: says nothing
        lines[lines.index(f"subset: {spec.subset}")] = (
            f"subset, as run (from the results): {'; '.join(parts)} (lm-eval limit, in each task's order){same}"
            + "".join(f"; {x}" for x in no_results))
    elif spec.subset and (waiting or lacking):  # the spec's text, for every method: say which have no results
        line = f"subset: {spec.subset}"
        parts = ([f"no results yet on {', '.join(waiting)}"] if waiting else []) + no_results
        lines[lines.index(line)] = f"{line} (as run, from the results: {'; '.join(parts)})"
    k = (sh.get("model_args") or {}).get("k")
    if isinstance(k, int) and not isinstance(k, bool):
        fewer: dict[str, list[str]] = {}
        for t in tasks:
            depths = {r["passages"] for r in runs[t] if r["passages"] is not None}
            lo, hi = min(d[0] for d in depths) if depths else k, max(d[1] for d in depths) if depths else k
            if lo < k:  # a document with fewer: the range over the task's documents
                fewer.setdefault(str(hi) if lo == hi else f"{lo} to {hi}", []).append(t)
        if fewer:
            at = max(i for i, x in enumerate(lines) if x.startswith("model_args."))  # under the model's arguments
            lines.insert(at + 1, f"passages per question as attached (from the samples), fewer than k {k}: "
                         + "; ".join(f"{d} on {', '.join(ts)}" for d, ts in fewer.items()))
    return lines + _as_run_lines("questions", tasks, runs) + _as_run_lines("retrieval", tasks, runs)


def _cell_load(cost: dict, prov: dict) -> tuple[float, int] | None:
    """``(load, cpus)`` of one finished cell: the higher 1-minute load average of cost.json's ``loadavg_start`` /
    ``loadavg_end`` and the CPUs it compares to, cost.json's ``cpu_count`` (recorded since s53), else, for an older
    folder, provenance.json's ``machine.torch_num_threads`` where no ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` set it
    (torch's default: the machine's cores). None without a recorded load or CPU count: nothing is claimed."""
    loads = [x[0] for x in (cost.get("loadavg_start"), cost.get("loadavg_end"))
             if isinstance(x, list) and x and isinstance(x[0], (int, float)) and not isinstance(x[0], bool)]
    cpus = cost.get("cpu_count")
    if not (isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0):
        machine = prov.get("machine") or {}
        env = machine.get("env") or {}
        threads = machine.get("torch_num_threads")
        cpus = threads if (isinstance(threads, int) and not isinstance(threads, bool) and threads > 0
                           and not env.get("OMP_NUM_THREADS") and not env.get("MKL_NUM_THREADS")) else None
    return (float(max(loads)), cpus) if loads and cpus else None


OVERLOAD_FACTOR = 1.5
"""A cell is flagged as timed under load when its 1-minute load average exceeded ``OVERLOAD_FACTOR`` times its CPUs. Not
1.0: a cell's own torch threads count in the load (a cell alone with one thread per core sits at about the CPU count,
2.0-2.3 on 2 cores with the usual background), so a strict ``load > cpus`` flagged runs that had the machine to
themselves. Above 1.5x each runnable thread gets at most two thirds of a core: seconds are then inflated by a half or
more (s53 r4's review of 66a4728)."""


def _load_fields(cells: list[tuple[dict, dict]]) -> dict[str, Any]:
    """A row's load fields (its cells' ``(cost, provenance)``, :func:`_cell_load`): ``loadavg_max`` (the highest 1-minute
    load average recorded at a cell's start or end), ``cpu_count`` (the fewest CPUs of its cells) and ``cells_overloaded``
    (how many of its cells ran at a load above :data:`OVERLOAD_FACTOR` times their CPU count: their seconds also measure
    other work); nothing when no cell recorded both."""
    seen = [x for x in (_cell_load(c, p) for c, p in cells) if x is not None]
    if not seen:
        return {}
    return {"loadavg_max": max(x[0] for x in seen), "cpu_count": min(x[1] for x in seen),
            "cells_overloaded": sum(load > OVERLOAD_FACTOR * cpus for load, cpus in seen)}


LOAD_FIELDS = ("loadavg_max", "cpu_count", "cells_overloaded")
"""A cost row's load fields (:func:`_load_fields`): in the JSON's ``cost`` and as CSV columns, not in the tables."""


def load_note(data: dict) -> list[str]:
    """The Cost table's note when some cell's timings were taken at a load average above :data:`OVERLOAD_FACTOR` times its
    CPU count (none otherwise)."""
    rows = [r for r in data["rows"] if (r.get("cost") or {}).get("cells_overloaded")]
    if not rows:
        return []
    n = sum(r["cost"]["cells_overloaded"] for r in rows)
    loads = sorted({r["cost"]["loadavg_max"] for r in rows})
    cpus = sorted({r["cost"]["cpu_count"] for r in rows})
    at = f"{loads[0]:g}" if len(loads) == 1 else f"{loads[0]:g} to {loads[-1]:g}"
    on = f"{cpus[0]} CPUs" if len(cpus) == 1 else f"{cpus[0]} to {cpus[-1]} CPUs"
    names = ", ".join(f"{method_label(data, r['method'])}/{r['task']}" + (f" ({r['model']})" if data["multi_model"] else "")
                      for r in rows)
    return [f"timings of {n} cell{'s' if n != 1 else ''} taken at load {at} on {on} (the highest 1-minute load average "
            f"at a cell's start or end, cost.json loadavg_start / loadavg_end, above 1.5 times the CPUs it ran on): their seconds "
            f"also measure the machine's other work; compare forward passes / tokens, not seconds ({names})"]


def _mean_count(values: list[int]) -> int | float:
    """The mean of per-seed counts: an int when it is one (always for one seed), else rounded to 2 decimals."""
    mean = sum(values) / len(values)
    return int(mean) if float(mean).is_integer() else round(mean, 2)


def _diagnostics(spec: LeaderboardSpec, rows: list[dict], per_seed: dict, qids: dict,
                 hib: dict[str, dict[str, bool]] | None = None) -> None:
    """Per-question helped/hurt/neutral against the closed-book row and noise sensitivity (primary metric), counted
    per seed (seed s of the method against seed s of the closed-book row, or of the method on the clean twin task)
    and averaged over the seeds both rows finished: for a 0/1 metric, helped - hurt = n x the difference of the two
    rows' means, as with one seed. ``seeds`` (the number averaged) is recorded when it is more than one. Better and
    right follow the metric's direction (:func:`_lower_better` of the row's task, from ``hib``: task -> metric ->
    higher_is_better as results.json records it, else :data:`LOWER_IS_BETTER`)."""
    primary = spec.primary_metric

    def seeds_of(key: tuple) -> dict[int, dict[int, float]]:
        return {s: v[primary] for s, v in (per_seed.get(key) or {}).items() if primary in v}

    for row in rows:
        mine = seeds_of((row["model"], row["method"], row["task"]))
        if not mine:
            continue
        lower = _lower_better(hib or {}, row["task"], primary)
        cb = spec.closed_book
        if cb and row["method"] != cb:
            ref = seeds_of((row["model"], cb, row["task"]))
            common = sorted(set(mine) & set(ref))
            if common:
                per = [helped_hurt(mine[s], ref[s], lower_is_better=lower) for s in common]
                row["closed_book"] = {k: _mean_count([x[k] for x in per]) for k in ("helped", "hurt", "neutral")}
                if len(common) > 1:
                    row["closed_book"]["seeds"] = len(common)
        if row.get("noise"):  # the clean twin: nominal noise 0 (a level that replaces no passage has share 0 too)
            clean = [r for r in rows if r["model"] == row["model"] and r["method"] == row["method"]
                     and r["family"] == row["family"] and r.get("noise_nominal", r.get("noise")) == 0.0]
            if clean:
                cq = seeds_of((row["model"], row["method"], clean[0]["task"]))
                common = sorted(set(mine) & set(cq))
                if common:
                    qc, qn = qids.get((row["model"], clean[0]["task"]), {}), qids.get((row["model"], row["task"]), {})
                    per = [noise_flips({qc.get(d, str(d)): v for d, v in cq[s].items()},
                                       {qn.get(d, str(d)): v for d, v in mine[s].items()}, lower_is_better=lower)
                           for s in common]
                    res = {k: _mean_count([x[k] for x in per]) for k in ("flips", "clean_correct")}
                    row["noise_sensitivity"] = {**res, "clean_task": clean[0]["task"]}
                    if len(common) > 1:
                        row["noise_sensitivity"]["seeds"] = len(common)


def _pivot(spec: LeaderboardSpec, data: dict) -> list[dict]:
    """Per model: one row per method, one column per task (the primary metric, or a language-modelling
    task's perplexity), the best value per column, and the average over the primary-metric columns."""
    out = []
    rows = data["rows"]
    for mod in data["models"]:
        mrows = [r for r in rows if r["model"] == mod["name"]]
        columns = []
        for task in mod["tasks"]:
            have = set().union(*[set(r.get("metrics") or {}) for r in mrows if r["task"] == task])
            metric = next((x for x in [spec.primary_metric, "word_perplexity", "bits_per_byte"] if x in have), None)
            if metric is None and have:
                metric = sorted(have)[0]
            columns.append({"task": task, "metric": metric,
                            "lower_is_better": bool(metric) and _lower_better(data["higher_is_better"], task, metric)})
        body = []
        for name in mod["methods"]:
            vals: dict[str, dict | None] = {}
            for col in columns:
                r = next((x for x in mrows if x["method"] == name and x["task"] == col["task"]), None)
                v = ((r or {}).get("metrics") or {}).get(col["metric"]) if col["metric"] else None
                vals[col["task"]] = None if v is None else {"mean": v["mean"], "lo": v["lo"], "hi": v["hi"],
                                                            **({"ci": v["ci"]} if "ci" in v else {})}
            avg_cols = [c["task"] for c in columns if c["metric"] == spec.primary_metric]
            avg = (float(np.mean([vals[t]["mean"] for t in avg_cols])) if avg_cols and all(vals[t] for t in avg_cols) else None)
            body.append({"method": name, "values": vals, "average": avg})
        avg_lower = _average_lower_better(spec, data["higher_is_better"], columns)
        best: dict[str, list[str]] = {}
        for col in columns + ([{"task": "average", "lower_is_better": avg_lower}] if avg_lower is not None else []):
            def value(b: dict, task: str = col["task"]) -> float | None:
                v = b["average"] if task == "average" else (b["values"].get(task) or {}).get("mean")
                return None if v is None else round(v, 3)  # ties at the printed precision share the bold
            present = [value(b) for b in body if value(b) is not None]
            if present:
                target = min(present) if col["lower_is_better"] else max(present)
                best[col["task"]] = [b["method"] for b in body if value(b) == target]
        out.append({"model": mod["name"], "label": mod["label"], "columns": columns, "rows": body, "best": best,
                    "average_over": [c["task"] for c in columns if c["metric"] == spec.primary_metric],
                    "average_metric": spec.primary_metric})
        if avg_lower:  # only then: the JSON of higher-is-better pivots stays as before
            out[-1]["average_lower_is_better"] = True
    return out


def _average_lower_better(spec: LeaderboardSpec, data_hib: dict[str, dict[str, bool]], columns: list[dict]) -> bool | None:
    """Direction of the pivot's average column: that of the primary metric's task columns (:func:`_lower_better`, the
    rule of every column); with no such column, the primary metric's default (:data:`LOWER_IS_BETTER`); ``None`` (no
    best marked) when the columns disagree, as an average of a higher- and a lower-is-better column has no better."""
    dirs = {c["lower_is_better"] for c in columns if c["metric"] == spec.primary_metric}
    if len(dirs) > 1:
        return None
    return dirs.pop() if dirs else _lower_better(data_hib, "", spec.primary_metric)


def loaded_weights_fingerprint(prov: dict) -> Any:
    """``provenance.json``'s fingerprint of the weights as the model loaded them (``loaded_weights_fingerprint``; a
    folder written before s53 names it ``model_fingerprint``, the name ``config.json`` gives the run key's fingerprint
    of what ``pretrained`` names, a different value, reported as ``weights_fingerprint``)."""
    return prov.get("loaded_weights_fingerprint", prov.get("model_fingerprint"))


def _provenance(loaded: dict[str, Any]) -> list[dict]:
    prov = []
    for cid, (_cell, key, data) in loaded.items():
        if data is None:
            prov.append({"cell": cid, "config_hash": key, "missing": True})
            continue
        p = data["provenance"]
        c = data["config"]
        prov.append({
            "cell": cid, "config_hash": key, "loaded_weights_fingerprint": loaded_weights_fingerprint(p),
            "weights_fingerprint": c.get("model_fingerprint"), "task_fingerprint": c.get("task_fingerprint"),
            "data_fingerprint": c.get("data_fingerprint"), "retrieval": p.get("retrieval"),
            "task_version": p.get("task_version"), "git_commit": p.get("git_commit"), "versions": p.get("versions"),
        })
        if c.get("task_data_files"):  # only then: reports of the built-in tasks stay byte-identical
            prov[-1]["task_data_files"] = c["task_data_files"]
    return prov


# --------------------------------------------------------------------------- shared rendering

def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}f}"


EXACT = "‡"
"""Marks a row's CI that is the exact Clopper-Pearson interval, not the bootstrap's (:func:`_degenerate_cis`)."""

EXACT_NOTE = (f"{EXACT} = every question of the row scored 0 on this metric, or every one 1 (0 of n or n of n): the CI is "
              "the exact Clopper-Pearson interval of a proportion (the percentile bootstrap of equal values has zero "
              "width; for a graded metric such as F1, the interval of the share of questions above 0, or below 1, which "
              "bounds the mean)")


def _cell_metric(row: dict, name: str) -> str:
    """``mean [lo, hi]``, with :data:`EXACT` after an exact binomial CI; ``mean`` alone without a CI, followed by
    ``(n=N)`` when it is a mean over N questions, not the row's ``n`` (:func:`_own_n`: ``0.810 (n=21)``)."""
    m = (row.get("metrics") or {}).get(name)
    if not m:
        return "-"
    if m["lo"] is None:
        own = _own_n(row, name)
        return _fmt(m["mean"]) + (f" (n={own})" if own is not None else "")
    return f"{_fmt(m['mean'])} [{_fmt(m['lo'])}, {_fmt(m['hi'])}]" + (f" {EXACT}" if m.get("ci") == EXACT_CI else "")


def _at_floor(p: float, floor: float) -> bool:
    """``p`` is the Monte Carlo floor 2/(iters+1) of the permutation test (:func:`stats.monte_carlo_p_floor`)."""
    return math.isclose(p, floor, rel_tol=1e-9)


def _fmt_p(name: str, v: float, bound: bool) -> str:
    """``name≤v`` for an upper bound (rounded up to 3 decimals, so it stays a bound), else ``name<0.001`` under 0.001
    (0.000977 is ``<0.001``, not ``=0.001``), else ``name=v`` to 3 decimals."""
    if bound:
        return f"{name}≤{math.ceil(v * 1000 - 1e-9) / 1000:.3f}"
    return f"{name}<0.001" if v < 0.001 else f"{name}={v:.3f}"


def _cell_paired(p: dict | None, iters: int) -> str:
    """``diff [lo, hi] p=... holm=...``; a p at the Monte Carlo floor 2/(iters+1) of the permutation test is an
    upper bound and reads ``p≤0.001 holm≤...``, and so does a Holm value that another pair's floor p raised
    (``p_holm_bound``: ``p=0.002 holm≤0.004``); any other p (or Holm's) under 0.001 reads ``p<0.001``
    (``holm<0.001``). Where the test counted discordant questions (a 0/1 metric: ``n_plus`` / ``n_minus`` of
    :func:`stats.paired_test`) they follow p: ``p=0.062 (5+/0−)``. A comparison without a CI (``no_ci``,
    :func:`_no_paired_ci`) prints its reason in place of the interval: ``+0.000 (no question differs) p=1.000 ...``."""
    if not p:
        return "-"
    at_floor = _at_floor(p["p"], monte_carlo_p_floor(iters)) and not p.get("p_exact")  # an exact p at that value
    counts = f" ({p['n_plus']}+/{p['n_minus']}−)" if "n_plus" in p else ""  # the discordant questions of McNemar's p
    tail = f"{_fmt_p('p', p['p'], at_floor)}{counts} {_fmt_p('holm', p['p_holm'], at_floor or bool(p.get('p_holm_bound')))}"
    if p.get("lo") is None:  # no interval (_no_paired_ci): its reason instead of a zero-width one
        return f"{p['diff']:+.3f} ({p.get('no_ci') or 'no CI'}) {tail}"
    return f"{p['diff']:+.3f} [{p['lo']:+.3f}, {p['hi']:+.3f}] {tail}"


def method_label(data: dict, method: str) -> str:
    """The method's name, with `` *`` when it has explicit specific settings."""
    return f"{method} *" if method in data["specific_settings"] else method


def _model_cols(data: dict, row: dict) -> list[str]:
    return [str(row["model"])] if data["multi_model"] else []


def mde_lines(data: dict, model: str | None) -> list[str]:
    """The minimum-detectable-difference sentences of one model (one per task)."""
    out = []
    for x in data["mde"]:
        if x["model"] != model:
            continue
        label = LABELS.get(x["metric"], x["metric"])
        if x["mde"] is None and x["n"] < 2:  # the spread of the differences is not estimable from one question
            out.append(f"{x['task']}: n = {x['n']} question{'' if x['n'] == 1 else 's'}; the spread of the paired differences "
                       f"in {label} cannot be estimated from fewer than 2 questions: no minimum detectable difference")
            continue
        if x["mde"] is None and x.get("sd_left_out"):  # sd 0 everywhere, but not identical answers everywhere
            out.append(f"{x['task']}: n = {x['n']} questions; the paired differences in {label} have no spread in any "
                       f"comparison ({'; '.join(x['sd_left_out'])}): the minimum detectable difference cannot be "
                       "estimated from these runs")
            continue
        if x["mde"] is None:
            out.append(f"{x['task']}: n = {x['n']} questions; no method differs from another on any question in {label}: "
                       "the minimum detectable difference cannot be estimated from these runs")
            continue
        holm = x.get("mde_holm_first_step")
        at_holm = (f"; under {100 * holm:.1f} points at alpha 0.05/{x['comparisons']}, the level Holm's correction tests "
                   "the smallest p against" if holm is not None and x["comparisons"] > 1 else "")
        out.append(f"{x['task']}: n = {x['n']} questions; a true difference in {label} under "
                   f"{100 * x['mde']:.1f} points is detected less than 80% of the time (two-sided alpha 0.05{at_holm}; "
                   f"{_mde_sd_text(x)})" + _exact_caveat(x))
    return out


def _mde_sd_text(x: dict) -> str:
    """What the minimum-detectable-difference line's sd is: one comparison's, or the root mean square of the sds of
    the comparisons with any spread (``sd_comparisons`` of ``comparisons``), naming those left out (``sd_left_out``:
    identical answers, whose sd 0 would have pulled the pooled sd down)."""
    total = x["comparisons"]
    used = x.get("sd_comparisons", total)
    if used == 1 and total == 1:
        return f"sd of paired differences {x['sd']:.3f}, of the 1 comparison"
    if used == total:
        return f"sd of paired differences {x['sd']:.3f}, the root mean square of the sds of the {total} comparisons"
    left = x.get("sd_left_out") or []
    return (f"sd of paired differences {x['sd']:.3f}, the root mean square of the sds of {used} of the {total} comparisons; "
            f"left out, without spread: {'; '.join(left)}")


BOLD_NOTE = "best value per column in bold (highest, or lowest where lower is better: a point estimate, not a test)"
"""What the pivot's bold means, in its heading (Markdown and HTML): the paired tests are only against the references."""


def pivot_table(data: dict, piv: dict, bold: tuple[str, str] = ("**", "**")) -> tuple[list[str], list[list[str]]]:
    """Header and body of one model's pivot (best per column wrapped in ``bold``: :data:`BOLD_NOTE`)."""
    head = ["method"] + [f"{c['task']} ({LABELS.get(c['metric'], c['metric'])}{', lower is better' if c['lower_is_better'] else ''})"
                         if c["metric"] else f"{c['task']} (no results yet)" for c in piv["columns"]]
    avg_label = LABELS.get(piv["average_metric"], piv["average_metric"])
    n_avg = len(piv["average_over"])
    lower = ", lower is better" if piv.get("average_lower_is_better") else ""
    head.append(f"average ({avg_label}, {n_avg} task{'' if n_avg == 1 else 's'}{lower})" if n_avg
                else f"average (no task with {avg_label} yet)")
    body = []
    partial = partial_rows(data)
    for r in piv["rows"]:
        line = [method_label(data, r["method"])]
        for c in piv["columns"] + [{"task": "average"}]:
            v = r["average"] if c["task"] == "average" else (r["values"].get(c["task"]) or {}).get("mean")
            s = _fmt(v)
            if v is not None and r["method"] in piv["best"].get(c["task"], []):
                s = f"{bold[0]}{s}{bold[1]}"
            tasks = piv["average_over"] if c["task"] == "average" else [c["task"]]
            if v is not None and any((piv["model"], r["method"], t) in partial for t in tasks):
                s += PARTIAL
            line.append(s)
        body.append(line)
    return head, body


def time_basis(rows: list[dict]) -> str:
    """``"model"`` when every row with a cost has ``model_s`` (the seconds inside the model's requests, recorded by the
    runner since it measures them), else ``"wall"``: one table never mixes the two (a row from an older run folder
    puts the whole table on wall seconds)."""
    costs = [r["cost"] for r in rows if r.get("cost")]
    return "model" if costs and all(c.get("model_s") is not None for c in costs) else "wall"


def cost_keys(data: dict) -> list[str]:
    """The cost columns present (timings only with ``timings=True``). Seconds per question: ``model_s_per_question``
    when :func:`time_basis` is ``"model"`` (with ``model_s`` beside ``wall_s``), else ``s_per_question`` (wall)."""
    if not data["timings"]:
        timing = []
    elif data.get("time_basis") == "model":
        timing = ["wall_s", "model_s", "model_s_per_question", "peak_rss_mib"]
    else:
        timing = ["wall_s", "s_per_question", "peak_rss_mib"]
    return ["forward_passes", "generated_tokens", "prompt_tokens", "fp_per_token", "fp_per_question"] + timing


COST_LABELS = {"forward_passes": "forward passes", "generated_tokens": "generated tokens", "prompt_tokens": "prompt tokens",
               "fp_per_token": "forward passes / generated token", "fp_per_question": "forward passes / question",
               "wall_s": "wall time (s)", "s_per_question": "s / question", "peak_rss_mib": "peak RSS (MiB)",
               "model_s": "model time (s)", "model_s_per_question": "model s / question"}

COST_DIGITS = {"fp_per_token": 3, "fp_per_question": 2, "wall_s": 1, "model_s": 1, "s_per_question": 3,
               "model_s_per_question": 3, "peak_rss_mib": 0}
"""Decimals of each cost column in the tables (as :func:`_compute` rounds them; counts are whole numbers), so a column
reads ``1.750`` above ``1.777`` and ``1843`` MiB, not ``1.75`` and ``1843.0``. The JSON and CSV keep the values."""


def _cost_cell(row: dict, key: str) -> str:
    """A cost table cell: ``-`` when absent, else the value to :data:`COST_DIGITS` decimals (a count as an integer)."""
    v = (row.get("cost") or {}).get(key)
    if v is None:
        return "-"
    return f"{v:.{COST_DIGITS[key]}f}" if key in COST_DIGITS else str(v)


MODEL_TIME_NOTE = ("model s / question: time inside the model's requests, task build and retrieval excluded (wall time "
                   "also counts them, charged to the first method of a task in a runner process)")
WALL_TIME_NOTE = ("s / question: wall seconds per question, task build and retrieval included (charged to the first "
                  "method of a task in a runner process); some run folders predate the model-time measurement")


def confidence_label(confidence: float) -> str:
    """A CI's confidence level as printed: ``0.95`` -> ``"95%"``, ``0.975`` -> ``"97.5%"``, ``0.995`` -> ``"99.5%"``
    (exact to 12 significant digits, so float noise such as 0.9 * 100 = 90.00000000000001 prints ``"90%"``; never
    rounded to a whole percent, which would publish 0.995 as a 100% CI). Used by every table and page heading."""
    return f"{confidence * 100:.12g}%"


def tables(data: dict) -> list[tuple[str, str, list[str], list[list[str]], list[str]]]:
    """(anchor, title, header, rows, lines under the table) of every long table, shared by Markdown and HTML."""
    out = []
    ms = [m for m in data["metrics"] if m not in HYGIENE]
    conf = confidence_label(data["bootstrap"]["confidence"])
    mcol = ["model"] if data["multi_model"] else []
    head = mcol + ["method", "task", "noise", "n"] + [LABELS.get(m, m) for m in ms]
    body = []
    partial = partial_rows(data)

    def label(r: dict, *others: tuple[str | None, str]) -> str:
        """The method's label, marked when its row or one of ``others`` ((method, task) of the same model: the rows its
        paired tests or counts compare it with) has only some of its seeds."""
        marked = any((r["model"], m, t) in partial for m, t in ((r["method"], r["task"]), *others) if m)
        return method_label(data, r["method"]) + (f" {PARTIAL}" if marked else "")

    for r in data["rows"]:
        noise = "-" if r.get("noise") is None else f"{r['noise']:.2f}"
        body.append(_model_cols(data, r) + [label(r), r["task"], noise, str(r.get("n", "-"))]
                    + [_cell_metric(r, m) for m in ms])
    ratio = " and ".join(LABELS.get(m, m) for m in ms if m in RATIO_METRICS)  # corpus ratios: paragraphs are the unit
    unit = "questions" + (f" (paragraphs for {ratio})" if ratio else "")
    iters = data["bootstrap"]["iters"]
    marked = [PARTIAL_NOTE] if partial else []
    off = dict.fromkeys(" ".join(_model_cols(data, r) + [r["task"], f"{r['noise_nominal']:.2f} -> {r['noise']:.2f}"])
                        for r in data["rows"] if "noise_nominal" in r)
    if off:  # the contract's k: the noise replaces a whole number of passages (spec.task_noise_share)
        marked.append("noise: the share of the passages actually replaced (a whole number of the contract's k), not the "
                      "task's nominal level: " + ", ".join(off))
    shown = [(r, (r.get("metrics") or {}).get(m) or {}) for r in data["rows"] for m in ms]
    exact = [EXACT_NOTE] if any(x.get("ci") == EXACT_CI for _r, x in shown) else []
    if any(r.get("n") == 1 and x.get("n") == 1 and x.get("lo") is None for r, x in shown):
        exact.append("a mean without a CI over n = 1 question: one value has no spread to estimate")
    if any(x.get("lo") is None and isinstance(x.get("n"), (int, float)) and x["n"] > 1 and x["n"] == r.get("n")
           for r, x in shown):  # _degenerate_cis: every question scores the row's value (not a subset metric's (n=N))
        exact.append("a mean without a CI over n > 1 questions: every question scores that value, so there is no "
                     "spread to estimate (the bootstrap's zero-width [v, v] is not shown)")
    own = [LABELS.get(m, m) for m in subset_metrics(data) if m in ms]
    if own:
        exact.append(f"(n=N) after a value of {', '.join(own)}: lm-eval's mean over the N questions that carry the metric "
                     "(gold@k: those whose gold passage is known), not over the row's n; no CI")
    out.append(("results", f"Results: mean [{conf} percentile bootstrap CI over {unit}, {iters} resamples]", head, body,
                exact + marked))
    pm = [m for m in PAIRED + RATIO_PAIRED if m in ms]
    for ref in data["references"]:
        body = [_model_cols(data, r) + [label(r, (ref, r["task"])), r["task"]]
                + [_cell_paired(((r.get("paired") or {}).get(ref) or {}).get(m), data["bootstrap"]["iters"]) for m in pm]
                for r in data["rows"] if (r.get("paired") or {}).get(ref)]
        if body:
            under = [x for mod in data["models"] for x in
                     ([f"{mod['label']}: " + s for s in mde_lines(data, mod["name"])] if data["multi_model"] else mde_lines(data, mod["name"]))]
            unit = f"the same questions (paragraphs for {ratio})" if ratio else "the same questions"
            test = (f"two-sided paired permutation test (sign flips; for {ratio} swaps of the two methods' paragraphs, "
                    "recomputing the ratio)") if ratio else "two-sided paired sign-flip permutation test"
            # stats.paired_test: exact, not Monte Carlo, for a 0/1 metric or few differing questions
            test += ("; exact where every differing question differs by the same amount (a 0/1 metric such as EM or "
                     f"answer match: McNemar's test on the discordant questions) or at most {EXACT_MAX_DIFFERENCES} "
                     "questions differ, "
                     "Monte Carlo otherwise; p<0.001 = an exact p below 0.001; (k+/k−) after p = the questions where "
                     "method - reference is positive / negative (McNemar's discordant questions; with few of them the "
                     "bootstrap CI is too narrow and can exclude 0 while p >= 0.05: read p)")
            floor = monte_carlo_p_floor(data["bootstrap"]["iters"])
            # _no_paired_ci's reasons, which a cell prints in parentheses in place of its CI
            no_ci = ("no question differs, every question differs by the same amount, or there is only one question"
                     + (f" (for {ratio}: no paragraph differs, or there is only one paragraph)" if ratio else ""))
            out.append((f"paired-{ref}", f"Paired difference against {ref} on {unit} (method - {ref}: mean "
                        f"[{conf} paired percentile bootstrap CI, {iters} resamples, the same resample "
                        f"for both methods]; where {no_ci}, the cell shows that reason in parentheses instead of a CI; "
                        f"p = {test}, holm = p Holm-adjusted over the method pairs of the model, task and "
                        f"metric; p≤{floor:.3f} = at the Monte Carlo floor 2/(resamples+1), holm≤ = an upper bound raised "
                        "by such a p)",
                        mcol + ["method", "task"] + [f"Δ {LABELS.get(m, m)}" for m in pm], body, under + marked))
    diag_head = mcol + ["method", "task"]
    cb = data["closed_book"]
    pl = LABELS.get(data["primary_metric"], data["primary_metric"])
    if cb:
        diag_head += [f"helped vs {cb}", f"hurt vs {cb}", f"neutral vs {cb}"]
    diag_head += ["noise flips (right on clean, wrong here)"]
    diag_head += [trace_label(k) for k in data["trace_columns"]] + [LABELS[h] for h in HYGIENE if h in data["metrics"]]
    diag_head += [pv.MARKER_LABEL] if pv.marker_shown(data) else []
    body = []
    for r in data["rows"]:
        if "metrics" not in r:
            continue
        twin = [(r["method"], (r.get("noise_sensitivity") or {})["clean_task"])] if r.get("noise_sensitivity") else []
        line = _model_cols(data, r) + [label(r, (cb, r["task"]) if r.get("closed_book") else (None, ""), *twin), r["task"]]
        if cb:
            c = r.get("closed_book")
            line += [str(c["helped"]), str(c["hurt"]), str(c["neutral"])] if c else ["-", "-", "-"]
        ns = r.get("noise_sensitivity")
        line.append(f"{ns['flips']}/{ns['clean_correct']}" if ns else "-")
        line += [_fmt(((r.get("trace") or {}).get(k) or {}).get("mean")) for k in data["trace_columns"]]
        line += [_fmt(((r.get("metrics") or {}).get(h) or {}).get("mean")) for h in HYGIENE if h in data["metrics"]]
        line += [pv.marker_cell(r)] if pv.marker_shown(data) else []
        body.append(line)
    under = [f"Per question, by {pl}: helped = right where {cb} is wrong (better, for a graded metric), hurt = the reverse; "
             "noise flips = questions right on the clean twin task and wrong on this noisy one (of those right on the clean task)."
             if cb else f"Noise flips by {pl}: questions right on the clean twin task and wrong on this noisy one."]
    if any(_lower_better(data.get("higher_is_better") or {}, r["task"], data["primary_metric"]) for r in data["rows"] if "metrics" in r):
        under.append(f"{pl} is lower-is-better: better = lower, right = 0 and wrong = above 0.")
    if any(((r.get(k) or {}).get("seeds") or 1) > 1 for r in data["rows"] for k in ("closed_book", "noise_sensitivity")):
        under.append("With several seeds each count is per seed (seed s of the method against seed s of the closed-book "
                     "row, or of the method on the clean twin) and then averaged over the seeds both rows "
                     "finished, so it can be fractional; for a 0/1 metric helped - hurt = n x the difference of the two "
                     "rows' means.")
    under += [f"{trace_label(k)}: {TRACE_COLUMNS[k]}" for k in data["trace_columns"]] + pv.marker_notes(data) + marked
    out.append(("diagnostics", "Per-question diagnostics, method traces and answer hygiene", diag_head, body, under))
    ck = cost_keys(data)
    body = [_model_cols(data, r) + [label(r), r["task"]] + [_cost_cell(r, k) for k in ck] for r in data["rows"]]
    title = "Cost (totals over seeds; peak memory = max)" if data["timings"] else "Cost (totals over seeds)"
    note = ("To estimate a grid's CPU time before running it: tokrag leaderboard run SPEC --estimate reads the finished run "
            "folders in --runs-dir (their wall seconds per question, any spec), not this report")
    basis = data.get("time_basis") if data["timings"] else None
    notes = ([MODEL_TIME_NOTE] if basis == "model" else [WALL_TIME_NOTE] if basis == "wall" else []) + load_note(data)
    notes += [note] + marked
    out.append(("cost", title, mcol + ["method", "task"] + [COST_LABELS[k] for k in ck], body, notes))
    return out


def provenance_table(data: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the provenance table (one row per cell); with a task's own data files the data column's
    header says what their hashes are (the SHA-256 of the file's bytes, not the corpus fingerprint)."""
    body, task_files = [], False
    for p in data["provenance"]:
        if p.get("missing"):
            body.append([p["cell"], p["config_hash"], "MISSING", "", "", "", ""])
            continue
        retr = p.get("retrieval") or {}
        extra = ", ".join(f"{k}={_corpus_label(v) if k == 'corpus' else v}" for k, v in sorted(retr.items()) if k != "ctxs")
        files = p.get("task_data_files") or {}  # a task's own data files (bring-your-own questions, corpus)
        data_fp = "; ".join([str(p.get("data_fingerprint"))] + [f"{Path(f).name} {h[:12]}" for f, h in sorted(files.items())])
        task_files = task_files or bool(files)
        body.append([p["cell"], p["config_hash"], str(p.get("loaded_weights_fingerprint", p.get("model_fingerprint"))),
                     str(p.get("task_fingerprint")),
                     str(retr.get("ctxs")) + (f" ({extra})" if extra else ""), data_fp,
                     str(p.get("git_commit"))] + ([p.get("compute") or "-"] if pv.mixed(data) else []))
    return (["cell", "config hash", "loaded weights fingerprint", "task fingerprint", "retrieval fingerprint (passages)",
             "data fingerprint; task data files: file SHA-256" if task_files else "data fingerprint", "git commit"]
            + (["computed on"] if pv.mixed(data) else []), body)


_CORPUS_RE = re.compile(r"^(?P<name>.+)@(?P<fp>[0-9a-f]{8,})(?: \((?P<n>\d+) passages\))?$")


def _corpus_label(value: Any) -> str:
    """``NAME (passages fingerprint F, N passages)`` for a cached run's corpus ``NAME@F (N passages)``: retrieval's
    corpus fingerprint (SHA-256 over the passages' ids, titles and texts), not a file's SHA-256."""
    m = _CORPUS_RE.match(str(value))
    if not m:
        return str(value)
    return f"{m['name']} (passages fingerprint {m['fp']}" + (f", {m['n']} passages)" if m["n"] else ")")


WEIGHTS_NOTE = ("loaded weights fingerprint = provenance.json's loaded_weights_fingerprint (model_fingerprint in a "
                "folder written before s53): the weights as the model loaded them, results' config.tokrag_model_fingerprint; "
                "config.json's model_fingerprint is another hash, the run key's fingerprint of the files `pretrained` names "
                "(the report JSON's weights_fingerprint)")
"""The provenance table's note on its weights column: the two hashes of a run folder that both were named
``model_fingerprint`` (config.json keeps the name, the run key hashes it)."""


def provenance_notes(data: dict) -> list[str]:
    """What the provenance table's weights column is (:data:`WEIGHTS_NOTE`), when it shows a cell, and what its two
    kinds of corpus hash are, when it shows either."""
    shown = [p for p in data["provenance"] if not p.get("missing")]
    corpus = any(_CORPUS_RE.match(str((p.get("retrieval") or {}).get("corpus", ""))) for p in shown)
    files = any(p.get("task_data_files") for p in shown)
    weights = [WEIGHTS_NOTE] if shown else []
    if not (corpus or files):
        return weights
    return weights + ["Hashes: a corpus's \"passages fingerprint\" (retrieval column) is retrieval's corpus fingerprint, SHA-256 "
            "over its passages' ids, titles and texts, which names its index and cached runs; the hash after a task data "
            "file's name (data column) is the SHA-256 of the file's bytes (first 12 hex digits; a folder's: its tree "
            "fingerprint), which enters the run key. The same corpus file has both, and they differ."]


def versions(data: dict) -> list[str]:
    """``library v1, v2`` lines over every cell's recorded versions."""
    seen: dict[str, set[str]] = {}
    for p in data["provenance"]:
        for k, v in (p.get("versions") or {}).items():
            seen.setdefault(k, set()).add(str(v))
    return [f"{k} {', '.join(sorted(v))}" for k, v in sorted(seen.items())]


_MD_PUNCT = frozenset(string.punctuation)
"""The ASCII punctuation characters, the only ones a backslash escapes in Markdown (CommonMark 0.31, section 2.4)."""
_MD_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_MD_ORDERED = re.compile(r"[0-9]{1,9}[.)](?=\s|$)")


def md_text(text: Any, *, line: bool = False) -> str:
    """``text`` escaped for ``leaderboard.md``, so that it renders as the characters it holds: the one escape of the
    report's user strings (task, model, method, preset and spec names, question ids, paths, settings) and of the table
    cells and list lines that carry them. ``text`` is a whole table cell or a whole line (``line``: a list item's or
    paragraph's text, whose start can open a block), not a piece of one: its ends count as whitespace.

    A backslash escape (``\\*``) goes before each character that Markdown (CommonMark, GitHub's tables,
    strikethrough and math) could read as syntax there, and only there, so ordinary text is unchanged byte for byte
    (``q05``, ``nq_oracle_gold``, ``0.310 [0.258, 0.365]``, ``until=['\\n\\n']``, ``rag-cad *``):

    * always: `` ` ``, ``|`` (a table's column), ``$`` (math);
    * ``*`` and ``~`` unless whitespace is on both sides (they open or close emphasis / strikethrough, within a
      word too: ``q*1, q*2``); ``_`` unless whitespace, or a letter or digit, is on both sides (``q_1_``, ``_q``;
      ``nq_oracle_gold`` stays);
    * ``\\`` before ASCII punctuation or at the end (``\\n`` stays); ``<`` before a letter, ``/``, ``!`` or ``?``
      (an HTML tag or an autolink: ``<b>``; ``p<0.001`` stays); ``&`` that starts an entity (``&amp;``); ``]``
      before ``(`` or ``[`` (a link); a run of ``#`` after a space at the end (a heading's closing sequence);
    * with ``line``, at the start: ``#``, ``>``, ``[``, ``=``, a ``-`` / ``+`` / ``*`` list marker, the ``.`` or
      ``)`` of an ordered list's number, the first ``-`` of a text of dashes only (``--``: a rule after a list's
      ``- ``); the spaces and tabs before the start are dropped (Markdown shows none of them, and four make a code
      block).

    A line break (``\\r``, ``\\n``) becomes a space: it would end the table row or the list item. Raises nothing:
    ``text`` is made a string (``str``)."""
    s = re.sub(r"\r\n|\r|\n", " ", str(text))
    if line:
        s = s.lstrip(" \t")
    n = len(s)
    ordered = _MD_ORDERED.match(s) if line else None
    out = []
    for i, ch in enumerate(s):
        prev = s[i - 1] if i else " "
        nxt = s[i + 1] if i + 1 < n else " "
        if ch in "`|$":
            esc = True
        elif ch in "*~":
            esc = not (prev.isspace() and nxt.isspace()) or (line and i == 0 and ch == "*")
        elif ch == "_":
            esc = not ((prev.isspace() and nxt.isspace()) or (prev.isalnum() and nxt.isalnum()))
        elif ch == "\\":
            esc = nxt in _MD_PUNCT or i + 1 == n
        elif ch == "<":
            esc = nxt.isalpha() or nxt in "/!?"
        elif ch == "&":
            esc = _MD_ENTITY.match(s, i) is not None
        elif ch == "]":
            esc = nxt in "(["
        elif ch == "#":
            esc = (line and i == 0) or (prev.isspace() and not s[i:].rstrip().strip("#"))
        elif line and i == 0:
            esc = ch in ">[=" or (ch in "-+" and nxt.isspace()) or (ch == "-" and not s.strip(" \t-"))
        else:
            esc = ordered is not None and i == ordered.end() - 1
        out.append("\\" + ch if esc else ch)
    return "".join(out)


def _md_table(header: list[str], rows: list[list[str]], keep: int | None = None) -> str:
    """A Markdown table of ``header`` and ``rows``, every cell escaped (:func:`md_text`) except the cells of the columns
    from ``keep`` on, which the caller formatted (the pivot's bold values; they hold no user string)."""
    def cells(r: list[str], head: bool = False) -> str:
        return " | ".join(md_text(c) if head or keep is None or j < keep else str(c) for j, c in enumerate(r))

    lines = ["| " + cells(header, True) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + cells(r) + " |" for r in rows]
    return "\n".join(lines)


def render_markdown(data: dict) -> str:
    """The report as Markdown (for a README or a paper): pivot first, then contracts, long tables, provenance. Every
    table cell and list line that can hold a user string (task, model, method, preset and spec names, question ids,
    paths, settings, the spec's description and notes) is escaped by :func:`md_text`, so it renders as written; the
    report's own formatting (the pivot's bold, the methods' code spans, the provenance notes and the closing lines) is
    not."""
    def items(lines: list[str]) -> list[str]:
        return [f"- {md_text(x, line=True)}" for x in lines]

    out = [f"# Leaderboard: {md_text(data['spec'])}", ""]
    if data["description"]:
        out += [md_text(data["description"], line=True), ""]
    cl = cells_lines(data)
    if cl:
        out += [md_text(cl[0], line=True), ""] + (items(cl[1:]) + [""] if cl[1:] else [])
    pl = LABELS.get(data["primary_metric"], data["primary_metric"])
    out += [f"## Overview: {md_text(pl)} per task ({BOLD_NOTE}; methods are compared only within a model)", ""]
    for piv in data["pivot"]:
        if data["multi_model"]:
            out += [f"### {md_text(piv['label'])}", ""]
        head, body = pivot_table(data, piv)
        out += [_md_table(head, body, keep=1), ""]
        out += items(mde_lines(data, piv["model"])) + [""]
    for mod in data["models"]:
        title = f"## Fairness contract of {md_text(mod['label'])}" if data["multi_model"] else (
            "## Fairness contract (identical for every row except the compute setting: see its line)" if pv.differ(data)
            else "## Fairness contract (identical for every row)")
        out += [title, ""] + items(mod["contract"] + mod.get("as_run", [])) + [""]
        if mod["method_args"]:
            out += ["Method arguments for this model:", ""] + items(mod["method_args"]) + [""]
        if mod.get("method_resolved"):
            out += ["Resolved method settings, as run:", ""] + items(mod["method_resolved"]) + [""]
        if mod["notes"]:
            out += [md_text(mod["notes"], line=True), ""]
    out += ["Methods and their own hyper-parameters:", ""]
    for name, d in data["method_args"].items():
        args = ", ".join(f"{k}={v}" for k, v in sorted(d.get("model_args", {}).items()))
        fence = "`" * (max(map(len, re.findall("`+", str(d["model"]))), default=0) + 1)  # a code span holding its text
        pad = " " if "`" in str(d["model"]) else ""
        out.append(f"- {md_text(name, line=True)}: model {fence}{pad}{d['model']}{pad}{fence}"
                   + (f", {md_text(args)}" if args else ""))
    out.append("")
    if data["specific_settings"]:
        out += ["## Specific settings (explicit deviations from the contract, rows marked *)", ""]
        out += items([f"{name}: " + ", ".join(f"{k}={v}" for k, v in sorted(dev.items()))
                      for name, dev in data["specific_settings"].items()])
        out.append("")
    for _, title, head, rows, under in tables(data):
        out += [f"## {md_text(title)}", "", _md_table(head, rows), ""]
        if under:
            out += items(under) + [""]
    head, rows = provenance_table(data)
    out += ["## Provenance (one row per cell)", "", _md_table(head, rows), ""]
    notes = provenance_notes(data)  # the report's own text (a code span), no user string
    out += [f"- {x}" for x in notes] + ([""] if notes else [])
    out += [md_text("Units: " + "; ".join(f"{LABELS.get(k, k)} = {u}" for k, u in data["units"].items() if u), line=True), ""]
    out += [md_text("Library versions: " + "; ".join(versions(data)), line=True), ""]
    if data["notes"]:
        out += ["## Notes", "", md_text(data["notes"], line=True), ""]
    for line in generated_lines(data):
        out += [line, ""]
    return "\n".join(out)


P_UNDERFLOW_CSV = "1e-300"
"""What the CSV writes for a p (or Holm's p) under 1e-300, one that underflowed to 0.0 included: an upper bound, as a
number (:func:`csv_p`)."""
P_CSV_FLOOR = float(P_UNDERFLOW_CSV)


def csv_p(v: float) -> str:
    """A p-value as the CSV writes it: 6 decimals from 0.001 up (``0.093750``), 3 significant digits in scientific
    notation below (``3.01e-36``, which 6 decimals wrote as ``0.000000``), ``1e-300`` for a p under 1e-300: one that
    underflowed to 0.0 (the exact binomial p of more than 1074 discordant questions all one way, 2/2^m, is below the
    smallest float) and one between 0 and 1e-300 alike (2/2^1070 = 1.58e-322 of 1070 such questions, a subnormal
    double). That is an upper bound of the true p, written as a number so that the column stays numeric for a CSV
    reader (``pandas.read_csv`` reads it as float64; text such as ``<1e-300`` made the whole column text), and the same
    one for every p under it, so a smaller p is never written as a larger number than a larger p (sorting the column
    keeps their order). 1e-300, not the smallest positive double 5e-324: a normal double, which every reader keeps
    (Excel reads numbers under 2.2e-308 as 0, the value this column must never hold). The Markdown and HTML keep
    ``p<0.001``."""
    if v < P_CSV_FLOOR:
        return P_UNDERFLOW_CSV
    return f"{v:.6f}" if v >= 0.001 else f"{v:.2e}"


P_UNDERFLOW_JSON = math.ulp(0.0)
"""What ``leaderboard.json`` holds for a p that underflowed to 0.0, with ``p_bound: true`` (:func:`json_report`): the
smallest positive double, 5e-324, an upper bound of a p below what a double can hold that no representable p is
below (a JSON reader sorting the p's keeps their order)."""


def json_report(data: dict) -> dict:
    """``data`` as ``leaderboard.json`` holds it: every value as computed, except a paired entry's p that underflowed
    to 0.0 (the exact binomial p of more than 1074 discordant questions all one way, 2/2^m, is below the smallest
    double), which read as p = 0, a certainty no test gives. It is written :data:`P_UNDERFLOW_JSON` (5e-324) with
    ``"p_bound": true`` (the key is absent, p exact, everywhere else), and a Holm value of 0.0 (Holm's adjustment of
    such p's) ``family`` x 5e-324 with ``"p_holm_bound": true``: upper bounds, as the CSV writes ``1e-300`` with
    ``_p_holm_bound`` true (:func:`csv_p`; ``csv_p`` of either bound is ``1e-300``, so the CSV is unchanged). Every
    representable p, a subnormal one included (2/2^1070 = 1.58e-322), is written exactly, as before. ``data`` is not
    changed (the Markdown, HTML and CSV read it). The bounds hold: a p of 0.0 here is one that underflowed (scipy 1.17's
    ``binomtest`` also returns 0.0 for some p a double holds, ``binomtest(38, 1075)``: 0.0 for a true 7.9e-254;
    :func:`leaderboards.stats.paired_test` then computes it exactly, :func:`leaderboards.stats.exact_sign_p`)."""
    def entry(e: dict) -> dict:
        if not isinstance(e, dict) or (e.get("p") != 0.0 and e.get("p_holm") != 0.0):
            return e
        e = dict(e)
        if e.get("p") == 0.0:
            e.update(p=P_UNDERFLOW_JSON, p_bound=True)
        if e.get("p_holm") == 0.0:  # Holm's value for the i-th smallest p: at most family x the largest of p(1)..p(i)
            e.update(p_holm=int(e.get("family") or 1) * P_UNDERFLOW_JSON, p_holm_bound=True)
        return e

    if not isinstance(data.get("rows"), list):
        return data
    rows = [{**r, "paired": {ref: {m: entry(e) for m, e in by.items()} if isinstance(by, dict) else by
                             for ref, by in r["paired"].items()}}
            if isinstance(r, dict) and isinstance(r.get("paired"), dict) else r for r in data["rows"]]
    return {**data, "rows": rows}


def render_csv(data: dict) -> str:
    """One CSV row per (model,) method x task: metric means and CI bounds, paired differences against
    each reference (with Holm-adjusted p), diagnostics, trace columns, cost.

    Each ``delta_<metric>_vs_<ref>_p_holm`` column is followed by ``..._p_holm_bound``: ``true`` when that Holm value
    is an upper bound (a Monte Carlo p at its floor in the family, ``p_holm_bound`` of the JSON; the Markdown's
    ``holm≤``; or a Holm value under 1e-300, written ``1e-300``), ``false`` when it is exact, empty when the pair has no
    test; then ``..._n_plus`` / ``..._n_minus``: the discordant questions (method - reference positive / negative)
    where the p counts them (a 0/1 metric), else empty. A p-value is never written as 0: under 0.001 it has 3
    significant digits (:func:`csv_p`: ``3.01e-36``), and one under 1e-300 (one that underflowed to 0.0 included) is
    written ``1e-300``, an upper bound (every p and Holm cell is a number or empty, so the columns read as numbers);
    the CI cells of a comparison without a CI (JSON ``no_ci``: no question differs, every question differs by the same
    amount, or one question) are empty."""
    ms = data["metrics"]
    ck = cost_keys(data)
    head = (["model"] if data["multi_model"] else []) + ["method", "task", "noise", "n", "specific_settings"]
    own = subset_metrics(data)
    for m in ms:
        head += [m, f"{m}_ci_low", f"{m}_ci_high"] + ([f"{m}_n"] if m in own else [])
    pm = [m for m in PAIRED + RATIO_PAIRED if m in ms]
    for ref in data["references"]:
        for m in pm:
            head += [f"delta_{m}_vs_{ref}", f"delta_{m}_vs_{ref}_ci_low", f"delta_{m}_vs_{ref}_ci_high",
                     f"delta_{m}_vs_{ref}_p", f"delta_{m}_vs_{ref}_p_holm", f"delta_{m}_vs_{ref}_p_holm_bound",
                     f"delta_{m}_vs_{ref}_n_plus", f"delta_{m}_vs_{ref}_n_minus"]
    if data["closed_book"]:
        head += ["helped", "hurt", "neutral"]
    head += ["noise_flips", "noise_clean_correct"] + data["trace_columns"] + ck
    head += ["passage_marker_rate"] if pv.marker_shown(data) else []
    head += ["compute"] if pv.mixed(data) else []
    loads = [k for k in LOAD_FIELDS if any(k in (r.get("cost") or {}) for r in data["rows"])]  # cells with a load
    head += loads
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for r in data["rows"]:
        spec_set = ";".join(f"{k}={v}" for k, v in sorted(data["specific_settings"].get(r["method"], {}).items()))
        line = ([r["model"]] if data["multi_model"] else []) + [r["method"], r["task"], "" if r.get("noise") is None else r["noise"],
                                                               r.get("n", ""), spec_set]
        for m in ms:
            v = (r.get("metrics") or {}).get(m) or {}
            line += [_fmt(v.get("mean"), 6) if v else "", _fmt(v.get("lo"), 6) if v.get("lo") is not None else "",
                     _fmt(v.get("hi"), 6) if v.get("hi") is not None else ""]
            if m in own:  # the questions its mean is over, where that is not the row's n
                line.append(_own_n(r, m) if _own_n(r, m) is not None else "")
        for ref in data["references"]:
            for m in pm:
                p = ((r.get("paired") or {}).get(ref) or {}).get(m)
                line += ([_fmt(p["diff"], 6)] + ["" if p[k] is None else _fmt(p[k], 6) for k in ("lo", "hi")]
                         + [csv_p(p[k]) for k in ("p", "p_holm")]
                         + ["true" if p.get("p_holm_bound") or p["p_holm"] < P_CSV_FLOOR else "false"]
                         + [p.get("n_plus", ""), p.get("n_minus", "")]) if p else [""] * 8
        if data["closed_book"]:
            c = r.get("closed_book")
            line += [c["helped"], c["hurt"], c["neutral"]] if c else ["", "", ""]
        ns = r.get("noise_sensitivity")
        line += [ns["flips"], ns["clean_correct"]] if ns else ["", ""]
        line += [_fmt(((r.get("trace") or {}).get(k) or {}).get("mean"), 6) if (r.get("trace") or {}).get(k) else ""
                 for k in data["trace_columns"]]
        line += ["" if (r.get("cost") or {}).get(k) is None else r["cost"][k] for k in ck]
        line += [_fmt(r["passage_marker"]["rate"], 6) if r.get("passage_marker") else ""] if pv.marker_shown(data) else []
        line += [pv.row_settings(data, r)] if pv.mixed(data) else []
        line += ["" if (r.get("cost") or {}).get(k) is None else r["cost"][k] for k in loads]
        w.writerow(line)
    return buf.getvalue()


REPORT_FILES = ("leaderboard.md", "leaderboard.csv", "leaderboard.json", "index.html")

GENERATOR = "tokrag leaderboard report"
"""The ``generator`` value of a report's ``leaderboard.json``: what marks a folder as a report."""

_EARLIER_REPORT_KEYS = frozenset({"bootstrap", "contract", "description", "method_args", "metrics", "notes", "provenance",
                                  "reference", "rows", "spec", "specific_settings", "timings", "units"})
"""Top-level keys every report's ``leaderboard.json`` had before the ``generator`` marker (the committed
nq-wiki-12k, nq-wiki-12k-v2 and reference-cells reports): such a file is recognised as a report too."""


def is_report_json(d: Any) -> bool:
    """True when ``d`` (a parsed ``leaderboard.json``) was written by :func:`build_report`: it carries the
    ``generator`` marker, or (an earlier report) every top-level key such reports had; with a list of rows."""
    if not isinstance(d, dict) or not isinstance(d.get("rows"), list):
        return False
    return d.get("generator") == GENERATOR or _EARLIER_REPORT_KEYS <= set(d)


class ReportOverwriteError(TokragError, FileExistsError):
    """The output folder holds a report with results the new report would not have; nothing is written."""


def cells_with_results(data: dict) -> list[str]:
    """The cell ids (``[model/]method/task/seedN``) whose results a report's data (or an earlier report's
    ``leaderboard.json``) hold, in row order; ``[model/]method/task`` for a row that does not list its seeds."""
    out = []
    for r in data.get("rows") or []:
        if not isinstance(r, dict) or not r.get("metrics"):
            continue
        pre = f"{r['model']}/" if r.get("model") else ""
        for seed in r.get("seeds") or [None]:
            out.append(f"{pre}{r.get('method')}/{r.get('task')}" + ("" if seed is None else f"/seed{seed}"))
    return out


def _read_existing(out: Path) -> dict | None:
    """The existing report's ``leaderboard.json`` in ``out`` (None when there is none).

    Raises:
        ValueError: it exists but is not a readable report (valid JSON past Python's digit or recursion limit:
            :func:`retrieval.io.json_limit_error`'s line, naming the file).
    """
    f = out / "leaderboard.json"
    if not f.is_file():
        return None
    try:
        d = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit (a traceback)
        from retrieval.io import json_limit_error

        raise ValueError(str(json_limit_error(exc, str(f), whole_file=True))) from None
    if not is_report_json(d):
        raise ValueError(f"not a tokrag leaderboard report: no \"generator\": \"{GENERATOR}\" and not the keys of an earlier report")
    return d


def check_not_a_report_folder(out: Path, names: set[str]) -> None:
    """Refuse to write into a folder that holds no report (no ``leaderboard.json`` of one) but holds a file the
    report would write (``names``, relative to ``out``): a user's ``index.html`` or ``questions/*.html`` is not
    overwritten without ``--replace``.

    Raises:
        ReportOverwriteError: naming how many such files, the first, and the ways out.
    """
    if not out.is_dir():
        return
    clash = sorted(rel for rel in names if (out / rel).exists() or (out / rel).is_symlink())
    if clash:
        raise ReportOverwriteError(
            f"the folder {out} holds no tokrag report but has {len(clash)} file(s) the report would overwrite "
            f"(first: {clash[0]}); nothing written: write the report elsewhere with --out DIR, or pass --replace to "
            "overwrite them")


def check_overwrite(out: Path, loaded: dict[str, Any], runs: Path, *, replace: bool = False) -> dict | None:
    """Refuse to write a report over one whose results it would lose; returns the existing report's data (None
    when there is none or it cannot be read and ``replace``).

    A cell is lost when the existing ``leaderboard.json`` has results for it and ``loaded`` has none (not finished
    in the run folders, or no longer a cell of the spec).

    Raises:
        ReportOverwriteError: (unless ``replace``) naming how many cells would be lost, the first, and the ways out.
    """
    way_out = ("nothing written: point --runs-dir at the run folders that made it, write the new report elsewhere "
               "with --out DIR, or pass --replace to overwrite it and lose them")
    try:
        old = _read_existing(out)
    except ValueError as exc:
        if replace:
            return None
        raise ReportOverwriteError(f"the report folder {out} holds a leaderboard.json that cannot be read as a report ({exc}); "
                                   + way_out.replace(" and lose them", "")) from None
    if old is None or replace:
        return old
    have = {cid for cid, (_c, _k, d) in loaded.items() if d is not None}
    lost = [cid for cid in cells_with_results(old)
            if cid not in have and not any(h.startswith(cid + "/seed") for h in have)]
    if lost:
        raise ReportOverwriteError(
            f"the report in {out} has results for {len(lost)} cell(s) that the new report would not have (not finished "
            f"in {runs}, or no longer in the spec); first: {lost[0]}; {way_out}")
    return old


REPORT_RECORDS = ".tokrag-report-specs"
"""The folder in the runs folder where :func:`build_report` records which spec file wrote each report folder it
wrote: one JSON file per report folder (:func:`report_record_path`), ``{"report": <the report folder's resolved
path>, "spec": <the spec file's resolved path>, "spec_sha256": <hex SHA-256 of its bytes, null when unreadable>,
"name": <its name:>, "leaderboard_sha256": <hex SHA-256 of the leaderboard.json written>}``. It lives outside the
report folder, so the report stays a function of the spec and the runs (the same spec at two paths, a resumed run
and an uninterrupted one give byte-identical report folders); :func:`check_report_spec` reads it."""


def report_record_path(runs: Path, out: Path) -> Path:
    """The :data:`REPORT_RECORDS` file of the report folder ``out`` in the runs folder ``runs``: named by the first
    16 hex digits of the SHA-256 of ``out``'s resolved path (the folder need not exist)."""
    key = hashlib.sha256(str(Path(out).expanduser().resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Path(runs) / REPORT_RECORDS / f"{key}.json"


def _spec_identity(spec: LeaderboardSpec) -> tuple[str, str | None]:
    """(resolved path, hex SHA-256 of the bytes or None when unreadable: a spec built in code) of ``spec``'s file."""
    from retrieval.io import sha256_file

    path = Path(spec.path).expanduser().resolve()
    try:
        return str(path), sha256_file(path)
    except OSError:
        return str(path), None


def _file_sha256(path: Path) -> str | None:
    """Hex SHA-256 of ``path``'s bytes; None when it cannot be read."""
    from retrieval.io import sha256_file

    try:
        return sha256_file(path)
    except OSError:
        return None


def check_report_spec(out: Path, runs: Path, spec: LeaderboardSpec, *, replace: bool = False,
                      chosen: str | None = None, warn: bool = True) -> None:
    """Refuse to write ``spec``'s report into the folder ``out`` when the report there was written by another spec
    file: two spec files that keep one ``name:`` (a copy made to try another ``alpha``) share
    ``<runs>/reports/<name>/``, and the second one's report went over the first one's without a word.

    Who wrote the report is read from ``runs``'s :data:`REPORT_RECORDS` (:func:`report_record_path`), never from the
    report folder. The same experiment, written over as before: the same spec file (the same resolved path, edited
    or not: a model added, another ``alpha``), a spec file with the same bytes at another path (a second checkout, a
    copy not yet edited: the same report), and any spec file when the recorded one no longer exists (renamed, moved,
    deleted: one log warning names it). Nothing to check, written as before: no record (a report written before
    s59, from another runs folder, or none), an unreadable record (one log warning), a folder whose
    ``leaderboard.json`` is not the one recorded (written since by other means, or removed). ``replace`` writes over
    another spec file's report (one log warning). ``chosen``: how ``out`` was chosen when not by the name
    (``"--out"``, ``"report_dir"``); the line then names that. ``warn``: log those warnings (False: only refuse; for
    :func:`build_report`'s check before the slow work, which it repeats under the folder's lock, so that each warning
    is logged once).

    Raises:
        ReportOverwriteError: one line naming the report folder, both spec files and the ways out; nothing written.
    """
    rec_path = report_record_path(runs, out)
    try:
        rec = json.loads(rec_path.read_text(encoding="utf-8"))
        if not isinstance(rec, dict):
            raise ValueError("not a JSON object")
        other, written, report = rec["spec"], rec["leaderboard_sha256"], rec["report"]
        if not all(isinstance(x, str) for x in (other, written, report)):
            raise ValueError("'spec', 'report' or 'leaderboard_sha256' is not a string")
        digest = rec.get("spec_sha256")
    except FileNotFoundError:
        return
    except (OSError, ValueError, RecursionError, KeyError) as exc:  # RecursionError: nested past Python's limit
        if warn:
            log.warning("report folder %s: unreadable record %s (%s); not checked, replaced by this report's", out,
                        rec_path, exc)
        return
    if report != str(Path(out).expanduser().resolve()) or _file_sha256(out / "leaderboard.json") != written:
        return  # another folder's record (a 16-digit clash), or the report it describes is no longer there
    mine, my_digest = _spec_identity(spec)
    if other == mine or (isinstance(digest, str) and digest == my_digest):
        return
    if not os.path.lexists(other):  # nothing left to protect the report for (a rename, a moved checkout)
        if warn:
            log.warning("report folder %s: written by the spec file %s, which no longer exists; replaced by the "
                        "report of %s", out, other, mine)
        return
    if replace:
        if warn:
            log.warning("report folder %s: written by another spec file, %s; replaced by the report of %s "
                        "(--replace)", out, other, mine)
        return
    if chosen is None:  # <runs>/reports/<name>
        why = f"holds the report of another spec file with the same name: {spec.name!r}, {other}"
        fix = "give this spec its own name: (or write its report elsewhere with --out DIR)"
    elif chosen == "--out":
        why = f"(this report's --out) holds the report of another spec file, {other}"
        fix = "write this report elsewhere with --out DIR"
    else:
        why = f"(this spec's report_dir:) holds the report of another spec file, {other}"
        fix = "give this spec its own report_dir: (or write its report elsewhere with --out DIR)"
    raise ReportOverwriteError(f"the report folder {out} {why}; this is {mine}; nothing written: {fix}, or pass "
                               "--replace to write over that report")


def record_report_spec(out: Path, runs: Path, spec: LeaderboardSpec) -> None:
    """Record in ``runs`` (:func:`report_record_path`) that ``spec``'s file wrote the report now in ``out``, for
    :func:`check_report_spec`. Not done when ``runs`` is not a folder (a report of no run folders: it is not
    created for this); a failed write (a read-only runs folder, a full disk) is one log warning: the report stands,
    only the check of the next report into ``out`` has no record. A path that is not valid UTF-8 (a folder named in
    Latin-1 bytes: Python holds it with surrogate escapes) is written as a JSON ``\\udcXX`` escape, which reads back
    as the same path."""
    if not Path(runs).is_dir():
        return
    spec_path, digest = _spec_identity(spec)
    rec = {"report": str(Path(out).expanduser().resolve()), "spec": spec_path, "spec_sha256": digest,
           "name": spec.name, "leaderboard_sha256": _file_sha256(out / "leaderboard.json")}
    path = report_record_path(runs, out)
    try:
        path.parent.mkdir(exist_ok=True)
        try:
            atomic_write_json(path, rec)
        except UnicodeEncodeError:  # a surrogate-escaped path byte has no UTF-8 form: nothing written yet
            atomic_write_text(path, json.dumps(rec, indent=2, sort_keys=True, ensure_ascii=True) + "\n")
    except OSError as exc:
        log.warning("report folder %s: could not record which spec file wrote it in %s (%s); a report of another "
                    "spec file will not be refused there", out, path, exc)


REPORT_LOCK = ".tokrag-report.lock"
"""The lock file :func:`build_report` holds in the report folder (:func:`report_lock`) while it checks and writes it."""


@contextlib.contextmanager
def report_lock(out: Path) -> Iterator[None]:
    """Hold the report folder ``out``'s lock (:data:`REPORT_LOCK` in it, :func:`retrieval.io.file_lock`; created with
    the folder when missing) while the block runs: two builds of one folder (two runners' ``run --report`` on one runs
    folder, two ``report --out D``) check and write it one after the other, so the second sees the first's finished
    report, never its half-written folder. Blocks while another process holds it, after one log line saying so."""
    lock = out / REPORT_LOCK.removesuffix(".lock")
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(file_lock(lock, timeout=0))
        except TimeoutError:
            log.info("waiting for another report build of %s to finish (it holds %s)", out, out / REPORT_LOCK)
            held.enter_context(file_lock(lock))
        yield


def _remove_stale(out: Path, old: dict | None, data: dict, written: set[str], also: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Remove the generated files of an earlier report in ``out`` that this report did not write (plots and
    per-question pages of cells, tasks or models it no longer has, pages left out with ``--no-questions``).
    Only names the generator itself produces for the earlier or the new report are touched, and only in a
    folder that holds a report (``old``); any other file stays. ``also``: more such names (those an interrupted
    build's swap, :func:`_leftover_staging`, was moving in or removing). Returns the removed paths (relative)."""
    from .page import question_files
    from .plots import plot_files

    if old is None:  # not a report folder (no readable leaderboard.json): nothing in it is ours to remove
        return []
    q = out / "questions"
    names = plot_files(data) | question_files(data) | plot_files(old) | question_files(old) | set(also)
    if q.is_symlink():  # a linked questions/ folder is someone else's: nothing through it is removed
        names = {rel for rel in names if Path(rel).parts[:1] != ("questions",)}
    ours = {out.resolve(), out.resolve() / "questions"}
    removed = []
    for rel in sorted(names - written):
        p = out / rel
        if p.is_file() and not p.is_symlink() and p.resolve().parent in ours:
            with leaderboard_write(p):
                p.unlink()
            removed.append(rel)
    if q.is_dir() and not q.is_symlink() and not any(q.iterdir()):
        with leaderboard_write(q):
            q.rmdir()
    return removed


STAGING = ".tokrag-report-staging"
"""The folder inside the report folder into which :func:`build_report` writes the whole new report before it moves
the files into place (:func:`_swap_in`): a build stopped while it computes and writes (the slow part: plots, pages)
leaves the earlier report as it was, byte for byte. Removed at the end of the build (and by the next build)."""
SWAP_MANIFEST = "SWAPPING.json"
"""The file in :data:`STAGING` written when every new file is in it, just before they are moved into the report
folder: its presence means that a build was stopped while it moved its files in (the folder may then mix two
builds, for the milliseconds the moves take); it lists the names the build was moving in or removing."""


def _leftover_staging(out: Path) -> set[str]:
    """Remove the :data:`STAGING` folder an interrupted build left in ``out``; return the names (relative to
    ``out``) its :data:`SWAP_MANIFEST` lists when it was stopped while moving its files in (a WARNING says so: the
    folder mixes two builds until this build replaces it), else none (it was stopped before: the folder holds the
    earlier report unchanged)."""
    stage = out / STAGING
    if not (stage.exists() or stage.is_symlink()):
        return set()
    names: set[str] = set()
    try:
        listed = json.loads((stage / SWAP_MANIFEST).read_text(encoding="utf-8"))
        names = {str(n) for n in listed.get("names", [])}
    except FileNotFoundError:
        pass
    except (OSError, ValueError, RecursionError, AttributeError) as exc:  # RecursionError: nested past Python's limit
        log.warning("report folder %s: unreadable %s (%s); its earlier build's files are replaced as usual", out,
                    stage / SWAP_MANIFEST, exc)
    if names:
        log.warning("report folder %s: an earlier report build was stopped while it moved its files in (%s was "
                    "left): the folder mixed two builds; this build replaces it", out, stage)
    with leaderboard_write(stage):
        if stage.is_symlink() or not stage.is_dir():
            stage.unlink()
        else:
            shutil.rmtree(stage)
    return names


def _move_in(src: Path, dst: Path) -> None:
    """Move the staged file ``src`` over ``dst`` in one rename (the file mode of a replaced ``dst`` is kept, as
    :func:`retrieval.io.atomic_write_bytes` keeps it); through a linked ``questions/`` folder on another file
    system, an atomic copy."""
    with leaderboard_write(dst.parent):  # EACCES, EIO: one line, as every write's (s57 g2)
        dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        st = os.stat(dst)
        if stat.S_ISREG(st.st_mode):
            with leaderboard_write(src):
                os.chmod(src, stat.S_IMODE(st.st_mode))
    except FileNotFoundError:
        pass
    try:
        with leaderboard_write(dst):
            os.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        atomic_write_bytes(dst, src.read_bytes())


def _swap_in(out: Path, stage: Path, old: dict | None, data: dict, written: set[str], also: set[str]) -> None:
    """Move the new report's files (``written``, relative paths, every one in ``stage``) into ``out`` and remove the
    earlier report's generated files it does not write (:func:`_remove_stale`), then ``stage``. Only renames: a
    kill can cut it only in these milliseconds, and :data:`SWAP_MANIFEST` (written first) lets the next build say so
    and clean up what this one would have. ``leaderboard.json`` goes first: it marks the folder as a report, so a
    swap stopped in a folder that held none is finished by the same command, not refused as foreign files.

    A write that fails here (``EACCES`` on a ``questions/`` folder of another user, ``EIO``) is raised with its text
    saying what the report folder holds then (:func:`_swap_state`): the earlier report unchanged (nothing moved in
    yet: the staging folder is removed; but when an earlier build's swap had been stopped, ``also`` not empty, the
    folder still mixes those two builds and the staging folder stays, its manifest listing ``also``), a folder mixing the two reports (how many of the new files are in, the first
    one not), or the new report with stale files or the staging folder left; the same command then finishes it.

    Raises:
        OSError: a move, removal or the staging folder's removal failed (marked as a write's,
            :func:`leaderboards.runner.leaderboard_write`), its ``strerror`` ending with :func:`_swap_state`'s note.
    """
    from .page import question_files
    from .plots import plot_files

    names = set(written) | set(also) | plot_files(data) | question_files(data)
    if old is not None:
        names |= plot_files(old) | question_files(old)
    order = ["leaderboard.json", *sorted(set(written) - {"leaderboard.json"})]
    moved, removed = 0, False
    try:
        _check_subfolders(out, order)  # before the first move: a file named questions would stop the swap half way
        atomic_write_json(stage / SWAP_MANIFEST, {"names": sorted(names)})
        for rel in order:
            _move_in(stage / rel, out / rel)
            moved += 1
        _remove_stale(out, old, data, set(written), also)
        removed = True
        with leaderboard_write(stage):
            shutil.rmtree(stage)
    except OSError as exc:
        if not moved and not also:  # the folder holds the earlier report, untouched: no SWAPPING.json may say
            shutil.rmtree(stage, ignore_errors=True)  # otherwise next time
        # (with ``also`` the folder still mixes two builds, an earlier build's stopped swap: the manifest, which lists
        # ``also``, stays for the next build to warn and remove those names, as before s57 g2)
        if isinstance(exc.strerror, str):
            exc.strerror += f" ({_swap_state(out, order, moved, removed, mixed=bool(also))})"
        raise


def _check_subfolders(out: Path, order: list[str]) -> None:
    """Refuse, before :func:`_swap_in` moves anything, a report whose sub-folder (``questions/``) is a file (or a
    dangling link) in ``out``: its ``mkdir`` failed only at the first page's move, the other files already in, with
    ``[Errno 17] File exists`` and 'run the same command again', which failed the same way.

    Raises:
        NotADirectoryError: naming the sub-folder, marked as a write's (:func:`retrieval.errors.mark_write`: 'a file
            is where a folder of the path should be; move the file away or choose another --out ...')."""
    for parent in sorted({(out / rel).parent for rel in order} - {out}):
        if (parent.is_symlink() or parent.exists()) and not parent.is_dir():
            raise mark_write(NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(parent)), parent)


def _swap_state(out: Path, order: list[str], moved: int, removed: bool, mixed: bool = False) -> str:
    """What the report folder ``out`` holds after :func:`_swap_in` failed having moved in ``moved`` of the files
    ``order`` (``leaderboard.json`` first), ``removed`` the earlier report's stale files or not, ``mixed``: an earlier
    build had been stopped while it moved its files in (:func:`_leftover_staging`), so the folder mixed two builds
    before this one began: the note its error carries, so the command's one line says what is incomplete."""
    if not moved and mixed:
        return (f"nothing of the new report was moved in: {out} still mixes two earlier builds (one was stopped while "
                "it moved its files in) until the same command finishes it")
    if not moved:
        return f"nothing of the new report was moved in: {out} holds the earlier report, unchanged"
    if moved < len(order):
        return (f"the report folder {out} is incomplete: {moved} of the new report's {len(order)} files are in "
                f"(leaderboard.json first), {len(order) - moved} still the earlier report's or missing (first: "
                f"{order[moved]}) until the same command finishes it")
    if not removed:
        return (f"the new report is in {out}, but files of the earlier report it no longer has are not all removed "
                "until the same command removes them")
    return f"the new report is complete in {out}; its staging folder {STAGING} is left there until the next build"


def build_report(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, out_dir: str | os.PathLike | None = None,
                 *, timings: bool = True, allow_missing: bool = False, questions: bool = True,
                 loaded: dict[str, Any] | None = None, compare_results: bool = True, replace: bool = False) -> Path:
    """Write ``leaderboard.md``, ``leaderboard.csv``, ``leaderboard.json``, ``index.html``, the PNG plots
    and (``questions``) the per-question pages ``questions/*.html`` into ``out_dir`` (default: the spec's
    ``report_dir``, else ``<runs_dir>/reports/<name>``). ``loaded`` replaces reading the run folders
    (used by ``rescore``, whose samples are re-scored; ``compare_results`` is then off because
    results.json holds the old values).

    Over an existing report: refused when it has results for a cell this one would not have (unless
    ``replace``, :func:`check_overwrite`); the earlier report's generated files that this one does not
    write (stale plots and per-question pages) are removed, any other file in the folder is kept. Every file is
    written into :data:`STAGING` first and then moved in by renames (:func:`_swap_in`): a build stopped or failed
    before its end leaves the earlier report byte for byte (a kill in the milliseconds of the renames is said and
    cleaned up by the next build, :func:`_leftover_staging`). A folder
    without a report (no ``leaderboard.json`` marked as one, :func:`is_report_json`) that holds a file the report
    would write is refused (unless ``replace``), and nothing in it is ever removed. The folder is checked before the
    slow work and again, then written, under its lock (:func:`report_lock`): a second build of the same folder at the
    same time waits, then sees the first one's report as the existing one.

    Which spec file wrote the folder is recorded in the runs folder (:func:`record_report_spec`), not in the report:
    a report of another spec file over it is refused (:func:`check_report_spec`); the same spec file, edited, writes
    over its own report.

    Raises:
        IncompleteRunError: some cells are unfinished (unless ``allow_missing``: then they show as missing).
        InvariantError: the run folders break an invariant (:mod:`leaderboards.invariants`); every FAIL line is listed.
        ConfigError: a cell's task was run with more than one lm-eval filter (:func:`_check_samples_one_filter`).
        ReportOverwriteError: the existing report in the folder would lose results, or the folder is not a report
            but holds a file the report would write, or holds the report of another spec file (two spec files with one
            ``name:``; :func:`check_report_spec`) (each unless ``replace``).
    """
    from .page import render_html, write_question_pages
    from .plots import make_plots

    runs = resolve_runs_dir(spec, runs_dir)
    out = Path(out_dir) if out_dir else (spec.report_dir or runs / "reports" / spec.name)
    check_writable(out, "report --out" if out_dir else "the report folder", folder=True)  # before any work
    if loaded is None:
        loaded = collect(spec, runs, allow_missing=allow_missing)
    check_overwrite(out, loaded, runs, replace=replace)  # before the slow work; again under the folder's lock below
    chosen = "--out" if out_dir else ("report_dir" if spec.report_dir else None)
    check_report_spec(out, runs, spec, replace=replace, chosen=chosen, warn=False)  # another spec file's report there
    _check_filters(loaded)  # before verify, whose repeated doc ids would not name the filters
    bad = verify(loaded, compare_results=compare_results)
    if bad:
        raise InvariantError(f"{len(bad)} invariant violation(s) in the run folders of {spec.name}; no report written:\n"
                             + "\n".join(v.render() for v in bad))
    data = _compute(spec, loaded, timings=timings)  # its filters checked above
    from .page import question_files
    from .plots import plot_files

    names = set(REPORT_FILES) | plot_files(data) | (question_files(data) if questions else set())

    def check() -> dict | None:
        old = check_overwrite(out, loaded, runs, replace=replace)
        if old is None and not replace:  # not a report folder: none of its files is overwritten
            check_not_a_report_folder(out, names)
        return old

    check()  # a refused folder is left as it is: the lock below would create its lock file in it
    with report_lock(out):  # another build of this folder (a second runner's run --report) may have written it meanwhile
        old = check()
        check_report_spec(out, runs, spec, replace=replace, chosen=chosen)  # another spec file's, written meanwhile
        also = _leftover_staging(out)  # an earlier build stopped (killed) before its end
        # every file is written into the staging folder first, then moved in (_swap_in): a build stopped while it
        # writes (Ctrl-C, a kill, an error in a plot) leaves the earlier report as it was, never a folder that mixes
        # the new leaderboard.json with the earlier leaderboard.md and index.html
        stage = out / STAGING
        with leaderboard_write(stage):  # EACCES, EIO: one line; nothing was written, the earlier report is as it was
            stage.mkdir()
        try:
            plots = make_plots(data, stage)
            pages = write_question_pages(spec, loaded, data, stage) if questions else []
            atomic_write_text(stage / "leaderboard.md", render_markdown(data))
            atomic_write_text(stage / "leaderboard.csv", render_csv(data))
            atomic_write_bytes(stage / "index.html", render_html(data, plots, pages).encode("utf-8"))
            atomic_write_json(stage / "leaderboard.json", json_report(data))  # no p written as 0
        except BaseException:  # nothing moved in yet: the folder holds the earlier report, untouched
            shutil.rmtree(stage, ignore_errors=True)
            raise
        _swap_in(out, stage, old, data, set(REPORT_FILES) | {name for name, _ in plots} | {rel for _m, _t, rel in pages},
                 also)
        record_report_spec(out, runs, spec)  # outside the report folder: its bytes stay the spec's and the runs'
    return out


__all__ = ["build_report", "cells_lines", "check_overwrite", "check_report_spec", "record_report_spec", "report_record_path", "REPORT_RECORDS", "is_report_json", "GENERATOR", "cells_with_results", "ReportOverwriteError", "collect", "compute", "verify", "render_markdown", "render_csv", "bootstrap_ci", "paired_test",
           "UNITS", "LABELS", "PAIRED", "RATIO_PAIRED", "md_text"]
