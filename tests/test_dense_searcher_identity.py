"""A dense index folder re-encoded in place while a process that searched it lives on: that process searches
the new vectors.

Before the fix ``_dense_searcher`` was an ``lru_cache`` keyed by (folder, params, device) only; ``FaissSearcher``
holds the vectors in memory, so the long-lived process kept ranking with the old encoding after another shell's
``tokrag index build --force`` (or a re-encode for other versions / the passage-prefix format) rewrote the folder.
"""

from __future__ import annotations

import pytest

import retrieval.dense as D
from retrieval import Corpus, Passage
from retrieval.dense import DENSE_PARAMS, build_dense_index, dense_hits

TEXTS_A = {"d1": "apple orchard harvest in autumn", "d2": "banana plantation in the tropics", "d3": "a cherry tree"}
TEXTS_B = {"d1": "banana plantation in the tropics", "d2": "apple orchard harvest in autumn", "d3": "a cherry tree"}


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus([Passage(i, "", t) for i, t in TEXTS_A.items()], name="ident")


def test_reencoded_dense_index_is_searched_anew(corpus, tmp_path, monkeypatch):
    q = {"q": "apple orchard harvest"}
    rt = {"threads": 1}
    hits, n = dense_hits(corpus, q, 1, DENSE_PARAMS, rt, tmp_path)
    assert n == 1 and [d for d, _ in hits["q"]] == ["d1"]
    idx = build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    before = D.dense_index_identity(idx) if hasattr(D, "dense_index_identity") else None

    # the same folder re-encoded in place (--force) and giving other vectors, as another version of the encoder
    # stack would: here the passages of corpus B (same ids, texts swapped) go into corpus A's folder
    orig = D._encode_passages

    def swapped(enc, p, passages):
        swap = {TEXTS_A[k]: TEXTS_B[k] for k in TEXTS_A}
        return orig(enc, p, [(ti, swap[t]) for ti, t in passages])

    monkeypatch.setattr(D, "_encode_passages", swapped)
    assert build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False, force=True) == idx
    monkeypatch.setattr(D, "_encode_passages", orig)
    if before is not None:
        assert D.dense_index_identity(idx) != before

    hits, n = dense_hits(corpus, q, 1, DENSE_PARAMS, rt, tmp_path)
    assert n == 1 and [d for d, _ in hits["q"]] == ["d2"]  # the new vectors: d2 now holds the apple passage


def test_unchanged_dense_index_keeps_its_searcher(corpus, tmp_path):
    dp = {k: DENSE_PARAMS[k] for k in DENSE_PARAMS}
    idx = build_dense_index(corpus, dp, cache_dir=tmp_path, progress=False)
    import json

    a = D._dense_searcher(str(idx), json.dumps(dp, sort_keys=True), "cpu", corpus)
    b = D._dense_searcher(str(idx), json.dumps(dp, sort_keys=True), "cpu", corpus)
    assert a is b
    other = Corpus([Passage(i, "", t) for i, t in TEXTS_B.items()], name="other")
    with pytest.raises(D.IndexNotFoundError, match="stale dense index"):
        D._dense_searcher(str(idx), json.dumps(dp, sort_keys=True), "cpu", other)
