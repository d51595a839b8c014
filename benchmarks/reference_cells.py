"""Reference cells (issue 10): does retrieval visibly help SmolLM2-135M-Instruct with its chat template?

    python benchmarks/reference_cells.py [--spec leaderboards/specs/reference-cells.yaml] [--runs-dir DIR] [--no-run]

Runs the spec's four cells with the resumable leaderboard runner (finished cells are skipped; a killed
run resumes), then reads the figures from the run folders with the report's own statistics
(:func:`leaderboards.report.compute`: percentile bootstrap over questions, paired per question):

* ``gold_standard`` / ``bm25_standard``: rag-standard's answer match on nq_oracle_gold / nq_oracle_bm25;
* ``none``: rag-none's answer match (the same 300 questions; its two cells must agree, checked);
* ``ci_low_gold_minus_none`` / ``ci_low_bm25_minus_none``: lower end of the paired 95% bootstrap CI
  of rag-standard − rag-none per question (null where the report gives that comparison no CI: one question, no
  question differs, or every question differs by the same amount; ``met`` is then false);
* ``p_gold_minus_none`` / ``p_bm25_minus_none``: that comparison's p (3 significant digits: ``3.01e-36``, never 0.0);
* ``empty_rate_standard``: rate of empty scored answers of rag-standard over both tasks (``empty_pred``).

Expected (issue 10, "What must hold" 5): gold >= 0.28, bm25 >= 0.18, none <= 0.12, both CI lows > 0;
``met`` says which hold. Prints readable lines; the last line is one JSON object. A ``--spec`` that is not a
spec file or a ``--runs-dir`` that cannot be written (with ``--no-run``: that is not a folder) gets one
``reference_cells.py: error: ...`` line and exit 2 before any run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXPECTED = {"gold_standard": (">=", 0.28), "bm25_standard": (">=", 0.18), "none": ("<=", 0.12),
            "ci_low_gold_minus_none": (">", 0.0), "ci_low_bm25_minus_none": (">", 0.0)}


def figures(data: dict) -> dict:
    """The reference figures from :func:`leaderboards.report.compute` output (rows per method and task)."""
    rows = {(r["method"], r["task"]): r for r in data["rows"]}

    def am(method: str, task: str) -> float:
        return rows[(method, task)]["metrics"]["answer_match"]["mean"]

    none_gold, none_bm25 = am("rag-none", "nq_oracle_gold"), am("rag-none", "nq_oracle_bm25")
    if abs(none_gold - none_bm25) > 1e-12:
        raise SystemExit(f"rag-none differs between its two cells ({none_gold} vs {none_bm25}): it must ignore passages")
    out = {
        "gold_standard": am("rag-standard", "nq_oracle_gold"),
        "bm25_standard": am("rag-standard", "nq_oracle_bm25"),
        "none": none_gold,
    }
    for task, key in (("nq_oracle_gold", "gold"), ("nq_oracle_bm25", "bm25")):
        # the report pairs every method with the reference: row["paired"][reference][metric] = method - reference
        paired = rows[("rag-standard", task)]["paired"]["rag-none"]["answer_match"]
        out[f"ci_low_{key}_minus_none"] = paired["lo"]
        out[f"ci_high_{key}_minus_none"] = paired["hi"]
        out[f"p_{key}_minus_none"] = paired["p"]
    empties = [rows[("rag-standard", t)]["metrics"]["empty_pred"] for t in ("nq_oracle_gold", "nq_oracle_bm25")]
    out["empty_rate_standard"] = sum(e["mean"] * e["n"] for e in empties) / sum(e["n"] for e in empties)
    out["overlong_rate_standard"] = sum(rows[("rag-standard", t)]["metrics"]["overlong_pred"]["mean"]
                                        for t in ("nq_oracle_gold", "nq_oracle_bm25")) / 2
    out["n"] = rows[("rag-standard", "nq_oracle_gold")]["n"]
    # a p-value with 3 significant digits (round(v, 4) wrote the exact binomial p 3.01e-36 as 0.0); the rest to 4
    # decimals; a paired CI bound is None where the report gives that comparison no CI (one question, or none differs)
    return {k: (float(f"{v:.3g}") if k.startswith("p_") else round(v, 4)) if isinstance(v, float) else v
            for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(REPO / "leaderboards" / "specs" / "reference-cells.yaml"),
                    help="leaderboard spec YAML (default leaderboards/specs/reference-cells.yaml)")
    ap.add_argument("--runs-dir", default=None, help="run folders (default: the runner's, $TOKRAG_RUNS_DIR or ./runs)")
    ap.add_argument("--no-run", action="store_true", help="only read finished cells (fails if one is missing)")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.path.insert(0, str(REPO))
    from benchmarks._cli import checkout, existing_dir, existing_file, writable_dir

    existing_file("--spec", args.spec, "specs live in leaderboards/specs/*.yaml")  # bad options: one line before any run
    if args.runs_dir is not None:
        (existing_dir if args.no_run else writable_dir)("--runs-dir", args.runs_dir)
    started = checkout()  # the code this run reads (the provenance's commit), before any cell runs

    from leaderboards.report import collect, compute
    from leaderboards.runner import resolve_runs_dir, run_spec
    from leaderboards.spec import load_spec

    spec = load_spec(args.spec)
    runs = resolve_runs_dir(spec, args.runs_dir)
    t0 = time.perf_counter()
    if not args.no_run:
        summary = run_spec(spec, runs, progress=sys.stderr.isatty())
        print(f"cells run now: {len(summary.ran)}, already done: {len(summary.skipped)} ({time.perf_counter() - t0:.0f} s)")
    collected = collect(spec, runs)
    data = compute(spec, collected, timings=True)
    out = figures(data)
    for r in data["rows"]:
        m = r["metrics"]["answer_match"]
        ci = "" if m.get("lo") is None else f" [{m['lo']:.3f}, {m['hi']:.3f}]"  # no CI over one question (report)
        print(f"{r['method']:>13} {r['task']:<15} answer match {m['mean']:.3f}{ci} n={r['n']}"
              f"  empty {r['metrics']['empty_pred']['mean']:.3f}  overlong {r['metrics']['overlong_pred']['mean']:.3f}"
              f"  wall {r['cost'].get('wall_s', 0):.0f} s")
    ops = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b}
    # a bound the report does not give (None: no CI for that comparison) does not meet its expectation
    out["met"] = {k: out[k] is not None and bool(ops[op](out[k], v)) for k, (op, v) in EXPECTED.items()}
    from benchmarks._cli import provenance

    # each cell's key (its run folder's name) fingerprints its model, data, code and libraries
    cells = {cid: entry[1] for cid, entry in collected.items()} if isinstance(collected, dict) else {}
    out["provenance"] = provenance(None, {"cells": cells}, started)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    from benchmarks._cli import run

    raise SystemExit(run(main))
