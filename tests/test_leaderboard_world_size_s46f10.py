"""``tokrag leaderboard run`` started by ``torchrun``/``accelerate launch`` as several processes (review s46 b5, defect 2).

``torchrun --nproc_per_node 2 -m tokrag_model.cli leaderboard run SPEC`` deadlocked silently: one process held the
cell's lock and waited in lm-eval's collectives for the other, which waited for the lock. ``run`` now refuses a
``WORLD_SIZE`` above 1 in one line, before anything loads, and says what to use instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SPEC = """name: tiny
description: tiny
reference: rag-standard
subset: first 3
shared:
  model_args: {pretrained: smollm2-135m-instruct, dtype: float32}
  gen_kwargs: {max_gen_toks: 4}
  limit: 3
  device: cpu
  apply_chat_template: true
  prompt: instruct
tasks: [nq_oracle_bm25]
seeds: [1234]
bootstrap: {iters: 100, seed: 0, confidence: 0.95}
methods:
  - {name: rag-standard, model: rag-standard}
"""


def test_run_under_a_launcher_is_refused_in_one_line(tmp_path: Path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(WORLD_SIZE="2", RANK="1", LOCAL_RANK="1")
    proc = subprocess.run([sys.executable, "-m", "tokrag_model.cli", "leaderboard", "run", str(spec),
                           "--runs-dir", str(tmp_path / "runs")], env=env, capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "WORLD_SIZE" in lines[0] and "2 processes" in lines[0]
    assert "run the leaderboard in one process (--jobs N for parallel cells)" in lines[0]
    assert "-m lm_eval" in lines[0]
    assert not (tmp_path / "runs").exists()  # nothing started


def test_one_process_is_not_refused(monkeypatch):
    from leaderboards import cli

    monkeypatch.setenv("WORLD_SIZE", "1")
    cli._check_args(cli._parser().parse_args(["run", "spec.yaml"]))  # no error
    monkeypatch.setenv("WORLD_SIZE", "2")
    cli._check_args(cli._parser().parse_args(["report", "spec.yaml"]))  # computes no cell: not refused
