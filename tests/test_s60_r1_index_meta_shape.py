"""An index folder's ``tokrag_index.json`` that is JSON of another shape than an object is read as unreadable (s60 r1,
review of j1's 4d88f1d, which made read_index_meta skip one nested too deep). Before (3e151fb's tree): read_index_meta
returned the list or text, and ``tokrag retrieve --corpus c.jsonl --bm25 ...`` over a cached index whose
``tokrag_index.json`` held ``[1]`` ended in ``AttributeError: 'list' object has no attribute 'get'`` (exit 1); now
the index is built again, as for a malformed file."""

from __future__ import annotations

import json
import shutil

import pytest

from retrieval.io import INDEX_META, read_index_meta
from tokrag_model.cli import main


@pytest.mark.parametrize("text", ["[1]", '"x"', "null", "3"], ids=["list", "text", "null", "number"])
def test_read_index_meta_of_another_shape_is_none(tmp_path, text):
    (tmp_path / INDEX_META).write_text(text, encoding="utf-8")
    assert read_index_meta(tmp_path) is None
    (tmp_path / INDEX_META).write_text('{"kind": "bm25", "num_docs": 3}', encoding="utf-8")
    assert read_index_meta(tmp_path) == {"kind": "bm25", "num_docs": 3}


def test_retrieve_over_a_cached_index_of_another_shape_builds_it_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p.jsonl").write_text("".join(
        json.dumps({"id": f"p{i}", "title": t, "text": f"{t} is the capital of {c}."}) + "\n"
        for i, (t, c) in enumerate([("Paris", "France"), ("Rome", "Italy"), ("Oslo", "Norway")])), encoding="utf-8")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "capital of france", "answers": ["Paris"]})
                                      + "\n", encoding="utf-8")
    args = ["retrieve", "--corpus", "p.jsonl", "--bm25", "--topics", "q.jsonl", "--hits", "1"]
    assert main([*args, "--output", "r/run.trec"]) == 0
    [meta] = list((tmp_path / "cache" / "indexes").glob(f"*/{INDEX_META}"))
    meta.write_text("[1]", encoding="utf-8")
    shutil.rmtree(tmp_path / "cache" / "runs")  # the run is computed again, so the index is read
    assert main([*args, "--output", "r/run2.trec"]) == 0  # was: AttributeError traceback
    assert json.loads(meta.read_text(encoding="utf-8"))["num_docs"] == 3  # built again
    assert (tmp_path / "r" / "run2.trec").read_text(encoding="utf-8").split()[2] == "p0"
