"""One rule names the file in a pathless write error (s56 f5): an OSError without a filename raised while file X is
written (a buffered write's flush or close, an ``fsync``: ``[Errno 28] No space left on device``, ``[Errno 5]
Input/output error``) is raised again as the same errno naming X, ``from`` the original, for every errno; an error
that names a file, an OSError without an errno and any other exception pass unchanged.

Before, the writes done in place through :func:`retrieval.io.no_room_naming` (a BM25 build's collection file,
analyze's records appends) named the file only for ``ENOSPC``, ``EDQUOT`` and ``EFBIG``, while the atomic writes
(:func:`retrieval.io.write_beside`) and the leaderboard journal's own copy of the rule named it for any errno; an
``EIO`` of the collection file or the records ended ``OSError: [Errno 5] Input/output error`` naming no file. The
journal now uses the shared rule (its truncate-back kept).

Every failing disk here is a fake file object returned by a monkeypatched ``open`` (its write or flush raises the
errno without a path); no device is written or changed.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os

import pytest

from retrieval.errors import no_room_line, print_no_room
from retrieval.io import atomic_write_bytes, no_room_naming

CODES = [errno.EIO, errno.ENOSPC]  # the pair: any errno, and a no-room one


class _FailingText(io.StringIO):
    """A text file whose write raises ``OSError(code)`` without a path once more than ``room`` characters are in it."""

    def __init__(self, code: int, room: int = 0) -> None:
        super().__init__()
        self.code, self.room = code, room

    def write(self, s: str) -> int:
        if self.tell() + len(s) > self.room:
            raise OSError(self.code, os.strerror(self.code))
        return super().write(s)


class _FailingBinary:
    """An append-mode binary file over ``real`` whose flush (its own, or its close's) writes the first ``part`` bytes
    of what was written, then raises ``OSError(code)`` without a path (as a buffered file does on a full or failing
    disk)."""

    def __init__(self, real, code: int, part: int = 10) -> None:
        self.real, self.code, self.part, self.buf = real, code, part, b""

    def write(self, data: bytes) -> int:
        self.buf += data
        return len(data)

    def flush(self) -> None:
        self.real.write(self.buf[:self.part])
        self.real.flush()
        self.buf = b""
        raise OSError(self.code, os.strerror(self.code))

    def fileno(self) -> int:
        return self.real.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:  # a close flushes what is still buffered
        try:
            if self.buf:
                self.flush()
        finally:
            self.real.close()


# ------------------------------------------------------------------------------------------ the rule itself
@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES])
def test_a_pathless_error_of_any_errno_names_the_file(tmp_path, code) -> None:
    target = tmp_path / "records.jsonl"
    original = OSError(code, os.strerror(code))
    with pytest.raises(OSError) as caught, no_room_naming(target):
        raise original
    exc = caught.value
    assert (exc.errno, exc.strerror, exc.filename) == (code, os.strerror(code), str(target))
    assert exc.__cause__ is original
    assert str(exc) == f"[Errno {code}] {os.strerror(code)}: '{target}'"
    assert type(exc) is type(OSError(code, "x"))  # the errno's own subclass: PermissionError for EACCES


@pytest.mark.parametrize("err", [OSError(errno.EIO, "Input/output error", "/other/file"),
                                 OSError(errno.ENOSPC, "No space left on device", "/other/file"),
                                 OSError("an OSError without an errno"), ValueError("not an OSError")])
def test_an_error_naming_a_file_or_without_errno_or_not_an_oserror_passes_unchanged(tmp_path, err) -> None:
    with pytest.raises(type(err)) as caught, no_room_naming(tmp_path / "x"):
        raise err
    assert caught.value is err


def test_the_atomic_writes_follow_the_same_rule(tmp_path, monkeypatch) -> None:
    """``write_beside``'s flush meeting a pathless EIO names the file written, as the in-place writes now do."""
    import retrieval.io as rio

    real_fdopen = os.fdopen

    def fdopen(fd, mode="r", *a, **k):
        return _FailingBinary(real_fdopen(fd, mode, *a, **k), errno.EIO)

    monkeypatch.setattr(rio.os, "fdopen", fdopen)
    target = tmp_path / "w" / "out.json"
    with pytest.raises(OSError) as caught:
        atomic_write_bytes(target, b"{}\n")
    monkeypatch.undo()
    assert (caught.value.errno, caught.value.filename) == (errno.EIO, str(target))
    assert [p.name for p in target.parent.iterdir()] == []  # the temporary file is removed, nothing renamed in


# ------------------------------------------------------------------------------------------ BM25 collection file
@pytest.mark.parametrize("code", CODES)
def test_a_bm25_builds_collection_file_names_itself(tmp_path, monkeypatch, code) -> None:
    import retrieval.bm25 as bm25
    from retrieval.corpus import load_corpus

    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": "some words " * 20}) + "\n"
                           for i in range(20)), encoding="utf-8")
    corpus = load_corpus(src)
    opened = []

    def fake_open(path, mode="r", *args, **kwargs):
        opened.append(str(path))
        return _FailingText(code, room=500)

    monkeypatch.setattr(bm25, "start_jvm", lambda: None)  # the JVM is not needed: the write fails first
    monkeypatch.setattr(bm25, "open", fake_open, raising=False)
    with pytest.raises(OSError) as caught:
        bm25.build_bm25_index(corpus, tmp_path / "index")
    assert len(opened) == 1 and opened[0].endswith(os.path.join("collection", "docs.jsonl"))
    assert (caught.value.errno, caught.value.filename) == (code, opened[0])
    assert isinstance(caught.value.__cause__, OSError) and caught.value.__cause__.filename is None
    assert not (tmp_path / "index").exists()  # the scratch folder is removed, no index left


# ------------------------------------------------------------------------------------------ analyze's records
def _one_record(i, sid):
    from tasks import analyze

    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, 1, 2, -0.5, -0.6, False, 0.2, [0.1, 0.2, 0.3, 0.4],
                                [None, None, 1e-6, 2e-6], (0.3, 0.2))]


@pytest.mark.parametrize("code", CODES)
def test_analyzes_records_append_names_the_records_file(tmp_path, monkeypatch, code) -> None:
    """The append of a scored sample (``collect_records``: ``f.write`` then ``f.flush`` of each line)."""
    from tasks import analyze
    from tests.analyze_fakes import install_fake

    fake = install_fake(monkeypatch, _one_record, device="cpu")
    appended = []

    def fake_open(file, mode="r", *args, **kwargs):
        if mode == "a":
            appended.append(str(file))
            return _FailingText(code)
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(analyze, "open", fake_open, raising=False)
    with pytest.raises(OSError) as caught:
        analyze.collect_records(fake.lm, "wiki", "dev", 2, tmp_path / "out", progress=False)
    assert len(appended) == 1 and os.path.basename(appended[0]).startswith("records_wiki_dev_")
    assert (caught.value.errno, caught.value.filename) == (code, appended[0])
    assert isinstance(caught.value.__cause__, OSError) and caught.value.__cause__.filename is None


@pytest.mark.parametrize("code", CODES)
def test_analyzes_records_repair_names_the_records_file(tmp_path, monkeypatch, code) -> None:
    """The line end added to a complete last line written without one (``_repair_records``)."""
    from tasks import analyze

    path = tmp_path / "records_wiki_dev_k.jsonl"
    line = json.dumps({"sample": "wiki:q0", "inputs": "in-q0", "seconds": 0.1,
                       "records": [r.to_json() for r in _one_record(0, "wiki:q0")]})
    path.write_bytes(line.encode("utf-8"))  # no line end: a kill between the line and its "\n"

    def fake_open(file, mode="r", *args, **kwargs):
        real = builtins.open(file, mode, *args, **kwargs)
        return _FailingBinary(real, code, part=0) if mode == "ab" else real

    monkeypatch.setattr(analyze, "open", fake_open, raising=False)
    with pytest.raises(OSError) as caught:
        analyze._repair_records(path)
    assert (caught.value.errno, caught.value.filename) == (code, str(path))
    assert path.read_bytes() == line.encode("utf-8")


# ------------------------------------------------------------------------------------------ the leaderboard journal
HEADER = b'{"schema": 2}\n'


def _journal_append(tmp_path, monkeypatch, code: int) -> tuple[OSError, bytes, str]:
    """One journal append whose flush meets ``code``: the error, the journal's bytes after it, the journal's path."""
    import leaderboards.runner as runner

    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    path = tmp_path / f"e{code}" / "journal.jsonl"
    path.parent.mkdir()
    path.write_bytes(HEADER)
    j = runner._Journal(path, "cell")
    j.end = len(HEADER)

    def fake_open(file, mode="r", *args, **kwargs):
        real = builtins.open(file, mode, *args, **kwargs)
        return _FailingBinary(real, code) if mode == "ab" else real

    monkeypatch.setattr(runner, "open", fake_open, raising=False)
    with pytest.raises(OSError) as caught:
        j.record("generate_until", [], [], [], [], {"forward_passes": 0}, 0.0, None)
    monkeypatch.undo()
    assert j.entries == [] and j.end == len(HEADER)  # the chunk is not counted as journaled
    return caught.value, path.read_bytes(), str(path)


@pytest.mark.parametrize("code", CODES)
def test_the_journal_names_itself_and_cuts_the_part_written(tmp_path, monkeypatch, code) -> None:
    exc, left, path = _journal_append(tmp_path, monkeypatch, code)
    assert (exc.errno, exc.filename) == (code, path)
    assert isinstance(exc.__cause__, OSError) and exc.__cause__.filename is None  # the flush's own error
    assert left == HEADER  # the 10 bytes of the line the flush wrote are cut off again


def test_the_journals_no_room_line_names_it_and_eio_is_a_write_errors_line(tmp_path, monkeypatch, capsys) -> None:
    """What a command prints: ENOSPC is the one no-room line naming the journal; EIO is no no-room error, but a
    write's (s57 f2: :func:`retrieval.errors.print_no_room` prints the one line naming the journal; it was a
    traceback ending naming the journal)."""
    exc, _, path = _journal_append(tmp_path, monkeypatch, errno.ENOSPC)
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    assert no_room_line(exc) == (
        f"[Errno 28] No space left on device: '{path}' (a full disk, a disk quota or a file-size limit stopped a "
        "write); make room (or raise the limit: ulimit -f) and run the same command again (set TOKRAG_TRACEBACK=1 "
        "for the stack trace)")
    exc, _, path = _journal_append(tmp_path, monkeypatch, errno.EIO)
    capsys.readouterr()
    assert print_no_room(exc, "tokrag leaderboard") is True  # s57 f2 (was False: a traceback)
    assert capsys.readouterr().err == (
        f"tokrag leaderboard: error: [Errno 5] Input/output error: '{path}' (a write failed: the disk or its connection "
        "failed); check the disk (dmesg; a network or removable disk: its connection) or choose another --runs-dir / "
        "--out / --baseline / TOKRAG_CACHE_DIR on another disk and run the same command again (set TOKRAG_TRACEBACK=1 "
        "for the stack trace)\n")
    assert str(exc) == f"[Errno 5] Input/output error: '{path}'"
