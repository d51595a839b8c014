"""Build a leaderboard report from run folders only: Markdown, CSV, JSON and a static HTML page.

Nothing is recomputed from models: every number comes from the cells' ``samples_*.jsonl``,
``results.json`` and ``cost.json`` (each verified against its ``DONE`` manifest), so the same run
folders always give byte-identical reports. Wall time and peak memory are measurements that vary
between runs and machines; ``timings=False`` leaves them out (used to compare two fresh runs).

Statistics (per method x task row; questions matched by ``doc_id``; several seeds are averaged per
question first):

* mean of each per-sample metric (EM, F1, answer match, retrieval answer recall, ...) with a
  percentile bootstrap CI over questions (``scipy.stats.bootstrap``; Efron & Tibshirani 1993, ch. 13),
  ``bootstrap.iters`` resamples, seeded per (spec seed, method, task, metric);
* for every method against the spec's ``reference`` (rag-standard): the mean per-question difference,
  its paired bootstrap CI, and the two-sided p-value of a paired sign-flip permutation test
  (``scipy.stats.permutation_test`` with ``permutation_type="samples"``);
* metrics that are not per-sample means (e.g. ``word_perplexity``, a ratio of sums) are shown as
  lm-eval aggregates without a CI.

Plots (matplotlib, Agg, no timestamps in the files): the mean with its CI per task for each main
metric, and a robustness curve: answer match against the noise ratio per method.
"""

from __future__ import annotations

import csv
import html
import io
import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.io import atomic_write_bytes, atomic_write_json, atomic_write_text, fingerprint

from .keys import cell_keys
from .runner import IncompleteRunError, load_cell, resolve_runs_dir
from .spec import LeaderboardSpec

log = logging.getLogger(__name__)

PREFERRED = ["em", "f1", "answer_match", "answer_recall", "gold_at_k", "word_perplexity", "bits_per_byte"]
PAIRED = ["em", "f1", "answer_match"]
LABELS = {
    "em": "EM", "f1": "F1", "answer_match": "answer match", "answer_recall": "answer recall@k",
    "gold_at_k": "gold@k", "word_perplexity": "word ppl", "bits_per_byte": "bits/byte",
}
UNITS = {
    "em": "fraction of questions", "f1": "mean token F1 (0-1)", "answer_match": "fraction of questions",
    "answer_recall": "fraction of questions with a gold answer in the top-k passages",
    "gold_at_k": "fraction of questions with the gold passage in the top k",
    "word_perplexity": "perplexity per word", "bits_per_byte": "bits per UTF-8 byte",
}


def _seed_for(base: int, *parts: str) -> int:
    return (base + int(fingerprint(list(parts), length=8), 16)) % (2**32)


def bootstrap_ci(values: np.ndarray, iters: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (shape (n,)); ``(v, v)`` when all values are equal."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return (math.nan, math.nan)
    if np.all(values == values[0]):
        return (float(values[0]), float(values[0]))
    res = stats.bootstrap((values,), np.mean, n_resamples=iters, confidence_level=confidence, method="percentile",
                          vectorized=True, rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def paired_test(diff: np.ndarray, iters: int, confidence: float, seed: int) -> dict[str, float]:
    """Mean of per-question differences ``diff`` (shape (n,)), its bootstrap CI, and the two-sided p-value
    of a sign-flip permutation test (H0: the two methods are exchangeable on every question); exact
    over the non-zero differences when there are at most 16 of them."""
    from scipy import stats

    diff = np.asarray(diff, dtype=float)
    lo, hi = bootstrap_ci(diff, iters, confidence, seed)
    nz = diff[diff != 0]  # zero differences are unchanged by a sign flip: the test runs on the others
    if len(nz) < 2:  # none or one non-zero difference: both signs are as extreme, p = 1
        p = 1.0
    else:
        # exact (all 2^m sign patterns) for up to 16 non-zero differences, else Monte Carlo
        n_res = np.inf if len(nz) <= 16 else iters
        res = stats.permutation_test((nz,), lambda x, axis=-1: np.mean(x, axis=axis), permutation_type="samples",
                                     n_resamples=n_res, alternative="two-sided", vectorized=True,
                                     rng=np.random.default_rng(seed + 1))
        p = float(min(1.0, res.pvalue))
    return {"diff": float(diff.mean()), "lo": lo, "hi": hi, "p": p, "n": int(len(diff))}


def _per_question(samples: list[dict], metric: str) -> dict[int, float] | None:
    out = {}
    for s in samples:
        v = s.get(metric)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        out[int(s["doc_id"])] = float(v)
    return out


def collect(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, *, allow_missing: bool = False) -> dict[str, Any]:
    """Load every cell of ``spec`` from its run folder.

    Returns ``{cell_id: loaded cell | None}`` plus the cell objects. Raises IncompleteRunError listing
    the unfinished cells (unless ``allow_missing``) with the command that finishes them.
    """
    runs = resolve_runs_dir(spec, runs_dir)
    loaded, missing = {}, []
    for cell, key, _ in cell_keys(spec):
        try:
            loaded[cell.cell_id] = (cell, key, load_cell(runs / key))
        except IncompleteRunError as exc:
            missing.append(f"{cell.cell_id} ({exc})")
            loaded[cell.cell_id] = (cell, key, None)
    if missing and not allow_missing:
        raise IncompleteRunError(
            f"{len(missing)} of {len(loaded)} cells are not finished in {runs}:\n  " + "\n  ".join(missing)
            + f"\nrun: tokrag leaderboard run {spec.path} --runs-dir {runs}"
        )
    return loaded


def compute(spec: LeaderboardSpec, loaded: dict[str, Any], *, timings: bool = True) -> dict[str, Any]:
    """The report's data (JSON-able): contract, rows with metrics/CIs/paired tests/cost, provenance."""
    iters, conf, bseed = spec.bootstrap_iters, spec.confidence, spec.bootstrap_seed
    # per (method, task): per-question values averaged over seeds
    rows = []
    per_q: dict[tuple[str, str], dict[str, dict[int, float]]] = {}
    metric_names: set[str] = set()
    for m in spec.methods:
        for t in spec.tasks:
            cells = [loaded[f"{m.name}/{t.task}/seed{s}"] for s in spec.seeds]
            done = [c for c in cells if c[2] is not None]
            row: dict[str, Any] = {"method": m.name, "task": t.task, "noise": t.noise, "family": t.family,
                                   "seeds": [c[0].seed for c in done], "missing": len(done) < len(cells)}
            if not done:
                rows.append(row)
                continue
            seed_vals: dict[str, list[dict[int, float]]] = {}
            aggregates: dict[str, float] = {}
            for _, _, data in done:
                samples = data["samples"].get(t.task, [])
                names = set()
                for s in samples:
                    names.update(s.get("metrics") or [])
                for name in sorted(names):
                    pq = _per_question(samples, name)
                    if pq is not None:
                        seed_vals.setdefault(name, []).append(pq)
                res = (data["results"].get("results") or {}).get(t.task, {})
                for k, v in res.items():
                    if "," in k and "_stderr" not in k and isinstance(v, (int, float)) and not isinstance(v, bool):
                        aggregates.setdefault(k.split(",")[0], []).append(float(v))  # type: ignore[union-attr]
            qvals = {}
            for name, lst in seed_vals.items():
                common = sorted(set.intersection(*(set(d) for d in lst)))
                qvals[name] = {q: float(np.mean([d[q] for d in lst])) for q in common}
            per_q[(m.name, t.task)] = qvals
            metrics = {}
            for name in sorted(set(qvals) | set(aggregates)):
                metric_names.add(name)
                if name in qvals and qvals[name]:
                    arr = np.array(list(qvals[name].values()))
                    lo, hi = bootstrap_ci(arr, iters, conf, _seed_for(bseed, m.name, t.task, name))
                    metrics[name] = {"mean": float(arr.mean()), "lo": lo, "hi": hi, "n": int(len(arr))}
                else:
                    metrics[name] = {"mean": float(np.mean(aggregates[name])), "lo": None, "hi": None, "n": None}
            row["metrics"] = metrics
            row["n"] = len(done[0][2]["samples"].get(t.task, []))
            costs = [c[2]["cost"] for c in done]
            cost = {
                "forward_passes": int(sum(c.get("forward_passes", 0) for c in costs)),
                "generated_tokens": int(sum(c.get("generated_tokens", 0) for c in costs)),
                "prompt_tokens": int(sum(c.get("prompt_tokens", 0) for c in costs)),
            }
            if timings:
                cost["wall_s"] = round(float(sum(c.get("wall_s", 0.0) for c in costs)), 1)
                cost["peak_rss_mib"] = round(float(max(c.get("peak_rss_mib", 0.0) for c in costs)), 0)
            row["cost"] = cost
            rows.append(row)
    # paired tests against the reference
    if spec.reference:
        for row in rows:
            if row["method"] == spec.reference or "metrics" not in row:
                continue
            ref = per_q.get((spec.reference, row["task"]))
            mine = per_q.get((row["method"], row["task"]))
            if not ref or not mine:
                continue
            row["paired"] = {}
            for name in PAIRED:
                if name in ref and name in mine:
                    common = sorted(set(ref[name]) & set(mine[name]))
                    if not common:
                        continue
                    diff = np.array([mine[name][q] - ref[name][q] for q in common])
                    row["paired"][name] = paired_test(diff, iters, conf, _seed_for(bseed, "paired", row["method"], row["task"], name))
    order = [n for n in PREFERRED if n in metric_names] + sorted(metric_names - set(PREFERRED))
    prov = []
    for cid, (cell, key, data) in loaded.items():
        if data is None:
            prov.append({"cell": cid, "config_hash": key, "missing": True})
            continue
        p = data["provenance"]
        c = data["config"]
        prov.append({
            "cell": cid, "config_hash": key, "model_fingerprint": p.get("model_fingerprint"),
            "weights_fingerprint": c.get("model_fingerprint"), "task_fingerprint": c.get("task_fingerprint"),
            "data_fingerprint": c.get("data_fingerprint"), "retrieval": p.get("retrieval"),
            "task_version": p.get("task_version"), "git_commit": p.get("git_commit"), "versions": p.get("versions"),
        })
    return {
        "spec": spec.name, "description": spec.description, "notes": spec.notes, "contract": spec.contract_lines(),
        "specific_settings": spec.specific_settings(), "reference": spec.reference,
        "method_args": {m.name: {"model": m.model, **({"model_args": m.model_args} if m.model_args else {})} for m in spec.methods},
        "bootstrap": {"iters": iters, "confidence": conf, "seed": bseed}, "metrics": order,
        "units": {k: UNITS.get(k, "") for k in order}, "rows": rows, "provenance": prov, "timings": timings,
    }


# --------------------------------------------------------------------------- rendering

def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}f}"


def _cell_metric(row: dict, name: str) -> str:
    m = (row.get("metrics") or {}).get(name)
    if not m:
        return "-"
    if m["lo"] is None:
        return _fmt(m["mean"])
    return f"{_fmt(m['mean'])} [{_fmt(m['lo'])}, {_fmt(m['hi'])}]"


def _cell_paired(row: dict, name: str) -> str:
    p = (row.get("paired") or {}).get(name)
    if not p:
        return "-"
    return f"{p['diff']:+.3f} [{p['lo']:+.3f}, {p['hi']:+.3f}] p={p['p']:.3f}"


def _method_label(data: dict, method: str) -> str:
    return f"{method} *" if method in data["specific_settings"] else method


def _tables(data: dict) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(anchor, title, header, rows) of every table, shared by Markdown and HTML."""
    out = []
    ms = data["metrics"]
    conf = int(round(data["bootstrap"]["confidence"] * 100))
    head = ["method", "task", "noise", "n"] + [LABELS.get(m, m) for m in ms]
    body = []
    for r in data["rows"]:
        noise = "-" if r.get("noise") is None else f"{r['noise']:.2f}"
        body.append([_method_label(data, r["method"]), r["task"], noise, str(r.get("n", "-"))] + [_cell_metric(r, m) for m in ms])
    out.append(("results", f"Results: mean [{conf}% bootstrap CI over questions]", head, body))
    if data["reference"]:
        pm = [m for m in PAIRED if m in ms]
        head = ["method", "task"] + [f"Δ {LABELS.get(m, m)}" for m in pm]
        body = [[_method_label(data, r["method"]), r["task"]] + [_cell_paired(r, m) for m in pm]
                for r in data["rows"] if r.get("paired")]
        if body:
            out.append(("paired", f"Paired difference against {data['reference']} on the same questions "
                        f"(mean [{conf}% CI], p = two-sided paired sign-flip permutation test)", head, body))
    cost_keys = ["forward_passes", "generated_tokens", "prompt_tokens"] + (["wall_s", "peak_rss_mib"] if data["timings"] else [])
    cost_lab = {"forward_passes": "forward passes", "generated_tokens": "generated tokens", "prompt_tokens": "prompt tokens",
                "wall_s": "wall time (s)", "peak_rss_mib": "peak RSS (MiB)"}
    body = [[_method_label(data, r["method"]), r["task"]] + [str(r.get("cost", {}).get(k, "-")) for k in cost_keys]
            for r in data["rows"]]
    out.append(("cost", "Cost (totals over seeds; peak memory = max)", ["method", "task"] + [cost_lab[k] for k in cost_keys], body))
    body = []
    for p in data["provenance"]:
        if p.get("missing"):
            body.append([p["cell"], p["config_hash"], "MISSING", "", "", "", ""])
            continue
        retr = p.get("retrieval") or {}
        extra = ", ".join(f"{k}={v}" for k, v in sorted(retr.items()) if k != "ctxs")
        body.append([p["cell"], p["config_hash"], str(p.get("model_fingerprint")), str(p.get("task_fingerprint")),
                     str(retr.get("ctxs")) + (f" ({extra})" if extra else ""), str(p.get("data_fingerprint")),
                     str(p.get("git_commit"))])
    out.append(("provenance", "Provenance (one row per cell)",
                ["cell", "config hash", "model fingerprint", "task fingerprint", "retrieval fingerprint (passages)",
                 "data fingerprint", "git commit"], body))
    return out


def _versions(data: dict) -> list[str]:
    seen: dict[str, set[str]] = {}
    for p in data["provenance"]:
        for k, v in (p.get("versions") or {}).items():
            seen.setdefault(k, set()).add(str(v))
    return [f"{k} {', '.join(sorted(v))}" for k, v in sorted(seen.items())]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def render_markdown(data: dict) -> str:
    """The report as Markdown (for a README or a paper)."""
    out = [f"# Leaderboard: {data['spec']}", ""]
    if data["description"]:
        out += [data["description"], ""]
    out += ["## Fairness contract (identical for every row)", ""] + [f"- {x}" for x in data["contract"]] + [""]
    out += ["Methods and their own hyper-parameters:", ""]
    for name, d in data["method_args"].items():
        args = ", ".join(f"{k}={v}" for k, v in sorted(d.get("model_args", {}).items()))
        out.append(f"- {name}: model `{d['model']}`" + (f", {args}" if args else ""))
    out.append("")
    if data["specific_settings"]:
        out += ["## Specific settings (explicit deviations from the contract, rows marked *)", ""]
        for name, dev in data["specific_settings"].items():
            out.append(f"- {name}: " + ", ".join(f"{k}={v}" for k, v in sorted(dev.items())))
        out.append("")
    for _, title, head, rows in _tables(data):
        out += [f"## {title}", "", _md_table(head, rows), ""]
    out += ["Units: " + "; ".join(f"{LABELS.get(k, k)} = {u}" for k, u in data["units"].items() if u), ""]
    out += ["Library versions: " + "; ".join(_versions(data)), ""]
    if data["notes"]:
        out += ["## Notes", "", data["notes"], ""]
    b = data["bootstrap"]
    out += [f"Generated by `tokrag leaderboard report` from run folders only (bootstrap: {b['iters']} resamples, seed {b['seed']}).", ""]
    return "\n".join(out)


def render_csv(data: dict) -> str:
    """One CSV row per method x task: metric means and CI bounds, paired differences, cost."""
    ms = data["metrics"]
    cost_keys = ["forward_passes", "generated_tokens", "prompt_tokens"] + (["wall_s", "peak_rss_mib"] if data["timings"] else [])
    head = ["method", "task", "noise", "n", "specific_settings"]
    for m in ms:
        head += [m, f"{m}_ci_low", f"{m}_ci_high"]
    for m in PAIRED:
        if m in ms and data["reference"]:
            head += [f"delta_{m}", f"delta_{m}_ci_low", f"delta_{m}_ci_high", f"delta_{m}_p"]
    head += cost_keys
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for r in data["rows"]:
        spec_set = ";".join(f"{k}={v}" for k, v in sorted(data["specific_settings"].get(r["method"], {}).items()))
        line = [r["method"], r["task"], "" if r.get("noise") is None else r["noise"], r.get("n", ""), spec_set]
        for m in ms:
            v = (r.get("metrics") or {}).get(m) or {}
            line += [_fmt(v.get("mean"), 6) if v else "", _fmt(v.get("lo"), 6) if v.get("lo") is not None else "",
                     _fmt(v.get("hi"), 6) if v.get("hi") is not None else ""]
        for m in PAIRED:
            if m in ms and data["reference"]:
                p = (r.get("paired") or {}).get(m)
                line += [_fmt(p["diff"], 6), _fmt(p["lo"], 6), _fmt(p["hi"], 6), _fmt(p["p"], 6)] if p else ["", "", "", ""]
        line += [r.get("cost", {}).get(k, "") for k in cost_keys]
        w.writerow(line)
    return buf.getvalue()


def _finish_plot(plt, fig, ax, out_dir: Path, name: str, caption: str) -> tuple[str, str]:
    """Common tail of every plot: y in [0, 1.05], legend outside, PNG without a timestamp; returns (file, caption)."""
    ax.set_ylim(0.0, 1.05)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return name, caption


def _plots(data: dict, out_dir: Path) -> list[tuple[str, str]]:
    """Write PNG plots; returns ``(file name, caption)`` pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "tokrag", "font.size": 9})
    files = []
    methods = list(dict.fromkeys(r["method"] for r in data["rows"]))
    tasks = list(dict.fromkeys(r["task"] for r in data["rows"]))
    byrow = {(r["method"], r["task"]): r for r in data["rows"]}
    conf = int(round(data["bootstrap"]["confidence"] * 100))
    for metric in [m for m in ("answer_match", "em", "f1", "answer_recall") if m in data["metrics"]]:
        fig, ax = plt.subplots(figsize=(max(6.5, 1.5 + 0.35 * len(tasks) * max(1, len(methods))), 3.6))
        width = 0.8 / max(1, len(methods))
        for i, m in enumerate(methods):
            xs, ys, err = [], [], [[], []]
            for j, t in enumerate(tasks):
                v = (byrow.get((m, t), {}).get("metrics") or {}).get(metric)
                if not v:
                    continue
                xs.append(j + (i - (len(methods) - 1) / 2) * width)
                ys.append(v["mean"])
                lo = v["lo"] if v["lo"] is not None else v["mean"]
                hi = v["hi"] if v["hi"] is not None else v["mean"]
                err[0].append(max(0.0, v["mean"] - lo))
                err[1].append(max(0.0, hi - v["mean"]))
            ax.bar(xs, ys, width=width, yerr=err, capsize=2, label=m)
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels(tasks, rotation=15, ha="right")
        ax.set_ylabel(f"{LABELS.get(metric, metric)} ({conf}% CI)")
        ax.set_title(f"{LABELS.get(metric, metric)} per task")
        files.append(_finish_plot(plt, fig, ax, out_dir, f"{metric}_per_task.png",
                                  f"{LABELS.get(metric, metric)} per task with {conf}% bootstrap CIs"))
    fams = {}
    for r in data["rows"]:
        if r.get("noise") is not None and r.get("metrics") and "answer_match" in r["metrics"]:
            fams.setdefault(r["family"], []).append(r)
    for fam, rs in sorted(fams.items()):
        if len({r["noise"] for r in rs}) < 2:
            continue
        fig, ax = plt.subplots(figsize=(6.5, 3.4))
        for m in methods:
            pts = sorted((r["noise"], r["metrics"]["answer_match"]) for r in rs if r["method"] == m)
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ys = [p[1]["mean"] for p in pts]
            lo = [p[1]["lo"] if p[1]["lo"] is not None else p[1]["mean"] for p in pts]
            hi = [p[1]["hi"] if p[1]["hi"] is not None else p[1]["mean"] for p in pts]
            ax.plot(xs, ys, marker="o", label=m)
            ax.fill_between(xs, lo, hi, alpha=0.12)
        ax.set_xlabel("noise ratio (share of retrieved passages replaced by distractors)")
        ax.set_ylabel("answer match")
        ax.set_title(f"Robustness to retrieval noise: {fam}")
        files.append(_finish_plot(plt, fig, ax, out_dir, f"robustness_{fam}.png",
                                  f"Answer match against noise ratio per method ({fam}); bands: {conf}% CI"))
    return files


def render_html(data: dict, plots: list[tuple[str, str]]) -> str:
    """A static, self-contained HTML page (tables + the PNG plots beside it; no scripts)."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>Leaderboard: {e(data['spec'])}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;margin:1em 0;"
        "font-size:13px}th,td{border:1px solid #bbb;padding:3px 7px;text-align:left}th{background:#eee}"
        "img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}code{background:#f4f4f4}</style>",
        "</head>", "<body>", f"<h1>Leaderboard: {e(data['spec'])}</h1>",
    ]
    if data["description"]:
        parts.append(f"<p>{e(data['description'])}</p>")
    parts.append("<h2>Fairness contract (identical for every row)</h2><ul>")
    parts += [f"<li><code>{e(x)}</code></li>" for x in data["contract"]]
    parts.append("</ul>")
    if data["specific_settings"]:
        parts.append("<h2>Specific settings (explicit deviations, rows marked *)</h2><ul>")
        for name, dev in data["specific_settings"].items():
            parts.append(f"<li>{e(name)}: <code>{e(', '.join(f'{k}={v}' for k, v in sorted(dev.items())))}</code></li>")
        parts.append("</ul>")
    for anchor, title, head, rows in _tables(data):
        parts.append(f'<h2 id="{anchor}">{e(title)}</h2><table><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
        parts += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows]
        parts.append("</tbody></table>")
        if anchor == "results":
            for name, cap in plots:
                parts.append(f'<figure><img src="{e(name)}" alt="{e(cap)}"><figcaption>{e(cap)}</figcaption></figure>')
    parts.append("<p>Units: " + e("; ".join(f"{LABELS.get(k, k)} = {u}" for k, u in data["units"].items() if u)) + "</p>")
    parts.append("<p>Library versions: " + e("; ".join(_versions(data))) + "</p>")
    if data["notes"]:
        parts.append(f"<h2>Notes</h2><p>{e(data['notes'])}</p>")
    parts += ["<p>Generated by <code>tokrag leaderboard report</code> from run folders only.</p>", "</body>", "</html>", ""]
    return "\n".join(parts)


def build_report(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, out_dir: str | os.PathLike | None = None,
                 *, timings: bool = True, allow_missing: bool = False) -> Path:
    """Write ``leaderboard.md``, ``leaderboard.csv``, ``leaderboard.json``, ``index.html`` and the PNG
    plots into ``out_dir`` (default: the spec's ``report_dir``, else ``<runs_dir>/reports/<name>``).

    Raises:
        IncompleteRunError: some cells are unfinished (unless ``allow_missing``: then they show as missing).
    """
    runs = resolve_runs_dir(spec, runs_dir)
    out = Path(out_dir) if out_dir else (spec.report_dir or runs / "reports" / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    loaded = collect(spec, runs, allow_missing=allow_missing)
    data = compute(spec, loaded, timings=timings)
    plots = _plots(data, out)
    atomic_write_text(out / "leaderboard.md", render_markdown(data))
    atomic_write_text(out / "leaderboard.csv", render_csv(data))
    atomic_write_json(out / "leaderboard.json", data)
    atomic_write_bytes(out / "index.html", render_html(data, plots).encode("utf-8"))
    return out
