"""``tokrag retrieve --output run.trec`` writes run.trec, run.ctxs.jsonl, then run.trec.meta.json, each atomically but
not together (s50 b2 N3). Over an earlier output of other settings, a run stopped between the writes left a mixed set:
stopped before the ctxs write, the new run.trec (3 hits) beside the earlier run.ctxs.jsonl (1 hit) and a .meta.json
saying ``k: 1``; stopped before the metadata write, both new files beside a .meta.json of the earlier run (k 1, other
checksums). Now the three are written to temporary files before any is renamed in (tests/test_s51_r3_retrieve_output_staged.py),
so a run stopped while it writes leaves the earlier output as it was (/work/scratch/s51/f3/mixed_repro.py,
mixed_old.txt; /work/scratch/s51/r3/staged_repro.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import retrieval.io as rio
from retrieval.cli import main

PASSAGES = [
    {"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600."},
    {"id": "p2", "title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"id": "p3", "title": "Mona Lisa", "text": "The Mona Lisa is a portrait painted by Leonardo da Vinci."},
    {"id": "p4", "title": "Macbeth", "text": "Macbeth is a tragedy; its author Shakespeare wrote it around 1606."},
    {"id": "p5", "title": "Louvre", "text": "The Louvre in Paris holds the Mona Lisa."},
]
TOPICS = [{"id": "q1", "question": "who wrote the tragedy hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "where is the mona lisa kept", "answers": ["Louvre"]}]


class Killed(BaseException):
    """A kill between two writes (not an Exception: nothing of ours may catch it)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("outset")
    (root / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (root / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    return root


def _retrieve(root: Path, out: Path, hits: int) -> None:
    assert main(["retrieve", "--corpus", str(root / "passages.jsonl"), "--bm25", "--topics", str(root / "topics.jsonl"),
                 "--hits", str(hits), "--output", str(out), "--cache-dir", str(root / "cache")]) == 0


def _depth(out: Path) -> int:
    return max(sum(1 for line in out.read_text().splitlines() if line.split()[0] == t["id"]) for t in TOPICS)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("stopped_before", ["run.ctxs.jsonl", "run.trec.meta.json"])
def test_a_retrieve_stopped_while_writing_leaves_the_earlier_set(data, monkeypatch, stopped_before):
    out = data / stopped_before.replace(".", "_") / "run.trec"
    ctxs, meta = out.with_name("run.ctxs.jsonl"), out.with_name("run.trec.meta.json")
    _retrieve(data, out, 1)  # the earlier output, of other settings
    assert _depth(out) == 1 and json.loads(meta.read_text())["config"]["k"] == 1
    write = rio.write_beside  # each file's temporary copy, before any is renamed in

    def stop(path, data_):
        if Path(path).name == stopped_before:
            raise Killed(path)
        return write(path, data_)

    monkeypatch.setattr(rio, "write_beside", stop)
    with pytest.raises(Killed):
        _retrieve(data, out, 3)
    assert _depth(out) == 1  # the earlier run.trec (was: the new one, 2 passages per question)
    assert json.loads(meta.read_text())["config"]["k"] == 1  # the earlier run's metadata, of these files:
    assert json.loads(meta.read_text())["output"]["sha256"] == {"run": _sha(out), "ctxs": _sha(ctxs)}
    assert [len(json.loads(line)["ctxs"]) for line in ctxs.read_text().splitlines()] == [1, 1]
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.ctxs.jsonl", "run.trec", "run.trec.meta.json"]
    monkeypatch.undo()
    _retrieve(data, out, 3)  # the same command again: the complete set, the metadata of these files
    record = json.loads(meta.read_text())
    assert record["config"]["k"] == 3
    assert record["output"]["sha256"] == {"run": _sha(out), "ctxs": _sha(ctxs)}


def test_a_complete_rewrite_keeps_one_set(data):
    out = data / "again" / "run.trec"
    _retrieve(data, out, 1)
    _retrieve(data, out, 3)
    meta = json.loads(out.with_name("run.trec.meta.json").read_text())
    assert meta["config"]["k"] == 3 and meta["output"]["sha256"]["run"] == _sha(out)
    assert meta["output"]["sha256"]["ctxs"] == _sha(out.with_name("run.ctxs.jsonl"))
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.ctxs.jsonl", "run.trec", "run.trec.meta.json"]
