"""``tokrag retrieve --output run.trec`` says how the run was made: ``run.trec.meta.json`` beside it (the run cache's
config and versions, the output files' checksums) and a TREC run tag naming the retriever and a fingerprint of its
parameters, so runs with other k1/b are told apart (they all carried ``tokrag-bm25`` and no metadata before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.cli import main
from retrieval.errors import ConfigError
from retrieval.io import sha256_file

PASSAGES = [
    {"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600."},
    {"id": "p2", "title": "William Shakespeare", "text": "William Shakespeare was an English playwright who wrote Hamlet."},
    {"id": "p3", "title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"id": "p4", "title": "Mona Lisa", "text": "The Mona Lisa is a portrait painted by Leonardo da Vinci."},
]
TOPICS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "capital of france painted", "answers": ["Paris"]}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("outmeta")
    corpus, topics = root / "passages.jsonl", root / "topics.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    topics.write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    return {"root": root, "corpus": str(corpus), "topics": str(topics), "cache": ["--cache-dir", str(root / "cache")]}


def _retrieve(tiny, out: Path, *extra: str) -> None:
    assert main(["retrieve", "--corpus", tiny["corpus"], "--bm25", "--topics", tiny["topics"], "--hits", "2",
                 "--output", str(out), *extra, *tiny["cache"]]) == 0


def _tags(trec: Path) -> set[str]:
    return {line.split()[5] for line in trec.read_text().splitlines()}


def test_output_has_meta_beside_it_and_a_tag_per_parameters(tiny, capsys):
    a, b = tiny["root"] / "a" / "run.trec", tiny["root"] / "b" / "run.trec"
    _retrieve(tiny, a, "--k1", "0.9", "--b", "0.4")
    _retrieve(tiny, b, "--k1", "1.5", "--b", "0.9")
    capsys.readouterr()
    meta_a, meta_b = (json.loads((p.parent / "run.trec.meta.json").read_text()) for p in (a, b))
    # the config the run was made with, and the versions, travel with the run
    assert meta_a["config"]["retriever"] == "bm25" and meta_a["config"]["params"] == {"k1": 0.9, "b": 0.4}
    assert meta_b["config"]["params"] == {"k1": 1.5, "b": 0.9}
    assert meta_a["config"]["k"] == 2 and meta_a["config"]["corpus"]["size"] == 4
    assert meta_a["config"]["corpus"]["fingerprint"] and meta_a["versions"]["pyserini"]
    # the checksums are those of the files written beside it
    assert meta_a["output"]["run"] == "run.trec" and meta_a["output"]["ctxs"] == "run.ctxs.jsonl"
    assert meta_a["output"]["sha256"] == {"run": sha256_file(a), "ctxs": sha256_file(a.parent / "run.ctxs.jsonl")}
    # the tags tell the two apart, and say the retriever
    tag_a, tag_b = meta_a["output"]["tag"], meta_b["output"]["tag"]
    assert _tags(a) == {tag_a} and _tags(b) == {tag_b} and tag_a != tag_b
    assert tag_a.startswith("tokrag-bm25-") and len(tag_a) == len("tokrag-bm25-") + 8
    # the defaults (k1 0.9, b 0.4) are the same parameters: the same tag
    c = tiny["root"] / "c.trec"
    _retrieve(tiny, c)
    assert _tags(c) == {tag_a}
    assert json.loads((tiny["root"] / "c.trec.meta.json").read_text())["key"] == meta_a["key"]
    # only the tag differs from the run cache's file (scores and order byte for byte), which keeps its tag
    cached = Path(meta_a["cache"]["folder"]) / "run.trec"
    assert sha256_file(cached) == meta_a["cache"]["sha256"]["run.trec"]
    assert [ln.rsplit(" ", 1)[0] for ln in a.read_text().splitlines()] == [
        ln.rsplit(" ", 1)[0] for ln in cached.read_text().splitlines()]
    assert _tags(cached) == {"tokrag-bm25"}
    # retrieve eval still reads the run (the tag is ignored) with the same figures as the ctxs JSONL
    assert main(["retrieve", "eval", "--run", str(a), "--corpus", tiny["corpus"], "--topics", tiny["topics"], "--k", "1", "--json"]) == 0
    from_trec = json.loads(capsys.readouterr().out)
    assert main(["retrieve", "eval", "--run", str(a.parent / "run.ctxs.jsonl"), "--topics", tiny["topics"], "--k", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == from_trec


def test_index_only_output_has_meta_and_the_same_tag(tiny, capsys):
    assert main(["index", "build", "--corpus", tiny["corpus"], "--index", str(tiny["root"] / "idx"), *tiny["cache"]]) == 0
    out = tiny["root"] / "idx.trec"
    assert main(["retrieve", "--index", str(tiny["root"] / "idx"), "--topics", tiny["topics"], "--hits", "2",
                 "--k1", "1.5", "--b", "0.9", "--output", str(out), *tiny["cache"]]) == 0
    ref = tiny["root"] / "ref.trec"
    _retrieve(tiny, ref, "--k1", "1.5", "--b", "0.9")
    capsys.readouterr()
    meta = json.loads((tiny["root"] / "idx.trec.meta.json").read_text())
    assert meta["config"]["params"] == {"k1": 1.5, "b": 0.9} and meta["config"]["k"] == 2
    assert meta["config"]["index"]["meta"]["num_docs"] == 4 and meta["versions"]["pyserini"]
    assert meta["output"]["sha256"]["run"] == sha256_file(out)
    assert _tags(out) == _tags(ref) == {meta["output"]["tag"]}


def test_output_ctxs_on_the_meta_file_is_refused(tiny):
    out = tiny["root"] / "x.trec"
    with pytest.raises(ConfigError, match=r"--output-ctxs .*x\.trec\.meta\.json: is the file the run's metadata goes to"):
        main(["retrieve", "--corpus", tiny["corpus"], "--bm25", "--topics", tiny["topics"], "--output", str(out),
              "--output-ctxs", str(tiny["root"] / "x.trec.meta.json"), *tiny["cache"]])
