"""``run --jobs 2`` whose helper is killed (SIGKILL: the OOM killer, kill -9), s50 b2 D2. The main process took over
the helper's cell from its journal and every cell finished, yet the run ended 'error: a helper runner process failed
(exit codes [-9])', exit 2, no JSON summary. Now: every cell finished -> exit 0, the summary, one WARNING naming the
SIGKILL; a cell left unfinished (here --max-cells spent) -> exit 2 naming it, the signal and the resume command.
Real command and real helper process on the toy model; Linux (/proc)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from leaderboard_helpers import child_pids, runner_cmd, subprocess_env, write_spec

from leaderboards.keys import cell_keys
from leaderboards.runner import DONE, JOBS_HELPER_OPTION, JOURNAL, journaled_requests
from leaderboards.spec import load_spec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def _run_and_kill_the_helper(tmp_path, *extra):
    gate = tmp_path / "gate"  # each process answers one request, then waits for it: both are inside a cell when killed
    spec = write_spec(tmp_path, limit=6, delay=0.1, extra={"progress_chunk": 1})  # 4 cells
    runs = tmp_path / "runs"
    env = subprocess_env(tmp_path / "cache") | {"TOKRAG_GIT_COMMIT": "test-commit", "TOYLM_HOLD": str(gate)}
    proc = subprocess.Popen([*runner_cmd(spec, runs), "--jobs", "2", *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:  # both processes in a cell, with a journaled request
            if len([j for j in runs.glob(f"*/{JOURNAL}") if journaled_requests(j)]) == 2:
                break
            time.sleep(0.05)
        helpers = [pid for pid in child_pids(proc.pid) if JOBS_HELPER_OPTION in _cmdline(pid)]  # not a git child
        assert proc.poll() is None and len(helpers) == 1, proc.communicate()[1][-3000:] if proc.poll() is not None else helpers
        os.kill(helpers[0], signal.SIGKILL)
        gate.touch()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return load_spec(spec), runs, proc.returncode, out, err


def test_a_killed_helper_whose_cell_was_resumed_ends_with_the_summary_and_a_warning(tmp_path):
    spec, runs, rc, out, err = _run_and_kill_the_helper(tmp_path)
    assert rc == 0, err[-3000:]
    cells = [c.cell_id for c, _, _ in cell_keys(spec, runs)]
    assert all((runs / key / DONE).is_file() for _, key, _ in cell_keys(spec, runs))
    summary = json.loads(out)  # the one JSON summary
    assert sorted(summary["ran"] + summary["by_other"]) == sorted(cells) and summary["skipped"] == []
    assert summary["replayed_requests"] >= 1  # the helper's cell, resumed from its journal by the main process
    warn = [line for line in err.splitlines() if "helper runner process" in line]
    assert len(warn) == 1 and "WARNING" in warn[0], err[-3000:]
    assert "failed (helper process" in warn[0] and "killed by SIGKILL (out of memory?)); every cell is finished" in warn[0]
    # the run's paths hold pytest's numbered tmp folder (pytest-900 holds "-9"): look only at what the runner wrote
    said = err.replace(str(tmp_path), "<tmp>")
    assert "error" not in said and "[-9]" not in said and "exit code" not in said, said[-3000:]


def test_a_killed_helper_whose_cell_is_left_unfinished_names_it_and_the_resume_command(tmp_path):
    spec, runs, rc, out, err = _run_and_kill_the_helper(tmp_path, "--max-cells", "2")
    assert rc == 2 and out == "", err[-3000:]
    line = err.strip().splitlines()[-1]
    unfinished = [c.cell_id for c, key, _ in cell_keys(spec, runs) if (runs / key).is_dir() and not (runs / key / DONE).is_file()]
    assert len(unfinished) == 1  # the helper's cell: its journal kept, --max-cells spent, so not taken over
    assert line.startswith("tokrag leaderboard: error: a helper runner process of --jobs 2 failed (helper process "), line
    assert line.endswith(f" killed by SIGKILL (out of memory?)); 1 of 4 cells are unfinished ({unfinished[0]}), their "
                         f"journals kept; resume with: tokrag leaderboard run {spec.path} --runs-dir {runs} --jobs 2 "
                         "--no-progress"), line  # the command given minus --max-cells (s59 r4: it kept only --jobs)
