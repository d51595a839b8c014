"""RunCache.check_run says it raises nothing ("whatever cannot be read is 'corrupt'"), and ``run --estimate``
(leaderboards.estimate._served_from_run_cache) relies on it inside a try that does not catch RecursionError. A
meta.json nested deeper than Python's recursion limit made json.loads raise RecursionError out of check_run, so out of
RunCache.load and the estimate (s53 r5, review of 2b6fa4d: /work/scratch/s53/r5/probe_runcheck.py). It is corrupt:
check_run says so without touching the folder, load discards it and get_or_compute recomputes."""

from __future__ import annotations

import json
import os

from retrieval.cache import RunCache

CONFIG = {"retriever": "bm25", "corpus": "toy", "k": 2, "engine": {"pyserini": "9.9", "anserini": "a.jar"}}
CTXS = {"q1": [{"docid": "d1", "title": "", "text": "one", "score": 2.0, "rank": 1}]}


def test_a_meta_nested_too_deep_is_corrupt(tmp_path):
    cache = RunCache(tmp_path)
    d = cache.save(CONFIG, CTXS, {"q1": "first"}, 1).trec_path.parent
    (d / "meta.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    before = {p.name: os.stat(p).st_mtime_ns for p in d.iterdir()}
    assert cache.check_run(d, CONFIG["engine"]) == ("corrupt", None, "")
    assert {p.name: os.stat(p).st_mtime_ns for p in d.iterdir()} == before  # read only
    assert cache.load(CONFIG) is None and sorted(p.name for p in d.iterdir()) == []  # discarded
    run = cache.get_or_compute(CONFIG, lambda: (CTXS, 1), {"q1": "first"})
    assert run.ctxs == CTXS and run.searches == 1 and json.loads((d / "meta.json").read_text())["key"] == run.fingerprint
