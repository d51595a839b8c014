"""``tokrag retrieve --output run.trec`` over an earlier complete output: be7e53c removed the earlier run.trec.meta.json
and run.ctxs.jsonl before its first write, so a run that failed or was stopped while writing (a full disk, Ctrl-C
during a large ctxs file) destroyed the earlier complete output and left a TREC file alone (/work/scratch/s51/r3/
staged_repro.py, staged_old.txt: the ctxs write failing with EFBIG under RLIMIT_FSIZE left the new run.trec alone).
Now the three files are written to temporary files first and renamed in only when all are written (the earlier
metadata and ctxs removed just before the renames), so such a run leaves the earlier output complete; a stop between
the renames still leaves the files of one run only.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
from pathlib import Path

import pytest

from retrieval.cli import main

TEXT = " It is described at length in many encyclopedias, guides and histories of the period." * 4
PASSAGES = [
    {"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600." + TEXT},
    {"id": "p2", "title": "Paris", "text": "Paris is the capital and largest city of France." + TEXT},
    {"id": "p3", "title": "Mona Lisa", "text": "The Mona Lisa is a portrait painted by Leonardo da Vinci." + TEXT},
    {"id": "p4", "title": "Macbeth", "text": "Macbeth is a tragedy; its author Shakespeare wrote it around 1606." + TEXT},
    {"id": "p5", "title": "Louvre", "text": "The Louvre in Paris holds the Mona Lisa." + TEXT},
]
TOPICS = [{"id": "q1", "question": "who wrote the tragedy hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "where is the mona lisa kept", "answers": ["Louvre"]}]
NAMES = ["run.ctxs.jsonl", "run.trec", "run.trec.meta.json"]


class Killed(BaseException):
    """A kill or Ctrl-C (not an Exception: nothing of ours may catch it)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("staged")
    (root / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (root / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    _retrieve(root, root / "warm" / "run.trec", 3)  # the run cache holds the k=3 search: below, only the outputs are written
    return root


def _retrieve(root: Path, out: Path, hits: int) -> None:
    assert main(["retrieve", "--corpus", str(root / "passages.jsonl"), "--bm25", "--topics", str(root / "topics.jsonl"),
                 "--hits", str(hits), "--output", str(out), "--cache-dir", str(root / "cache")]) == 0


def _earlier(data: Path, name: str) -> tuple[Path, dict[str, bytes]]:
    out = data / name / "run.trec"
    _retrieve(data, out, 1)
    files = {p.name: p.read_bytes() for p in out.parent.iterdir()}
    assert sorted(files) == NAMES and json.loads(files["run.trec.meta.json"])["config"]["k"] == 1
    return out, files


def _complete(out: Path) -> bool:
    meta = json.loads(out.with_name("run.trec.meta.json").read_text())
    sha = {k: hashlib.sha256(out.with_name(n).read_bytes()).hexdigest() for k, n in (("run", out.name),
                                                                                      ("ctxs", meta["output"]["ctxs"]))}
    return meta["output"]["sha256"] == sha


def test_a_write_failing_for_a_full_disk_leaves_the_earlier_output(data):
    """A real write failure (EFBIG: the ctxs file over RLIMIT_FSIZE, as a full disk stops it), no monkeypatch."""
    out, before = _earlier(data, "efbig")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (600, hard))  # the new run.trec (~250 bytes) fits, its ctxs (~3 KB) not
    try:
        with pytest.raises(OSError) as err:
            _retrieve(data, out, 3)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert err.value.errno == 27  # EFBIG, "File too large"
    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == before  # was: the new run.trec alone
    assert _complete(out)


@pytest.mark.parametrize("stopped_at", NAMES)
def test_a_run_stopped_while_writing_leaves_the_earlier_output(data, monkeypatch, stopped_at):
    """Stopped as the file's bytes are flushed to disk (os.fsync, which every atomic write of retrieval.io calls)."""
    out, before = _earlier(data, "stop_" + stopped_at.replace(".", "_"))
    fsync = os.fsync

    def stop(fd):
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(f".{stopped_at}."):  # its temporary file
            raise Killed(stopped_at)
        return fsync(fd)

    monkeypatch.setattr(os, "fsync", stop)
    with pytest.raises(Killed):
        _retrieve(data, out, 3)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == before  # nothing new, no temporary file left
    _retrieve(data, out, 3)  # the same command again: the complete new set
    assert json.loads(out.with_name("run.trec.meta.json").read_text())["config"]["k"] == 3 and _complete(out)


def test_a_stop_between_the_renames_leaves_one_run_only(data, monkeypatch):
    out, before = _earlier(data, "renames")
    replace = os.replace

    def stop(src, dst):
        if Path(dst).name == "run.ctxs.jsonl":
            raise Killed(dst)
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", stop)
    with pytest.raises(Killed):
        _retrieve(data, out, 3)
    monkeypatch.undo()
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.trec"]  # the new TREC file alone, no temporary file
    assert out.read_bytes() != before["run.trec"]
