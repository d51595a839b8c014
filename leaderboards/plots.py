"""Plots of a leaderboard report (matplotlib, Agg backend, PNG files without timestamps).

Per model (file names get ``_<model>`` when the spec lists several models):

* ``robustness_<family>.png``: the primary metric against the noise ratio (0 -> 1) per method, with the
  bootstrap CI as a band: a robust method stays flat, one that trusts the context falls towards (or
  below) the closed-book line. The ratio is the report row's ``noise``, the share of passages actually replaced at
  the contract's ``k`` (:func:`leaderboards.spec.task_noise_share`): levels that replace as many passages share an x;
* ``cost_accuracy.png``: forward passes per generated token (x; log scale beyond a 4x range) against the average of the
  primary metric over the QA tasks (y), one point per method with results on all of them (:func:`cost_points`); the
  caption names the tasks and every method left out with the tasks it has no result on;
* ``<metric>_per_task.png``: the mean with its CI per task, for the main QA metrics; only the tasks (and methods)
  with at least one value of the metric get a slot, and the caption names the model's tasks left out.
"""

from __future__ import annotations

from pathlib import Path


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
PER_TASK_METRICS = ("answer_match", "em", "f1", "answer_recall")


def plot_files(data: dict) -> set[str]:
    """Every PNG name :func:`make_plots` can write for ``data`` (a report's data, also an earlier report's
    ``leaderboard.json``): a superset of what it writes, used to remove the stale plots of an earlier report."""
    out: set[str] = set()
    for mod in data.get("models") or []:
        suffix = f"_{mod.get('name')}" if data.get("multi_model") else ""
        out.add(f"cost_accuracy{suffix}.png")
        out |= {f"{m}_per_task{suffix}.png" for m in PER_TASK_METRICS}
        out |= {f"robustness_{r.get('family')}{suffix}.png" for r in data.get("rows") or []
                if r.get("model") == mod.get("name") and r.get("family")}
    return out


def method_styles(methods: list[str]) -> dict[str, dict]:
    """One colour and marker per method, the same in every plot of a model: ``tab10`` up to 10 methods;
    beyond, ``tab20``'s ten dark colours first, then its light ones (matplotlib's default cycle has 10 colours,
    so an 11th method would repeat the first)."""
    import matplotlib

    if len(methods) <= 10:
        colors = [matplotlib.colormaps["tab10"](i) for i in range(10)]
    else:
        t20 = matplotlib.colormaps["tab20"]
        colors = [t20(i) for i in range(0, 20, 2)] + [t20(i) for i in range(1, 20, 2)]
    return {m: {"color": colors[i % len(colors)], "marker": MARKERS[i % len(MARKERS)]} for i, m in enumerate(methods)}


def _finish(plt, fig, ax, out_dir: Path, name: str, caption: str, ylim: bool = True) -> tuple[str, str]:
    """Common tail of every plot: y in [0, 1.05], legend outside, PNG without a timestamp; returns (file, caption)."""
    if ylim:
        ax.set_ylim(0.0, 1.05)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    from .runner import leaderboard_write

    try:
        with leaderboard_write(out_dir / name):  # EACCES, EIO: the command's one line, not a traceback (s57 g2)
            fig.savefig(out_dir / name, dpi=100, metadata={"Software": None})
    finally:
        plt.close(fig)
    return name, caption


def cost_points(rows: list[dict], piv: dict) -> tuple[list[tuple[str, float, float]], list[tuple[str, str]]]:
    """The cost-vs-accuracy points of one model: ``(method, forward passes per generated token, average)`` for each
    method of the pivot ``piv`` with a value on every task of ``piv["average_over"]`` (its pivot average: one task set
    for every point, never an average over fewer tasks), both summed or averaged over those tasks; and
    ``(method, why)`` for each method left out (the tasks it has no result on, or no generated token counted)."""
    over = piv["average_over"]
    pts, left_out = [], []
    for pr in piv["rows"]:
        m = pr["method"]
        lacking = [t for t in over if (pr["values"].get(t) or {}).get("mean") is None]
        if pr["average"] is None or lacking:
            lacking = lacking or list(over)
            left_out.append((m, "no results on any of these tasks" if len(lacking) == len(over) > 1
                             else f"no results on {', '.join(lacking)}"))
            continue
        mine = [r for r in rows if r["method"] == m and r["task"] in over]
        fp = sum((r.get("cost") or {}).get("forward_passes", 0) for r in mine)
        gt = sum((r.get("cost") or {}).get("generated_tokens", 0) for r in mine)
        if not gt:
            left_out.append((m, "no generated tokens counted"))
            continue
        pts.append((m, fp / gt, pr["average"]))
    return pts, left_out


def make_plots(data: dict, out_dir: Path) -> list[tuple[str, str]]:
    """Write the PNG plots of ``data`` (the report's data) into ``out_dir``; returns ``(file name, caption)``
    pairs, robustness and cost plots first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .report import LABELS, confidence_label

    plt.rcParams.update({"svg.hashsalt": "tokrag", "font.size": 9})
    conf = confidence_label(data["bootstrap"]["confidence"])
    primary = data["primary_metric"]
    pl = LABELS.get(primary, primary)
    files: list[tuple[str, str]] = []
    for mod in data["models"]:
        suffix = f"_{mod['name']}" if data["multi_model"] else ""
        who = f" ({mod['label']})" if data["multi_model"] else ""
        rows = [r for r in data["rows"] if r["model"] == mod["name"]]
        methods = mod["methods"]
        style = method_styles(methods)
        # robustness over noise, per family
        fams: dict[str, list[dict]] = {}
        for r in rows:
            if r.get("noise") is not None and primary in (r.get("metrics") or {}):
                fams.setdefault(r["family"], []).append(r)
        for fam, rs in sorted(fams.items()):
            if len({r["noise"] for r in rs}) < 2:
                continue
            fig, ax = plt.subplots(figsize=(6.5, 3.4))
            for m in methods:
                pts = sorted((r["noise"], r["metrics"][primary]) for r in rs if r["method"] == m)
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                ys = [p[1]["mean"] for p in pts]
                lo = [p[1]["lo"] if p[1]["lo"] is not None else p[1]["mean"] for p in pts]
                hi = [p[1]["hi"] if p[1]["hi"] is not None else p[1]["mean"] for p in pts]
                ax.plot(xs, ys, label=m, **style[m])
                ax.fill_between(xs, lo, hi, alpha=0.12, color=style[m]["color"])
            ax.set_xlim(-0.03, 1.03)
            ax.set_xlabel("noise ratio (share of retrieved passages replaced by distractors)")
            ax.set_ylabel(pl)
            ax.set_title(f"Robustness to retrieval noise\n{fam}{who}", fontsize=9)  # two lines: fits beside the legend
            files.append(_finish(plt, fig, ax, out_dir, f"robustness_{fam}{suffix}.png",
                                 f"{pl} against noise ratio per method on {fam}{who}; bands: {conf} CI"))
        # cost vs accuracy
        piv = next(p for p in data["pivot"] if p["model"] == mod["name"])
        pts, left_out = cost_points(rows, piv)
        if pts:
            fig, ax = plt.subplots(figsize=(6.5, 3.6))
            for name, x, y in pts:  # identified by colour and marker in the legend (labels beside close points overlap)
                ax.scatter([x], [y], label=name, s=36, color=style[name]["color"], marker=style[name]["marker"])
            xs = [x for _, x, _ in pts]
            log = max(xs) / min(xs) > 4  # REPLUG-like rows cost k times more: a log axis keeps them readable
            if log:
                from matplotlib.ticker import FuncFormatter

                ax.set_xscale("log")
                plain = FuncFormatter(lambda v, _: f"{v:g}")  # 2, 3, 5 rather than 2×10^0
                ax.xaxis.set_major_formatter(plain)
                ax.xaxis.set_minor_formatter(plain)
            ax.set_xlabel("forward passes per generated token" + (" (log scale)" if log else ""))
            over = piv["average_over"]
            n_tasks = len(over)
            ax.set_ylabel(f"{pl} (mean over {n_tasks} QA task{'s' if n_tasks != 1 else ''})")
            ax.set_title(f"Cost vs accuracy{who}")
            caption = (f"Cost vs accuracy{who}: forward passes per generated token against mean {pl} over the "
                       f"{n_tasks} task{'s' if n_tasks != 1 else ''} {', '.join(over)}; {len(pts)} of {len(methods)} methods")
            if left_out:
                caption += ("; left out (an average over fewer tasks would not compare): "
                            + "; ".join(f"{m} ({why})" for m, why in left_out))
            files.append(_finish(plt, fig, ax, out_dir, f"cost_accuracy{suffix}.png", caption))
        # per-task bars
        byrow = {(r["method"], r["task"]): r for r in rows}
        for metric in [m for m in PER_TASK_METRICS if m in data["metrics"]]:
            has = {(m, t) for (m, t), r in byrow.items() if (r.get("metrics") or {}).get(metric)}
            tasks = [t for t in mod["tasks"] if any((m, t) in has for m in methods)]  # only tasks with a value
            shown = [m for m in methods if any((m, t) in has for t in tasks)]
            if not tasks:
                continue
            fig, ax = plt.subplots(figsize=(max(6.5, 1.5 + 0.35 * len(tasks) * max(1, len(shown))), 3.6))
            width = 0.8 / max(1, len(shown))
            for i, m in enumerate(shown):
                xs, ys, err = [], [], [[], []]  # a method without a value on a task gets no bar there
                for j, t in enumerate(tasks):
                    v = (byrow.get((m, t), {}).get("metrics") or {}).get(metric)
                    if not v:
                        continue
                    xs.append(j + (i - (len(shown) - 1) / 2) * width)
                    ys.append(v["mean"])
                    lo = v["lo"] if v["lo"] is not None else v["mean"]
                    hi = v["hi"] if v["hi"] is not None else v["mean"]
                    err[0].append(max(0.0, v["mean"] - lo))
                    err[1].append(max(0.0, hi - v["mean"]))
                ax.bar(xs, ys, width=width, yerr=err, capsize=2, label=m, color=style[m]["color"])
            ax.set_xticks(range(len(tasks)))
            ax.set_xticklabels(tasks, rotation=15, ha="right")
            ml = LABELS.get(metric, metric)
            ax.set_ylabel(f"{ml} ({conf} CI)")
            ax.set_title(f"{ml} per task{who}")
            caption = f"{ml} per task with {conf} bootstrap CIs{who}"
            no_task = [t for t in mod["tasks"] if t not in tasks]
            no_method = [m for m in methods if m not in shown]
            if no_task:
                caption += f"; no {ml} (not shown) on: {', '.join(no_task)}"
            if no_method:
                caption += f"; methods without any {ml}: {', '.join(no_method)}"
            files.append(_finish(plt, fig, ax, out_dir, f"{metric}_per_task{suffix}.png", caption))
    return files


__all__ = ["cost_points", "make_plots", "plot_files"]
