"""One completeness test for a cached run (retrieval.cache.RunCache.check_run), used by RunCache.load and by
``run --estimate`` (leaderboards.estimate._served_from_run_cache), which had its own copy. The copies disagreed on a
run whose meta.json lacks its key (checksums right): the estimate counted it served (no index build), while load
raised KeyError: 'key'; on a meta.json whose versions are not an object both raised AttributeError, the estimate
outside its try (a traceback for ``run --estimate``). Now both read it as corrupt: load discards and recomputes it, the
estimate counts the build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaderboards.estimate import index_builds
from leaderboards.keys import _HashMemo, _task_metadata
from retrieval.cache import RunCache, engine_versions

REPO = Path(__file__).resolve().parents[1]
TASK = "nq_open_dense"
CONFIG = {"retriever": "bm25", "corpus": "toy", "k": 2, "engine": {"pyserini": "9.9", "anserini": "a.jar"}}
CTXS = {"q1": [{"docid": "d1", "title": "", "text": "one", "score": 2.0, "rank": 1}]}


def _saved(tmp_path):
    cache = RunCache(tmp_path)
    run = cache.save(CONFIG, CTXS, {"q1": "first"}, 1)
    d = run.trec_path.parent
    meta = json.loads((d / "meta.json").read_text())
    meta["versions"].update(CONFIG["engine"])  # as saved by the engine the config asks for
    (d / "meta.json").write_text(json.dumps(meta))
    return cache, d, meta


def test_the_states(tmp_path, caplog):
    cache, d, meta = _saved(tmp_path)
    assert cache.check_run(d, CONFIG["engine"]).state == "complete" and cache.check_run(d).meta["key"] == d.name[5:]
    assert cache.load(CONFIG).ctxs == CTXS
    assert cache.check_run(tmp_path / "none", CONFIG["engine"]) == ("absent", None, "")
    found = cache.check_run(d, {"pyserini": "0.12.0"})
    assert (found.state, found.why) == ("other engine", "pyserini 9.9 (installed: 0.12.0)")
    assert cache.load({**CONFIG, "engine": {"pyserini": "0.12.0"}}) is None  # another key: another folder

    (d / "ctxs.jsonl").write_text("damaged\n")
    assert cache.check_run(d, CONFIG["engine"]).state == "corrupt"
    assert (d / "meta.json").is_file() and (d / "ctxs.jsonl").is_file()  # read only
    assert cache.load(CONFIG) is None and not (d / "meta.json").exists()  # load discards it
    assert "is corrupt" in caplog.text


@pytest.mark.parametrize("damage", [
    lambda m: m.pop("key"),
    lambda m: m.__setitem__("key", 7),
    lambda m: m.__setitem__("versions", ["pyserini"]),
    lambda m: m["config"].__setitem__("engine", "9.9"),
    lambda m: m.__setitem__("config", ["bm25"]),
    lambda m: m.__setitem__("sha256", "abc"),
], ids=["no key", "key not a string", "versions a list", "engine a string", "config a list", "sha256 a string"])
def test_a_damaged_meta_is_corrupt_and_load_discards_it(tmp_path, damage):
    (cache, d, meta), (other, d2, _) = _saved(tmp_path / "a"), _saved(tmp_path / "b")
    damage(meta)
    (d / "meta.json").write_text(json.dumps(meta))
    (d2 / "meta.json").write_text(json.dumps(meta))
    assert cache.load(CONFIG) is None and not (d / "meta.json").exists()  # the old code: KeyError / AttributeError
    assert other.check_run(d2, CONFIG["engine"]).state == "corrupt" and (d2 / "meta.json").is_file()


def test_the_estimate_and_the_cache_agree_on_a_damaged_run(tmp_path, monkeypatch):
    from tasks.utils import load_qa

    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage number {i} about {w}"})
                              + "\n" for i, w in enumerate(["the moon", "music", "a war", "a river", "a king"] * 6)),
                      encoding="utf-8")
    spec = SimpleNamespace(include_path=[REPO / "tasks"])
    extra = {"corpus": str(corpus), "max_docs": 4}
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK), task_metadata=lambda: dict(extra))
    load_qa(**_task_metadata(TASK, spec.include_path, _HashMemo(), extra))  # the cell's own build: index and run
    shutil.rmtree(cache_dir / "dense")  # the index gone, the run cached
    (meta_p,) = (cache_dir / "runs").glob("dense-*/meta.json")
    good = json.loads(meta_p.read_text())
    config, cache = good["config"], RunCache(cache_dir)
    files = {f.name: f.read_bytes() for f in meta_p.parent.iterdir()}  # to restore what load discards
    assert config["engine"] == engine_versions("dense")
    assert index_builds(spec, [cell], _HashMemo()) == [] and cache.load(config).ctxs  # served from the run cache

    for damage, state in [("key", "corrupt"), ("versions", "corrupt"), ("transformers", "other engine")]:
        meta = json.loads(json.dumps(good))
        if damage == "key":
            del meta["key"]  # the old estimate: served, no build; the old load: KeyError 'key'
        elif damage == "versions":
            meta["versions"] = ["torch"]  # the old estimate and load: AttributeError
        else:
            meta["versions"]["transformers"] = "0.0.1"  # made by another transformers
        meta_p.write_text(json.dumps(meta))
        builds = index_builds(spec, [cell], _HashMemo())  # not served from the run cache: the index is counted
        assert [(b["corpus"], b["passages"], b["tasks"]) for b in builds] == [(str(corpus), 30, [TASK])], damage
        assert cache.check_run(meta_p.parent, config["engine"]).state == state, damage
        assert cache.load(config) is None, damage
        assert meta_p.is_file() is (state == "other engine"), damage  # a corrupt entry is discarded
        for name, data in files.items():
            (meta_p.parent / name).write_bytes(data)
    assert cache.check_run(meta_p.parent, config["engine"]).state == "complete"
    assert index_builds(spec, [cell], _HashMemo()) == []
