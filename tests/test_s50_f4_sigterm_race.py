"""``tokrag leaderboard run``'s SIGTERM handler (:func:`leaderboards.cli._sigterm_as_interrupt`): the first SIGTERM
ends the run as Ctrl-C does, a second one kills, and no second SIGTERM is lost or reported by CPython as a race.

The old handler set ``SIG_DFL`` from inside itself. A second SIGTERM caught while it ran, before that change, was
handled by a nested call of the handler (``signal.signal`` first runs the pending handlers) and lost: the run went on
to its interrupted message and exit 143. One caught inside ``signal.signal``, between that check and the change, made
CPython print ``OSError: Signal 15 ignored due to race condition`` with a traceback (the race of c8b1f83, too narrow
to take on purpose from Python). The handler now stays installed and kills on its second call.

Each case runs in a subprocess (a SIGTERM with the default action would end pytest)."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from leaderboard_helpers import subprocess_env

import leaderboards.cli

REPO = Path(leaderboards.cli.__file__).parents[1]

# The second SIGTERM arrives at the first call the handler of the first one makes (any Python or C function it calls:
# a point where the interpreter runs pending handlers), sent from a profile function.
_SECOND_WHILE_HANDLING = """
import os, signal, sys
from leaderboards.cli import _Signalled, _sigterm_as_interrupt
_sigterm_as_interrupt()
handler, sent = signal.getsignal(signal.SIGTERM), []

def second(frame, event, arg):
    if not sent and event in ("call", "c_call") and frame.f_back is not None and frame.f_back.f_code is handler.__code__ \\
            or not sent and event == "c_call" and frame.f_code is handler.__code__:
        sent.append(event)
        os.kill(os.getpid(), signal.SIGTERM)

try:
    sys.setprofile(second)
    os.kill(os.getpid(), signal.SIGTERM)
    sum(range(1000))
except _Signalled as exc:
    sys.setprofile(None)
    print("interrupted by", exc.signum, "second sent:", bool(sent), flush=True)
for _ in range(1000):  # the interpreter checks its pending signals again
    sum(range(10))
print("went on", flush=True)
"""

# Both SIGTERMs pending at once (pthread_sigmask): the kernel and CPython keep one, so the run ends once, as by one
# SIGTERM, and nothing is printed about the other.
_BOTH_PENDING = """
import os, signal
from leaderboards.cli import _Signalled, _sigterm_as_interrupt
_sigterm_as_interrupt()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
os.kill(os.getpid(), signal.SIGTERM)
os.kill(os.getpid(), signal.SIGTERM)
try:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    sum(range(1000))
except _Signalled as exc:
    print("interrupted by", exc.signum, flush=True)
for _ in range(1000):
    sum(range(10))
print("went on", flush=True)
os.kill(os.getpid(), signal.SIGTERM)  # a later one kills
print("survived", flush=True)
"""

# A second SIGTERM, pending (blocked) while the run makes its interrupted message and unblocked after it: it kills.
_SECOND_AFTER = """
import os, signal
from leaderboards.cli import _Signalled, _sigterm_as_interrupt
restore = _sigterm_as_interrupt()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    sum(range(1000))
except _Signalled as exc:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    os.kill(os.getpid(), signal.SIGTERM)
    print("interrupted by", exc.signum, flush=True)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    print("survived", flush=True)
"""


def _run(code: str, tmp_path: Path) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(tmp_path / "cache"), capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_sigterm_caught_while_the_first_ones_handler_runs_kills_the_run(tmp_path):
    """Old code: (0, 'interrupted by 15 second sent: True\\nwent on\\n', ''): the second SIGTERM, sent at the handler's
    first call (its ``signal.signal``), ran the handler again inside that call and was lost."""
    assert _run(_SECOND_WHILE_HANDLING, tmp_path) == (-signal.SIGTERM, "", "")


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="needs pthread_sigmask")
def test_two_sigterms_pending_at_once_end_the_run_once_and_a_third_kills(tmp_path):
    assert _run(_BOTH_PENDING, tmp_path) == (-signal.SIGTERM, "interrupted by 15\nwent on\n", "")


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="needs pthread_sigmask")
def test_a_sigterm_during_the_interrupted_message_kills(tmp_path):
    assert _run(_SECOND_AFTER, tmp_path) == (-signal.SIGTERM, "interrupted by 15\n", "")
