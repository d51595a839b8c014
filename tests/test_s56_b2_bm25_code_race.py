"""A BM25 run is computed only from an index built by this process's index code (s56 b2).

Two checkouts sharing one cache folder (``$TOKRAG_CACHE_DIR``) whose ``retrieval/bm25.py`` differ build the same
index folder (``indexes/bm25-<corpus fingerprint>``: the corpus keys it, not the code). ``retrieve`` checked the
index's recorded code in :func:`retrieval.bm25.build_bm25_index`, released the folder's lock, then opened the
searcher: when the other checkout rebuilt the folder in between, this process searched the other code's index and
cached that ranking under its own code's run key, where every later run of this code was served it.

The other process's rebuild is simulated in-process, between the build check and the open: the real build with the
title left out of the indexed text and another recorded code (as in test_s56_f4_retrieval_code_key). Real Lucene
index over a toy corpus, JVM in process.
"""

from __future__ import annotations

import json
import logging

import pytest

import retrieval.api
import retrieval.bm25
import retrieval.io
from retrieval import Corpus, Passage, retrieve
from retrieval.errors import ConfigError

# "zebra" is only in a title: indexed with titles t1 ranks first, without them it is not found at all
PASSAGES = [Passage("t1", "Zebra", "a striped animal of the savanna"),
            Passage("t2", "Horse", "the capital city of a country"),
            Passage("t3", "Lion", "the capital of the pride"),
            Passage("t4", "Eagle", "a bird of prey")]
QUERIES = {"q1": "zebra capital"}
OTHER_CODE = "0123456789abcdef"


@pytest.fixture(autouse=True)
def in_process_jvm(monkeypatch):
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")


def other_checkout_rebuilds(monkeypatch, corpus: Corpus, cache, times: int) -> list[str]:
    """Patch ``retrieval.api.build_bm25_index`` so that, after each of its first ``times`` calls returns, another
    checkout (titles not indexed, index code ``OTHER_CODE``) rebuilds the folder; returns the log of calls."""
    real = retrieval.bm25.build_bm25_index
    calls: list[str] = []

    def build(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append("build")
        if len(calls) <= times:
            with monkeypatch.context() as m:  # the other process's code, for its build only
                m.setattr(retrieval.bm25, "index_contents", lambda title, text: text)
                m.setattr(retrieval.bm25, "index_code", lambda: OTHER_CODE)
                real(corpus, cache_dir=cache)
            calls.append("other")
        return out

    monkeypatch.setattr(retrieval.api, "build_bm25_index", build)
    return calls


def recorded_code(cache) -> str:
    (meta,) = (cache / "indexes").glob("bm25-*/tokrag_index.json")
    return json.loads(meta.read_text(encoding="utf-8"))["code"]


def test_an_index_rebuilt_by_other_code_before_the_open_is_rebuilt_not_searched(tmp_path, monkeypatch, caplog):
    corpus = Corpus(PASSAGES, name="toy-b2-race")
    cache = tmp_path / "cache"
    calls = other_checkout_rebuilds(monkeypatch, corpus, cache, times=1)
    with caplog.at_level(logging.WARNING, logger="retrieval.api"):
        run = retrieve(corpus, QUERIES, k=3, cache_dir=cache)
    assert run.docids("q1")[0] == "t1"  # this code's ranking (titles indexed); before: the other code's
    assert calls == ["build", "other", "build"]  # rebuilt once more, by this code
    assert recorded_code(cache) == retrieval.bm25.index_code() != OTHER_CODE
    assert any("other index code" in r.getMessage() and OTHER_CODE in r.getMessage() for r in caplog.records)

    # what this code computes from nothing, and what the cache now serves, are the same ranking
    fresh = retrieve(corpus, QUERIES, k=3, cache_dir=tmp_path / "fresh")
    assert run.docids("q1") == fresh.docids("q1")
    assert [c["score"] for c in run.ctxs["q1"]] == [c["score"] for c in fresh.ctxs["q1"]]
    served = retrieve(corpus, QUERIES, k=3, cache_dir=cache)
    assert served.searches == 0 and served.docids("q1") == fresh.docids("q1")


def test_an_index_that_keeps_flipping_is_one_config_error_naming_the_folder(tmp_path, monkeypatch):
    corpus = Corpus(PASSAGES, name="toy-b2-race")
    cache = tmp_path / "cache"
    other_checkout_rebuilds(monkeypatch, corpus, cache, times=100)
    with pytest.raises(ConfigError) as err:
        retrieve(corpus, QUERIES, k=3, cache_dir=cache)
    line = str(err.value)
    assert "\n" not in line and "bm25-" in line and OTHER_CODE in line and retrieval.bm25.index_code() in line
    assert "TOKRAG_CACHE_DIR" in line
    assert not list((cache / "runs").glob("bm25-*/meta.json"))  # nothing cached from the other code's index
