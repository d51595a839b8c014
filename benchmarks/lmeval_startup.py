"""lm-eval start-up: CPU seconds of ``TaskManager()`` (lm-eval's task index) with tokrag's task-index cache off, cold and
warm (:mod:`tokrag_model._task_index_cache`), and of the README's main job
(``lm_eval --model tokrag --model_args pretrained=smollm2-135m-instruct --tasks wiki_lm_bm25 --device cpu --limit 20``)
with the cache off and warm, with its two metrics (the same with and without the cache). The last output line is one
JSON object. Each figure is one fresh process's CPU (user + system, ``resource.RUSAGE_CHILDREN``): figures taken on
a busy machine read higher than on an idle one, so compare only figures of the same run.

    TOKRAG_DATA_DIR=../shared/data python benchmarks/lmeval_startup.py            # all (~2-3 min CPU)
    TOKRAG_DATA_DIR=../shared/data python benchmarks/lmeval_startup.py --no-main-job

The cold figure is taken in a new temporary cache folder; the main job runs in ``$TOKRAG_CACHE_DIR`` (its converted
model and BM25 index), whose task-index cache is filled first when it is not yet.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

# `python benchmarks/lmeval_startup.py` puts benchmarks/ first on sys.path, where benchmarks/retrieval.py would shadow
# the retrieval package (imported by the provenance, benchmarks._cli): use the repository root instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

_BUILD = ("import time; from lm_eval.tasks import TaskManager; t = time.process_time(); m = TaskManager(); "
          "print('BUILD', time.process_time() - t, len(m.task_index))")
MAIN_JOB = ["--model", "tokrag", "--model_args", "pretrained=smollm2-135m-instruct", "--tasks", "wiki_lm_bm25",
            "--device", "cpu", "--limit", "20"]


def _child(cmd: list[str], env: dict) -> tuple[float, str]:
    """Run ``cmd``; its CPU seconds (user + system of the process and its children) and its stdout. Raises
    SystemExit with its output's tail when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"lmeval_startup.py: error: {' '.join(cmd[:4])} ... exited {proc.returncode}: "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(cpu, 2), proc.stdout


def _task_manager(env: dict) -> dict:
    cpu, out = _child([sys.executable, "-c", _BUILD], env)
    line = next(x for x in out.splitlines() if x.startswith("BUILD "))
    return {"build_cpu_s": round(float(line.split()[1]), 2), "process_cpu_s": cpu, "entries": int(line.split()[2])}


def _main_job(env: dict, out_dir: str) -> dict:
    cpu, _ = _child([sys.executable, "-m", "lm_eval", *MAIN_JOB, "--output_path", out_dir], env)
    found = [os.path.join(d, f) for d, _, fs in os.walk(out_dir) for f in fs if f.startswith("results")]
    results = json.load(open(max(found, key=os.path.getmtime), encoding="utf-8"))["results"]["wiki_lm_bm25"]
    return {"process_cpu_s": cpu, "bits_per_byte": results["bits_per_byte,none"],
            "word_perplexity": results["word_perplexity,none"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-main-job", action="store_true", help="time TaskManager() only, not the README's main job")
    args = ap.parse_args(argv)
    from benchmarks._cli import checkout, provenance

    started = checkout()  # the code the child processes read (the provenance's commit), before the first one
    base = {k: v for k, v in os.environ.items() if k != "TOKRAG_NO_TASK_INDEX_CACHE"}
    off = {**base, "TOKRAG_NO_TASK_INDEX_CACHE": "1"}
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="tokrag-startup-") as tmp:
        fresh = {**base, "TOKRAG_CACHE_DIR": os.path.join(tmp, "cache")}
        report["task_manager_off"] = _task_manager(off)
        report["task_manager_cold"] = _task_manager(fresh)
        report["task_manager_warm"] = _task_manager(fresh)
        print(json.dumps(report), flush=True)
        if not args.no_main_job:
            _task_manager(base)  # fills $TOKRAG_CACHE_DIR's task-index cache when it is not yet
            report["main_job_off"] = _main_job(off, os.path.join(tmp, "off"))
            report["main_job_warm"] = _main_job(base, os.path.join(tmp, "warm"))
            report["main_job_same_metrics"] = all(report["main_job_off"][k] == report["main_job_warm"][k]
                                                  for k in ("bits_per_byte", "word_perplexity"))
    # the figures are child processes' (lm_eval on --device cpu): nothing was loaded in this one
    report["provenance"] = provenance("cpu" if not args.no_main_job else None, started=started)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
