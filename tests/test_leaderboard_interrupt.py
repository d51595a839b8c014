"""An interrupted ``tokrag leaderboard run`` with helpers (``--jobs``): one path for every Ctrl-C/SIGTERM after its
cells' loop began (while it waits for its helpers, a second Ctrl-C while it stops them, one between a helper's start
and its being known), helpers stopped in steps (wait, SIGTERM, SIGKILL) and never left behind, the ``--max-cells``
folder removed; and the command itself dies by the signal (a shell loop over specs stops), while an in-process
caller gets 130/143.

The helpers here are stand-ins (a Python process that sleeps, or ignores SIGTERM) started in place of the real
helper command by ``subprocess.Popen`` in :func:`leaderboards.runner.run_spec`; everything else (the main process's
loop, the cell budget, the stopping, the message) is the real code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, child_pids, pin_cell_keys, subprocess_env, write_spec

import leaderboards.runner
from leaderboards.cli import main as lb_main

JOURNAL = "journal.jsonl"
SLEEPER = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); time.sleep(120)"
STUCK = ("import pathlib, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
         "pathlib.Path(sys.argv[1]).touch(); time.sleep(120)")  # a helper stuck in native code: SIGTERM has no effect


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Run keys computed once per spec (other work may edit the source the keys hash); Ctrl-C raises
    KeyboardInterrupt in this process as in a terminal's (a pytest-xdist worker may ignore SIGINT)."""
    pin_cell_keys(monkeypatch, [leaderboards.runner])
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _ctrl_c() -> None:
    """Ctrl-C in the terminal, as this process sees it (the real signal, handled where it lands)."""
    os.kill(os.getpid(), signal.SIGINT)


def _fake_helpers(monkeypatch, tmp_path: Path, script: str, *, on_wait=None, after_start=None) -> list:
    """Each helper that ``run_spec`` starts is ``script`` (started, and ready, before Popen returns) instead of
    the helper command; returns ``[(the command run_spec gave, the Popen)]``. ``on_wait(timeout)`` runs when the main
    process waits for a helper; ``after_start()`` right before Popen returns. Other Popen calls are left alone."""
    real = subprocess.Popen
    started: list = []

    class Helper(real):
        def wait(self, timeout=None):
            if on_wait is not None:
                on_wait(timeout)
            return super().wait(timeout)

    def popen(cmd, *a, **kw):
        if leaderboards.runner.JOBS_HELPER_OPTION not in cmd:
            return real(cmd, *a, **kw)
        ready = tmp_path / f"helper-ready-{len(started)}"
        h = Helper([sys.executable, "-c", script, str(ready)])
        started.append((cmd, h))
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if after_start is not None:
            after_start()
        return h

    monkeypatch.setattr(leaderboards.runner.subprocess, "Popen", popen)
    return started


def _end(started: list) -> None:
    for _, h in started:  # a test that failed may have left one running
        if h.poll() is None:
            h.kill()
            h.wait()


def _main(argv: list[str]) -> int:
    try:
        return lb_main(argv)
    except KeyboardInterrupt as exc:
        pytest.fail(f"{type(exc).__name__} escaped tokrag leaderboard run (a traceback, not a one-line message)")


def _interrupt_on(monkeypatch, call: int) -> list[float]:
    """ToyLM's generate_until is Ctrl-C'd on its call number ``call`` (one request per chunk); returns the list
    that gets the ``time.monotonic()`` of that Ctrl-C."""
    toy = leaderboards.runner._model_class(TOY)
    orig, n, at = toy.generate_until, [0], []

    def method(lm, requests, *a, **kw):
        n[0] += 1
        if n[0] == call:
            at.append(time.monotonic())
            _ctrl_c()
        return orig(lm, requests, *a, **kw)

    monkeypatch.setattr(toy, "generate_until", method)
    return at


def _spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1})


def test_ctrl_c_while_waiting_for_helpers_says_what_was_kept_and_stops_them(tmp_path, monkeypatch, capsys):
    """run --jobs 2 --max-cells 2 on 4 cells: the main process ran its cells and waited for its helper; a Ctrl-C there
    (inside the old ``finally: h.wait()``) printed 'before any cell started; nothing was computed', left the helper
    running and the .max-cells-* folder behind (it was --max-cells 1 on 2 cells: now no helper, s58 f3)."""
    monkeypatch.setattr(leaderboards.runner, "HELPER_GRACE_S", 0.3, raising=False)
    monkeypatch.setattr(leaderboards.runner, "HELPER_TERM_S", 5.0, raising=False)
    fired: list = []

    def on_wait(timeout):
        if timeout is None and not fired:  # the main process waits for its helper's cells: Ctrl-C
            fired.append(1)
            _ctrl_c()

    started = _fake_helpers(monkeypatch, tmp_path, SLEEPER, on_wait=on_wait)
    spec = write_spec(tmp_path, tasks=["toy_qa", "toy_qa_noise67"], limit=4, extra={"progress_chunk": 1})  # 4 cells
    runs = tmp_path / "runs"
    try:
        rc = _main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--jobs", "2", "--max-cells", "2"])
        assert fired and rc == 130
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == (f"tokrag leaderboard: interrupted (Ctrl-C): 2 of 4 cells are finished and kept in {runs}; "
                           f"resume with: tokrag leaderboard run {spec} --runs-dir {runs} --jobs 2 --no-progress")
        (cmd, helper), = started
        assert leaderboards.runner.BUDGET_OPTION in cmd  # the real helper command of run --jobs 2 --max-cells 2
        assert helper.poll() == -signal.SIGTERM  # stopped, not orphaned
        assert not list(runs.glob(".max-cells-*"))
    finally:
        _end(started)


def test_a_second_ctrl_c_while_helpers_get_their_grace_ends_with_the_same_message(tmp_path, monkeypatch, capsys):
    """A second Ctrl-C during the 3 s the helpers get went past _interrupted into the old ``finally: h.wait()`` (a
    wait for the helper's end) and then printed 'before any cell started'. Now it ends the grace at once: SIGTERM."""
    monkeypatch.setattr(leaderboards.runner, "HELPER_GRACE_S", 60.0, raising=False)
    monkeypatch.setattr(leaderboards.runner, "HELPER_TERM_S", 5.0, raising=False)
    fired: list = []

    def on_wait(timeout):
        if timeout is not None and not fired:  # the grace the helpers get after the first Ctrl-C: a second one
            fired.append(time.monotonic())
            _ctrl_c()

    started = _fake_helpers(monkeypatch, tmp_path, SLEEPER, on_wait=on_wait)
    _interrupt_on(monkeypatch, 7)  # cell 1: 4 requests; cell 2: 2 journaled, interrupted in its 3rd
    spec, runs = _spec(tmp_path), tmp_path / "runs"
    try:
        rc = _main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--jobs", "2"])
        assert fired and rc == 130 and time.monotonic() - fired[0] < 30  # not the 60 s grace nor the helper's 120 s
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == (f"tokrag leaderboard: interrupted (Ctrl-C): 1 of 2 cells are finished and kept in {runs}; "
                           "the unfinished cell none/toy_qa/seed1 kept 2 requests in its journal (replayed when "
                           "resumed on this machine with the same software; otherwise recomputed); resume with: "
                           f"tokrag leaderboard run {spec} --runs-dir {runs} --jobs 2 --no-progress")
        (_, helper), = started
        assert helper.poll() == -signal.SIGTERM
    finally:
        _end(started)


def test_a_helper_that_ignores_sigterm_is_killed_and_the_run_still_ends(tmp_path, monkeypatch, capsys):
    """After its SIGTERM a helper was waited for without a timeout: one stuck in native code hung the main process
    before its message. Now it is killed HELPER_TERM_S after the SIGTERM."""
    monkeypatch.setattr(leaderboards.runner, "HELPER_GRACE_S", 0.3, raising=False)
    monkeypatch.setattr(leaderboards.runner, "HELPER_TERM_S", 0.5, raising=False)
    started = _fake_helpers(monkeypatch, tmp_path, STUCK)
    at = _interrupt_on(monkeypatch, 7)
    spec, runs = _spec(tmp_path), tmp_path / "runs"
    try:
        rc = _main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--jobs", "2"])
        assert rc == 130
        assert time.monotonic() - at[0] < 30  # not the helper's 120 s
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
            "tokrag leaderboard: interrupted (Ctrl-C): 1 of 2 cells are finished")
        (_, helper), = started
        assert helper.poll() == -signal.SIGKILL
    finally:
        _end(started)


def test_ctrl_c_right_after_a_helper_started_does_not_lose_it(tmp_path, monkeypatch, capsys):
    """A Ctrl-C between Popen's return and ``helpers.append`` left a helper no one stopped. (--max-cells 2: with
    --max-cells 1 the run now starts no helper, s58 f3.)"""
    monkeypatch.setattr(leaderboards.runner, "HELPER_GRACE_S", 0.3, raising=False)
    monkeypatch.setattr(leaderboards.runner, "HELPER_TERM_S", 5.0, raising=False)
    started = _fake_helpers(monkeypatch, tmp_path, SLEEPER, after_start=_ctrl_c)
    spec, runs = _spec(tmp_path), tmp_path / "runs"
    try:
        rc = _main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--jobs", "2", "--max-cells", "2"])
        assert rc == 130
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
            f"tokrag leaderboard: interrupted (Ctrl-C): 0 of 2 cells are finished and kept in {runs}; resume with: ")
        (_, helper), = started
        assert helper.poll() == -signal.SIGTERM
        assert not list(runs.glob(".max-cells-*"))
    finally:
        _end(started)


@pytest.mark.parametrize("entry, signum", [
    ("tokrag", signal.SIGINT),  # the console script: tokrag_model.cli:main -> leaderboards.cli.command
    ("python -m leaderboards.cli", signal.SIGTERM),
])
def test_the_command_dies_by_the_signal_after_its_one_line(tmp_path, entry, signum):
    """The command exited 130/143: bash goes on with a 'for s in ...; do tokrag leaderboard run $s; done' loop after
    a Ctrl-C unless the child died of SIGINT. Now it prints its line, then dies by the signal."""
    if entry == "tokrag":
        exe = Path(sys.executable).parent / "tokrag"
        if not exe.exists():
            pytest.skip("no tokrag console script next to this Python (not installed in this environment)")
        head = [str(exe), "leaderboard", "run"]
    else:
        head = [sys.executable, "-m", "leaderboards.cli", "run"]
    spec = write_spec(tmp_path, tasks=["toy_qa"], limit=4, delay=0.1, extra={"progress_chunk": 1})
    runs = tmp_path / "runs"
    # ToyLM answers one request, then waits for this file (never made): the signal lands inside the first cell
    # whatever the machine's load (with a 0.5 s delay per request the test had ~1.5 s to see the journal line)
    env = subprocess_env(tmp_path / "cache") | {"TOKRAG_GIT_COMMIT": "test-commit", "TOYLM_HOLD": str(tmp_path / "gate")}
    proc = subprocess.Popen([*head, str(spec), "--runs-dir", str(runs), "--no-progress"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal starts it
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if any(leaderboards.runner.journaled_requests(j) for j in runs.glob(f"*/{JOURNAL}")):
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    how = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    lines = err.strip().splitlines()
    assert proc.returncode == -signum, err[-3000:]
    assert lines[-1].startswith(f"tokrag leaderboard: interrupted ({how}): 0 of 2 cells are finished and kept in {runs}; "
                                "the unfinished cell ")
    assert lines[-1].endswith(f"resume with: tokrag leaderboard run {spec} --runs-dir {runs} --no-progress")
    assert "Traceback" not in err.replace(str(tmp_path), "<tmp>")  # the runner's words, not the tmp folder's name


def test_an_in_process_caller_gets_the_exit_status(tmp_path, monkeypatch, capsys):
    """main() returns 130 to a caller in Python (a test, a script) unless asked to die by the signal."""
    _interrupt_on(monkeypatch, 2)
    spec = _spec(tmp_path)
    assert _main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--no-progress"]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("tokrag leaderboard: interrupted (Ctrl-C): 0 of 2")


def test_signals_deferred_around_a_helper_start_arrive_after_it():
    """The block in which run_spec starts a helper and records it: a Ctrl-C inside takes effect at its end."""
    done = []
    with pytest.raises(KeyboardInterrupt):
        with leaderboards.runner._interrupts_deferred():
            _ctrl_c()
            time.sleep(0.05)  # a real signal is handled within a few bytecodes: not here
            done.append(1)
    assert done == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _ended(pid: int) -> bool:
    """The process is gone or a zombie (its new parent may not reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.reliability  # a kill test
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_helpers_end_when_the_main_process_is_killed(tmp_path):
    """A SIGKILL of ``run --jobs 2``'s main process gives it no time to stop its helper, which ran its cell to the end
    (here: after TOYLM_HOLD's 120 s wait), unseen and holding the cell's lock. The helper now gets SIGTERM from the
    kernel when the main process dies (prctl PR_SET_PDEATHSIG) and ends as an interrupted helper: its journal kept."""
    spec = write_spec(tmp_path, tasks=["toy_qa"], limit=200, delay=0.1, extra={"progress_chunk": 1})
    runs = tmp_path / "runs"
    # both processes wait inside their cells after one request (ToyLM's TOYLM_HOLD; the file is never made): the 24
    # questions at 0.5 s were 12 s cells, which a helper started late on a loaded machine could miss
    env = subprocess_env(tmp_path / "cache") | {"TOKRAG_GIT_COMMIT": "test-commit", "TOYLM_HOLD": str(tmp_path / "gate")}
    proc = subprocess.Popen([sys.executable, "-m", "leaderboards.cli", "run", str(spec), "--runs-dir", str(runs),
                             "--no-progress", "--jobs", "2"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    helpers: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:  # both cells started: the helper is in its cell
            if len([j for j in runs.glob(f"*/{JOURNAL}") if leaderboards.runner.journaled_requests(j)]) == 2:
                break
            time.sleep(0.1)
        helpers = child_pids(proc.pid)
        assert proc.poll() is None and len(helpers) == 1, proc.stderr.read().decode()[-3000:] if proc.poll() else helpers
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _ended(helpers[0]):
            time.sleep(0.1)
        assert _ended(helpers[0]), "the helper still runs 30 s after its main process was killed"
        assert not list(runs.glob("*/DONE"))  # neither held cell finished: the helper stopped in its cell
        assert all(leaderboards.runner.journaled_requests(j) for j in runs.glob(f"*/{JOURNAL}"))
    finally:
        for pid in helpers:
            if not _ended(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
