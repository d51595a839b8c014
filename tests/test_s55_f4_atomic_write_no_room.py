"""A full disk met by an atomic write (``retrieval.io.write_beside`` / ``atomic_write_bytes``: TREC runs, ctxs JSONL,
run-cache files, journals, records, reports) names the file it was writing (s55 f4; r1's finding in s55).

The bytes go through a buffered file object, whose flush raises ``OSError(28)`` with no path; every caller's one line
(``retrieval.errors.no_room_line``) then read ``[Errno 28] No space left on device (a full disk, ...)``, naming no file
and no disk. The writer now raises the same errno naming the file written (a link's target), removes its temporary
file and leaves the earlier file as it was. The fault is real: retrieval.io's own code, its file object opened on
``/dev/full`` (opened for writing only; nothing replaces or changes the device).
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import retrieval.io as rio
from retrieval.errors import no_room_line

TAIL = ("(a full disk, a disk quota or a file-size limit stopped a write); make room (or raise the limit: ulimit -f) "
        "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)")


class _FullDiskOs:
    """``os`` for :mod:`retrieval.io`, except that a file object opened on a new descriptor writes to ``/dev/full``."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def fdopen(fd, mode="r", *args, **kwargs):
        os.close(fd)
        return open("/dev/full", mode, *args, **kwargs)


@pytest.fixture(autouse=True)
def _no_traceback_env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)


def test_a_full_disk_names_the_file_removes_the_temporary_and_keeps_the_old_file(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "run.trec"
    target.write_bytes(b"q1 Q0 d1 1 1.0 old\n")
    link = folder / "link.trec"
    link.symlink_to("run.trec")
    monkeypatch.setattr(rio, "os", _FullDiskOs())
    for path, write in ((target, lambda p: rio.atomic_write_bytes(p, b"new" * 5000)),
                        (target, lambda p: rio.atomic_write_text(p, "new\n")),
                        (target, lambda p: rio.atomic_write_json(p, {"new": 1})),
                        (link, lambda p: rio.atomic_write_text(p, "new\n"))):
        with pytest.raises(OSError) as caught:
            write(path)
        exc = caught.value
        assert (exc.errno, exc.filename, str(exc)) == (errno.ENOSPC, str(target),
                                                       f"[Errno 28] No space left on device: '{target}'")
        assert no_room_line(exc) == f"[Errno 28] No space left on device: '{target}' {TAIL}"
        assert isinstance(exc.__cause__, OSError) and exc.__cause__.errno == errno.ENOSPC  # the write's own error
        assert target.read_bytes() == b"q1 Q0 d1 1 1.0 old\n"  # the earlier file as it was
        assert sorted(p.name for p in folder.iterdir()) == ["link.trec", "run.trec"]  # no temporary file left
        assert link.is_symlink()


def test_no_room_for_the_temporary_file_itself_names_the_file_written(tmp_path, monkeypatch):
    """``os.open`` of the temporary file fails (no inode left: ENOSPC; a quota: EDQUOT): it named the temporary file
    ``.run.trec.<8 hex>.tmp``, which the user never asked for; other errors naming another file are kept."""
    target = tmp_path / "out" / "run.trec"
    real_open = os.open

    class NoInodeOs(_FullDiskOs):
        @staticmethod
        def open(path, flags, mode=0o777):
            if Path(path).name.endswith(".tmp"):
                raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), str(path))
            return real_open(path, flags, mode)

    monkeypatch.setattr(rio, "os", NoInodeOs())
    with pytest.raises(OSError) as caught:
        rio.atomic_write_text(target, "new\n")
    assert (caught.value.errno, caught.value.filename) == (errno.EDQUOT, str(target))
    assert no_room_line(caught.value) == f"[Errno {errno.EDQUOT}] {os.strerror(errno.EDQUOT)}: '{target}' {TAIL}"
    assert sorted(p.name for p in target.parent.iterdir()) == []


def test_other_errors_keep_their_type_and_a_path_they_name(tmp_path, monkeypatch):
    """Not a new class of error: a write error naming another file is raised as it is, a non-OSError untouched."""
    target = tmp_path / "run.trec"

    class OtherFileOs(_FullDiskOs):
        @staticmethod
        def fsync(fd):
            raise PermissionError(errno.EACCES, "Permission denied", "/elsewhere")

    monkeypatch.setattr(rio, "os", OtherFileOs())
    with pytest.raises(PermissionError) as caught:
        rio.write_beside(target, b"")  # nothing to flush: the fsync is the first failure
    assert (caught.value.filename, caught.value.__cause__) == ("/elsewhere", None)

    class InterruptedOs(_FullDiskOs):
        @staticmethod
        def fsync(fd):
            raise KeyboardInterrupt

    monkeypatch.setattr(rio, "os", InterruptedOs())
    with pytest.raises(KeyboardInterrupt):
        rio.write_beside(target, b"")
    assert list(tmp_path.iterdir()) == []


TEXT = " It is described at length in many encyclopedias, guides and histories of the period." * 4
PASSAGES = [{"id": f"p{i}", "title": f"T{i}", "text": f"Passage {i} about Hamlet, Paris and the Louvre." + TEXT}
            for i in range(6)]
TOPICS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "where is the louvre", "answers": ["Paris"]}]


def _args(root: Path, out: Path, hits: int) -> list[str]:
    return ["retrieve", "--corpus", str(root / "passages.jsonl"), "--bm25", "--topics", str(root / "topics.jsonl"),
            "--hits", str(hits), "--output", str(out), "--cache-dir", str(root / "cache")]


@pytest.mark.parametrize("full", ["run.trec", "run.ctxs.jsonl", "run.trec.meta.json"])
def test_tokrag_retrieve_on_a_full_disk_names_the_output_and_keeps_the_earlier_run(tmp_path, monkeypatch, capsys,
                                                                                    full):
    """``tokrag retrieve`` whose TREC run, ctxs JSONL or metadata meets a full disk (retrieval.cli._write_run_files ->
    retrieval.io.write_beside): the one line names that file, exit 2; the earlier run's three files are as they were,
    no temporary file is left; with room the same command writes the new run."""
    from tokrag_model.cli import main

    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    out = tmp_path / "out" / "run.trec"
    assert main(_args(tmp_path, out, 3)) == 0
    assert main(_args(tmp_path, tmp_path / "warm" / "run.trec", 2)) == 0  # the run cache holds the 2-hit search
    earlier = {p.name: p.read_bytes() for p in out.parent.iterdir()}
    assert sorted(earlier) == ["run.ctxs.jsonl", "run.trec", "run.trec.meta.json"]
    assert len(earlier["run.trec"].splitlines()) == 6  # 2 topics x 3 hits

    real_write_beside = rio.write_beside

    def write_beside(path, data):
        if Path(path).name != full:
            return real_write_beside(path, data)
        with monkeypatch.context() as m:  # this file only: retrieval.io's own code, its file on a full disk
            m.setattr(rio, "os", _FullDiskOs())
            return real_write_beside(path, data)

    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(rio, "write_beside", write_beside)
        rc = main(_args(tmp_path, out, 2))
    err = capsys.readouterr().err
    assert (rc, err) == (2, f"tokrag retrieve: error: [Errno 28] No space left on device: '{out.parent / full}' {TAIL}\n")
    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == earlier  # as before, no temporary file beside
    assert main(_args(tmp_path, out, 2)) == 0  # with room, the same command writes the new run
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4
