"""A helper of ``tokrag leaderboard run --jobs N`` says nothing the main process already said (s58 rt2).

The main process gives every helper ``--jobs-helper``, but ``--cell-budget-dir`` only with ``--max-cells``, and
``_run_spec`` told a helper from the main process by ``cell_budget_dir`` alone: a helper of a plain ``run --jobs 2``
logged the run's other-inputs warning again (``3 of the 4 cells to do have a finished run with other inputs``, after
the main's ``4 of the 4``) and the seed notes, and removed the dead runs' folders a second time. Now ``run_spec`` takes
``jobs_helper`` (the CLI passes ``--jobs-helper``): a helper logs neither and removes nothing.
"""

from __future__ import annotations

import logging
import subprocess
import time

from leaderboard_helpers import runner_cmd, subprocess_env, write_spec

import leaderboards.runner as runner
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

_OTHER = "have a finished run with other inputs"


def _ran_with_other_limit(tmp_path):
    """The toy spec's 4 cells finished with ``limit: 2``, and the spec now at ``limit: 3`` (every key differs)."""
    run_spec(load_spec(write_spec(tmp_path, limit=2)), tmp_path / "runs", progress=False)
    return write_spec(tmp_path, limit=3)


def test_a_helper_in_process_neither_warns_nor_cleans_up(tmp_path, caplog, monkeypatch):
    spec = _ran_with_other_limit(tmp_path)
    removed = []
    monkeypatch.setattr(runner, "_remove_stale_budgets", lambda runs: removed.append(runs))
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        summary = run_spec(load_spec(spec), tmp_path / "runs", progress=False, jobs_helper=True)
    assert len(summary.ran) == 4  # it ran the cells as before
    assert removed == []
    assert not [r for r in caplog.records if _OTHER in r.getMessage()]


def test_the_main_process_still_warns_and_cleans_up(tmp_path, caplog, monkeypatch):
    spec = _ran_with_other_limit(tmp_path)
    removed = []
    monkeypatch.setattr(runner, "_remove_stale_budgets", lambda runs: removed.append(runs))
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        run_spec(load_spec(spec), tmp_path / "runs", progress=False)
    assert removed == [tmp_path / "runs"]
    said = [r.getMessage() for r in caplog.records if _OTHER in r.getMessage()]
    assert len(said) == 1 and "4 of the 4 cells to do" in said[0]


def test_run_jobs_2_says_the_other_inputs_warning_once(tmp_path):
    """The real command and its real helper: both processes are held inside their first cells (ToyLM's TOYLM_HOLD)
    until both wait, so the helper starts with cells left to run, whatever the machine's load."""
    spec = _ran_with_other_limit(tmp_path)
    gate = tmp_path / "gate"
    env = subprocess_env(tmp_path / "cache") | {"TOKRAG_GIT_COMMIT": "test-commit", "TOYLM_HOLD": str(gate)}
    proc = subprocess.Popen([*runner_cmd(spec, tmp_path / "runs"), "--jobs", "2"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        while proc.poll() is None and len(list(tmp_path.glob("gate.waiting-*"))) < 2:
            time.sleep(0.05)
        waiting = len(list(tmp_path.glob("gate.waiting-*")))
        gate.write_text("", encoding="utf-8")
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    assert waiting == 2, err[-3000:]  # the main process and one helper, each inside a cell
    said = [x for x in err.splitlines() if _OTHER in x]
    assert len(said) == 1, said
    assert "4 of the 4 cells to do" in said[0]
