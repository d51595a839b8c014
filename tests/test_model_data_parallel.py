"""Scale-out (issue 5 item 7): data-parallel ``lm_eval --model tokrag`` with 2 CPU processes gives the same
per-question outputs and scores as one process (lm-eval shards the requests by rank and gathers them).

On CPUs the processes are started with ``torchrun --nproc_per_node 2 -m lm_eval ...`` (``accelerate launch``
needs MPI for multi-CPU runs); on GPUs ``accelerate launch -m lm_eval ...`` sets the same WORLD_SIZE/RANK
variables that :class:`tokrag_model.distributed.DataParallel` reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TASK_DIR = Path(__file__).parent / "fixtures" / "tokrag_model_task"
BIN = Path(sys.executable).parent


def _run(prefix: list[str], out: Path) -> tuple[dict, dict]:
    cmd = [*prefix, "--model", "tokrag", "--model_args", "pretrained=smollm2-135m-instruct,k=2",
           "--tasks", "tokrag_model_mini", "--include_path", str(TASK_DIR), "--device", "cpu",
           "--output_path", str(out), "--log_samples"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKRAG_NO_TASK_PATH": "1"}
    out.mkdir(parents=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    results["_stderr"] = proc.stderr
    samples = {}
    for line in next(out.rglob("samples_tokrag_model_mini_*.jsonl")).read_text().splitlines():
        s = json.loads(line)
        # lm-eval pads the shorter shard with a copy of one of its requests, whose response it appends to
        # that doc's ``resps``: compare the first response (the one that was scored) and the metric.
        samples[s["doc_id"]] = (s["resps"][0][0], s["filtered_resps"], s["answer_match"])
    return results, samples


@pytest.mark.reliability
def test_two_cpu_processes_give_the_single_process_numbers(tmp_path):
    single, single_samples = _run([str(BIN / "lm_eval")], tmp_path / "single")
    dp, dp_samples = _run([str(BIN / "torchrun"), "--nproc_per_node", "2", "-m", "lm_eval"], tmp_path / "dp")
    assert "on rank 1" in dp["_stderr"], "the second process did not get a shard of the requests"
    assert len(single_samples) == 3
    assert dp_samples == single_samples
    key = "answer_match,none"
    assert dp["results"]["tokrag_model_mini"][key] == single["results"]["tokrag_model_mini"][key]
