"""``tokrag --version | head -1`` and the other help and version printing into a pipe whose reader has gone end
quietly (s57 g2).

``tokrag --version``, ``tokrag --help``, ``tokrag eval --help`` / ``--version`` and ``python -m
tokrag_model.eval_cli --help`` printed into a pipe closed by its reader (``| head -1`` once it has its line) ended in
a ``BrokenPipeError`` traceback, or, when the write failed only at the interpreter's exit, ``Exception ignored ...
BrokenPipeError`` and exit status 120. Now, as Python's note on SIGPIPE recommends (the ``signal`` module's
documentation), the error is caught where the text is flushed, stdout is pointed at the null device so the exit's
flush has nothing to fail, and the status is 1, with nothing on stderr.

Deterministic: the reader end of the child's stdout pipe is closed before the child starts, so its first write
meets the closed pipe whatever the timing. The ``head -1`` form (read one line, then close) is checked too: there
the child may have written everything before the reader closed (status 0) or not (1), never a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tokrag_model import cli, eval_cli

REPO = Path(__file__).resolve().parents[1]

COMMANDS = {
    "tokrag --version": ["-m", "tokrag_model.cli", "--version"],
    "tokrag --help": ["-m", "tokrag_model.cli", "--help"],
    "tokrag": ["-m", "tokrag_model.cli"],
    "tokrag eval --version": ["-m", "tokrag_model.cli", "eval", "--version"],
    "tokrag eval --help": ["-m", "tokrag_model.cli", "eval", "--help"],
    "python -m tokrag_model.eval_cli --help": ["-m", "tokrag_model.eval_cli", "--help"],
}
"""The printing entry points, as ``python -m`` runs them (the ``tokrag`` console script is
``tokrag_model.cli:main``)."""


def _env(unbuffered: str = "") -> dict[str, str]:
    """The test's environment with the repository importable and stdout buffered as a user's is (a block-buffered
    pipe; ``unbuffered``: ``PYTHONUNBUFFERED`` set, each write sent at once), whatever the test runner set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDEVMODE", None)
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    return env


@pytest.mark.parametrize("unbuffered", ["", "1"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_printing_into_a_pipe_already_closed_is_quiet_and_status_1(name, unbuffered):
    """Was: a ``BrokenPipeError`` traceback (exit 1) or ``Exception ignored ... BrokenPipeError`` (exit 120)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the child writes anything
    try:
        proc = subprocess.run([sys.executable, *COMMANDS[name]], stdout=write, stderr=subprocess.PIPE, text=True,
                              env=_env(unbuffered), cwd=REPO, timeout=300)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (1, ""), (name, proc.stderr[-3000:])


@pytest.mark.parametrize("name", ["tokrag --version", "tokrag eval --help"])
def test_head_1_gets_its_line_and_no_traceback(name):
    """``| head -1``: the reader takes the first line and closes the pipe."""
    proc = subprocess.Popen([sys.executable, *COMMANDS[name]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(), cwd=REPO)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    rc = proc.wait(timeout=300)
    assert first.startswith(b"tokrag "), first
    assert rc in (0, 1) and err == "", (rc, err[-3000:])


def test_print_out_prints_and_flushes(capsys):
    assert eval_cli.print_out("a\nb") == 0
    assert capsys.readouterr().out == "a\nb\n"
    assert cli.main(["--version"]) == 0 and capsys.readouterr().out.startswith("tokrag ")
    assert cli.main(["--help"]) == 0 and capsys.readouterr().out.startswith("usage: tokrag ")


def test_other_broken_pipes_are_not_swallowed(monkeypatch):
    """Only the printing of help and versions ends quietly: a BrokenPipeError raised by a command (a socket, a
    subprocess's pipe) keeps its traceback."""
    import tokrag_model.eval_cli

    def broken(argv):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(tokrag_model.eval_cli, "main", broken)
    with pytest.raises(BrokenPipeError):
        cli.main(["eval", "--tasks", "x"])


class _ReaderGoneAfterFirstFlush:
    """A stdout whose pipe's reader closes it once it has read what the first flush sent (``tokrag eval --help |
    head -20`` reading tokrag's paragraph): later writes and flushes raise ``BrokenPipeError``."""

    def __init__(self) -> None:
        self.sent, self.pending, self.closed = "", "", False

    def write(self, text: str) -> int:
        if self.closed:
            raise BrokenPipeError(32, "Broken pipe")
        self.pending += text
        return len(text)

    def flush(self) -> None:
        if self.closed:
            raise BrokenPipeError(32, "Broken pipe")
        self.sent, self.pending, self.closed = self.sent + self.pending, "", True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise AssertionError("the test's own stdout is never pointed elsewhere")


def test_tokrag_eval_help_whose_reader_leaves_after_tokrags_paragraph_is_status_1(monkeypatch):
    """lm-eval's ``run`` help is printed by argparse, which ignores an OSError of its write: the pipe's reader gone
    after tokrag's paragraph, the help's text stayed in stdout's buffer and failed again at the interpreter's exit
    (``Exception ignored ... BrokenPipeError``, exit 120; in-process: 0). Now it is flushed where lm-eval's help
    ends: status 1, stdout discarded."""
    out = _ReaderGoneAfterFirstFlush()
    discarded = []
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(eval_cli, "_discard_stdout", lambda: discarded.append(True))
    rc = eval_cli.main(["--help"])
    monkeypatch.undo()
    assert out.sent == eval_cli.help_text() + "\n"
    assert (rc, discarded) == (1, [True])
