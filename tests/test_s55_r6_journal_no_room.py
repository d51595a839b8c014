"""A leaderboard cell's request journal (``leaderboards/runner.py``, ``_Journal.record``) that meets a full disk names
the journal, and keeps only whole chunk lines (s55 r6; f4's report: the journal's appends are buffered writes whose
flush raises ``OSError(28)`` with no path, so ``tokrag leaderboard run`` printed ``[Errno 28] No space left on device
(a full disk, ...)`` naming no file and no disk).

The full disk is a small fake: the journal's file object, whose flush writes part of the line to the real file and then
raises ``OSError(ENOSPC)`` without a path, as a buffered file on a full disk does. No device is written or changed.
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
from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec
from retrieval.errors import no_room_line

JOURNAL = "journal.jsonl"


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Pin the provenance commit and the spec's run keys: other work may edit the source the keys hash between the
    failed run and the resumed one, which would move the resumed attempt to another run folder."""
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    frozen: dict = {}

    def keys(spec, runs=None):
        if spec.path not in frozen:
            frozen[spec.path] = cell_keys(spec)
        return frozen[spec.path]

    monkeypatch.setattr(runner, "cell_keys", keys)


class _FullDiskFile:
    """A file opened for appending on a disk with room for ``room`` more bytes: the buffered writes are kept until
    ``flush``, which writes ``room`` bytes of them to the real file and raises ENOSPC with no path."""

    def __init__(self, real, room: int) -> None:
        self.real, self.room, self.buf = real, room, b""

    def write(self, data: bytes) -> int:
        self.buf += data
        return len(data)

    def flush(self) -> None:
        if self.buf:
            self.real.write(self.buf[:self.room])
            self.real.flush()
            self.buf = b""
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fileno(self) -> int:
        return self.real.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.buf = b""
        self.real.close()


def _full_on_append(monkeypatch, n: int) -> None:
    """The runner's ``n``-th append to a journal (1-based) meets a full disk after 40 bytes of its line."""
    seen = {"appends": 0}

    def fake_open(file, mode="r", *args, **kwargs):
        real = builtins.open(file, mode, *args, **kwargs)
        if Path(file).name == JOURNAL and mode == "ab":
            seen["appends"] += 1
            if seen["appends"] == n:
                return _FullDiskFile(real, 40)
        return real

    monkeypatch.setattr(runner, "open", fake_open, raising=False)


def _cell(spec, runs: Path) -> Path:
    (key,) = [k for _, k, _ in runner.cell_keys(spec)]
    return runs / key


def test_a_full_disk_met_by_the_journal_names_it_and_the_run_resumes_from_its_whole_lines(tmp_path, monkeypatch):
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first", "trace": "tokens"}}]))
    runner.run_spec(spec, tmp_path / "ref", progress=False)
    ref = _cell(spec, tmp_path / "ref")

    with monkeypatch.context() as m:
        _full_on_append(m, 2)  # the second chunk's line
        with pytest.raises(OSError) as caught:
            runner.run_spec(spec, tmp_path / "runs", progress=False)
    got = _cell(spec, tmp_path / "runs")
    journal = got / JOURNAL
    exc = caught.value
    assert (exc.errno, exc.filename, str(exc)) == (errno.ENOSPC, str(journal),
                                                   f"[Errno 28] No space left on device: '{journal}'")
    assert isinstance(exc.__cause__, OSError) and exc.__cause__.filename is None  # the flush's own error
    assert no_room_line(exc).startswith(f"[Errno 28] No space left on device: '{journal}' (a full disk, ")
    lines = journal.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3  # the header and the first chunk, whole; no part of the second
    assert json.loads(lines[1])["type"] == "generate_until"
    assert not (got / "DONE").exists()

    runner.run_spec(spec, tmp_path / "runs", progress=False)  # with room: resumes from the one whole chunk
    assert json.loads((got / "cost.json").read_text())["resumed_requests"] == 1
    samples = {p.name: p.read_bytes() for p in sorted(got.glob("samples_*.jsonl"))}
    assert samples and samples == {p.name: p.read_bytes() for p in sorted(ref.glob("samples_*.jsonl"))}
    assert not journal.exists()


def test_an_error_that_names_a_file_is_raised_as_it_is(tmp_path, monkeypatch):
    """Not every append error is renamed: one naming a file (here another) keeps its path and type."""
    path = tmp_path / JOURNAL
    path.write_bytes(b"header\n")
    j = runner._Journal(path, "cell")
    j.end = len(b"header\n")

    def fake_open(file, mode="r", *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/elsewhere")

    monkeypatch.setattr(runner, "open", fake_open, raising=False)
    with pytest.raises(PermissionError) as caught:
        j.record("generate_until", [], [], [], [], {}, 0.0, None)
    assert (caught.value.filename, caught.value.__cause__) == ("/elsewhere", None)
    assert path.read_bytes() == b"header\n"
