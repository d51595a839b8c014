"""s51 u2 M6: ``tokrag leaderboard run SPEC --estimate`` for dense tasks left out the one-time encoding of the corpus
that the first dense cell does when the index is not cached (nq-wiki-12k: 12,633 passages, about 10 min; the
estimate said 0.02 h). It now names each dense index to build on its own line, with its cost at the measured
:data:`leaderboards.estimate.DENSE_PASSAGES_PER_S`, and adds it to the totals; nothing when the index is cached.

A toy task over a small local corpus, retriever dense (all-MiniLM-L6-v2, the packaged default), an empty
``$TOKRAG_CACHE_DIR``; "cached" is an index folder as :func:`retrieval.dense.build_dense_index` leaves it (its
``index`` file and ``tokrag_index.json`` with the installed encoding versions), written by hand: nothing is encoded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from leaderboards.estimate import DENSE_PASSAGES_PER_S, estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import FIX, write_spec

N = 1200  # passages: 1200 / 20 passages/s = 60 s of encoding


def _dense_spec(tmp_path, monkeypatch, retriever="dense"):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage number {i}"}) + "\n"
                              for i in range(N)), encoding="utf-8")
    tasks = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", tasks, ignore=shutil.ignore_patterns("__pycache__"))
    y = tasks / "toy_qa" / "toy_qa.yaml"
    y.write_text(y.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, retriever: %s, "
                                       "corpus: %s}" % (retriever, corpus)))
    spec = load_spec(write_spec(tmp_path / "s", include=tasks, tasks=["toy_qa", "toy_qa_noise67"], limit=3))
    return spec, corpus


def test_an_uncached_dense_index_is_named_and_counted_once(tmp_path, monkeypatch):
    spec, corpus = _dense_spec(tmp_path, monkeypatch)
    est = estimate(spec, tmp_path / "runs", fallback=100.0, jobs=2)
    (b,) = est["index_builds"]
    assert (b["corpus"], b["passages"], b["encoder"], b["tasks"]) == (str(corpus), N, "all-MiniLM-L6-v2", ["toy_qa"])
    assert b["seconds"] == N / DENSE_PASSAGES_PER_S == 60.0
    assert b["command"] == f"tokrag index build --corpus {corpus} --dense"
    assert b["folder"].startswith(str(tmp_path / "cache" / "dense"))
    # 4 cells x 3 questions x 100 s = 1200 s of cells (0.33 h; 0.17 h wall on 2 jobs); the build once, not / jobs
    assert est["index_hours"] == 0.02
    assert (est["cell_hours"], est["wall_hours"]) == (0.35, 0.18)
    lines = render(est).splitlines()
    assert (f"one-time index build (not in the cache): the dense index of {corpus} ({N} passages, encoder "
            "all-MiniLM-L6-v2) for toy_qa, about 0.02 h (1 min at 20 passages/s on one free core, measured; included "
            "in the total); the first cell over it encodes the corpus before its questions; or build it first: "
            f"tokrag index build --corpus {corpus} --dense") in lines


def test_a_cached_dense_index_adds_nothing(tmp_path, monkeypatch):
    from retrieval.dense import encoding_versions, index_code

    spec, _ = _dense_spec(tmp_path, monkeypatch, retriever="hybrid")
    folder = Path(estimate(spec, tmp_path / "runs", fallback=100.0)["index_builds"][0]["folder"])
    folder.mkdir(parents=True)
    (folder / "index").write_bytes(b"faiss")
    (folder / "tokrag_index.json").write_text(json.dumps({"kind": "dense", "encoding_versions": encoding_versions(),
                                                          "code": index_code()}))  # s56 f4: the code that built it
    est = estimate(spec, tmp_path / "runs", fallback=100.0)
    assert est["index_builds"] == [] and est["index_hours"] == 0
    assert (est["cell_hours"], est["wall_hours"]) == (0.33, 0.33)
    assert "index build" not in render(est)
    # an index encoded by other library versions is encoded again: counted again
    (folder / "tokrag_index.json").write_text(json.dumps({"kind": "dense", "encoding_versions": {"torch": "0.1"},
                                                          "code": index_code()}))
    assert len(estimate(spec, tmp_path / "runs", fallback=100.0)["index_builds"]) == 1
    # one encoded by other dense code (or recording none: built before s56 f4) is encoded again: counted again
    for code in ({"code": "0" * 16}, {}):
        (folder / "tokrag_index.json").write_text(json.dumps({"kind": "dense", "encoding_versions": encoding_versions(),
                                                              **code}))
        assert len(estimate(spec, tmp_path / "runs", fallback=100.0)["index_builds"]) == 1


def test_a_bm25_task_needs_no_dense_index(tmp_path, monkeypatch):
    spec, _ = _dense_spec(tmp_path, monkeypatch, retriever="bm25")
    est = estimate(spec, tmp_path / "runs", fallback=100.0)
    assert est["index_builds"] == [] and est["cell_hours"] == 0.33
