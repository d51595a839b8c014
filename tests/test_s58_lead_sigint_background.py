"""A suite started with SIGINT ignored (a shell's background job, ``nohup``) starts its children as from a terminal.

The Ctrl-C tests send SIGINT to a child and expect it to die of it; a child that inherits an ignored SIGINT through
exec never sees it (plain ``lm_eval`` ran its 40 requests to the end, exit 0). tests/conftest.py puts the
interrupt handler back when it finds SIGINT ignored. This runs a small pytest session started with SIGINT ignored,
whose one test reads, from /proc, the ignored-signal mask of a child it starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ignored(pid: int) -> int:
    """The ``SigIgn`` mask of process ``pid`` (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigIgn line for {pid}")


def test_child_starts_with_sigint_not_ignored():
    """Inner test (run by the test below with SIGINT ignored in pytest's parent; harmless on its own)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        mask = _ignored(child.pid)
    finally:
        child.communicate(b"")
    assert not mask & (1 << (signal.SIGINT - 1)), f"SigIgn {mask:x}: SIGINT ignored in the child"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_backgrounded_suite_starts_children_with_sigint_at_its_default(tmp_path):
    code = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")
    env = {**os.environ, "PYTEST_ADDOPTS": ""}
    res = subprocess.run(
        [sys.executable, "-c", code, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-o",
         f"cache_dir={tmp_path}", f"{Path(__file__).name}::test_child_starts_with_sigint_not_ignored"],
        cwd=REPO / "tests", env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "1 passed" in res.stdout
