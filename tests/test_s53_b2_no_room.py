"""A write stopped by a full disk, a quota or a file-size limit (s53 b2; /work/scratch/s53/b2/probe_no_room.sh,
probe_no_room.txt): ``tokrag retrieve`` whose ctxs file met ``ulimit -f`` printed a 50-line traceback (the worker's
too) ending ``OSError: [Errno 27] File too large``, exit 1; ``tokrag leaderboard run`` whose cell journal met it, a
74-line one. The outputs were safe (atomic writes, the journal), only the message was a traceback. Now any tokrag
command says it in one line, exit 2: what stopped the write and to run the same command again after making room.
"""

from __future__ import annotations

import errno
import json
import os
import resource
from pathlib import Path

import pytest

import retrieval.cli
from tokrag_model.cli import main

TEXT = " It is described at length in many encyclopedias, guides and histories of the period." * 4
PASSAGES = [{"id": f"p{i}", "title": f"T{i}", "text": f"Passage {i} about Hamlet, Paris and the Louvre." + TEXT}
            for i in range(6)]
TOPICS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "where is the louvre", "answers": ["Paris"]}]


def _args(root: Path, out: Path) -> list[str]:
    return ["retrieve", "--corpus", str(root / "passages.jsonl"), "--bm25", "--topics", str(root / "topics.jsonl"),
            "--hits", "3", "--output", str(out), "--cache-dir", str(root / "cache")]


@pytest.fixture
def no_traceback(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)


@pytest.fixture
def data(tmp_path, no_traceback):
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    assert main(_args(tmp_path, tmp_path / "warm" / "run.trec")) == 0  # the run cache holds the search
    return tmp_path


def test_a_file_size_limit_is_one_line(data, capsys):
    """A real EFBIG (RLIMIT_FSIZE below the ctxs file's size, as a full disk stops a write), no monkeypatch."""
    capsys.readouterr()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (600, hard))  # run.trec (~200 bytes) fits, its ctxs (~3 KB) not
    try:
        rc = main(_args(data, data / "out" / "run.trec"))  # was: OSError raised out of main (a traceback, exit 1)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    # the file that met the limit is named (s55 f4: the atomic write's flush raised EFBIG without a path)
    assert err == [f"tokrag retrieve: error: [Errno 27] File too large: '{data / 'out' / 'run.ctxs.jsonl'}' (a full "
                   "disk, a disk quota or a file-size limit stopped a write); make room (or raise the limit: ulimit -f) "
                   "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"]
    assert not (data / "out").exists() or not any((data / "out").iterdir())  # nothing half-written
    assert main(_args(data, data / "out" / "run.trec")) == 0  # the same command again, with room, completes
    assert sorted(p.name for p in (data / "out").iterdir()) == ["run.ctxs.jsonl", "run.trec", "run.trec.meta.json"]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_or_quota_is_one_line(no_traceback, capsys, monkeypatch, code):
    def full(argv):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(retrieval.cli, "main", full)
    assert main(["index", "build", "--corpus", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tokrag index: error: [Errno {code}] ")
    assert "run the same command again" in err[0]


def test_other_os_errors_and_traceback_mode_still_raise(no_traceback, monkeypatch):
    def missing(argv):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "x")

    monkeypatch.setattr(retrieval.cli, "main", missing)
    with pytest.raises(FileNotFoundError):  # not a full disk: not dressed as one
        main(["retrieve", "--topics", "x"])

    def full(argv):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(retrieval.cli, "main", full)
    monkeypatch.setenv("TOKRAG_TRACEBACK", "1")
    with pytest.raises(OSError, match="No space left"):
        main(["retrieve", "--topics", "x"])
