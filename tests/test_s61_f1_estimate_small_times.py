"""s61 f1: ``tokrag leaderboard run SPEC --estimate`` printed a grid of a few small cells as ``0.00`` hours (the
table's hours column, and ``0.00 cell-hours ...; about 0.00 h wall`` in the total), which a new user read as free or
unknown. The printed times are now seconds or minutes under an hour (:func:`leaderboards.estimate.duration`) and hours
from an hour on, as before; the JSON keeps ``cell_hours``, ``wall_hours`` and ``by_method``'s ``hours`` (and adds the
same in seconds). ToyLM spec (2 methods x 2 tasks), no cell run, priced at the fallback seconds per question."""

from __future__ import annotations

import json

import pytest

from leaderboards.cli import main as lb_main
from leaderboards.estimate import duration, estimate
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


def _estimate(tmp_path, capsys, limit: int, fallback: str, jobs: int) -> tuple[list[str], dict]:
    """The printed lines and the last-line JSON of ``run --estimate`` over the toy spec of ``limit`` questions a cell."""
    spec = load_spec(write_spec(tmp_path, limit=limit))
    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--estimate", "--jobs", str(jobs),
                    "--fallback-s-per-question", fallback]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return lines, json.loads(lines[-1])


def _rows(lines: list[str]) -> list[str]:
    """The table's method rows (model column cut off: the toy weights' path)."""
    return [line.split("toy_weights.bin", 1)[1] for line in lines if "toy_weights.bin" in line and "fallback" in line]


def _total(lines: list[str]) -> str:
    line = next(line for line in lines if line.startswith("total"))
    return line.split("finishes), ", 1)[1]


AT_MOST = "(at most: 4 cells count their limit as their number of questions; a task's size is known once a cell of "


@pytest.mark.parametrize("fallback, row_time, total", [
    # 2 cells x 4 questions x 0.5 s a row; 16 questions x 0.5 s in all, 2 processes
    ("0.5", "4.0 s", "8.0 cell-seconds (CPU-seconds, one process per cell); about 4.0 s wall with --jobs 2 on 2 free "
                     "cores"),
    ("30", "4.0 min", "8.0 cell-minutes (CPU-minutes, one process per cell); about 4.0 min wall with --jobs 2 on 2 "
                      "free cores"),
])
def test_a_small_estimate_prints_seconds_or_minutes_not_zero_hours(tmp_path, capsys, fallback, row_time, total):
    lines, est = _estimate(tmp_path, capsys, 4, fallback, 2)
    head = next(line for line in lines if line.startswith("model "))
    assert head.endswith(f"{'s/question':>10} {'time':>10}  source") and "hours" not in head
    assert _rows(lines) == [f" {'standard':<26} {2:>5} {8:>9} {float(fallback):>10} {row_time:>10}  fallback",
                            f" {'none':<26} {2:>5} {8:>9} {float(fallback):>10} {row_time:>10}  fallback"]
    assert _total(lines) == total
    assert "0.00" not in "\n".join(lines[:-1])
    s = 16 * float(fallback)  # the JSON keeps its hours (rounded to 0.01 h) and has the same in seconds
    assert (est["cell_hours"], est["wall_hours"], est["cell_seconds"], est["wall_seconds"]) == (
        round(s / 3600, 2), round(s / 7200, 2), s, s / 2)
    rows = estimate(load_spec(tmp_path / "toy.yaml"), tmp_path / "runs", jobs=2, fallback=float(fallback))["by_method"]
    assert [(b["hours"], b["seconds"]) for b in rows] == [(round(s / 7200, 2), s / 2)] * 2  # not in the printed JSON


def test_a_large_estimate_prints_hours_as_before(tmp_path, capsys):
    lines, est = _estimate(tmp_path, capsys, 10**6, "1", 3)  # 277.78 h a cell
    assert _rows(lines) == [f" {'standard':<26} {2:>5} {2000000:>9} {1.0:>10} {'555.56 h':>10}  fallback",
                            f" {'none':<26} {2:>5} {2000000:>9} {1.0:>10} {'555.56 h':>10}  fallback"]
    assert _total(lines) == ("1111.11 cell-hours (CPU-hours, one process per cell); about 555.56 h wall with --jobs 3 "
                             "on 3 free cores")
    assert (est["cell_hours"], est["wall_hours"], est["cell_seconds"], est["wall_seconds"]) == (
        1111.11, 555.56, 4e6, 2e6)


@pytest.mark.parametrize("seconds, text", [
    (None, "-"), (0.0, "0.0 s"), (0.01, "<0.1 s"), (8.0, "8.0 s"), (9.94, "9.9 s"), (9.95, "10 s"), (59.4, "59 s"),
    (59.5, "1.0 min"), (750.0, "12.5 min"), (3596.0, "59.9 min"), (3597.0, "1.00 h"), (1e6, "277.78 h"),
])
def test_duration_picks_a_readable_unit(seconds, text):
    assert duration(seconds) == text
