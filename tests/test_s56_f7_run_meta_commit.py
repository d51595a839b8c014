"""A TREC run's metadata records the tokrag tree that made it (s56 f7, audit a1 F6): the run cache's ``meta.json``
names the commit and changes fingerprint of the process that computed the run, and the ``.meta.json`` beside
``tokrag retrieve --output`` keeps those and adds, under ``output``, the tree of the process that wrote the files.
Neither is in the run's key: a commit that leaves the retrieval code as it was serves the cached run. The tree
this process imported is set in ``tokrag_model.provenance._IMPORTED_TREE`` (read once per process), no git run."""

from __future__ import annotations

import argparse
import json

import pytest

TREE_A = ("a" * 40 + "+dirty", "0123456789abcdef")
TREE_B = ("b" * 40, None)
CONFIG = {"retriever": "bm25", "params": {"k1": 0.9, "b": 0.4}, "k": 2, "corpus": {"name": "toy", "fingerprint": "f1"}}
CTXS = {"q1": [{"docid": "d1", "title": "", "text": "one", "score": 2.0, "rank": 1},
               {"docid": "d2", "title": "", "text": "two", "score": 1.0, "rank": 2}]}


@pytest.fixture()
def tree(monkeypatch):
    """Set the tree this process imported: ``tree(("<commit>", "<changes>"))``."""
    import tokrag_model.provenance as prov

    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    if not (prov.SOURCE_ROOT / ".git").exists():
        pytest.skip("the tokrag source tree is not a git checkout (tokrag_commit is None there)")
    monkeypatch.setattr(prov, "_IMPORTED_TREE", {})

    def set_tree(value):
        prov._IMPORTED_TREE[str(prov.SOURCE_ROOT)] = value

    return set_tree


def _compute(calls):
    def compute():
        calls.append(1)
        return CTXS, 1
    return compute


def test_cache_meta_records_the_tree_that_computed_the_run_outside_the_key(tmp_path, tree) -> None:
    from retrieval.cache import RunCache

    cache = RunCache(tmp_path / "cache")
    calls: list = []
    tree(TREE_A)
    run = cache.get_or_compute(CONFIG, _compute(calls), {"q1": "one?"})
    meta = json.loads((run.trec_path.parent / "meta.json").read_text(encoding="utf-8"))
    assert meta["tokrag_commit"] == "a" * 40 + "+dirty"
    assert meta["tokrag_changes"] == "0123456789abcdef"
    assert "tokrag_commit" not in meta["config"] and "tokrag_commit" not in meta["versions"]
    key = cache.key(CONFIG)
    tree(TREE_B)  # another commit, the same retrieval code: the same key, the run served
    assert cache.key(CONFIG) == key == run.fingerprint
    again = cache.get_or_compute(CONFIG, _compute(calls), {"q1": "one?"})
    assert calls == [1] and again.fingerprint == key
    assert json.loads((again.trec_path.parent / "meta.json").read_text(encoding="utf-8"))["tokrag_commit"] == TREE_A[0]


def test_retrieve_output_meta_names_the_computing_and_the_writing_tree(tmp_path, tree) -> None:
    from retrieval.cache import RunCache
    from retrieval.cli import _meta_beside, _write_outputs

    tree(TREE_A)
    run = RunCache(tmp_path / "cache").get_or_compute(CONFIG, _compute([]), {"q1": "one?"})
    tree(TREE_B)  # a later process serves the cached run and writes the outputs
    out = tmp_path / "out" / "run.trec"
    _write_outputs(run, argparse.Namespace(output=str(out), output_ctxs=None, retriever="bm25"))
    meta = json.loads(_meta_beside(out).read_text(encoding="utf-8"))
    assert (meta["tokrag_commit"], meta["tokrag_changes"]) == TREE_A  # the run's maker, from the cache's meta.json
    assert (meta["output"]["tokrag_commit"], meta["output"]["tokrag_changes"]) == TREE_B  # the files' writer
    assert meta["key"] == run.fingerprint


def test_git_commit_override_is_recorded(tmp_path, monkeypatch) -> None:
    """``$TOKRAG_GIT_COMMIT`` (a checkout without ``.git``, CI) is the recorded commit, as in the results JSON."""
    from retrieval.cache import RunCache

    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "c" * 40)
    run = RunCache(tmp_path / "cache").get_or_compute(CONFIG, _compute([]), {"q1": "one?"})
    meta = json.loads((run.trec_path.parent / "meta.json").read_text(encoding="utf-8"))
    assert meta["tokrag_commit"] == "c" * 40 and meta["tokrag_changes"] is None
