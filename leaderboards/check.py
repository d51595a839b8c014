"""Regression check of a leaderboard's run folders against a committed baseline (data, not code).

Baseline JSON (written by ``tokrag leaderboard check SPEC --baseline FILE --write``; a tolerance's ``unit`` is
optional, the metric's own unit being printed without one)::

    {"spec": "ci",
     "tolerances": {"em": {"abs": 0.04, "unit": "fraction of questions", "flips": 1}, ...},
     "cells": {"rag-standard/nq_oracle_bm25/seed1234": {"em": 0.34, "f1": 0.41, ...}, ...},
     "n": {"rag-standard/nq_oracle_bm25/seed1234": 20, ...},
     "questions": {"rag-standard/nq_oracle_bm25/seed1234": {"em": [3, 11], "f1": {"0": 0.0, "1": 0.4, ...}, ...}, ...}}

``n`` (optional; ``--write`` records it): the questions each cell scored. A cell whose runs scored another number
(the spec run with another ``limit``, another question set) is one ``FAIL`` line saying so and its metrics are not
compared: read against the baseline's, they failed as score regressions without a word about the questions.
Every (cell, metric) in the baseline is compared with the cell's mean from its run folder:
``OK`` when ``|value - baseline| <= abs``, else ``FAIL`` (a move in either direction: an improvement
must be accepted by rewriting the baseline). ``--write`` stores each value rounded to
:data:`BASELINE_DIGITS` decimals, and the check rounds both the value and the baseline the same way before
subtracting, so a baseline written from runs passes against those runs at any tolerance, 0 included (a mean
over 3 questions, 0.6666..., is written as 0.666667 and compared as 0.666667). A baseline metric that a finished cell
lacks is a FAIL line for that metric; a baseline cell without values (its run folder absent, unfinished or damaged, or
the cell no longer in the spec) is one FAIL line for the cell (:class:`MissingCell`: why, and the command that runs it),
counted as one check whatever the number of its metrics. A metric that the baseline checks (it has a tolerance) and
that a finished cell's runs have, but that the baseline's entry of the cell lacks, is one ``NEW`` line
(:class:`MetricNotInBaseline`: not compared, as a cell the baseline lacks is not). A tolerance's ``abs`` is a finite
number >= 0. A check that would compare nothing (no value of the checked cells in the baseline, no broken invariant)
is refused (:func:`refuse_no_checks`, exit 2 from the command): a CI gate with a hand-made empty baseline passed.
Metric values are the per-sample means that the report uses (same numbers, no CI needed). Every
invariant of :mod:`leaderboards.invariants` (EM=1 implies F1=1 and match=1 per sample, the samples'
means equal results.json's, the same questions in every cell of a task) is checked too: each
violation is one more ``FAIL`` line naming the cell and the sample.

``questions`` (optional; ``--write`` records it): each cell's per-question values of each metric its samples log as
numbers, so that answers that changed in both directions are seen although the mean stays (4 questions right ->
wrong and 4 wrong -> right passed every mean check). A metric whose values in the cell are all 0 or 1 is stored as
the list of the doc ids that scored 1 (every other question of the cell scored 0); any other as ``{doc id: value}``
(rounded to :data:`BASELINE_DIGITS` decimals). For every (cell, metric) that has them, ``check`` counts the questions
whose value differs from the baseline's (at :data:`BASELINE_DIGITS` decimals; a question scored on one side only
counts too): none prints no line of its own; up to ``tolerances.<metric>.flips`` (an integer >= 0, default
:data:`DEFAULT_FLIPS`) is an ``OK`` line, more a ``FAIL`` line, naming how many went down and up and their first doc
ids (:class:`QuestionFlips`; one check each). A baseline without ``questions`` (written before they were recorded),
or without them for some of the cells compared, is checked by the means alone and says so in one ``NOTE`` line
(:class:`QuestionsNotChecked`, not a check). A tolerance whose ``abs`` is 0 (an exact mean: the retrieval metrics'
default) allows no changed question whatever its ``flips`` (:func:`allowed_flips`; ``--write`` writes no ``flips``
there, so that one edited up to a nonzero ``abs`` gets the default): one changed question moves such a mean, and the
per-question line said ``OK`` under the mean's ``FAIL``.

``machines`` and ``configs`` (optional; ``--write`` records them from the runs' folders): each cell's compute setting
(:data:`MACHINE_FIELDS`, from ``provenance.json``: CPU model, torch's CPU kernels, thread count, GPU, torch version)
and its run's ``config.json`` (the run key's material and ``config_hash``). ``check`` says in one ``NOTE`` line
(:class:`MachineNote`, not a check, the verdict unchanged) when the runs were computed on another setting than the
baseline's, or the baseline records none (``baseline machine not recorded``): float32 sums, and so a near-tie greedy
answer, differ between CPU kinds and thread counts; and after a cell's ``FAIL`` line, when its runs have another run
key than the baseline's, the settings that differ (:class:`KeyChanged`: a spec change such as a method's ``alpha``);
for the compared cells that passed under another run key, one ``NOTE run key:`` line naming the first one's
differences (:class:`PassedUnderOtherKey`: within tolerance, but not the baseline's inputs). A metric of the compared
cells' runs that the baseline has no tolerance for (deleted from the file with its values) is named in one ``NOTE``
line (:class:`MetricsWithoutTolerance`): it is not checked. None of these notes is a check or changes the exit code.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError
from retrieval.io import atomic_write_json

from .invariants import InvariantError, Violation
from .report import UNITS, collect, verify
from .runner import DONE, NOTHING_TO_RERUN, resolve_runs_dir, run_command
from .spec import LeaderboardSpec, is_number

BASELINE_DIGITS = 6
"""Decimals a baseline stores each value to (``--write``) and to which the check rounds both the runs' value and the
baseline's before comparing them: a difference under 1e-6 (one question in a million) is not seen."""


def rounded_delta(value: float, baseline: float) -> float:
    """``|value - baseline|`` after rounding both to :data:`BASELINE_DIGITS` decimals, in the metric's unit: the
    difference a check's verdict is taken on and prints. The difference is rounded to those decimals too: two numbers
    of 6 decimals differ by one of 6 decimals, but their float subtraction carries the error of their size (98765.532109
    - 98765.432109 is 0.10000000000582077), so a value moved by exactly the tolerance FAILed at a large perplexity."""
    return round(abs(round(value, BASELINE_DIGITS) - round(baseline, BASELINE_DIGITS)), BASELINE_DIGITS)

DEFAULT_TOLERANCES = {
    "em": {"abs": 0.04, "unit": "fraction of questions"},
    "f1": {"abs": 0.04, "unit": "mean token F1 (0-1)"},
    "answer_match": {"abs": 0.04, "unit": "fraction of questions"},
    "answer_recall": {"abs": 0.0, "unit": "fraction of questions"},
    "gold_at_k": {"abs": 0.0, "unit": "fraction of questions"},
    "word_perplexity": {"abs": 0.5, "unit": "perplexity per word"},
    "bits_per_byte": {"abs": 0.01, "unit": "bits per UTF-8 byte"},
    "cf_match": {"abs": 0.04, "unit": "fraction of questions answered with the planted (counterfactual) answer"},
    "empty_pred": {"abs": 0.04, "unit": "fraction of questions with an empty extracted answer"},
    "overlong_pred": {"abs": 0.04, "unit": "fraction of questions with an overlong answer"},
    "rougeL": {"abs": 0.04, "unit": "mean ROUGE-L F (0-1)"},
    "rougeL_kilt_downstream": {"abs": 0.04, "unit": "mean ROUGE-L F (0-1), KILT's normalisation"},
    "token_perplexity": {"abs": 0.5, "unit": "perplexity per token"},
    "byte_perplexity": {"abs": 0.02, "unit": "perplexity per UTF-8 byte"},
}
"""Default tolerances: 0.04 = 2 of 50 questions for the answer metrics (greedy decoding on another CPU
or BLAS build may flip a near-tie); 0 for retrieval (BM25 is exact). Absolute, whatever a cell's number of questions
(with n = 5 one question is 0.2, so one flipped answer fails): ``--write`` prints them (:func:`tolerance_line`); a
baseline file's own ``tolerances`` override them and ``--write`` keeps them. Every metric that a task of ``tasks/``
logs has one (``cf_match``, ``empty_pred``, ``overlong_pred``, ``rougeL``... included: ``--write`` records only the
metrics with a tolerance, so one without a default was never checked); ``byte_perplexity`` 0.02 is about
``bits_per_byte``'s 0.01 at a byte perplexity of 2-3. ``--write`` names a metric of the runs that has no tolerance
(another lm-eval task's ``acc``) and leaves it out (``"_not_recorded"`` of :func:`write_baseline`'s result)."""

DEFAULT_FLIPS = 1
"""Questions per (cell, metric) whose value may differ from the baseline's (either way, together) before ``check``
fails, when the baseline's tolerance of the metric has no ``flips``: greedy decoding is deterministic on one CPU, but
another CPU's float sums (AVX2 against AVX-512, the README's 37.2771 against 37.2775) may flip one near-tie answer.
``--write`` writes it into each tolerance that has per-question values and lacks it (not where its ``abs`` is 0: none
is allowed there, :func:`allowed_flips`); it does not scale with n."""

FRACTION_METRICS = ("em", "f1", "answer_match", "cf_match", "empty_pred", "overlong_pred", "rougeL",
                    "rougeL_kilt_downstream")
"""Answer metrics whose per-question value lies in [0, 1]: one question of a cell of n moves the cell's value by up to
1/n. ``--write`` raises a default ``abs`` of these to ``flips / n`` of the smallest cell (:func:`write_baseline`), so
that the mean check allows the flip the per-question check allows. Not the retrieval metrics (``answer_recall``,
``gold_at_k``): their default is exact (0; BM25 is exact, and a flip of a generated answer does not move them), so any
change of the passages fails the mean check."""

FIRST_DOC_IDS = 5
"""Doc ids a :class:`QuestionFlips` line names per direction (then ``...``)."""


@dataclass(frozen=True)
class CheckLine:
    """One comparison: cell id, metric, observed and baseline value, tolerance, unit, verdict."""

    cell: str
    metric: str
    value: float | None
    baseline: float
    tol: float
    unit: str
    ok: bool
    reason: str = ""

    @property
    def delta(self) -> float | None:
        """:func:`rounded_delta` of the value and the baseline; None when the runs lack the value."""
        return None if self.value is None else rounded_delta(self.value, self.baseline)

    def render(self) -> str:
        """``OK   cell  metric  value (baseline b, |Δ| d <= tol unit)``: 4 decimals, or :data:`BASELINE_DIGITS`
        for a FAIL whose difference would not show at 4 (``|Δ| 0.0000 > 0.0000`` said nothing)."""
        unit = f" {self.unit}" if self.unit else ""  # a tolerance without a unit, for a metric without one: no stray space
        if self.value is None:
            why = f": {self.reason}" if self.reason else ""
            return f"FAIL {self.cell}  {self.metric}: missing from the runs (baseline {self.baseline:.4f}{unit}){why}"
        d = self.delta
        rel = "<=" if self.ok else ">"
        n = 4 if self.ok or round(d, 4) > round(self.tol, 4) else BASELINE_DIGITS
        return (f"{'OK  ' if self.ok else 'FAIL'} {self.cell}  {self.metric} = {self.value:.{n}f} "
                f"(baseline {self.baseline:.{n}f}, |Δ| {d:.{n}f} {rel} {self.tol:.{n}f}{unit})")


@dataclass(frozen=True)
class NotInBaseline:
    """A cell of the spec that the baseline does not list: reported, not compared (it does not fail the check,
    so that a baseline may cover part of a spec, but a method added to a CI spec is never silently unchecked)."""

    cell: str
    reason: str = ""  # why the cell has no results yet (it is not finished); empty for a finished cell
    command: str = ""  # the command that runs it (with the --runs-dir of the check)
    ok = True

    def render(self) -> str:
        """``NEW  <cell>  not in the baseline: not checked (...)``; for a cell without results, that it has none and
        the command that runs it."""
        if self.reason:
            return (f"NEW  {self.cell}  not in the baseline and not finished, so it has no values to check or accept "
                    f"({self.reason}); run it with {self.command}, then accept its values with --write")
        return f"NEW  {self.cell}  not in the baseline: not checked (accept its values with --write)"


@dataclass(frozen=True)
class MetricNotInBaseline:
    """A metric that the baseline checks (it has a tolerance for it) and that a finished cell's runs have, but that
    the baseline's entry of the cell lacks: reported, not compared (like :class:`NotInBaseline`); it was skipped
    without a word."""

    cell: str
    metric: str
    value: float
    ok = True

    def render(self) -> str:
        """``NEW  <cell>  <metric> = v: not in the baseline's entry of the cell: not checked (...)``"""
        return (f"NEW  {self.cell}  {self.metric} = {self.value:.4f}: not in the baseline's entry of the cell: not "
                "checked (accept its value with --write)")


@dataclass(frozen=True)
class QuestionCount:
    """A cell whose runs scored another number of questions than the baseline's (another ``limit``, or another
    question set): its metric values are not compared, they would fail or pass for that reason alone."""

    cell: str
    n: int
    baseline: int
    ok = False

    def render(self) -> str:
        """``FAIL <cell>  n = 4 questions (baseline 20): ...``"""
        return (f"FAIL {self.cell}  n = {self.n} questions (baseline {self.baseline}): the runs scored other questions "
                "than the baseline (another limit or question set), so its values are not compared; run the spec as the "
                "baseline was written (its limit), or write a baseline for these runs with --write")


def _int_id(doc: str) -> int | None:
    """The doc id kept as text as a number, where the text is exactly that number's (``7``, ``-1``; not ``007``,
    ``--1``, ``²``, which stay text: stored as a number they would read back as another id or not at all)."""
    try:
        i = int(doc)
    except ValueError:
        return None
    return i if str(i) == doc else None


def _doc_order(doc: str) -> tuple[int, int | str]:
    """Sort key of a doc id kept as text: numbers in numeric order, before any other text."""
    i = _int_id(doc)
    return (0, i) if i is not None else (1, doc)


@dataclass(frozen=True)
class QuestionFlips:
    """A (cell, metric) some of whose questions score otherwise than in the baseline's per-question values:
    ``OK`` while they are at most ``tol`` (``tolerances.<metric>.flips``), else ``FAIL``. ``down``/``up``: the doc
    ids that scored lower / higher; ``unmatched``: those scored on one side only; ``binary``: every value 0 or 1;
    ``unsure``: those that score otherwise than 0 here and are not in the baseline's list of doc ids that scored 1,
    which has no ``n`` for the cell (a hand-edited file): 0 there or not scored there, it cannot tell."""

    cell: str
    metric: str
    n: int
    down: tuple[str, ...]
    up: tuple[str, ...]
    unmatched: tuple[str, ...]
    tol: int
    binary: bool
    unsure: tuple[str, ...] = ()
    exact: bool = False  # the metric's abs is 0: no question may differ (tol 0), whatever its flips say


    @property
    def changed(self) -> int:
        """How many questions differ from the baseline."""
        return len(self.down) + len(self.up) + len(self.unmatched) + len(self.unsure)

    @property
    def ok(self) -> bool:
        """At most ``tol`` questions differ."""
        return self.changed <= self.tol

    def render(self) -> str:
        """``FAIL <cell>  <metric>: 8 of 20 questions differ from the baseline (> 1 allowed): 4 from 1 to 0 (doc_id 0, 1,
        2, 3), 4 from 0 to 1 (doc_id 4, 5, 6, 7)`` (``lower``/``higher`` for a graded metric); ``unsure`` ones are
        ``2 from 0 or not scored to 1 (doc_id 4, 5)``, and the line ends in why it cannot tell."""
        def ids(docs: tuple[str, ...]) -> str:
            return ", ".join(docs[:FIRST_DOC_IDS]) + (", ..." if len(docs) > FIRST_DOC_IDS else "")

        words = ("from 1 to 0", "from 0 to 1") if self.binary else ("lower", "higher")
        parts = [f"{len(docs)} {word} (doc_id {ids(docs)})" for docs, word in
                 ((self.down, words[0]), (self.up, words[1]),
                  (self.unsure, "from 0 or not scored to " + ("1" if self.binary else "another value")),
                  (self.unmatched, "scored on one side only")) if docs]
        verb = "differs" if self.changed == 1 else "differ"
        why = ("; the baseline has no n for this cell, so its list of the doc ids that scored 1 cannot tell 0 from not "
               "scored" if self.unsure else "")
        exact = ", as its tolerance is exact: abs 0" if self.exact else ""
        return (f"{'OK  ' if self.ok else 'FAIL'} {self.cell}  {self.metric}: {self.changed} of {self.n} questions {verb} "
                f"from the baseline ({'<=' if self.ok else '>'} {self.tol} allowed{exact}): {', '.join(parts)}{why}")


MACHINE_FIELDS = ("device", "cpu_model", "cpu_capability", "torch_num_threads", "cuda_device", "torch")
"""The fields of a cell's compute setting (:func:`leaderboards.provenance_view.compute_setting`, from its
``provenance.json`` ``machine`` and ``versions``) that ``--write`` records under the baseline's ``machines``."""

KEY_SHOWN = 4
"""Differences of a cell's run key a :class:`KeyChanged` line names (then ``... (N more)``)."""


def _machine_value(field: str, v: Any) -> str | int | float | None:
    """A field of a compute setting as it is compared and shown: the thread count as a number (``"1"`` or ``1.0``
    written by hand into a baseline is 1, as the runner records it), the other fields as text (a torch version written
    as the number 2.1 is ``"2.1"``); None (not recorded) for anything but text or a number, and for blank text (the
    label says "not recorded" for it too)."""
    if not isinstance(v, (str, int, float)) or isinstance(v, bool) or (isinstance(v, str) and not v.strip()):
        return None
    if field != "torch_num_threads":
        return v if isinstance(v, str) else str(v)
    try:
        n = float(v)
    except (ValueError, OverflowError):  # text that is no number: kept as written (it differs from any count)
        return v
    return int(n) if n.is_integer() else n


def _setting(m: Any) -> dict[str, Any] | None:
    """A recorded compute setting (a baseline's ``machines.<cell>``, or :func:`compute_setting`'s) with only
    :data:`MACHINE_FIELDS` of text or number (anything else: not recorded), each by value (:func:`_machine_value`);
    None for no mapping."""
    if not isinstance(m, dict):
        return None
    out = {k: _machine_value(k, m.get(k)) for k in MACHINE_FIELDS}
    out["device"] = out["device"] or ("cuda" if out["cuda_device"] else "cpu")
    return out


def cell_machines(loaded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{cell_id: compute setting}`` of the finished cells whose run folder records its machine
    (:func:`leaderboards.provenance_view.compute_setting`: device, CPU model, torch's CPU kernels, thread count, GPU,
    torch version): what ``--write`` records as the baseline's ``machines``."""
    from .provenance_view import compute_setting

    out = {}
    for cid, (_cell, _key, data) in loaded.items():
        s = _setting(compute_setting(data)) if data is not None else None
        if s is not None:
            out[cid] = s
    return out


def cell_configs(loaded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{cell_id: the run's config.json}`` (its run key's material and ``config_hash``, without ``cell_id`` and
    ``spec``, which the baseline's entry names) of the finished cells: what ``--write`` records as the baseline's
    ``configs``, so that ``check`` can name the settings a cell's later run key changed (:class:`KeyChanged`)."""
    out = {}
    for cid, (_cell, _key, data) in loaded.items():
        cfg = data.get("config") if data is not None else None
        if isinstance(cfg, dict) and isinstance(cfg.get("config_hash"), str):
            out[cid] = {k: v for k, v in sorted(cfg.items()) if k not in ("cell_id", "spec")}
    return out


@dataclass(frozen=True)
class KeyChanged:
    """A cell with a FAIL line whose runs were made under another run key than the run the baseline was written from
    (the baseline's ``configs.<cell>.config_hash``): ``NOTE`` naming the settings that differ (a spec change such as
    a method's ``alpha``), which ``check`` named before the run (the cell then missing) and no longer after it. Not
    a check."""

    cell: str
    key: str
    baseline_key: str
    differences: tuple[str, ...]
    ok = True

    def render(self) -> str:
        """``NOTE <cell>  its runs have another run key (K) than the run the baseline was written from (B): ...``"""
        return (f"NOTE {self.cell}  its runs have another run key ({self.key}) than the run the baseline was written "
                f"from ({self.baseline_key}): {self.what()}; this change may be the cause of the FAIL above")

    def what(self) -> str:
        """``its config differs in D (cause); ...`` (at most :data:`KEY_SHOWN`, then ``... (N more)``), or that the
        configs differ in nothing recorded."""
        from .runner import key_field_cause

        def why(d: str) -> str:  # a library's line: which one, and how (added to the key, another version, ...)
            cause = key_field_cause(d, old="the run of the baseline", new="these runs", diffs=self.differences)
            return f"{d} ({cause})"

        shown = [why(d) for d in self.differences[:KEY_SHOWN]]
        more = f"; ... ({len(self.differences) - KEY_SHOWN} more)" if len(self.differences) > KEY_SHOWN else ""
        return (f"its config differs in {'; '.join(shown)}{more}" if shown else
                "their configs differ in nothing recorded (the run key's definition changed)")


@dataclass(frozen=True)
class PassedUnderOtherKey:
    """Compared cells without a FAIL line whose runs were made under another run key than the run the baseline was
    written from (the baseline's ``configs.<cell>.config_hash``): another questions file of the same size, another
    model under the same cell id, another library or tokrag version. Their values are within tolerance, so
    :class:`KeyChanged` (printed after a FAIL) said nothing and the check passed without a word about the inputs.
    One ``NOTE`` line for all of them, naming the first cell's differences (``first``); not a check."""

    cells: tuple[str, ...]
    compared: int
    first: KeyChanged
    ok = True
    cell = ""

    def render(self) -> str:
        """``NOTE run key: N of the M cells compared passed under another run key than ...: ...; ... check --write``"""
        n = len(self.cells)
        which = "the one cell compared" if self.compared == 1 else f"{n} of the {self.compared} cells compared"
        first = "" if self.compared == 1 else f"first: {self.first.cell}, "
        return (f"NOTE run key: {which} passed under another run key than the run the baseline was written from "
                f"({first}{self.first.key} against {self.first.baseline_key}: {self.first.what()}): "
                f"{'its values are' if n == 1 else 'their values are'} within tolerance but are not the baseline's "
                "run, so this check compared other inputs (or another tokrag or library version); if that change is "
                "intended, record these runs with check --write (the verdict is not changed by this)")


@dataclass(frozen=True)
class MetricsWithoutTolerance:
    """Metrics of the compared cells' runs that the baseline has no tolerance for (and so no values: a value without
    one is refused): never compared. A tolerance deleted from the file, with its values, left that metric unchecked
    without a word (``--write`` says so in its ``note:`` line; ``check`` did not). ``metrics``: ``{metric: the number
    of compared cells whose runs have it}``. One ``NOTE`` line; not a check."""

    baseline: str
    metrics: dict[str, int]
    compared: int
    ok = True
    cell = ""

    def render(self) -> str:
        """``NOTE metrics of the runs with no tolerance in baseline F, not checked: m (in N of the M cells ...); ...``"""
        names = sorted(self.metrics)
        shown = ", ".join(f"{m} (in {'the one cell' if self.compared == 1 else f'{self.metrics[m]} of the {self.compared} cells'}"
                          " compared)" for m in names)
        default = [m for m in names if m in DEFAULT_TOLERANCES]
        other = [m for m in names if m not in DEFAULT_TOLERANCES]
        fix = []
        if default:
            fix.append(f"check --write records {', '.join(default)} again with {'its' if len(default) == 1 else 'their'} "
                       "default tolerance")
        if other:
            fix.append(f"to check {', '.join(other)}, add a tolerance to {self.baseline} (e.g. \"tolerances\": "
                       f"{{\"{other[0]}\": {{\"abs\": 0.04}}, ...}}, the largest change of its mean to accept, in its "
                       "unit) and run check --write")
        return (f"NOTE metric{'s' if len(names) != 1 else ''} of the runs with no tolerance in baseline {self.baseline}, "
                f"so not checked: {shown}; " + "; ".join(fix))


def _groups(settings: list[dict[str, Any]]) -> str:
    """``label`` of one compute setting, or ``label A (3 cells), label B (1 cell)`` of several (most cells first)."""
    from .provenance_view import setting_label

    counts: dict[str, int] = {}
    for s in settings:
        counts[setting_label(s)] = counts.get(setting_label(s), 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{lab} ({n} cell{'' if n == 1 else 's'})" for lab, n in sorted(counts.items(), key=lambda x: -x[1]))


MACHINE_WHY = ("float32 results, and so a near-tie greedy answer, can differ between CPU kinds (AVX2, AVX-512), thread "
               "counts and torch builds")


@dataclass(frozen=True)
class MachineNote:
    """The runs' compute settings against the ones the baseline was written under (its ``machines``, recorded by
    ``--write``): ``NOTE`` when they differ for some compared cell (``differ``: those cells), or when the baseline
    records none for cells whose runs record theirs (``unrecorded``: written before ``--write`` recorded them).
    ``failed``: a value of one of those cells (``differ`` or ``unrecorded``) moved beyond its tolerance in this
    check, which the machine may explain. Not a check: the verdict stays."""

    runs: str  # :func:`_groups` of the runs' settings of the cells named
    baseline: str  # :func:`_groups` of the baseline's settings of the differing cells ("" when none differ)
    differ: tuple[str, ...]
    unrecorded: tuple[str, ...]
    compared: int
    failed: bool
    ok = True
    cell = ""

    def render(self) -> str:
        """``NOTE machine: ...`` or ``NOTE baseline machine not recorded ...``."""
        may = ("a FAIL above may come from the machine rather than from a change of code or data; " if self.failed
               else "")
        if self.differ:
            n = len(self.differ)
            also = (f" ({len(self.unrecorded)} other cell{'s' if len(self.unrecorded) != 1 else ''} with no machine in "
                    "the baseline)" if self.unrecorded else "")
            which = "the one cell compared" if self.compared == 1 else f"{n} of the {self.compared} cells compared"
            first = "" if self.compared == 1 else "first: "
            return (f"NOTE machine: {which} ran on another machine than the baseline was written from ({first}"
                    f"{self.differ[0]}): these runs on {self.runs}, the baseline on "
                    f"{self.baseline}{also}; {MACHINE_WHY}, so {may}check on the baseline's CPU kind and thread count, "
                    "or write the baseline on this machine with check --write (the verdict is not changed by this)")
        which = ("" if len(self.unrecorded) == self.compared else
                 f" for {len(self.unrecorded)} of the {self.compared} cells compared (first: {self.unrecorded[0]})")
        return (f"NOTE baseline machine not recorded{which} (written before check --write recorded it): these runs "
                f"were computed on {self.runs}; {MACHINE_WHY}, so {may}write the baseline on the CPU kind and thread "
                "count that check runs on with check --write (it records them; the verdict is not changed by this)")


def machine_note(b: dict[str, Any], loaded: dict[str, Any], cells: list[str], moved: set[str]) -> MachineNote | None:
    """:class:`MachineNote` for the compared ``cells`` (finished, in the baseline): None when the runs record no
    machine, or every one equals the baseline's in what both recorded
    (:func:`leaderboards.provenance_view.settings_differ`). ``moved``: the cells with a value beyond its tolerance;
    only theirs can come from the machine (a cell run on its baseline's machine is not named as that cause)."""
    from .provenance_view import settings_differ

    runs = cell_machines({c: loaded[c] for c in cells if c in loaded})
    recorded = b.get("machines", {})
    differ = [c for c in runs if c in recorded and settings_differ([runs[c], _setting(recorded[c])])]
    unrecorded = [c for c in runs if c not in recorded]
    if not differ and not unrecorded:
        return None
    named = differ or unrecorded
    return MachineNote(_groups([runs[c] for c in named]),
                       _groups([_setting(recorded[c]) for c in differ]) if differ else "",  # type: ignore[misc]
                       tuple(differ), tuple(unrecorded), len(runs), bool(moved & (set(differ) | set(unrecorded))))


@dataclass(frozen=True)
class QuestionsNotChecked:
    """A baseline without per-question values (``questions``) for some or all of the cells compared: those cells'
    means are compared, not which questions changed. One ``NOTE`` line; not a check."""

    baseline: str
    cells: tuple[str, ...]
    compared: int
    ok = True
    cell = ""

    def render(self) -> str:
        """``NOTE baseline F has no per-question values ...: ... add them with check --write ...``"""
        which = ("" if len(self.cells) == self.compared else
                 f" for {len(self.cells)} of the {self.compared} cells compared (first: {self.cells[0]})")
        return (f"NOTE baseline {self.baseline} has no per-question values{which}: only the means were compared, not "
                "which questions changed (answers that changed both ways leave the mean as it was); add them with "
                "check --write from runs you accept (it rewrites the means from them too)")


@dataclass(frozen=True)
class MissingCell:
    """A baseline cell without values in the runs: one ``FAIL`` line (one check) for the cell, whatever the number of
    its baseline metrics, saying why and what to do.

    ``state``: ``"damaged"`` (the folder under the cell's key has a ``DONE`` marker but fails its verification: a
    file changed or truncated after the run), ``"unfinished"`` (the folder has no ``DONE``: killed or running),
    ``"absent"`` (no folder under the cell's key) or ``"not in spec"`` (the baseline lists a cell the spec lacks)."""

    cell: str
    metrics: tuple[str, ...]
    state: str
    reason: str
    command: str = ""  # the run command for the cell (with the check's --runs-dir)
    folder: str = ""
    check: str = ""  # after a reason ending in NOTHING_TO_RERUN: this check, from the directory the task data need
    ok = False
    value = None

    def render(self) -> str:
        """``FAIL <cell>  damaged run folder F: <why>; its metrics (...) are not compared; re-run the cell with CMD``
        (``not finished: ...; finish it with``, ``missing from the runs: ...; run the cell with``; no command after a
        reason that ends in :data:`leaderboards.runner.NOTHING_TO_RERUN`: the run is there under another name)."""
        shown = ", ".join(self.metrics[:3]) + (", ..." if len(self.metrics) > 3 else "")
        not_compared = f"its metrics ({shown}) are not compared"
        reason = self.reason
        for tail in ("; re-run the cell", "; re-run it"):
            if reason.endswith(tail):
                reason = reason[: -len(tail)]
        if self.state == "not in spec":
            return (f"FAIL {self.cell}  in the baseline but not a cell of the spec: {not_compared}; drop it from the "
                    "baseline with --write (it drops cells the spec no longer has)")
        if self.state == "damaged":
            return (f"FAIL {self.cell}  damaged run folder {self.folder}: {reason}; {not_compared}; re-run the cell with "
                    f"{self.command}")
        if self.state == "unfinished":
            return (f"FAIL {self.cell}  not finished: {reason}; {not_compared}; finish it with {self.command}")
        if reason.endswith(NOTHING_TO_RERUN):  # its finished run sits under another name: the fix is the move it names
            return (f"FAIL {self.cell}  missing from the runs: {reason}; {not_compared} until then"
                    + (f"; check from there: {self.check}" if self.check else ""))
        return f"FAIL {self.cell}  missing from the runs: {reason}; {not_compared}; run the cell with {self.command}"


def _cell_command(spec: LeaderboardSpec, runs: Path, cell: Any, cwd: Path | None = None) -> str:
    """The command that runs just ``cell``'s method and task (its seeds, and its model in a spec with several) into
    ``runs`` (:func:`leaderboards.runner.run_command`: with the check's ``--runs-dir``; from ``cwd``, where the
    spec's task data are found, when given)."""
    if spec.selection:
        return run_command(spec, runs, cwd=cwd)
    extra = ["--models", cell.model_name] if cell.model_name else []
    return run_command(spec, runs, *extra, "--methods", cell.method.name, "--tasks", cell.task.task, cwd=cwd)


def cell_counts(loaded: dict[str, Any]) -> dict[str, int]:
    """``{cell_id: number of scored questions}`` (logged samples of the cell's task) of the finished cells."""
    return {cid: len(data["samples"].get(cell.task.task, [])) for cid, (cell, _key, data) in loaded.items()
            if data is not None}


def _sample_numbers(cell: Any, data: dict[str, Any]) -> Iterator[tuple[str, str, float]]:
    """``(metric, doc id as text, value)`` of every per-sample metric of a finished cell logged as a number (in a
    sample's ``metrics``; a bool or a corpus metric's list is not one): what :func:`cell_values` averages and
    :func:`cell_questions` keeps per question."""
    for s in data["samples"].get(cell.task.task, []):
        for m in s.get("metrics") or []:
            v = s.get(m)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                yield m, str(s.get("doc_id")), float(v)


def cell_values(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None,
                loaded: dict[str, Any] | None = None) -> dict[str, dict[str, float]]:
    """``{cell_id: {metric: mean}}`` from the run folders (or the already ``loaded`` cells), one entry per
    (model, method, task, seed)."""
    import numpy as np

    out: dict[str, dict[str, float]] = {}
    loaded = collect(spec, runs_dir, allow_missing=True) if loaded is None else loaded
    for cid, (cell, _key, data) in loaded.items():
        if data is None:
            continue
        vals: dict[str, float] = {}
        for m, _doc, v in _sample_numbers(cell, data):
            vals.setdefault(m, []).append(v)  # type: ignore[union-attr]
        res = (data["results"].get("results") or {}).get(cell.task.task, {})
        for k, v in res.items():
            name = k.split(",")[0]
            if "," in k and "_stderr" not in k and name not in vals and isinstance(v, (int, float)) and not isinstance(v, bool):
                vals[name] = [float(v)]  # type: ignore[assignment]
        out[cid] = {k: float(np.mean(v)) for k, v in sorted(vals.items())}  # type: ignore[arg-type]
    return out


def cell_questions(loaded: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """``{cell_id: {metric: {doc id (text): value}}}`` of the finished cells: the per-sample values that
    :func:`cell_values` averages (a metric in a sample's ``metrics`` logged as a number, not a bool)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for cid, (cell, _key, data) in loaded.items():
        if data is None:
            continue
        vals: dict[str, dict[str, float]] = {}
        for m, doc, v in _sample_numbers(cell, data):
            vals.setdefault(m, {})[doc] = v
        out[cid] = vals
    return out


def stored_questions(values: dict[str, float]) -> list[Any] | dict[str, float]:
    """The baseline's form of one (cell, metric)'s per-question ``values``: the doc ids that scored 1 (numbers as
    numbers, in order) when every value is 0 or 1, else ``{doc id: value}`` rounded to :data:`BASELINE_DIGITS`."""
    if all(v in (0.0, 1.0) for v in values.values()):
        return [d if _int_id(d) is None else _int_id(d) for d in sorted((d for d, v in values.items() if v == 1.0),
                                                                         key=_doc_order)]
    return {d: round(v, BASELINE_DIGITS) for d, v in sorted(values.items(), key=lambda x: _doc_order(x[0]))}


def allowed_flips(tol: dict[str, Any]) -> int:
    """The questions a (cell, metric) may have changed (:class:`QuestionFlips`) under the baseline's tolerance ``tol``
    of the metric: its ``flips`` (default :data:`DEFAULT_FLIPS`), but 0 where its ``abs`` is 0: an exact mean (the
    retrieval metrics' default) fails on any one changed question, so a per-question line allowing one said ``OK``
    right under the mean line's ``FAIL`` for that same question (s53 u2 F6)."""
    return 0 if float(tol["abs"]) == 0 else int(tol.get("flips", DEFAULT_FLIPS))


def question_flips(cell: str, metric: str, runs: dict[str, float], stored: list[Any] | dict[str, Any],
                   tol: int, scored_known: bool = True, exact: bool = False) -> QuestionFlips:
    """Compare a (cell, metric)'s per-question values in the runs with the baseline's (:func:`stored_questions`'s
    form), each rounded to :data:`BASELINE_DIGITS` decimals. A list (the doc ids that scored 1) says the runs' other
    questions scored 0 when ``scored_known`` (the baseline's ``n`` for the cell equals the runs' count, as --write
    records it); without, one that scores otherwise here is ``unsure`` (0 there, or not scored there)."""
    ones: set[str] = set()
    if isinstance(stored, list):
        ones = {str(d) for d in stored}
        base = {d: 1.0 for d in ones} | {d: 0.0 for d in runs if d not in ones}
    else:
        base = {str(d): float(v) for d, v in stored.items()}
    down, up, unmatched, unsure = [], [], [], []
    for d in sorted(set(base) | set(runs), key=_doc_order):
        if d not in base or d not in runs:
            unmatched.append(d)
            continue
        r, was = round(runs[d], BASELINE_DIGITS), round(base[d], BASELINE_DIGITS)
        if r < was or r > was:  # a list without n: 0 there or not scored there, it cannot tell
            side = unsure if isinstance(stored, list) and not scored_known and d not in ones else down if r < was else up
            side.append(d)
    binary = isinstance(stored, list) and all(v in (0.0, 1.0) for v in runs.values())
    return QuestionFlips(cell, metric, len(set(base) | set(runs)), tuple(down), tuple(up), tuple(unmatched), tol, binary,
                         tuple(unsure), exact)


BASELINE_FIX = "edit the file, or move it aside and write a new baseline with check --write"
"""What a malformed baseline's message (:func:`load_baseline`) tells the user to do."""


def json_kind(value: Any) -> str:
    """``value`` (as JSON/YAML reads it) in a user's words, for a message: ``a mapping``, ``a list``, ``the text "x"``,
    ``the number 5``, ``NaN (not a number)``, ``true``/``false``, ``null`` (long texts cut to 40 characters)."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return f"the text {json.dumps(value if len(value) <= 40 else value[:40] + '...')}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "NaN (not a number)" if value != value else f"the number {value}"
    return type(value).__name__


BASELINE_KEYS = ("cells", "configs", "machines", "n", "questions", "spec", "tolerances")
"""The keys of a baseline file (``--write`` writes them all, ``configs`` and ``machines`` where the runs record them;
``configs``, ``machines``, ``n``, ``questions`` and ``spec`` are optional)."""

TOLERANCE_KEYS = ("abs", "flips", "unit", "raised_from")
"""The keys of a baseline's ``tolerances.<metric>`` (``raised_from``: the default ``abs`` that ``--write`` raised to
``flips / n``, :func:`write_baseline`)."""


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeated_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook``: the object, refusing a key given twice (:class:`_RepeatedKey`)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def _unknown_keys(path: Path, where: str, given: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse a key of ``given`` (the baseline's top level, ``where`` empty, or ``tolerances.<metric>``) not in
    ``allowed``, with the closest allowed key: an unknown key was ignored, so a misspelt one silently had no effect."""
    from retrieval.errors import closest

    unknown = [k for k in given if k not in allowed]
    if unknown:
        close = closest(unknown[0], allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"baseline {path}: unknown key {(where + '.' if where else '') + unknown[0]!r}{hint}; the keys "
                          f"{'of ' + where if where else 'at the top'} are {', '.join(allowed)}; {BASELINE_FIX}")


def load_baseline(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a baseline file (JSON: ``{"spec": name, "cells": {cell id: {metric: number}}, "tolerances":
    {metric: {"abs": finite number >= 0, "unit": text}}, "n": {cell id: questions}}``; ``spec`` and ``n`` optional).

    A UTF-8 byte order mark before the JSON is skipped (it was refused as invalid JSON, and ``--write`` then would not
    replace the file).

    Raises:
        ConfigError: one line naming the file, the field and what is wrong in JSON's words (a mapping, a list, a
            number, text: :func:`json_kind`), and what to do (:data:`BASELINE_FIX`); a missing file; a folder; valid
            JSON that Python's reader cannot take (:func:`retrieval.io.json_limit_error`: an integer past its digit
            limit, which read as 'invalid JSON (Exceeds the limit ...)', or nesting past its recursion limit, a
            traceback before).
    """
    path = Path(path)
    try:
        # utf-8-sig: a byte order mark (an editor's "UTF-8 with BOM", PowerShell's Set-Content) is no content
        b = json.loads(path.read_text(encoding="utf-8-sig"), object_pairs_hook=_no_repeated_key)
    except _RepeatedKey as exc:  # json keeps the last one silently: a cell pasted twice lost its first entry
        raise ConfigError(f"baseline {path}: key {exc.key!r} is given twice in one object (JSON keeps the last one "
                          f"silently); {BASELINE_FIX}") from None
    except FileNotFoundError:
        raise ConfigError(f"baseline {path} does not exist; create it with --write after a good run") from None
    except IsADirectoryError:  # gave a traceback
        raise ConfigError(f"baseline {path} is a folder; give the baseline's JSON file "
                          "(e.g. leaderboards/baselines/ci.json)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"baseline {path}: invalid JSON ({exc}); {BASELINE_FIX}") from None
    except (ValueError, RecursionError) as exc:  # valid JSON past Python's digit or recursion limit (a traceback)
        from retrieval.io import json_limit_error

        raise ConfigError(f"{json_limit_error(exc, f'baseline {path}', whole_file=True)}, or move it aside and write a "
                          "new baseline with check --write") from None
    if not isinstance(b, dict):
        raise ConfigError(f"baseline {path}: expected a mapping (JSON object) with keys 'cells' and 'tolerances', got "
                          f"{json_kind(b)}; {BASELINE_FIX}")
    missing = [k for k in ("cells", "tolerances") if k not in b]
    if missing:
        raise ConfigError(f"baseline {path}: expected keys 'cells' and 'tolerances' (missing {', '.join(map(repr, missing))}); "
                          f"{BASELINE_FIX}")
    _unknown_keys(path, "", b, BASELINE_KEYS)
    for key, shape in (("cells", "{cell id: {metric: number}}"), ("tolerances", "{metric: {abs: number >= 0, unit: text (optional)}}")):
        if not isinstance(b[key], dict):
            raise ConfigError(f"baseline {path}: '{key}' must be a mapping {shape}, got {json_kind(b[key])}; {BASELINE_FIX}")
    for m, t in b["tolerances"].items():  # 'flip': 3 left the check at the default 1 flip, without a word
        if isinstance(t, dict):
            _unknown_keys(path, f"tolerances.{m}", t, TOLERANCE_KEYS)
    for m, t in b["tolerances"].items():  # unit optional: the check prints the metric's unit (report.UNITS) without one
        if isinstance(t, dict) and is_number(t.get("abs"), 0) and not math.isfinite(t["abs"]):  # Infinity passed every value
            raise ConfigError(f"baseline {path}: tolerances.{m}.abs must be a finite number >= 0, got {json_kind(t['abs'])} "
                              f"(it would pass every value); {BASELINE_FIX}")
        if not isinstance(t, dict) or not is_number(t.get("abs"), 0) or not isinstance(t.get("unit", ""), str):
            raise ConfigError(f"baseline {path}: tolerances.{m} must be {{abs: number >= 0}} with an optional unit: text "
                              f"(e.g. {{\"abs\": 0.04, \"unit\": \"fraction of questions\"}}), got {json.dumps(t)}")
    for m, t in b["tolerances"].items():
        if "raised_from" in t and not (is_number(t["raised_from"], 0) and math.isfinite(t["raised_from"])):
            raise ConfigError(f"baseline {path}: tolerances.{m}.raised_from must be a finite number >= 0 (the default abs "
                              f"check --write raised), got {json_kind(t['raised_from'])}; {BASELINE_FIX}")
    for m, t in b["tolerances"].items():
        f = t.get("flips", 0)
        if not (isinstance(f, int) and not isinstance(f, bool) and f >= 0):
            raise ConfigError(f"baseline {path}: tolerances.{m}.flips must be a whole number of questions >= 0 (how many "
                              f"may score otherwise than in the baseline), got {json_kind(f)}; {BASELINE_FIX}")
    for cid, vals in b["cells"].items():
        if not isinstance(vals, dict):
            raise ConfigError(f"baseline {path}: cells.{cid} must be a mapping {{metric: number}}, got {json_kind(vals)}; "
                              f"{BASELINE_FIX}")
        for m, v in vals.items():
            if not is_number(v):
                raise ConfigError(f"baseline {path}: cells.{cid}.{m} must be a number, got {json_kind(v)}; {BASELINE_FIX}")
            if not math.isfinite(v):  # Infinity failed every check as 'baseline inf'
                raise ConfigError(f"baseline {path}: cells.{cid}.{m} must be a finite number, got {json_kind(v)}; "
                                  f"{BASELINE_FIX}")
    n = b.get("n", {})
    if not isinstance(n, dict):
        raise ConfigError(f"baseline {path}: 'n' must be a mapping {{cell id: number of questions >= 1}}, got "
                          f"{json_kind(n)}; {BASELINE_FIX}")
    for cid, v in n.items():
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            raise ConfigError(f"baseline {path}: n.{cid} must be a number of questions >= 1, got {json_kind(v)}; "
                              f"{BASELINE_FIX}")
    questions = b.get("questions", {})
    if not isinstance(questions, dict):
        raise ConfigError(f"baseline {path}: 'questions' must be a mapping {{cell id: {{metric: doc ids that scored 1, or "
                          f"{{doc id: number}}}}}}, got {json_kind(questions)}; {BASELINE_FIX}")
    for cid, per in questions.items():
        if not isinstance(per, dict):
            raise ConfigError(f"baseline {path}: questions.{cid} must be a mapping {{metric: doc ids that scored 1, or "
                              f"{{doc id: number}}}}, got {json_kind(per)}; {BASELINE_FIX}")
        for m, q in per.items():
            if isinstance(q, list):
                bad = next((d for d in q if isinstance(d, bool) or not isinstance(d, (int, str))), None)
                if bad is not None or len({str(d) for d in q}) != len(q):
                    what = f"got {json_kind(bad)} in it" if bad is not None else "got a doc id twice"
                    raise ConfigError(f"baseline {path}: questions.{cid}.{m} must list distinct doc ids (numbers or text), "
                                      f"{what}; {BASELINE_FIX}")
            elif isinstance(q, dict):
                bad_doc = next((d for d, v in q.items() if not is_number(v) or not math.isfinite(v)), None)
                if bad_doc is not None:
                    raise ConfigError(f"baseline {path}: questions.{cid}.{m}.{bad_doc} must be a number, got "
                                      f"{json_kind(q[bad_doc])}; {BASELINE_FIX}")
            else:
                raise ConfigError(f"baseline {path}: questions.{cid}.{m} must be the list of doc ids that scored 1 or a "
                                  f"mapping {{doc id: number}}, got {json_kind(q)}; {BASELINE_FIX}")
    for key, what in (("machines", "its compute setting {device, cpu_model, cpu_capability, torch_num_threads, "
                                   "cuda_device, torch}"),
                      ("configs", "the config.json of the run it was written from, with its config_hash")):
        per = b.get(key, {})
        if not isinstance(per, dict):
            raise ConfigError(f"baseline {path}: '{key}' must be a mapping {{cell id: {what}}}, got {json_kind(per)}; "
                              f"{BASELINE_FIX}")
        for cid, v in per.items():
            if not isinstance(v, dict):
                raise ConfigError(f"baseline {path}: {key}.{cid} must be {what} (a mapping), got {json_kind(v)}; "
                                  f"{BASELINE_FIX}")
            if key == "configs" and not isinstance(v.get("config_hash"), str):
                raise ConfigError(f"baseline {path}: configs.{cid}.config_hash must be the run's key (text), got "
                                  f"{json_kind(v.get('config_hash'))}; {BASELINE_FIX}")
    if "spec" in b and not isinstance(b["spec"], str):
        raise ConfigError(f"baseline {path}: 'spec' must be the spec's name (text), got {json_kind(b['spec'])}; "
                          f"{BASELINE_FIX}")
    return b


def _check_spec_name(spec: LeaderboardSpec, path: str | os.PathLike, b: dict[str, Any]) -> None:
    """A baseline records the name of the spec it was written for; another spec's baseline is refused (its cells
    would all read as missing or NEW, without saying why)."""
    if b.get("spec") is not None and b["spec"] != spec.name:
        raise ConfigError(f"baseline {path} was written for spec {b['spec']!r}, not {spec.name!r} ({spec.path}); "
                          "give this spec's baseline (or write a new file with --write)")


def check_against_baseline(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None, baseline: str | os.PathLike,
                           run_from: list[Path] | None = None) -> list[CheckLine | Violation | NotInBaseline | MetricNotInBaseline]:
    """Compare every baseline (cell, metric) with the runs, after one FAIL line per invariant violation;
    see the module docstring. For a selection (``check --methods/--tasks/--models``,
    :meth:`leaderboards.spec.LeaderboardSpec.select`) only the selected cells are read and compared: a baseline cell
    of the whole spec outside the selection gives no line (one the whole spec lacks is still ``not in spec``).
    ``run_from``, when given, gets the directory the suggested commands must run from (task data named by relative
    paths), if any (for :func:`next_steps`)."""
    b = load_baseline(baseline)
    _check_spec_name(spec, baseline, b)
    reasons: dict[str, str] = {}
    run_from = [] if run_from is None else run_from  # where the suggested commands must run (relative task data)
    loaded = collect(spec, runs_dir, allow_missing=True, reasons=reasons, run_from=run_from)
    cwd = run_from[0] if run_from else None
    unselected = ({c.cell_id for c in spec.whole.cells()} - set(loaded)) if spec.whole is not None else set()
    values = cell_values(spec, runs_dir, loaded)
    per_question = cell_questions(loaded)
    stored = b.get("questions", {})
    counts = cell_counts(loaded)
    runs = resolve_runs_dir(spec, runs_dir)
    lines: list[Any] = list(verify(loaded))
    unchecked: list[str] = []  # cells compared by their means without per-question values in the baseline
    compared = 0
    configs = b.get("configs", {})
    compared_cells: list[str] = []  # finished cells compared with the baseline (for the machine note)

    passed_other_key: list[KeyChanged] = []  # compared cells without a FAIL under another run key (one NOTE)

    def key_note(cid: str, start: int) -> None:
        """A :class:`KeyChanged` after the cell's lines (from ``start``) when one FAILs and its key is another; when
        none FAILs, the cell is kept for the one :class:`PassedUnderOtherKey` note."""
        _cell, key, data = loaded[cid]
        was = configs.get(cid, {}).get("config_hash")
        if isinstance(was, str) and was != key and isinstance(data.get("config"), dict):
            from .runner import config_differences, recorded_model_settings

            # each side's recorded model settings (the baseline's run folder where it is still there): the value a
            # default the method sets at its run took (max_length from the model)
            resolved = (recorded_model_settings(runs / was) if Path(was).name == was and was not in (".", "..") else None,
                        recorded_model_settings(runs / key))
            note = KeyChanged(cid, key, was, tuple(config_differences(configs[cid], data["config"], resolved)))
            if any(not x.ok for x in lines[start:]):
                lines.append(note)
            else:
                passed_other_key.append(note)

    for cid in sorted(set(b["cells"]) - unselected):
        start = len(lines)
        want = b.get("n", {}).get(cid)
        if want is not None and cid in counts and counts[cid] != want:
            lines.append(QuestionCount(cid, counts[cid], want))
            key_note(cid, start)
            continue
        for metric in b["cells"][cid]:
            if metric not in b["tolerances"]:
                raise ConfigError(f"baseline {baseline}: no tolerance for metric {metric!r}; add tolerances.{metric}")
        if cid not in loaded or loaded[cid][2] is None:  # no values at all: one line for the cell
            metrics = tuple(sorted(b["cells"][cid]))
            if cid not in loaded:
                lines.append(MissingCell(cid, metrics, "not in spec", "not a cell of the spec"))
                continue
            cell, key, _ = loaded[cid]
            folder = runs / key
            done = folder / DONE  # a DONE that is there but no marker file (a folder) is damage, not an unfinished run
            state = ("absent" if not folder.is_dir() else "damaged" if done.exists() or done.is_symlink() else "unfinished")
            why = reasons.get(cid, "not finished")
            again = (run_command(spec, runs, "--baseline", os.path.abspath(baseline), verb="check", cwd=cwd)
                     if cwd is not None and why.endswith(NOTHING_TO_RERUN) else "")  # run from elsewhere: finished
            lines.append(MissingCell(cid, metrics, state, why, _cell_command(spec, runs, cell, cwd), str(folder), again))
            continue
        for metric, base in sorted(b["cells"][cid].items()):
            tol = b["tolerances"].get(metric)
            if tol is None:
                raise ConfigError(f"baseline {baseline}: no tolerance for metric {metric!r}; add tolerances.{metric}")
            v = values.get(cid, {}).get(metric)
            # rounded as write_baseline rounds (a baseline written from these runs equals them); the slack absorbs
            # the float error of the subtraction (0.78 - 0.75 > 0.03)
            ok = v is not None and rounded_delta(v, float(base)) <= float(tol["abs"]) + 1e-12
            why = "the cell's samples and results.json do not have this metric"
            lines.append(CheckLine(cid, metric, v, float(base), float(tol["abs"]), str(tol.get("unit", UNITS.get(metric, ""))), ok,
                                   why if v is None else ""))
            if metric in stored.get(cid, {}) and metric in per_question.get(cid, {}):  # the runs' values, per question
                flips = question_flips(cid, metric, per_question[cid][metric], stored[cid][metric], allowed_flips(tol),
                                       scored_known=want is not None,
                                       exact=float(tol["abs"]) == 0)
                if flips.changed:
                    lines.append(flips)
        compared += 1
        compared_cells.append(cid)
        key_note(cid, start)
        if cid not in stored and set(per_question.get(cid, {})) & set(b["cells"][cid]):  # --write would record them
            unchecked.append(cid)  # (a rolling cell's corpus metrics are [loglik, length] lists: nothing to record)
        have = values.get(cid, {})
        lines += [MetricNotInBaseline(cid, m, have[m]) for m in sorted(set(have) & set(b["tolerances"]) - set(b["cells"][cid]))]
    lines += [NotInBaseline(cid) if loaded[cid][2] is not None else
              NotInBaseline(cid, reasons.get(cid, "not finished"), run_command(spec, runs, cwd=cwd))
              for cid in loaded if cid not in b["cells"]]
    if unchecked:
        lines.append(QuestionsNotChecked(str(baseline), tuple(unchecked), compared))
    no_tolerance: dict[str, int] = {}  # metrics of the compared cells' runs that no tolerance of the baseline names
    for cid in compared_cells:
        for m in sorted(set(values.get(cid, {})) - set(b["tolerances"])):
            no_tolerance[m] = no_tolerance.get(m, 0) + 1
    if no_tolerance:
        lines.append(MetricsWithoutTolerance(str(baseline), no_tolerance, compared))
    if passed_other_key:
        lines.append(PassedUnderOtherKey(tuple(k.cell for k in passed_other_key), compared, passed_other_key[0]))
    moved = {x.cell for x in lines if (isinstance(x, CheckLine) and not x.ok and x.value is not None)
             or (isinstance(x, QuestionFlips) and not x.ok)}
    note = machine_note(b, loaded, compared_cells, moved)
    if note is not None:
        lines.append(note)
    return lines


def _flips_abs(flips: int, n: int) -> float:
    """``flips / n`` rounded up to :data:`BASELINE_DIGITS` decimals: the mean tolerance that lets ``flips`` questions
    of a cell of ``n`` move a [0, 1] metric."""
    return math.ceil(flips / n * 10 ** BASELINE_DIGITS) / 10 ** BASELINE_DIGITS


def write_baseline(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None, path: str | os.PathLike,
                   metrics: list[str] | None = None, *, allow_partial: bool = False) -> dict[str, Any]:
    """Write the current runs' values as a baseline (keeping an existing file's tolerances), each rounded to
    :data:`BASELINE_DIGITS` decimals (as the check rounds them). A default tolerance of a :data:`FRACTION_METRICS`
    metric gets ``abs`` at least ``flips / n`` of the smallest cell (rounded up; under the result's ``"_raised"``:
    ``{metric: the default abs}``), so that the mean check does not FAIL on the flips the per-question check allows
    (at n < 25 one question moves the mean by more than the default 0.04); a larger default stays, and a tolerance
    of the existing file is never changed, except one this raise wrote (it records ``raised_from``, the default, and
    its ``abs`` is still ``flips / n`` of the file's smallest cell): that one is derived again from the default and
    the new n, so a spec that grows gets its tolerance back down (s52 r7). A raised ``abs`` edited by hand is the
    file's own.

    Every cell of the spec must be finished: a baseline written while one is not would silently lose that cell
    (later checks said NEW instead of FAIL). With ``allow_partial`` the finished cells are written and an
    unfinished cell keeps the existing baseline's entry (if it has one); nothing the baseline has for a cell of
    the spec is dropped. Entries of cells the spec no longer has are dropped (they could only fail); their ids are
    returned under the key ``"_dropped"`` of the result (not written). A metric of the runs that no tolerance names
    (the file's or :data:`DEFAULT_TOLERANCES`) is left out; its name is under ``"_not_recorded"`` and the ``note:``
    line that says so (:func:`not_recorded_line`; None when there is none) under ``"_not_recorded_note"``.

    Raises:
        ConfigError: a spec cell is unfinished (without ``allow_partial``); the existing file is another spec's
            baseline, or is not a valid baseline (it is never overwritten); no cell would be written; a value to write
            is NaN or infinite (a corpus metric of results.json: the invariants check a sample's values).
        InvariantError: the runs break an invariant (a baseline of broken runs is never written).
    """
    path = Path(path)
    tolerances = dict(DEFAULT_TOLERANCES)
    from_file: set[str] = set()
    old_cells: dict[str, Any] = {}
    old_n: dict[str, int] = {}
    old_questions: dict[str, Any] = {}
    old_machines: dict[str, Any] = {}
    old_configs: dict[str, Any] = {}
    if path.exists():
        try:
            old = load_baseline(path)
        except ConfigError as exc:  # never replace a file that is not a baseline (or one with a bad value)
            raise ConfigError(f"{exc}; not overwritten: move it aside or pass another --baseline") from None
        _check_spec_name(spec, path, old)
        tolerances.update(old["tolerances"])
        from_file = set(old["tolerances"])
        old_cells, old_n, old_questions = old["cells"], old.get("n", {}), old.get("questions", {})
        old_machines, old_configs = old.get("machines", {}), old.get("configs", {})
        old_smallest = min(old_n.values(), default=0)
        for m, t in old["tolerances"].items():  # a raise of ours, not edited since: derived again from its default
            rf = t.get("raised_from")
            if (is_number(rf, 0) and old_smallest and t.get("flips")
                    and float(t["abs"]) == _flips_abs(int(t["flips"]), old_smallest)):
                tolerances[m] = {k: v for k, v in t.items() if k not in ("abs", "raised_from")} | {"abs": float(rf)}
                from_file.discard(m)
    reasons: dict[str, str] = {}
    run_from: list[Path] = []
    loaded = collect(spec, runs_dir, allow_missing=True, reasons=reasons, run_from=run_from)
    cwd = run_from[0] if run_from else None
    unfinished = [cid for cid, (_c, _k, data) in loaded.items() if data is None]
    runs = resolve_runs_dir(spec, runs_dir)
    if unfinished and not allow_partial:
        first = unfinished[0]
        raise ConfigError(f"baseline {path} not written: {len(unfinished)} of {len(loaded)} cells of spec {spec.name!r} "
                          f"are unfinished (first: {first}: {reasons.get(first, 'not finished')}); finish them with "
                          f"{run_command(spec, runs, cwd=cwd)}, or pass --allow-partial to write the finished cells and "
                          "keep the baseline's entries of the unfinished ones")
    bad = verify(loaded)
    if bad:
        raise InvariantError(f"{len(bad)} invariant violation(s); baseline {path} not written:\n" + "\n".join(v.render() for v in bad))
    values = cell_values(spec, runs_dir, loaded)
    keep = set(metrics) if metrics else set(tolerances)
    cells = {cid: {m: round(v, BASELINE_DIGITS) for m, v in vals.items() if m in keep} for cid, vals in sorted(values.items())}
    for cid, vals in cells.items():  # the invariants see a sample's NaN, not a corpus metric's results.json value
        bad = next((m for m, v in sorted(vals.items()) if not math.isfinite(v)), None)
        if bad is not None:  # written as NaN/Infinity, the file was then refused by every check and --write
            raise ConfigError(f"baseline {path} not written: cell {cid} has {bad} = {vals[bad]} in its runs "
                              f"({runs / loaded[cid][1]}), not a finite number, which a baseline cannot hold; fix the "
                              f"task's {bad} (or its aggregation) and re-run the cell")
    per_question = cell_questions(loaded)
    questions = {cid: {m: stored_questions(v) for m, v in sorted(per_question.get(cid, {}).items()) if m in cells[cid]}
                 for cid in cells}
    machines, configs = cell_machines(loaded), cell_configs(loaded)
    for cid in unfinished:  # allow_partial: the existing entry stays as it was
        if cid in old_cells:
            cells[cid] = old_cells[cid]
            questions[cid] = old_questions.get(cid, {})
            for new, was in ((machines, old_machines), (configs, old_configs)):
                if cid in was:
                    new[cid] = was[cid]
    cells = dict(sorted(cells.items()))
    questions = {cid: q for cid, q in sorted(questions.items()) if q}
    counts = cell_counts(loaded)
    n = {cid: counts[cid] if cid in counts else old_n[cid] for cid in cells if cid in counts or cid in old_n}
    if not cells:
        raise ConfigError(f"baseline {path} not written: no cell of spec {spec.name!r} is finished (0 cells to write); "
                          f"run them first with {run_command(spec, runs, cwd=cwd)}")
    used = {m for vals in cells.values() for m in vals}
    flipped = {m for q in questions.values() for m in q}  # the metrics with per-question values: their flips shown
    # abs 0 (exact): no flips written; allowed_flips reads none while abs is 0, the default once abs is edited up
    tols = {m: ({"flips": DEFAULT_FLIPS} | tolerances[m]) if m in flipped and float(tolerances[m]["abs"])
            else tolerances[m] for m in sorted(used) if m in tolerances}
    raised: dict[str, float] = {}  # metric -> the default abs it had
    smallest = min(n.values(), default=0)
    for m, t in tols.items():  # a default abs under the flips allowed would FAIL the mean check on an allowed flip
        if m in FRACTION_METRICS and m not in from_file and smallest > 0 and t.get("flips"):
            need = _flips_abs(int(t["flips"]), smallest)
            if need > float(t["abs"]):
                raised[m] = float(t["abs"])
                tols[m] = {**t, "abs": need, "raised_from": float(t["abs"])}
    b = {"spec": spec.name, "tolerances": tols, "cells": cells, "n": n, "questions": questions}
    for name, per_cell in (("machines", machines), ("configs", configs)):  # runs that record them (all tokrag's)
        if any(cid in per_cell for cid in cells):
            b[name] = {cid: per_cell[cid] for cid in cells if cid in per_cell}
    atomic_write_json(path, b)
    out = {**b, "_dropped": sorted(set(old_cells) - set(loaded)), "_unfinished": unfinished,
           "_tolerance_from_file": sorted(m for m in b["tolerances"] if m in from_file), "_raised": raised,
           "_not_recorded": sorted({m for vals in values.values() for m in vals} - set(tolerances))}  # left out
    return out | {"_not_recorded_note": not_recorded_line(path, out)}


def not_recorded_line(path: str | os.PathLike, b: dict[str, Any]) -> str | None:
    """The ``note:`` line ``--write`` prints for the metrics of the runs it left out of the baseline because no
    tolerance names them (:func:`write_baseline`'s ``"_not_recorded"``: another lm-eval task's ``acc``), with how to
    have them checked; None when it left none out."""
    left = b.get("_not_recorded") or []
    if not left:
        return None
    first = left[0]
    return (f"note: metric{'s' if len(left) != 1 else ''} of the runs with no tolerance, not recorded, so never "
            f"checked: {', '.join(left)}; to check {'them' if len(left) != 1 else 'it'}, add a tolerance to {path} "
            f"(e.g. \"tolerances\": {{\"{first}\": {{\"abs\": 0.04}}, ...}}, the largest change of its mean to "
            "accept, in its unit) and run check --write again")


def tolerance_line(b: dict[str, Any]) -> str:
    """One line naming the tolerance each metric of a baseline just written (:func:`write_baseline`'s result) is
    checked at, and whether it is the default (:data:`DEFAULT_TOLERANCES`, the same whatever a cell's number of
    questions), the default raised to ``flips / n`` (:data:`FRACTION_METRICS`) or the file's own; with the smallest
    ``n``, what one question is worth in a fraction metric."""
    mine = set(b.get("_tolerance_from_file", []))
    raised = b.get("_raised", {})
    n = min(b.get("n", {}).values(), default=None)
    parts = [f"{m} abs {t['abs']:g} ("
             + ("from the file" if m in mine
                else f"the default {raised[m]:g} raised to flips/n = {t['flips']}/{n}, so that the {t['flips']} "
                     f"flipped question{'s' if t['flips'] != 1 else ''} allowed per cell pass the mean check too"
                if m in raised else "default") + ")"
             for m, t in sorted(b["tolerances"].items())]
    one = (f"; one question of the smallest cell (n = {n}) moves a fraction-of-questions metric by {1 / n:g}"
           if n else "")
    flipped = {m for q in b.get("questions", {}).values() for m in q}  # the metrics checked per question
    flips = [f"{m} {allowed_flips(t)}" + (f" (its flips {t['flips']} does not apply while abs is 0)"
                                          if "flips" in t and int(t["flips"]) != allowed_flips(t) else "")
             for m, t in sorted(b["tolerances"].items()) if "flips" in t or m in flipped]
    one += (f"; questions per cell that may score otherwise than in the baseline (flips): {', '.join(flips)}"
            if flips else "")
    return (f"tolerances (|value - baseline| allowed): {', '.join(parts)}{one}; "
            f"{'apart from that raise, ' if raised else ''}the defaults do not scale with n: "
            "edit the baseline file's tolerances to change them (--write keeps them; leaderboards/README.md, "
            "'Regression check')")


def next_steps(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None, baseline: str | os.PathLike,
               lines: list[Any], cwd: Path | None = None) -> list[str]:
    """The lines ``check`` ends with (after :func:`summary_line`) when a value moved beyond its tolerance (a FAIL
    :class:`CheckLine` with a value, or a FAIL :class:`QuestionFlips`): where to look (the report's per-question
    pages of those cells, :func:`leaderboards.page.page_name`, with the ``report`` command that writes them) and the
    ``check --write`` command that accepts the change as the new baseline; [] otherwise (a missing or unfinished cell
    names its own fix). ``cwd``: the directory the commands must run from (:func:`check_against_baseline`'s
    ``run_from``)."""
    from .page import page_name

    moved = sorted({x.cell for x in lines if (isinstance(x, CheckLine) and not x.ok and x.value is not None)
                    or (isinstance(x, QuestionFlips) and not x.ok)})
    if not moved:
        return []
    whole = spec.whole if spec.whole is not None else spec
    runs = resolve_runs_dir(spec, runs_dir)
    out = whole.report_dir or runs / "reports" / whole.name
    cells = {c.cell_id: c for c in whole.cells()}
    pages = sorted({str(out / page_name(cells[c].model_name, cells[c].task.task)) for c in moved if c in cells})
    report = run_command(whole, runs, verb="report", cwd=cwd)
    write = run_command(whole, runs, "--baseline", os.path.abspath(baseline), "--write", verb="check", cwd=cwd)
    return [f"next: to read these runs' answers question by question, write the report ({report}) and open its "
            f"per-question page{'s' if len(pages) != 1 else ''} {', '.join(pages)} (the page shows no baseline: the "
            "questions that changed are named above, in the per-question lines, where the baseline has per-question "
            "values)",
            f"next: if the change is intended, accept it as the new baseline (it rewrites every cell's values and "
            f"per-question values from these runs, keeping the file's tolerances): {write}"]


def _checks(lines: list[Any]) -> list[Any]:
    """The lines of ``lines`` that are checks (:func:`summary_line`): not a cell or metric value the baseline lacks,
    and not a note."""
    return [x for x in lines if not isinstance(x, (NotInBaseline, MetricNotInBaseline, QuestionsNotChecked, KeyChanged,
                                                   MachineNote, PassedUnderOtherKey, MetricsWithoutTolerance))]


def refuse_no_checks(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None, baseline: str | os.PathLike,
                     lines: list[Any], run_from: Path | None = None) -> None:
    """Refuse a ``check`` that compared nothing (``lines``: :func:`check_against_baseline`'s, none of them a check):
    the baseline holds no value of the selected cells, ``"cells": {}`` or cells without metrics (``check --write``
    never writes such a file: a hand-made or truncated one), or a ``--models/--methods/--tasks`` selection of cells it
    does not cover, and no invariant failed. It printed ``0 checks: 0 OK, 0 FAIL, N cells not in the baseline`` and
    exited 0, so a CI gate meant to catch regressions passed having checked nothing. A baseline that covers some of
    the selected cells is unchanged: those are compared, the others are ``NEW`` lines that do not fail the check.
    ``run_from``: where the suggested command must run (:func:`check_against_baseline`'s ``run_from``).

    Raises:
        ConfigError: ``baseline <path> holds no value of the <n> cell(s) ... so check would compare nothing (0 checks)
            and pass; ...`` naming ``check --write`` with this spec and baseline (for a selection: to check without it).
    """
    if _checks(lines):
        return
    whole = spec.whole if spec.whole is not None else spec
    n = len(spec.cells())
    cells = f"{n} cell{'s' if n != 1 else ''}"
    path = os.path.abspath(baseline) if run_from is not None else str(baseline)  # the command runs from run_from
    write = run_command(whole, resolve_runs_dir(whole, runs_dir), "--baseline", path, "--write", verb="check",
                        cwd=run_from)
    if spec.selection:
        raise ConfigError(f"baseline {baseline} holds no value of the {cells} that {spec.selection_args()} selects "
                          f"of spec {spec.name!r} ({spec.path}), so check would compare nothing (0 checks) and pass; "
                          f"select cells the baseline has, or write it from good runs of the whole spec with: {write}")
    raise ConfigError(f"baseline {baseline} holds no value of the {cells} of spec {spec.name!r} ({spec.path}), so "
                      f"check would compare nothing (0 checks) and pass; write it from good runs with: {write}")


def summary_line(lines: list[CheckLine | Violation | NotInBaseline | MetricNotInBaseline | QuestionCount | MissingCell]) -> str:
    """``N checks: X OK, Y FAIL`` (``, Z cells not in the baseline`` and ``, W metric values not in the baseline`` when
    some were not compared). A check is one (cell, metric) comparison, one cell whose question count differs or that
    has no values (:class:`MissingCell`: one check however many metrics the baseline has for it), or one invariant
    violation."""
    new = sum(isinstance(x, NotInBaseline) for x in lines)
    new_metrics = sum(isinstance(x, MetricNotInBaseline) for x in lines)
    checks = _checks(lines)
    bad = sum(not x.ok for x in checks)
    return (f"{len(checks)} checks: {len(checks) - bad} OK, {bad} FAIL"
            + (f", {new} cells not in the baseline (not checked)" if new else "")
            + (f", {new_metrics} metric values not in the baseline (not checked)" if new_metrics else ""))


__all__ = ["KeyChanged", "MachineNote", "MetricsWithoutTolerance", "PassedUnderOtherKey", "MACHINE_FIELDS", "allowed_flips", "cell_configs", "cell_machines",
           "machine_note", "CheckLine", "MetricNotInBaseline", "MissingCell", "NotInBaseline", "QuestionCount", "QuestionFlips",
           "QuestionsNotChecked", "FRACTION_METRICS", "cell_counts", "next_steps", "cell_questions", "question_flips", "stored_questions", "DEFAULT_FLIPS", "check_against_baseline", "tolerance_line", "write_baseline", "cell_values", "load_baseline", "DEFAULT_TOLERANCES",
           "refuse_no_checks", "not_recorded_line",
           "BASELINE_DIGITS", "rounded_delta"]
