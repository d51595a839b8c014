"""A leaderboard cell's request journal (``leaderboards/runner.py``, ``_Journal.record``) names itself in a no-room error
by the shared rule, :func:`retrieval.io.no_room_naming` (s56 f2).

s55 r6 gave the journal's append its own copy of that rule, written beside ``no_room_naming`` the same hour: it named
the journal in any pathless OSError (an ``EIO`` too), where the shared rule names the file only for the errnos that
:data:`retrieval.errors.NO_ROOM_ERRNOS` counts as no room (``ENOSPC``, ``EDQUOT``, ``EFBIG``), as the BM25 build and
analyze's appends do. The journal now calls the shared rule: the one line a user sees
(:func:`retrieval.errors.no_room_line`) names the journal for each of those errnos, as before; any other error passes
as it was raised; and the part of the line written is cut off in every case.

The full disk is a fake file object (its flush writes part of the line, then raises without a path); no device is
written or changed.
"""

from __future__ import annotations

import builtins
import errno
import os

import pytest

import leaderboards.runner as runner
import retrieval.errors
from retrieval.errors import NO_ROOM_ERRNOS, no_room_line

HEADER = b'{"schema": 2}\n'


class _FailingFile:
    """An append-mode file whose flush writes 10 bytes of what was written to the real file, then raises
    ``OSError(code)`` without a path (as a buffered file on a full disk does)."""

    def __init__(self, real, code: int) -> None:
        self.real, self.code, self.buf = real, code, b""

    def write(self, data: bytes) -> int:
        self.buf += data
        return len(data)

    def flush(self) -> None:
        self.real.write(self.buf[:10])
        self.real.flush()
        self.buf = b""
        raise OSError(self.code, os.strerror(self.code))

    def fileno(self) -> int:
        return self.real.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.real.close()


def _record(tmp_path, monkeypatch, code: int) -> tuple[OSError, bytes, str]:
    """One journal append that meets ``code``: the error raised, the journal's bytes after it, the journal's path."""
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    path = tmp_path / f"e{code}" / "journal.jsonl"
    path.parent.mkdir()
    path.write_bytes(HEADER)
    j = runner._Journal(path, "cell")
    j.end = len(HEADER)

    def fake_open(file, mode="r", *args, **kwargs):
        real = builtins.open(file, mode, *args, **kwargs)
        return _FailingFile(real, code) if mode == "ab" else real

    monkeypatch.setattr(runner, "open", fake_open, raising=False)
    with pytest.raises(OSError) as caught:
        j.record("generate_until", [], [], [], [], {"forward_passes": 0}, 0.0, None)
    monkeypatch.undo()
    return caught.value, path.read_bytes(), str(path)


@pytest.mark.parametrize("code", sorted(NO_ROOM_ERRNOS))
def test_each_no_room_errno_names_the_journal_in_the_one_line(tmp_path, monkeypatch, code):
    exc, left, path = _record(tmp_path, monkeypatch, code)
    assert (exc.errno, exc.filename) == (code, path)
    assert isinstance(exc.__cause__, OSError) and exc.__cause__.filename is None  # the flush's own error
    assert no_room_line(exc) == (
        f"[Errno {code}] {os.strerror(code)}: '{path}' (a full disk, a disk quota or a file-size limit stopped a write); "
        "make room (or raise the limit: ulimit -f) and run the same command again (set TOKRAG_TRACEBACK=1 for the "
        "stack trace)")
    assert left == HEADER  # the 10 bytes of the line cut off again


def test_another_errno_passes_as_raised_and_the_line_is_still_cut(tmp_path, monkeypatch):
    exc, left, _ = _record(tmp_path, monkeypatch, errno.EIO)
    assert (type(exc), exc.errno, exc.filename, exc.__cause__) == (OSError, errno.EIO, None, None)
    assert no_room_line(exc) is None
    assert left == HEADER


def test_the_journal_reads_the_shared_set_of_no_room_errnos(tmp_path, monkeypatch):
    """Which errnos count as no room is retrieval.errors.NO_ROOM_ERRNOS's answer, not a copy in the runner."""
    monkeypatch.setattr(retrieval.errors, "NO_ROOM_ERRNOS", frozenset({errno.ENOSPC}))
    exc, left, path = _record(tmp_path, monkeypatch, errno.EDQUOT)  # undoes the patch after the append
    assert (exc.errno, exc.filename) == (errno.EDQUOT, None)  # not no room under that set: as raised
    assert left == HEADER
    monkeypatch.setattr(retrieval.errors, "NO_ROOM_ERRNOS", frozenset({errno.ENOSPC, errno.EIO}))
    exc, left, path = _record(tmp_path, monkeypatch, errno.EIO)
    assert (exc.errno, exc.filename) == (errno.EIO, path)
    assert left == HEADER
