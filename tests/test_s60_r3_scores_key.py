"""s60 r3 (k1's leftover): the passage-scores cache is keyed as the run cache keys the run.

k1's 2371bb0 keyed a cached retrieval run by its corpus's passages, not its file name
(:func:`retrieval.cache.key_material`), but :func:`retrieval.score_passages` still keyed its cache
(``<cache>/scores/<retriever>-<key>.json``) with the whole run config, corpus name included: the same passages under
another file name (a copy, a rename) were scored again. Now its key holds the run's key material; the file still
records the whole config, the corpus name as given included."""

from __future__ import annotations

import json
import shutil

import pytest

from retrieval import score_passages

PASSAGES = {"q1": [{"docid": "p0", "title": "Paris", "text": "Paris is the capital of France."},
                   {"docid": "p2", "title": "Oslo", "text": "Oslo is the capital of Norway."}]}
QUERIES = {"q1": "capital of France"}


def _corpus(path, rows):
    path.write_text("".join(json.dumps({"id": f"p{i}", "title": t, "text": f"{t} is the capital of {c}."}) + "\n"
                            for i, (t, c) in enumerate(rows)), encoding="utf-8")
    return path


@pytest.fixture
def scored(tmp_path, monkeypatch):
    """A 3-passage corpus ``p.jsonl`` scored once with BM25, its cache file's scores then replaced by a marker, so that
    a later call that returns the marker was served from that file: ``(tmp_path, cache folder, the file)``."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    rows = [("Paris", "France"), ("Rome", "Italy"), ("Oslo", "Norway")]
    corpus = _corpus(tmp_path / "p.jsonl", rows)
    got = score_passages(str(corpus), QUERIES, PASSAGES, "bm25", k=2, cache_dir=tmp_path / "c")
    assert len(got["q1"]) == 2 and got["q1"][0] > got["q1"][1] > 0
    [f] = (tmp_path / "c" / "scores").glob("bm25-*.json")
    data = json.loads(f.read_text(encoding="utf-8"))
    assert data["config"]["run"]["corpus"]["name"] == "p.jsonl"  # the whole config is recorded
    f.write_text(json.dumps({**data, "scores": {"q1": [9.0, 8.0]}}), encoding="utf-8")
    return tmp_path, tmp_path / "c", f


def test_the_same_passages_under_another_file_name_are_served(scored):
    root, cache, f = scored
    (root / "sub").mkdir()
    copy = shutil.copy(root / "p.jsonl", root / "sub" / "other.jsonl")
    assert score_passages(str(copy), QUERIES, PASSAGES, "bm25", k=2, cache_dir=cache) == {"q1": [9.0, 8.0]}
    assert sorted(p.name for p in (cache / "scores").glob("bm25-*.json")) == [f.name]


def test_other_passages_are_scored_again(scored):
    root, cache, f = scored
    other = _corpus(root / "q.jsonl", [("Paris", "France"), ("Rome", "Italy"), ("Bern", "Switzerland")])
    got = score_passages(str(other), QUERIES, PASSAGES, "bm25", k=2, cache_dir=cache)
    assert got != {"q1": [9.0, 8.0]} and len(got["q1"]) == 2 and got["q1"][0] > got["q1"][1] > 0
    assert len(list((cache / "scores").glob("bm25-*.json"))) == 2
