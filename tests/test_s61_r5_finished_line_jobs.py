"""``tokrag leaderboard run --jobs 2`` ends with the closing stderr line of s61 nu1 (5cf64e0) once, from its main
process (s61 r5, review of 5cf64e0): a ``--jobs`` helper writes its summary to ``--summary-file`` and must not print
the line too. The real command (``python -m leaderboards.cli``) and its real helper process, on the toy model.

On 4adc625's tree (before 5cf64e0) no such line is printed at all, so the test fails there.
"""
from __future__ import annotations

import json
import shlex
import subprocess

from leaderboard_helpers import runner_cmd, subprocess_env, write_spec


def _closing_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "build the report with:" in line]


def test_jobs_2_prints_the_closing_line_once_from_the_main_process(tmp_path):
    spec = write_spec(tmp_path, tasks=["toy_qa"], limit=2)  # 2 cells to do: the main process starts one helper
    runs = tmp_path / "runs"
    env = subprocess_env(tmp_path / "cache") | {"TOKRAG_GIT_COMMIT": "test-commit"}
    report = " ".join(shlex.quote(str(w)) for w in
                      ("tokrag", "leaderboard", "report", spec.resolve(), "--runs-dir", runs.resolve()))
    proc = subprocess.run([*runner_cmd(spec, runs), "--jobs", "2"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)  # stdout: the one JSON summary, as before
    assert sorted(summary["ran"]) == ["none/toy_qa/seed1", "standard/toy_qa/seed1"]
    assert _closing_lines(proc.stderr) == [
        f"tokrag leaderboard: 2 cells ran, 0 were finished already; the run folders are in {runs.resolve()}; "
        f"build the report with: {report}"], proc.stderr[-3000:]

    again = subprocess.run([*runner_cmd(spec, runs), "--jobs", "2"], env=env, capture_output=True, text=True,
                           timeout=600)  # all finished: no helper starts; the same advice, once
    assert again.returncode == 0, again.stderr[-3000:]
    assert _closing_lines(again.stderr) == [
        f"tokrag leaderboard: 0 cells ran, 2 were finished already; the run folders are in {runs.resolve()}; "
        f"build the report with: {report}"]
