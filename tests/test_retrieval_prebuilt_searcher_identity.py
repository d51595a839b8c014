"""A prebuilt index's folder replaced in the same process (deleted and downloaded again, a folder copied there by
hand), or another Pyserini cache (``$PYSERINI_CACHE``) between calls: the next search reads the folder there now.

Before the fix ``retrieval.prebuilt.searcher`` was an ``lru_cache`` keyed by the prebuilt index's name (and
params, device) only: the retrieval worker, which takes each request's environment, kept searching the Lucene
reader it first opened, in the old folder or of the old cache, and cached that ranking under the run key.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prebuilt_helpers import LUCENE, PASSAGES, corpus, prebuilt  # noqa: F401 (fixtures)

from retrieval import Corpus, Passage, retrieve

# the same passages, each under the next docid: the same document and term counts (Pyserini's checks pass)
ROTATED = [(PASSAGES[i][0], *PASSAGES[i - 1][1:]) for i in range(len(PASSAGES))]
Q = {"0": "what is the capital of france"}


@pytest.fixture(scope="module")
def pyserini_cache(tmp_path_factory, corpus):  # noqa: F811 - overrides prebuilt_helpers' (no FAISS index needed)
    """A Pyserini cache holding only the Lucene index of ``wikipedia-dpr-100w`` (:data:`PASSAGES`)."""
    from retrieval.bm25 import build_bm25_index
    from retrieval.prebuilt import index_info

    root = tmp_path_factory.mktemp("pyserini-cache")
    lucene_dir = root / "indexes" / Path(index_info(LUCENE, "lucene").path).name
    build_bm25_index(corpus, lucene_dir)
    return root, lucene_dir, None


def _top(tmp_path: Path, name: str) -> tuple[str, str]:
    run = retrieve("prebuilt:" + LUCENE, Q, "bm25", k=1, cache_dir=tmp_path / name)  # a new run cache: searched
    assert run.searches == 1
    hit = run.ctxs["0"][0]
    return hit["docid"], hit["title"]


def test_a_replaced_prebuilt_folder_is_searched_anew(prebuilt, pyserini_cache, tmp_path):
    from retrieval.bm25 import build_bm25_index

    assert _top(tmp_path, "a") == ("1", "Paris")
    build_bm25_index(Corpus([Passage(*r) for r in ROTATED], name="rotated"), pyserini_cache[1], force=True)
    try:
        assert _top(tmp_path, "b") == ("2", "Paris")  # the old code: ("1", "Paris") from the old reader
    finally:
        build_bm25_index(Corpus([Passage(*r) for r in PASSAGES], name="tiny-wiki"), pyserini_cache[1], force=True)
    assert _top(tmp_path, "c") == ("1", "Paris")


def test_another_pyserini_cache_is_searched(prebuilt, pyserini_cache, tmp_path, monkeypatch):
    from retrieval.bm25 import build_bm25_index

    assert _top(tmp_path, "a") == ("1", "Paris")
    other = tmp_path / "other-cache"
    build_bm25_index(Corpus([Passage(*r) for r in ROTATED], name="rotated"), other / "indexes" / pyserini_cache[1].name)
    monkeypatch.setenv("PYSERINI_CACHE", str(other))
    assert _top(tmp_path, "b") == ("2", "Paris")  # the old code: ("1", "Paris") from the first cache's index
    monkeypatch.setenv("PYSERINI_CACHE", str(pyserini_cache[0]))
    assert _top(tmp_path, "c") == ("1", "Paris")


def test_an_unchanged_prebuilt_folder_keeps_its_searcher(prebuilt):
    from retrieval import prebuilt as pb

    a = pb.searcher(LUCENE, "bm25", pb.known_params("bm25"))
    assert pb.searcher(LUCENE, "bm25", pb.known_params("bm25")) is a
    assert pb.searcher(LUCENE, "bm25", {**pb.known_params("bm25"), "k1": 1.2}) is not a
