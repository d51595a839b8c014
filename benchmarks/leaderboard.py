"""Benchmark: wall time and peak memory of a full leaderboard run (default: the ``ci`` spec), then the
cost of a second run over the finished folders (must be 0 forward passes and 0 cells run: ``rerun_ok``, exit 1
when false; its wall time, expected under 10 s, is the figure ``second_run_wall_s`` with ``rerun_fast``, which
does not set the exit status: a loaded CI machine would make it flaky) and of the report.

    python benchmarks/leaderboard.py [--spec leaderboards/specs/ci.yaml] [--runs-dir DIR] [--keep] [--jobs N]

Uses a fresh temporary run folder unless ``--runs-dir`` is given (an existing folder measures a resume).
Peak memory: the process' maximum resident set size (``getrusage``, MiB) over the whole run, and the
largest per-cell peak recorded in the cells' ``cost.json``. Prints readable figures; the last line is
one JSON object. Its ``report_dir`` is the report folder, or null when it was in the temporary run folder,
deleted at the end (without ``--keep`` or ``--runs-dir``). Exit status: 0, or 1 when the second run failed or
``rerun_ok`` is false (the JSON line is printed first), or 2 with one ``leaderboard.py: error: ...`` line for a
bad option (a ``--spec`` that is not a spec file, a ``--runs-dir`` that cannot be written) before any run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RERUN_MAX_S = 10.0
"""The second run over finished folders is expected to take less than this (seconds): ``rerun_fast`` (a figure,
not part of ``rerun_ok`` or the exit status)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--spec", default=str(REPO / "leaderboards" / "specs" / "ci.yaml"),
                    help="leaderboard spec YAML (default leaderboards/specs/ci.yaml)")
    ap.add_argument("--runs-dir", default=None,
                    help="run folder (default: a fresh temporary folder; an existing one measures a resume)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary run folder (report_dir then points into it; else it is null)")
    ap.add_argument("--jobs", type=int, default=1, help="runner processes (peak memory is then per process)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from benchmarks._cli import checkout, existing_file, writable_dir
    from leaderboards.runner import check_run_args

    existing_file("--spec", args.spec, "specs live in leaderboards/specs/*.yaml")
    if args.runs_dir is not None:
        writable_dir("--runs-dir", args.runs_dir)
    check_run_args(args.jobs)  # the runner's own --jobs check
    started = checkout()  # the code this run reads (the provenance's commit), before any cell runs
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from leaderboards.keys import cell_keys
    from leaderboards.report import build_report
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    spec = load_spec(args.spec)
    tmp = None
    runs = Path(args.runs_dir) if args.runs_dir else Path(tmp := tempfile.mkdtemp(prefix="tokrag-lb-bench-"))
    try:
        keyed = [(cell.label, key) for cell, key, _ in cell_keys(spec)]
        first_keys = [key for _label, key in keyed]
        t0 = time.perf_counter()
        first = run_spec(spec, runs, progress=False, jobs=args.jobs)
        t_first = time.perf_counter() - t0
        maxrss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cell_peaks, cell_walls, fwd, gen = [], [], 0, 0
        # the cells as finished (their folders), not keys recomputed now: code edited during a long
        # run would give new keys and hide the cells just measured
        for key in first_keys:
            cost = json.loads((runs / key / "cost.json").read_text())
            cell_peaks.append(cost["peak_rss_mib"])
            cell_walls.append(cost["wall_s"])
            fwd += int(cost["forward_passes"])
            gen += int(cost["generated_tokens"])
        # second run in a fresh process: what a user (or CI) sees when everything is cached
        t1 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "leaderboards.cli", "run", str(spec.path), "--runs-dir", str(runs),
                               "--no-progress"], capture_output=True, text=True, cwd=REPO)
        t_second = time.perf_counter() - t1
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        second = json.loads(proc.stdout.strip().splitlines()[-1])
        t2 = time.perf_counter()
        out = build_report(spec, runs, runs / "reports" / spec.name)
        t_report = time.perf_counter() - t2
        res = {
            "spec": spec.name,
            "jobs": args.jobs,
            "cells": len(cell_walls),
            "cells_run": len(first.ran),
            "forward_passes": fwd,
            "generated_tokens": gen,
            "first_run_wall_s": round(t_first, 1),
            "sum_cell_wall_s": round(sum(cell_walls), 1),
            "peak_rss_mib_process": round(maxrss_mib, 1),
            "peak_rss_mib_max_cell": round(max(cell_peaks), 1),
            "second_run_wall_s": round(t_second, 2),
            "second_run_forward_passes": second["forward_passes"],
            "second_run_cells_run": len(second["ran"]),
            "report_wall_s": round(t_report, 2),
            # the temporary run folder (and the report in it) is deleted below unless --keep
            "report_dir": None if tmp and not args.keep else str(out),
        }
        res["rerun_ok"] = bool(res["second_run_forward_passes"] == 0 and res["second_run_cells_run"] == 0)
        res["rerun_fast"] = bool(t_second < RERUN_MAX_S)
        print(f"leaderboard {spec.name}: {res['cells']} cells, {res['cells_run']} run here, "
              f"{res['forward_passes']} forward passes, {res['generated_tokens']} generated tokens (all cells)")
        print(f"first run: {res['first_run_wall_s']} s wall (cells {res['sum_cell_wall_s']} s), "
              f"peak RSS {res['peak_rss_mib_process']} MiB (largest cell peak {res['peak_rss_mib_max_cell']} MiB)")
        print(f"second run (fresh process): {res['second_run_wall_s']} s, {res['second_run_forward_passes']} forward passes, "
              f"{res['second_run_cells_run']} cells run")
        print(f"report: {res['report_wall_s']} s -> {out}" + ("" if res["report_dir"] else " (temporary, deleted now)"))
        if not res["rerun_ok"]:
            print("second run: expected 0 forward passes and 0 cells run (rerun_ok false)", file=sys.stderr)
        if not res["rerun_fast"]:
            print(f"second run: {res['second_run_wall_s']} s, expected < {RERUN_MAX_S:g} s (rerun_fast false; not an error)",
                  file=sys.stderr)
        from benchmarks._cli import provenance

        # each cell's key (its folder's name) fingerprints its model, data, code and libraries; the cells record
        # their device and machine in their own provenance.json
        res["provenance"] = provenance(None, {"cells": dict(keyed)}, started)
        print(json.dumps(res, sort_keys=True))
        return 0 if res["rerun_ok"] else 1
    finally:
        if tmp and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    from benchmarks._cli import run

    sys.exit(run(main))
