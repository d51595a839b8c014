"""The passage-scores cache (``<cache>/scores/<retriever>-<key>.json``, :func:`retrieval.score_passages`) is
recomputed when its file is damaged (s60 r1, j1's leftover 3). Before (3e151fb's tree): a file nested past Python's
recursion limit was a RecursionError traceback, and one holding JSON of another shape (``[]``) an AttributeError
traceback, while a malformed file was already recomputed."""

from __future__ import annotations

import json

import pytest

from retrieval import score_passages

PASSAGES = {"q1": [{"docid": "p0", "title": "Paris", "text": "Paris is the capital of France."},
                   {"docid": "p2", "title": "Oslo", "text": "Oslo is the capital of Norway."}]}


@pytest.fixture
def scored(tmp_path, monkeypatch):
    """A 3-passage corpus scored once with BM25: ``(corpus path, cache folder, the scores)``."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))  # its index too
    corpus = tmp_path / "p.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": t, "text": f"{t} is the capital of {c}."}) + "\n"
                              for i, (t, c) in enumerate([("Paris", "France"), ("Rome", "Italy"), ("Oslo", "Norway")])),
                      encoding="utf-8")
    got = score_passages(str(corpus), {"q1": "capital of France"}, PASSAGES, "bm25", k=2, cache_dir=tmp_path / "c")
    assert len(got["q1"]) == 2 and got["q1"][0] > got["q1"][1] > 0
    return corpus, tmp_path / "c", got


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "[]", '{"key": '], ids=["deep", "list", "malformed"])
def test_a_damaged_scores_file_is_recomputed(scored, text):
    corpus, cache, got = scored
    [f] = list((cache / "scores").glob("bm25-*.json"))
    f.write_text(text, encoding="utf-8")
    assert score_passages(str(corpus), {"q1": "capital of France"}, PASSAGES, "bm25", k=2, cache_dir=cache) == got
    assert json.loads(f.read_text(encoding="utf-8"))["scores"] == got  # written again
