"""``tokrag leaderboard run`` stopped by a failing disk (EIO) at a cell's write, then run again, gives the report an
uninterrupted run gives (s57 r2, review of f2's one-line write errors).

f2 (b908462) made a failed write of any errno one line, exit 2, and said nothing a user ran is lost: the same
command resumes. Its tests resumed a journal refused by EROFS/EACCES and counted the resumed requests; here the
failing disk is EIO (the errno a dying disk gives) at each kind of write a cell does: the journal's append (a
buffered flush, no path), and the atomic writes of the cell's files (``retrieval.io.write_beside``: the first,
the samples, and the last, ``DONE``; ``results.json`` and ``cost.json``, written between them, passed too when
checked at review). Each time the one line names the file, the exit status is 2, and the
resumed run's ``leaderboard.json`` equals the uninterrupted one's, less what measures the machine (seconds, load,
peak memory): the scores, the per-question rows, the forward passes and tokens.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.runner as runner
import retrieval.io as rio
from leaderboards.keys import cell_keys

TAIL = "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"
EIO_LINE = ("[Errno 5] Input/output error: '{f}' (a write failed: the disk or its connection failed); check the disk "
            "(dmesg; a network or removable disk: its connection) or choose another --runs-dir / --out / --baseline / "
            f"TOKRAG_CACHE_DIR on another disk {TAIL}")
TIMINGS = {"wall_s", "s_per_question", "model_s", "model_s_per_question", "loadavg_max", "cells_overloaded", "peak_rss_mib"}
"""The cost fields that measure the machine (seconds, load, memory), not the run: left out of the comparison."""


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")


@pytest.fixture
def pinned_keys(monkeypatch):
    """The spec's run keys computed once: other work may edit the source they hash between two runs of a test."""
    frozen: dict = {}

    def keys(spec, runs=None):
        if spec.path not in frozen:
            frozen[spec.path] = cell_keys(spec)
        return frozen[spec.path]

    monkeypatch.setattr(runner, "cell_keys", keys)


class _FailingFsyncOs:
    """``os`` for :mod:`retrieval.io` whose ``fsync`` raises EIO without a path (a dying disk's buffered write)."""

    def __getattr__(self, name):
        return getattr(os, name)

    def fsync(self, fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))


def _fail_atomic_write(monkeypatch, name: str) -> None:
    """The first atomic write of a file called ``name`` meets EIO at its fsync."""
    real = rio.write_beside
    seen = {"n": 0}

    def write_beside(path, data):
        if Path(path).name == name:
            seen["n"] += 1
            if seen["n"] == 1:
                with monkeypatch.context() as m:
                    m.setattr(rio, "os", _FailingFsyncOs())
                    return real(path, data)
        return real(path, data)

    monkeypatch.setattr(rio, "write_beside", write_beside)


class _FailingFlush:
    def __init__(self, real) -> None:
        self.real = real

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    def fileno(self) -> int:
        return self.real.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.real.close()


def _fail_journal_append(monkeypatch, n: int) -> None:
    """The ``n``-th append to a cell's journal meets EIO at its flush (no path)."""
    seen = {"appends": 0}

    def fake_open(file, mode="r", *args, **kwargs):
        if Path(file).name == "journal.jsonl" and mode == "ab":
            seen["appends"] += 1
            if seen["appends"] == n:
                return _FailingFlush(builtins.open(file, mode, *args, **kwargs))
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(runner, "open", fake_open, raising=False)


def _spec(root: Path) -> Path:
    return write_spec(root, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "none", "model": TOY, "model_args": {"mode": "none"}}])


def _report(spec: Path, runs: Path, out: Path) -> dict:
    from tokrag_model.cli import main

    assert main(["leaderboard", "report", str(spec), "--runs-dir", str(runs), "--out", str(out)]) == 0
    doc = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    for row in doc["rows"]:
        for k in TIMINGS:
            row["cost"].pop(k, None)
    return doc


@pytest.fixture
def uninterrupted(tmp_path, pinned_keys):
    from tokrag_model.cli import main

    spec = _spec(tmp_path / "a")
    assert main(["leaderboard", "run", str(spec), "--runs-dir", str(tmp_path / "a" / "runs"), "--no-progress"]) == 0
    return spec, _report(spec, tmp_path / "a" / "runs", tmp_path / "a" / "report")


@pytest.mark.parametrize("where", ["journal", "samples_toy_qa.jsonl", "DONE"])
def test_leaderboard_run_stopped_by_eio_resumes_to_the_same_report(uninterrupted, tmp_path, monkeypatch, capsys,
                                                                    where):
    from leaderboards.spec import load_spec
    from tokrag_model.cli import main

    spec_a, want = uninterrupted
    spec = _spec(tmp_path / "b")
    runs = tmp_path / "b" / "runs"
    argv = ["leaderboard", "run", str(spec), "--runs-dir", str(runs), "--no-progress"]
    capsys.readouterr()
    with monkeypatch.context() as m:
        if where == "journal":
            _fail_journal_append(m, 3)
        else:
            _fail_atomic_write(m, where)
        rc = main(argv)
    err = [x for x in capsys.readouterr().err.splitlines() if "rror" in x]
    first = runner.cell_keys(load_spec(spec))[0][1]
    name = "journal.jsonl" if where == "journal" else where
    assert (rc, err) == (2, [f"tokrag leaderboard: error: {EIO_LINE.format(f=runs / first / name)}"])
    assert not (runs / first / "DONE").exists()
    assert main(argv) == 0  # the same command, on a disk that writes
    got = _report(spec, runs, tmp_path / "b" / "report")
    assert [r["cost"] for r in got["rows"]] == [r["cost"] for r in want["rows"]]
    assert got["rows"] == want["rows"]
    assert {k: v for k, v in got.items() if k not in ("spec", "generated", "created")} == \
        {k: v for k, v in want.items() if k not in ("spec", "generated", "created")}
