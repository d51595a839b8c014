"""RunCache.check_run says it raises nothing ("whatever cannot be read is 'corrupt'"), and ``run --estimate``
(leaderboards.estimate._served_from_run_cache) relies on it inside a try that does not catch RecursionError. A
meta.json nested deeper than Python's recursion limit made json.loads raise RecursionError out of check_run, so out of
RunCache.load and the estimate (s53 r5, review of 2b6fa4d: /work/scratch/s53/r5/probe_runcheck.py). It is corrupt:
check_run says so without touching the folder, load discards it and get_or_compute recomputes. So is something else
where a file or the entry's folder goes (a folder named run.trec, a file for the folder, a meta.json that is a folder
or a named pipe), which load could not discard or save could not write over."""

from __future__ import annotations

import json
import os
import shutil

import pytest

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


def _entry(tmp_path):
    cache = RunCache(tmp_path)
    return cache, cache.save(CONFIG, CTXS, {"q1": "first"}, 1).trec_path.parent


def _file_for_folder(d):
    shutil.rmtree(d)
    d.write_text("x")


def _folder_for(name):
    def damage(d):
        (d / name).unlink()
        (d / name).mkdir()
        (d / name / "inner").write_text("x")
    return damage


def _fifo_meta(d):
    (d / "meta.json").unlink()
    os.mkfifo(d / "meta.json")


@pytest.mark.parametrize("damage", [_file_for_folder, _folder_for("run.trec"), _folder_for("ctxs.jsonl"),
                                    _folder_for("meta.json"), _fifo_meta],
                         ids=["entry a file", "run.trec a folder", "ctxs.jsonl a folder", "meta.json a folder",
                              "meta.json a named pipe"])
def test_something_else_where_a_file_or_the_folder_goes_is_corrupt_and_recomputed(tmp_path, damage):
    """Before (s53 r5, probe_runcheck.txt): a folder named run.trec or ctxs.jsonl was 'corrupt' but load raised
    IsADirectoryError from the discard (and run --estimate counted the build the run then never reached); a file where
    the entry's folder goes, or a meta.json that is a folder, was 'absent' and get_or_compute ran the search, then
    raised FileExistsError / IsADirectoryError from save (the run lost)."""
    cache, d = _entry(tmp_path)
    damage(d)
    before = {str(p): os.lstat(p).st_mtime_ns for p in tmp_path.rglob("*")}
    assert cache.check_run(d, CONFIG["engine"]).state == "corrupt"
    assert {str(p): os.lstat(p).st_mtime_ns for p in tmp_path.rglob("*")} == before  # read only
    run = cache.get_or_compute(CONFIG, lambda: (CTXS, 1), {"q1": "first"})
    assert run.ctxs == CTXS and run.searches == 1  # recomputed and saved
    assert cache.check_run(d).state == "complete" and sorted(p.name for p in d.iterdir()) == [
        "ctxs.jsonl", "meta.json", "run.trec"]
