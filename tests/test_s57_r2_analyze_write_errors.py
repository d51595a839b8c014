"""``tokrag analyze``'s own in-place writes are the one line of a failed write, not a traceback (s57 r2).

f2 (b908462) made a failed write of any errno one line for every command, through the writes that mark their
errors (``retrieval.errors.mark_write``); it left three writes of ``tasks.analyze`` unmarked, so an EIO, EACCES or
EISDIR there still ended ``tokrag analyze`` (and ``tokrag calibrate``, which collects the same records) in a
traceback, exit 1: the ``--out`` folder's creation (``collect_records``), the records file's open for appending (only
its writes were inside ``no_room_naming``), and the cut of a torn last line (``_repair_records``). Each is now the
line naming the file, exit 2, and the same command then completes, reusing the records written before.

The failing disk is a fake (``tasks.analyze``'s ``open``, or ``Path.mkdir`` of the one folder), raising the errno as
the kernel does (naming the file); the model and data are ``tests.analyze_fakes``' (no model is loaded).
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import pathlib
from pathlib import Path

import pytest

TAIL = "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"
WHERE = "--out / TOKRAG_CACHE_DIR"
LINES = {
    errno.EIO: ("[Errno 5] Input/output error: '{f}' (a write failed: the disk or its connection failed); check the "
                f"disk (dmesg; a network or removable disk: its connection) or choose another {WHERE} on another "
                f"disk {TAIL}"),
    errno.EACCES: ("[Errno 13] Permission denied: '{f}' (a write failed); make the folder writable for this user or "
                   f"choose another {WHERE} {TAIL}"),
}


@pytest.fixture
def fake(monkeypatch):
    from tasks import analyze
    from tests.analyze_fakes import install_fake

    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)

    def record(i, sid):  # even samples benefit (RAG top-1 gold), odd ones detriment
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    return install_fake(monkeypatch, record, device="cpu")


def _argv(out: Path) -> list[str]:
    return ["analyze", "--data", "wiki", "--split", "dev", "--out", str(out), "--n", "4", "--bootstrap", "5"]


def _records(out: Path) -> Path:
    (path,) = out.glob("records_wiki_dev_*.jsonl")
    return path


def _fail_open(monkeypatch, mode: str, code: int, seen: list) -> None:
    """``tasks.analyze``'s ``open`` of a records file in ``mode`` raises ``code`` naming the file (the kernel's)."""
    from tasks import analyze

    def fake_open(file, m="r", *args, **kwargs):
        if m == mode and Path(file).name.startswith("records_"):
            seen.append(Path(file))
            raise OSError(code, os.strerror(code), str(file))
        return builtins.open(file, m, *args, **kwargs)

    monkeypatch.setattr(analyze, "open", fake_open, raising=False)


@pytest.mark.parametrize("code", [errno.EIO, errno.EACCES])
def test_the_records_files_open_is_one_line(fake, tmp_path, monkeypatch, capsys, code):
    """Was: a traceback ending ``OSError: [Errno 5] Input/output error: '<out>/records_wiki_dev_<key>.jsonl'``."""
    from tokrag_model.cli import main

    out = tmp_path / "out"
    seen: list = []
    capsys.readouterr()
    with monkeypatch.context() as m:
        _fail_open(m, "a", code, seen)
        rc = main(_argv(out))
    assert len(seen) == 1
    assert (rc, capsys.readouterr().err.splitlines()) == (2, [f"tokrag analyze: error: {LINES[code].format(f=seen[0])}"])
    assert fake.scored == [] and not (out / "results.json").exists()
    assert main(_argv(out)) == 0  # on a disk that writes, the same command
    assert fake.scored == [f"wiki:q{i}" for i in range(4)]
    assert json.loads((out / "results.json").read_text())["configs"]["wiki"]["n"] == 4


def test_the_out_folders_creation_is_one_line(fake, tmp_path, monkeypatch, capsys):
    """``collect_records``' ``out_dir.mkdir`` (``--out`` not there yet; EIO from the disk). Was: a traceback."""
    from tokrag_model.cli import main

    out = tmp_path / "new" / "out"
    real = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self == out:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return real(self, *args, **kwargs)

    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(pathlib.Path, "mkdir", mkdir)
        rc = main(_argv(out))
    assert (rc, capsys.readouterr().err.splitlines()) == (2, [f"tokrag analyze: error: {LINES[errno.EIO].format(f=out)}"])
    assert fake.scored == [] and not out.exists()
    assert main(_argv(out)) == 0 and (out / "results.json").is_file()


def test_the_cut_of_a_torn_last_record_is_one_line_and_the_records_are_kept(fake, tmp_path, monkeypatch, capsys):
    """A records file whose last line a kill cut (no line end): its cut (``_repair_records``: ``open(path, 'r+b')``
    then ``truncate``) meets EACCES at the open. Was: a traceback. The file is left as it was, and the same command
    cuts the torn line and reuses the 4 whole records (nothing scored again)."""
    from tokrag_model.cli import main

    out = tmp_path / "out"
    assert main(_argv(out)) == 0
    path = _records(out)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"sample": "wiki:q9", "inp')  # torn
    fake.scored.clear()
    seen: list = []
    capsys.readouterr()
    with monkeypatch.context() as m:
        _fail_open(m, "r+b", errno.EACCES, seen)
        rc = main(_argv(out))
    assert seen == [path]
    assert (rc, capsys.readouterr().err.splitlines()) == (2, [f"tokrag analyze: error: {LINES[errno.EACCES].format(f=path)}"])
    assert path.read_bytes() == whole + b'{"sample": "wiki:q9", "inp'
    assert main(_argv(out)) == 0
    assert path.read_bytes() == whole and fake.scored == []
