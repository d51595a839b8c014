"""``tokrag leaderboard run --jobs N`` starts a helper process only for a cell left to run (s58 f3).

``_cells`` started ``jobs - 1`` helpers however few cells were left: ``--jobs 6`` on a 2-cell spec started 5 helper
processes (each importing torch and lm-eval), 4 of which found every cell claimed or done and exited; ``--jobs 1000``
on 4 cells would start 999. Now the run has ``min(jobs, cells left to run, --max-cells)`` processes, the main one
included, and says so in one line when that is fewer than ``--jobs``.

The in-process tests count the helpers through a fake ``subprocess.Popen`` in ``leaderboards.runner`` that records
the command and ends at once with an empty summary (the main process then runs every cell itself): no timing, no
helper process. One test runs the real command with its real helper.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest
from leaderboard_helpers import runner_cmd, subprocess_env, write_spec

import leaderboards.runner as runner
from leaderboards.keys import cell_keys
from leaderboards.runner import SUMMARY_OPTION, run_spec
from leaderboards.spec import load_spec


class _FakeHelper:
    """A helper that ends at once (exit 0) having run no cell: its summary file says so."""

    def __init__(self, cmd, **_kw):
        self.args = list(cmd)
        self.pid = 0
        self.returncode = 0
        out = Path(self.args[self.args.index(SUMMARY_OPTION) + 1])
        out.write_text(json.dumps({"ran": [], "skipped": [], "by_other": [], "changed": [], "forward_passes": 0,
                                   "replayed_requests": 0}), encoding="utf-8")

    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0


@pytest.fixture
def helpers(monkeypatch):
    """The commands of the helpers ``run_spec`` starts (none is really started)."""
    started: list[list[str]] = []
    real = subprocess.Popen  # runner.subprocess is the module: other commands (git, ...) still run

    def popen(cmd, *a, **kw):
        if not (isinstance(cmd, (list, tuple)) and SUMMARY_OPTION in cmd):
            return real(cmd, *a, **kw)
        started.append(list(cmd))
        return _FakeHelper(cmd, **kw)

    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    return started


def _spec(tmp_path: Path, tasks=("toy_qa",)):
    """The toy spec: 2 methods x ``tasks`` x seed 1 (2 cells with one task, 4 with two)."""
    return load_spec(write_spec(tmp_path / "s", tasks=list(tasks), limit=3))


def _runner_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "leaderboards.runner" and "--jobs" in r.getMessage()]


def test_jobs_above_the_cells_starts_one_helper_per_cell_beyond_the_first(tmp_path, helpers, caplog):
    """--jobs 6 on 2 cells: 1 helper (was 5), the line says why; every cell still runs."""
    spec = _spec(tmp_path)
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=6)
    assert len(helpers) == 1
    assert summary.ran == [c.cell_id for c, _, _ in cell_keys(spec)] and len(summary.ran) == 2
    assert _runner_lines(caplog) == ["leaderboard toy: --jobs 6: 2 cells to run, so 2 processes"]


def test_jobs_equal_to_the_cells_is_unchanged(tmp_path, helpers, caplog):
    """--jobs 2 on 2 cells: 1 helper, as before, and no line."""
    spec = _spec(tmp_path)
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=2)
    assert len(helpers) == 1 and len(summary.ran) == 2
    assert _runner_lines(caplog) == []


def test_the_cap_counts_the_cells_left_after_the_finished_ones(tmp_path, helpers, caplog):
    """4 cells, 3 of them finished by an earlier run: --jobs 4 runs the last one in the main process alone."""
    spec = _spec(tmp_path, tasks=("toy_qa", "toy_qa_noise67"))
    runs = tmp_path / "runs"
    first = run_spec(spec, runs, progress=False, max_cells=3)  # jobs 1: no helper
    assert len(first.ran) == 3 and helpers == []
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        second = run_spec(spec, runs, progress=False, jobs=4)
    assert helpers == []  # was 3
    assert second.skipped == first.ran and len(second.ran) == 1
    assert _runner_lines(caplog) == ["leaderboard toy: --jobs 4: 1 cell to run, so 1 process (no helper)"]


def test_max_cells_bounds_the_processes_too(tmp_path, helpers, caplog):
    """4 cells, --jobs 4 --max-cells 2: 2 processes (1 helper, was 3), sharing the one count of started cells."""
    spec = _spec(tmp_path, tasks=("toy_qa", "toy_qa_noise67"))
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=4, max_cells=2)
    assert len(helpers) == 1
    assert runner.BUDGET_OPTION in helpers[0]  # the helper still shares the --max-cells count
    assert len(summary.ran) == 2 and len(summary.left) == 2
    assert _runner_lines(caplog) == ["leaderboard toy: --jobs 4: 4 cells to run, --max-cells 2, so 2 processes"]


def test_max_cells_1_runs_in_the_main_process_alone(tmp_path, helpers):
    """--jobs 3 --max-cells 1: no helper (was 2); one cell runs, one is left."""
    spec = _spec(tmp_path)
    summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=3, max_cells=1)
    assert helpers == [] and len(summary.ran) == 1 and len(summary.left) == 1


@pytest.mark.parametrize("jobs, cells, max_cells, want", [
    (1000, 4, None, (4, "--jobs 1000: 4 cells to run, so 4 processes")),
    (4, 4, None, (4, "")),
    (2, 4, None, (2, "")),
    (1, 4, 1, (1, "")),
    (5, 4, 2, (2, "--jobs 5: 4 cells to run, --max-cells 2, so 2 processes")),
    (5, 4, 6, (4, "--jobs 5: 4 cells to run, so 4 processes")),
    (5, 4, 4, (4, "--jobs 5: 4 cells to run, so 4 processes")),
    (3, 1, None, (1, "--jobs 3: 1 cell to run, so 1 process (no helper)")),
    (3, 0, None, (1, "--jobs 3: 0 cells to run, so 1 process (no helper)")),
])
def test_run_processes(jobs, cells, max_cells, want):
    assert runner.run_processes(jobs, cells, max_cells) == want


def test_the_real_command_with_jobs_above_the_cells(tmp_path):
    """The CLI: --jobs 5 on 2 cells says '2 processes' on stderr and prints one summary of both cells."""
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3)
    runs = tmp_path / "runs"
    proc = subprocess.run([*runner_cmd(spec, runs), "--jobs", "5"], env=subprocess_env(tmp_path / "cache"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "leaderboard toy: --jobs 5: 2 cells to run, so 2 processes" in proc.stderr
    cells = [c.cell_id for c, _, _ in cell_keys(load_spec(spec))]
    summary = json.loads(proc.stdout)
    assert summary["ran"] == cells and summary["skipped"] == [] and summary["by_other"] == []
