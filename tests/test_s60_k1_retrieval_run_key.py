"""s60 k1: the retrieval run cache keys a local corpus by its passages and the dense encoders by their files.

Before, the run key held the corpus's file name (``corpus.name``) and the encoders as named (``all-MiniLM-L6-v2``,
its folder, the folder with a trailing ``/``), so the same passages under another name, through a symlink or in a
copy, and the same encoder named another way were searched again (the dense index, keyed by content, was shared).
``meta.json`` still records the names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval.api import _local_config, retrieve
from retrieval.cache import RunCache
from retrieval.corpus import load_corpus
from retrieval.dense import DENSE_PARAMS, resolve_encoder
from retrieval_helpers import write_jsonl

ROWS = [{"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."},
        {"id": "p2", "title": "Paris", "text": "Paris is the capital of France."},
        {"id": "p3", "title": "Rome", "text": "Rome is the capital of Italy."}]
QUERIES = {"q1": "who wrote hamlet", "q2": "capital of france"}


@pytest.fixture
def corpora(tmp_path, monkeypatch):
    """``c.jsonl``, a copy ``sub/other.jsonl`` and a symlink ``link.jsonl`` to it; the working directory is ``tmp_path``."""
    write_jsonl(tmp_path / "c.jsonl", ROWS)
    (tmp_path / "sub").mkdir()
    shutil.copy(tmp_path / "c.jsonl", tmp_path / "sub" / "other.jsonl")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "c.jsonl")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _bm25_key(path) -> str:
    from retrieval.api import _resolve_params

    p, _ = _resolve_params("bm25", None)
    return RunCache("unused").key(_local_config("bm25", p, load_corpus(path), 2, QUERIES, {}))


def test_the_same_passages_under_another_name_are_one_bm25_key(corpora):
    names = ["c.jsonl", str(corpora / "c.jsonl"), "sub/other.jsonl", "link.jsonl"]
    assert len({_bm25_key(n) for n in names}) == 1
    write_jsonl(corpora / "d.jsonl", ROWS[:2] + [dict(ROWS[2], text="Rome is the capital of Lazio.")])
    assert _bm25_key("d.jsonl") != _bm25_key("c.jsonl")  # other passages: another key


def test_an_encoder_named_three_ways_is_one_dense_key(corpora):
    folder = resolve_encoder("all-MiniLM-L6-v2")
    corpus = load_corpus("c.jsonl")
    keys, configs = set(), []
    for name in ("all-MiniLM-L6-v2", str(folder), str(folder) + "/"):
        p = {**DENSE_PARAMS, "encoder": name}
        configs.append(_local_config("dense", p, corpus, 2, QUERIES, {}))
        keys.add(RunCache("unused").key(configs[-1]))
    assert len(keys) == 1
    assert [c["params"]["encoder"] for c in configs] == ["all-MiniLM-L6-v2", str(folder), str(folder) + "/"]  # recorded
    other = _local_config("dense", {**DENSE_PARAMS, "max_length": 128}, corpus, 2, QUERIES, {})
    assert RunCache("unused").key(other) not in keys  # a setting that changes the vectors: another key


def test_what_the_key_leaves_out():
    from retrieval.cache import key_material

    local = {"retriever": "dense", "params": {"encoder": "e", "query_encoder": None, "pooling": "mean"},
             "corpus": {"name": "c.jsonl", "fingerprint": "f", "size": 3},
             "encoder": {"encoder": "e", "encoder_sha256": "a", "query_encoder": "e", "query_encoder_sha256": "b"}}
    assert key_material(local) == {"retriever": "dense", "params": {"pooling": "mean"},
                                   "corpus": {"fingerprint": "f", "size": 3},
                                   "encoder": {"encoder_sha256": "a", "query_encoder_sha256": "b"}}
    prebuilt = {"retriever": "dpr", "params": {"query_encoder": "q"},
                "corpus": {"name": "prebuilt:wikipedia-dpr-100w", "indexes": [{"name": "i", "md5": "m"}], "size": 9},
                "encoder": {"query_encoder": "q", "query_encoder_sha256": "b"}}
    assert key_material(prebuilt) == prebuilt  # a prebuilt corpus is its name and checksums: keyed as given


def test_tokrag_retrieve_serves_the_run_of_a_renamed_corpus(corpora):
    cache = corpora / "cache"
    first = retrieve("c.jsonl", QUERIES, "bm25", k=2, cache_dir=cache)
    assert first.searches == len(QUERIES)
    for name in ("sub/other.jsonl", "link.jsonl"):
        again = retrieve(name, QUERIES, "bm25", k=2, cache_dir=cache)
        assert again.searches == 0 and again.fingerprint == first.fingerprint and again.ctxs == first.ctxs
    assert len(list((cache / "runs").glob("bm25-*/meta.json"))) == 1
    meta = json.loads(next((cache / "runs").glob("bm25-*/meta.json")).read_text())
    assert meta["config"]["corpus"]["name"] == "c.jsonl"  # the name it was computed under is still recorded
