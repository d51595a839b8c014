"""s60 rt (read-through of k1's 2371bb0 with the run cache's readers): a cached run served to a request under other
names carries that request's config, not the one of the request that computed it.

Since 2371bb0 the run cache's key leaves out a local corpus's file name and the dense encoders' names
(``retrieval.cache.key_material``), so ``--corpus a.jsonl`` and its copy ``--corpus b.jsonl`` read one cached run.
``RunCache.load`` returned the run with the cached ``meta.json``'s config, i.e. the first request's names, and its
readers took them for this request's: ``tokrag retrieve --corpus b.jsonl ... --output o2.trec`` after a run over
``a.jsonl`` wrote ``o2.trec.meta.json`` with ``config.corpus.name`` ``a.jsonl`` (measured; the cache's own
``meta.json`` still records the first request), and a task's docs took their ``retrieval`` record (``params``,
``encoder`` names) from the same config, so its content hung on which spelling ran first."""

from __future__ import annotations

import json

from retrieval.cache import RunCache

CTXS = {"q1": [{"docid": "p1", "title": "Paris", "text": "Paris is the capital of France", "score": 1.0, "rank": 1}]}


def _config(name: str, encoder: str) -> dict:
    return {"retriever": "dense", "params": {"encoder": encoder, "pooling": "mean"}, "k": 1,
            "corpus": {"name": name, "fingerprint": "e84c7dc88231330a", "size": 2},
            "encoder": {"encoder": encoder, "encoder_sha256": "1" * 16, "query_encoder": encoder,
                        "query_encoder_sha256": "1" * 16},
            "queries": "0" * 16}


def test_a_cache_hit_under_other_names_carries_the_request_config(tmp_path):
    cache = RunCache(tmp_path)
    first, second = _config("a.jsonl", "all-MiniLM-L6-v2"), _config("b.jsonl", "./encoders/minilm/")
    assert cache.key(first) == cache.key(second)  # one run (key_material): the guard of the subject
    cache.save(first, CTXS, {"q1": "capital of France"}, 1)
    run = cache.load(second)
    assert run is not None and run.ctxs == CTXS
    assert run.config["corpus"]["name"] == "b.jsonl"
    assert run.config["params"]["encoder"] == run.config["encoder"]["encoder"] == "./encoders/minilm/"
    # the folder's record keeps the request that computed it
    meta = json.loads((cache.folder(second) / "meta.json").read_text(encoding="utf-8"))
    assert meta["config"]["corpus"]["name"] == "a.jsonl"


def test_retrieve_records_this_corpus_file_in_its_meta_json(tmp_path, monkeypatch, capsys):
    from tokrag_model.cli import main as tokrag

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    rows = [{"id": "p1", "title": "Paris", "text": "Paris is the capital of France"},
            {"id": "p2", "title": "Rome", "text": "Rome is the capital of Italy"}]
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "q.jsonl").write_text('{"qid": "q1", "question": "capital of France"}\n', encoding="utf-8")
    said = []
    for name, out in (("a.jsonl", "o1.trec"), ("b.jsonl", "o2.trec")):
        assert tokrag(["retrieve", "--corpus", name, "--topics", "q.jsonl", "--output", out]) == 0
        said.append("".join(capsys.readouterr()))
    assert "bm25 (cache hit)" not in said[0] and "bm25 (cache hit)" in said[1]  # the second is served from the cache
    one = json.loads((tmp_path / "o1.trec.meta.json").read_text(encoding="utf-8"))
    two = json.loads((tmp_path / "o2.trec.meta.json").read_text(encoding="utf-8"))
    assert one["key"] == two["key"]  # the same cached run
    assert (one["config"]["corpus"]["name"], two["config"]["corpus"]["name"]) == ("a.jsonl", "b.jsonl")
