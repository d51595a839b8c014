"""The run cache and BM25 index reuse follow the engine's versions (retrieval/cache.py ``engine_versions``): a run or
an index made by another Pyserini / Anserini (Lucene) is recomputed, never served. Toy corpus, real Lucene index."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from retrieval import Corpus, Passage, retrieve
from retrieval.bm25 import Bm25Searcher, build_bm25_index

QUERIES = {"q1": "eiffel tower"}


@pytest.fixture()
def toy() -> Corpus:
    texts = ["eiffel tower paris", "berlin germany", "rome italy", "eiffel paris france", "madrid spain",
             "tower bridge london"]
    return Corpus([Passage(f"d{i}", "", t) for i, t in enumerate(texts)], name="toy-versions")


@pytest.fixture(autouse=True)
def in_process(monkeypatch) -> None:
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")  # so that the patched versions are the ones keying the run


def _meta(run) -> tuple[Path, dict]:
    p = run.trec_path.parent / "meta.json"
    return p, json.loads(p.read_text())


def test_run_recorded_as_made_by_another_pyserini_is_recomputed(toy, tmp_path) -> None:
    first = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path)
    assert first.searches == 1 and retrieve(toy, QUERIES, k=3, cache_dir=tmp_path).searches == 0
    path, meta = _meta(first)
    installed = importlib.metadata.version("pyserini")
    meta["versions"]["pyserini"] = "0.12.0"  # as saved by an old Pyserini (Lucene 8 BM25)
    path.write_text(json.dumps(meta))
    again = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path)
    assert again.searches == 1  # recomputed, not served
    assert _meta(again)[1]["versions"]["pyserini"] == installed == again.config["engine"]["pyserini"]
    assert retrieve(toy, QUERIES, k=3, cache_dir=tmp_path).searches == 0  # and served from then on


def test_upgraded_pyserini_changes_the_key(toy, tmp_path, monkeypatch) -> None:
    before = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path)
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "99.0.0" if name == "pyserini" else real(name))
    after = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path)
    assert after.searches == 1 and after.fingerprint != before.fingerprint
    assert after.config["engine"]["pyserini"] == "99.0.0"


def test_other_anserini_jar_changes_the_key(toy, tmp_path, monkeypatch) -> None:
    import retrieval.java

    before = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path)
    monkeypatch.setattr(retrieval.java, "anserini_jar", lambda: Path("anserini-0.9.4-fatjar.jar"))
    after = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path)
    assert after.searches == 1 and after.fingerprint != before.fingerprint
    assert after.config["engine"]["anserini"] == "anserini-0.9.4-fatjar.jar"


@pytest.mark.parametrize("given", [False, True], ids=["cache-folder", "given-folder"])
def test_index_built_by_another_anserini_is_rebuilt(toy, tmp_path, given) -> None:
    from retrieval.java import anserini_jar

    where = tmp_path / "my-index" if given else None
    index = build_bm25_index(toy, where, cache_dir=tmp_path)
    meta_p = index / "tokrag_index.json"
    meta = json.loads(meta_p.read_text())
    assert meta["anserini_jar"] == anserini_jar().name
    meta["anserini_jar"] = "anserini-0.9.4-fatjar.jar"
    meta_p.write_text(json.dumps(meta))
    again = build_bm25_index(toy, where, cache_dir=tmp_path)  # the same folder, rebuilt (not refused, not reused)
    assert again == index and json.loads(meta_p.read_text())["anserini_jar"] == anserini_jar().name
    assert Bm25Searcher(again, corpus=toy).search("eiffel tower", k=1)[0][0] == "d0"


def test_engine_versions_per_retriever() -> None:
    from retrieval.cache import engine_versions

    assert set(engine_versions("bm25")) == {"pyserini", "anserini"}
    dense = engine_versions("dense")
    assert "anserini" not in dense and "pyserini" in dense and any(k.startswith("faiss") for k in dense)
    assert set(engine_versions("hybrid")) == set(engine_versions("bm25")) | set(dense)
    for name in ("torch", "transformers"):  # they encode the queries (and the index's passages)
        assert dense[name] == importlib.metadata.version(name) and name not in engine_versions("bm25")


def test_engine_versions_of_dense_runs_hold_tokenizers() -> None:
    """A fast tokenizer's ids (DPR's and MiniLM's query tokenizers) come from ``tokenizers``, which can be upgraded
    without transformers: cached dense runs were served after such an upgrade."""
    from retrieval.cache import engine_versions

    for retriever in ("dense", "dpr", "hybrid"):
        assert engine_versions(retriever)["tokenizers"] == importlib.metadata.version("tokenizers")
    assert "tokenizers" not in engine_versions("bm25")


def test_upgraded_transformers_changes_a_dense_runs_key(toy, tmp_path, monkeypatch) -> None:
    """A cached dense run was served after a torch/transformers upgrade (its queries encoded by another stack)."""
    from retrieval.dense import DENSE_PARAMS

    before = retrieve(toy, QUERIES, retriever="dense", params=DENSE_PARAMS, k=3, cache_dir=tmp_path)
    assert retrieve(toy, QUERIES, retriever="dense", params=DENSE_PARAMS, k=3, cache_dir=tmp_path).searches == 0
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "99.0.0" if name == "transformers" else real(name))
    after = retrieve(toy, QUERIES, retriever="dense", params=DENSE_PARAMS, k=3, cache_dir=tmp_path)
    assert after.searches == 1 and after.fingerprint != before.fingerprint
    assert after.config["engine"]["transformers"] == "99.0.0"


@pytest.mark.parametrize("given", [False, True], ids=["cache-folder", "given-folder"])
def test_dense_index_encoded_by_other_versions_is_re_encoded(toy, tmp_path, given, caplog) -> None:
    """A dense index records the Pyserini/transformers/torch versions that encoded its vectors; one recorded with
    other versions, or with none (built before they were recorded), is re-encoded in place with one warning, as a
    BM25 index of another Anserini is rebuilt (it was reused: the vectors of another encoder stack, silently)."""
    import logging

    from retrieval.dense import DENSE_PARAMS, build_dense_index, encoding_versions

    where = tmp_path / "my-dense" if given else None
    index = build_dense_index(toy, DENSE_PARAMS, index_dir=where, cache_dir=tmp_path, progress=False)
    meta_p = index / "tokrag_index.json"
    installed = {n: importlib.metadata.version(n) for n in ("pyserini", "tokenizers", "transformers", "torch")}
    assert json.loads(meta_p.read_text())["encoding_versions"] == installed == encoding_versions()
    stamp = (index / "index").stat().st_mtime_ns
    assert build_dense_index(toy, DENSE_PARAMS, index_dir=where, cache_dir=tmp_path, progress=False) == index
    assert (index / "index").stat().st_mtime_ns == stamp  # same versions: reused

    for edit in ({**installed, "torch": "1.0.0"}, None):  # another torch; no record (an index from before)
        meta = json.loads(meta_p.read_text())
        if edit is None:
            del meta["encoding_versions"]
        else:
            meta["encoding_versions"] = edit
        meta_p.write_text(json.dumps(meta))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="retrieval.dense"):
            again = build_dense_index(toy, DENSE_PARAMS, index_dir=where, cache_dir=tmp_path, progress=False)
        assert again == index and (index / "index").stat().st_mtime_ns != stamp  # re-encoded, not reused
        stamp = (index / "index").stat().st_mtime_ns
        assert json.loads(meta_p.read_text())["encoding_versions"] == installed
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1 and warnings[0].startswith(f"dense index {index} was encoded by ")
        assert warnings[0].endswith(f"installed: pyserini {installed['pyserini']}, tokenizers {installed['tokenizers']}, "
                                    f"torch {installed['torch']}, transformers {installed['transformers']} (other "
                                    "vectors): re-encoding it")
        assert ("torch 1.0.0" in warnings[0]) == (edit is not None)


def test_dense_index_follows_an_upgraded_torch(toy, tmp_path, monkeypatch) -> None:
    """The installed versions are read when the index is asked for: an upgrade re-encodes it."""
    from retrieval.dense import DENSE_PARAMS, build_dense_index

    index = build_dense_index(toy, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    stamp = (index / "index").stat().st_mtime_ns
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "99.0.0" if name == "torch" else real(name))
    assert build_dense_index(toy, DENSE_PARAMS, cache_dir=tmp_path, progress=False) == index
    assert (index / "index").stat().st_mtime_ns != stamp
    assert json.loads((index / "tokrag_index.json").read_text())["encoding_versions"]["torch"] == "99.0.0"


def test_dense_index_follows_an_upgraded_tokenizers(toy, tmp_path, monkeypatch) -> None:
    """A fast tokenizer's ids come from ``tokenizers`` (upgradable without transformers): an upgrade re-encodes."""
    from retrieval.dense import DENSE_PARAMS, build_dense_index

    index = build_dense_index(toy, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    stamp = (index / "index").stat().st_mtime_ns
    assert build_dense_index(toy, DENSE_PARAMS, cache_dir=tmp_path, progress=False) == index
    assert (index / "index").stat().st_mtime_ns == stamp  # same versions: reused
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.19.0" if name == "tokenizers" else real(name))
    assert build_dense_index(toy, DENSE_PARAMS, cache_dir=tmp_path, progress=False) == index
    assert (index / "index").stat().st_mtime_ns != stamp
    assert json.loads((index / "tokrag_index.json").read_text())["encoding_versions"]["tokenizers"] == "0.19.0"
