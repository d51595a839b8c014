"""``tokrag leaderboard run --no-progress``, the mode for a log file, names each cell in its log: one stderr line
when a cell starts (its cell id and run folder) and one when it finishes (with its wall seconds and forward passes
as its ``cost.json`` records them), in the main process and the helpers of ``--jobs N``; with progress bars nothing
extra. Its log used to hold only the runner's and lm-eval's records, none naming the method, cell or folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from leaderboard_helpers import REPO, pin_cell_keys, write_spec

from leaderboards.runner import NO_PROGRESS_ENV, run_spec
from leaderboards.spec import load_spec

STARTED = re.compile(r"^leaderboard: cell (\S+) started in (\S+)$", re.M)
FINISHED = re.compile(r"^leaderboard: cell (\S+) finished in (\S+): ([0-9.]+) s, (\d+) forward passes$", re.M)


def test_no_progress_prints_a_line_per_cell_start_and_finish(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec = load_spec(write_spec(tmp_path, limit=2, tasks=["toy_qa"]))
    runs = tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    err = capsys.readouterr().err
    started, finished = STARTED.findall(err), FINISHED.findall(err)
    cells = [c.cell_id for c in spec.cells()]
    assert [c for c, _ in started] == cells and [f[0] for f in finished] == cells
    for (cell, folder), (_, folder2, wall, passes) in zip(started, finished):
        cost = json.loads((Path(folder) / "cost.json").read_text())
        assert folder == folder2 and Path(folder).parent == runs.resolve()
        assert json.loads((Path(folder) / "config.json").read_text())["cell_id"] == cell
        assert float(wall) == round(cost["wall_s"], 1) and int(passes) == cost["forward_passes"] > 0
    assert err.index(f"cell {cells[0]} finished") < err.index(f"cell {cells[1]} started")
    run_spec(spec, tmp_path / "runs2", progress=True)  # with bars: no such line
    assert "leaderboard: cell" not in capsys.readouterr().err


def _run(tmp_path: Path, spec: Path, runs: Path, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in NO_PROGRESS_ENV} | {"TOKRAG_GIT_COMMIT": "test-commit"}
    proc = subprocess.run([sys.executable, "-m", "leaderboards.cli", "run", str(spec), "--runs-dir", str(runs),
                           "--jobs", "2", *extra], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def test_the_helpers_of_jobs_print_their_cells_lines_only_without_bars(tmp_path):
    """``--jobs 2 --no-progress``: every cell is started and finished once across both processes, each line naming
    it; ``--jobs 2`` with bars: the helpers (always without bars) print no such line either."""
    spec = write_spec(tmp_path, limit=3, delay=0.1)
    err = _run(tmp_path, spec, tmp_path / "runs", "--no-progress")
    cells = sorted(c.cell_id for c in load_spec(spec).cells())
    started, finished = STARTED.findall(err), FINISHED.findall(err)
    assert sorted(c for c, _ in started) == cells and sorted(f[0] for f in finished) == cells
    assert {c: d for c, d in started} == {f[0]: f[1] for f in finished}
    assert "leaderboard: cell" not in _run(tmp_path, spec, tmp_path / "runs2")
