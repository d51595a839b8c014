"""Invariants checked on every report and every ``check`` (issue 12.2).

Per sample (each logged ``samples_<task>.jsonl`` line): every metric value is a finite number (NaN or inf, which
a bring-your-own metric could return, is named with its doc id); EM=1 implies F1=1 and EM=1 implies answer
match=1 (so, per cell, EM <= F1 and EM <= answer match). Per cell: the mean of every per-sample metric
that lm-eval aggregates by ``mean`` equals the value in ``results.json`` (metric values written only
into results.json are never trusted on their own). Per task (and model): every cell (method x seed)
has the same number of samples and the same set of doc ids, without duplicates, so every paired
comparison is over the same questions; a cell that differs from the majority of its siblings is
named with the first doc id that is missing or extra; and the cells of one seed that attach as many passages attach
the same passages to every question (retrieval is shared by every method, closed book included).

A violation is a :class:`Violation`; ``render()`` gives the ``FAIL`` line that ``check`` prints and
that the report refuses with (:class:`InvariantError`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval.errors import TokragError

IMPLICATIONS = [("em", "f1"), ("em", "answer_match")]
"""(a, b): a sample with a = 1 must have b = 1 (exact match implies full token F1 and a contained answer)."""
MEAN_TOL = 1e-9


class InvariantError(TokragError, ValueError):
    """The run folders break an invariant; the message lists every FAIL line."""


@dataclass(frozen=True)
class Violation:
    """One broken invariant: the cell id, the sample's doc id (None for a cell-level violation), what broke."""

    cell: str
    sample: int | None
    message: str

    ok = False  # a check line that always fails (same interface as leaderboards.check.CheckLine)

    def render(self) -> str:
        """``FAIL <cell>  invariant: <message>`` (with the doc id when one sample is at fault)."""
        where = f" doc_id {self.sample}" if self.sample is not None else ""
        return f"FAIL {self.cell}{where}  invariant: {self.message}"


def _num(v: Any) -> float | None:
    """A metric value as a float; None when it is not a number (a bool, a list, None). NaN and inf are numbers here:
    :func:`nonfinite` finds them."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def nonfinite(v: Any) -> bool:
    """``v`` (a number, or a list of numbers such as a corpus metric's ``[loglik, length]``) holds a NaN or an
    infinity."""
    xs = v if isinstance(v, (list, tuple)) else [v]
    return any((x := _num(y)) is not None and not math.isfinite(x) for y in xs)


def nonfinite_message(name: str, v: Any) -> str:
    """The invariant's text for a per-sample metric value that is NaN or infinite."""
    return (f"{name} = {v!r} is not a finite number (a per-question metric must be one: its mean, CI and paired tests "
            "cannot be computed; the task's metric function returned it)")


def sample_violations(cell_id: str, samples: list[dict]) -> list[Violation]:
    """Every metric a sample carries (its ``metrics`` list) is a finite number, or a list of them (NaN or inf would
    turn the cell's mean, CI and tests into NaN, and a NaN mean never differs from results.json's); EM=1 implies
    F1=1 and answer match=1, for every sample that carries both metrics."""
    out = []
    for s in samples:
        for name in s.get("metrics") or []:
            if name in s and nonfinite(s[name]):
                out.append(Violation(cell_id, s.get("doc_id"), nonfinite_message(name, s[name])))
        for a, b in IMPLICATIONS:
            va, vb = _num(s.get(a)), _num(s.get(b))
            if va is not None and vb is not None and va >= 1.0 and vb < 1.0:
                out.append(Violation(cell_id, s.get("doc_id"), f"{a}=1 but {b}={vb:g} (an exact match must have {b} 1)"))
    return out


def _mean_metrics(results: dict, task: str) -> set[str]:
    """Metrics that the task aggregates by ``mean`` (from the task config recorded in results.json)."""
    cfg = (results.get("configs") or {}).get(task) or {}
    out = set()
    for m in cfg.get("metric_list") or []:
        if isinstance(m, dict) and m.get("aggregation") == "mean" and isinstance(m.get("metric"), str):
            out.add(m["metric"])
    return out


def cell_violations(cell_id: str, task: str, samples: list[dict], results: dict, *, compare_results: bool = True) -> list[Violation]:
    """Per-sample implications, EM <= F1 / EM <= match of the cell means, and (``compare_results``)
    the samples' means against results.json for every mean-aggregated metric."""
    out = sample_violations(cell_id, samples)
    means: dict[str, float] = {}
    broken: set[str] = set()  # a sample's value is NaN or inf: named per sample above, no mean to compare
    for name in {k for s in samples for k in (s.get("metrics") or [])}:
        # lm-eval averages a metric over the samples that return it (e.g. gold_at_k only where gold is known)
        present = [s[name] for s in samples if name in s]
        vals = [_num(v) for v in present]
        if any(nonfinite(v) for v in present):
            broken.add(name)
        elif vals and all(v is not None for v in vals):
            means[name] = float(np.mean(vals))
    for a, b in IMPLICATIONS:
        if a in means and b in means and means[a] > means[b] + MEAN_TOL:
            out.append(Violation(cell_id, None, f"mean {a} {means[a]:.4f} > mean {b} {means[b]:.4f}"))
    if compare_results:
        res = (results.get("results") or {}).get(task) or {}
        for name in sorted(_mean_metrics(results, task) - broken):
            logged = [(k, _num(v)) for k, v in res.items() if k.split(",")[0] == name and "_stderr" not in k]
            for key, v in logged:
                if v is None:
                    continue
                if not math.isfinite(v):
                    out.append(Violation(cell_id, None, f"results.json {key} = {v!r} is not a finite number"))
                elif name not in means:
                    out.append(Violation(cell_id, None, f"results.json has {key} = {v:.6f} but the samples carry no {name}"))
                elif abs(means[name] - v) > MEAN_TOL:
                    out.append(Violation(cell_id, None, f"results.json {key} = {v:.6f} but the samples' mean is "
                                                        f"{means[name]:.6f} ({len(samples)} samples)"))
    return out


def _passages(sample: dict) -> tuple[tuple[Any, Any], ...] | None:
    """``((docid, text), ...)`` of the passages a logged sample's doc attached (``doc["ctxs"]``, in rank order);
    None when it attaches none."""
    doc = sample.get("doc")
    ctxs = doc.get("ctxs") if isinstance(doc, dict) else None
    if not isinstance(ctxs, list) or not ctxs:
        return None
    return tuple((c.get("docid"), c.get("text")) if isinstance(c, dict) else (None, str(c)) for c in ctxs)


def retrieval_violations(group: str, cells: dict[str, list[dict]], folders: dict[str, str] | None = None) -> list[Violation]:
    """Cells of one task (and model) and seed that attach the same number of passages must attach the same passages
    (doc id and text, in rank order) to every question: retrieval is the task's, so every method sees it (the
    closed-book row too: it logs them and ignores them), and answer recall@k is identical for every method of a task.
    A cell that differs from the majority of its siblings was computed from other inputs (a corpus or questions file
    edited between its run and theirs) and is named with the first doc id whose passages differ. Cells are compared
    by seed (``.../seedN``: a noise task draws its passages per seed) and by the most passages a question of theirs
    attaches (a method given another ``k`` under ``specific`` retrieves another depth); questions a sibling lacks are
    left to :func:`sibling_violations`, cells without passages are not compared."""
    folders = folders or {}
    buckets: dict[tuple[str, int], dict[str, dict[Any, tuple]]] = {}
    for cid, samples in cells.items():
        per_doc = {s.get("doc_id"): p for s in samples if (p := _passages(s)) is not None}
        if per_doc:
            seed = cid.rsplit("/", 1)[-1]
            buckets.setdefault((seed, max(len(p) for p in per_doc.values())), {})[cid] = per_doc
    out = []
    for (seed, _depth), bucket in buckets.items():
        if len(bucket) < 2:
            continue
        common = sorted(set.intersection(*(set(d) for d in bucket.values())), key=repr)
        sigs = {cid: tuple(d[i] for i in common) for cid, d in bucket.items()}
        count = Counter(sigs.values())
        if len(count) <= 1:
            continue
        order = list(sigs.values())
        majority = max(count, key=lambda k: (count[k], -order.index(k)))  # ties: the cell listed first
        ref_cell = next(c for c, v in sigs.items() if v == majority)
        for cid, sig in sigs.items():
            if sig == majority:
                continue
            diff = [i for i, a, b in zip(common, sig, majority) if a != b]
            first = diff[0]
            out.append(Violation(cid, first, f"the passages attached to {len(diff)} of {len(common)} questions differ "
                                             f"from its siblings' on {group} {seed} (e.g. {ref_cell}; first: doc id "
                                             f"{first}): every method must see the same retrieval; the cells were "
                                             "computed from different corpus or question files: re-run the cell"
                                             + (f" (remove its run folder {folders[cid]} and run the spec again)"
                                                if cid in folders else "")))
    return out


def sibling_violations(group: str, cells: dict[str, list[dict]], folders: dict[str, str] | None = None) -> list[Violation]:
    """Cells of one task (and model) must have the same n and the same doc ids: the majority set wins,
    every other cell is named with its n and the first doc id missing or extra. ``group`` names the
    task in the messages; ``cells``: ``{cell_id: samples}``; ``folders``: ``{cell_id: run folder}``, named
    in the message as what to remove (the runner never re-runs a finished folder). Then the cells of each seed
    must attach the same passages (:func:`retrieval_violations`)."""
    folders = folders or {}
    out: list[Violation] = []
    ids: dict[str, tuple[int, ...]] = {}
    for cid, samples in cells.items():
        doc_ids = [s.get("doc_id") for s in samples]
        dup = sorted(d for d, c in Counter(doc_ids).items() if c > 1)
        if dup:
            out.append(Violation(cid, dup[0], f"{len(dup)} doc id(s) logged more than once (first: {dup[0]})"))
        ids[cid] = tuple(sorted(set(doc_ids)))
    if len(set(ids.values())) <= 1:
        return out + retrieval_violations(group, cells, folders)
    count = Counter(ids.values())
    # majority, ties broken towards the cell listed first (the spec's order)
    majority = max(count, key=lambda k: (count[k], -list(ids.values()).index(k)))
    ref_cell = next(c for c, v in ids.items() if v == majority)
    for cid, v in ids.items():
        if v == majority:
            continue
        missing = sorted(set(majority) - set(v))
        extra = sorted(set(v) - set(majority))
        first = missing[0] if missing else extra[0]
        what = (f"doc id {first} is missing" if missing else f"doc id {first} is not in the sibling cells")
        out.append(Violation(cid, first, f"{len(v)} questions vs {len(majority)} in its siblings on {group} "
                                         f"(e.g. {ref_cell}): {what} ({len(missing)} missing, {len(extra)} extra); "
                                         "every method must see the same questions: re-run the cell"
                                         + (f" (remove its run folder {folders[cid]} and run the spec again)" if cid in folders else "")))
    return out + retrieval_violations(group, cells, folders)


__all__ = ["Violation", "InvariantError", "nonfinite", "nonfinite_message", "sample_violations", "cell_violations", "sibling_violations",
           "retrieval_violations", "IMPLICATIONS"]
