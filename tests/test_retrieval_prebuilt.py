"""Pyserini prebuilt indexes offline: tiny indexes built here in Pyserini's prebuilt layout stand in for
``wikipedia-dpr-100w`` (Lucene) and ``wikipedia-dpr-100w.dpr-multi`` (FAISS), searched through Pyserini's own
``LuceneSearcher.from_prebuilt_index`` / ``FaissSearcher.from_prebuilt_index`` / ``HybridSearcher`` with a tiny
random DPR encoder pair; nothing is downloaded (a download attempt is made to fail)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from prebuilt_helpers import FAISS, LUCENE, TOPICS, corpus, prebuilt, pyserini_cache, tiny_dpr  # noqa: F401 (fixtures)

from retrieval import retrieve
from retrieval.errors import ConfigError, OfflineError

def _queries() -> dict[str, str]:
    return {t["qid"]: t["question"] for t in TOPICS}


def test_prebuilt_bm25_is_the_local_bm25(prebuilt, corpus, tmp_path):
    q = _queries()
    run = retrieve("prebuilt:" + LUCENE, q, "bm25", k=3, cache_dir=tmp_path)
    local = retrieve(corpus, q, "bm25", k=3, cache_dir=tmp_path)
    assert run.ctxs == local.ctxs and run.fingerprint != local.fingerprint and run.searches == 4
    assert run.ctxs["0"][0]["title"] == "Paris" and run.ctxs["1"][0]["docid"] == "7"  # texts from the stored raw JSON
    info = run.config["corpus"]
    assert info == {"name": "prebuilt:wikipedia-dpr-100w", "size": 12,
                    "indexes": [{"name": LUCENE, "md5": "7b58c08da992b2ea7e96667f0b176651"}]}
    assert retrieve("prebuilt:" + LUCENE, q, "bm25", k=3, cache_dir=tmp_path).searches == 0


def _reference_dpr(tiny_dpr, corpus, queries):
    """DPR two-tower inner products computed here with transformers: {qid: [(docid, score)] sorted}."""
    import torch
    from transformers import AutoTokenizer, DPRContextEncoder, DPRQuestionEncoder

    ctx = DPRContextEncoder.from_pretrained(tiny_dpr[0]).eval()
    qenc = DPRQuestionEncoder.from_pretrained(tiny_dpr[1]).eval()
    tok = AutoTokenizer.from_pretrained(tiny_dpr[0])
    with torch.inference_mode():
        enc = tok([p.title for p in corpus], text_pair=[p.text for p in corpus], padding="longest", return_tensors="pt")
        P = ctx(**{k: enc[k] for k in ("input_ids", "attention_mask")}).pooler_output.numpy()
        out = {}
        for qid, text in queries.items():
            qv = qenc(tok(text, return_tensors="pt")["input_ids"]).pooler_output.numpy()[0]
            scores = P @ qv
            out[qid] = sorted(((p.docid, float(s)) for p, s in zip(corpus, scores)), key=lambda x: (-x[1], x[0]))
    return out


def test_prebuilt_dpr_and_hybrid(prebuilt, corpus, tiny_dpr, tmp_path):
    from pyserini.search.faiss import DenseSearchResult
    from pyserini.search.hybrid import HybridSearcher

    q = _queries()
    params = {"query_encoder": str(tiny_dpr[1])}
    dpr = retrieve("prebuilt:" + LUCENE, q, "dpr", k=12, params=params, cache_dir=tmp_path)  # every passage
    ref = _reference_dpr(tiny_dpr, corpus, q)
    for qid in q:
        assert dpr.docids(qid) == [d for d, _ in ref[qid]]
        np.testing.assert_allclose([c["score"] for c in dpr.ctxs[qid]], [s for _, s in ref[qid]], atol=1e-4)
    assert [i["name"] for i in dpr.config["corpus"]["indexes"]] == [LUCENE, FAISS]
    assert dpr.config["corpus"]["indexes"][1]["md5"] == "fe307ef2e60ab6e6f3ad66e24a4144ae"
    assert dpr.config["encoder"]["query_encoder"] == str(tiny_dpr[1])
    assert dpr.ctxs["0"][0]["text"] == corpus.get(dpr.ctxs["0"][0]["docid"]).text

    bm25 = retrieve("prebuilt:" + LUCENE, q, "bm25", k=12, cache_dir=tmp_path)
    hyb = retrieve("prebuilt:" + LUCENE, q, "hybrid", k=5, params={**params, "alpha": 0.95}, cache_dir=tmp_path)
    for qid in q:  # Pyserini's fusion over the two runs: 0.95 * BM25 + DPR (a missing doc gets the list minimum)
        d = [DenseSearchResult(c["docid"], c["score"]) for c in dpr.ctxs[qid]]
        s = [DenseSearchResult(c["docid"], c["score"]) for c in bm25.ctxs[qid]]
        expected = HybridSearcher._hybrid_results(d, s, 0.95, 5)
        assert hyb.docids(qid) == [h.docid for h in expected]
        np.testing.assert_allclose([c["score"] for c in hyb.ctxs[qid]], [h.score for h in expected], atol=2e-4)
    assert hyb.config["params"]["alpha"] == 0.95 and hyb.config["params"]["depth"] == 1000
    other = retrieve("prebuilt:" + LUCENE, q, "hybrid", k=5, params={**params, "alpha": 1.3}, cache_dir=tmp_path)
    assert other.fingerprint != hyb.fingerprint


def test_hybrid_needs_an_explicit_alpha(corpus, tmp_path):
    with pytest.raises(ConfigError, match=r"needs an explicit alpha.*1\.3.*0\.95.*default 0\.1 is a different system"):
        retrieve("prebuilt:" + LUCENE, _queries(), "hybrid", k=5, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="weighted hybrid fusion needs an explicit alpha"):
        retrieve(corpus, _queries(), "hybrid", k=5, params={"fusion": "weighted"}, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="retriever 'dpr' searches Pyserini's prebuilt"):
        retrieve(corpus, _queries(), "dpr", k=5, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="cannot search a Pyserini prebuilt corpus.*use 'dpr'"):
        retrieve("prebuilt:" + LUCENE, _queries(), "dense", k=5, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"unknown dpr parameter 'fusion' over a Pyserini prebuilt corpus; valid: dense_index"):
        retrieve("prebuilt:" + LUCENE, _queries(), "dpr", k=5, params={"fusion": "rrf"}, cache_dir=tmp_path)


def test_download_plan_is_printed_before_a_download(prebuilt, tmp_path, monkeypatch, capfd, tiny_dpr):
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "empty"))  # nothing cached: Pyserini would download
    with pytest.raises(OfflineError, match="wikipedia-dpr-100w.*cannot be downloaded"):
        retrieve("prebuilt:" + LUCENE, _queries(), "dpr", k=5, params={"query_encoder": str(tiny_dpr[1])}, cache_dir=tmp_path)
    err = capfd.readouterr().err
    plan = err[err.index("tokrag: dpr retrieval over prebuilt:wikipedia-dpr-100w needs:"):]
    assert "[DOWNLOAD] Lucene index (BM25 and the passage texts): wikipedia-dpr-100w, 9.18 GB (md5 7b58c08da992b2ea7e96667f0b176651)" in plan
    assert "[DOWNLOAD] FAISS flat index (DPR passage vectors): wikipedia-dpr-100w.dpr-multi, 59.84 GB" in plan
    assert f"[cached  ] DPR question encoder (Hugging Face hub): {tiny_dpr[1]}" in plan
    assert "total to download: 69.01 GB" in plan  # 9,177,917,732 + 59,836,766,732 bytes; the encoder is a local folder


def test_dry_run_prints_names_sizes_and_memory(tmp_path, monkeypatch, capsys):
    """Through the worker process, with Pyserini's real table (nothing patched, nothing downloaded)."""
    from retrieval.cli import main

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["retrieve", "--corpus", "prebuilt:wikipedia-dpr-100w", "--hybrid", "--alpha", "1.3", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "tokrag: hybrid retrieval over prebuilt:wikipedia-dpr-100w needs:" in out
    assert "wikipedia-dpr-100w, 9.18 GB (md5 7b58c08da992b2ea7e96667f0b176651) from https://rgw.cs.uwaterloo.ca/pyserini/indexes/" in out
    assert f"-> {tmp_path}/indexes/lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.7b58c08da992b2ea7e96667f0b176651" in out
    assert "wikipedia-dpr-100w.dpr-multi, 59.84 GB (md5 fe307ef2e60ab6e6f3ad66e24a4144ae)" in out
    assert "facebook/dpr-question_encoder-multiset-base, about 0.44 GB" in out
    assert "total to download: 69.45 GB" in out and "about 64.56 GB of RAM" in out  # 21,015,320 x 768 x 4 bytes
    assert main(["retrieve", "--corpus", "prebuilt:wikipedia-dpr-100w", "--dpr", "--dense-index", "dpr-single-nq", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "wikipedia-dpr-100w.dpr-single-nq, 59.84 GB (md5 01fb6bcaa047df254663d0a3d854b7cc)" in out
    assert "facebook/dpr-question_encoder-single-nq-base" in out



def test_dry_run_refuses_what_the_run_would_refuse(capsys):
    """A hybrid without alpha: the dry run fails like the run (no plan printed, exit 2), before any download plan."""
    from tokrag_model.cli import main

    assert main(["retrieve", "--corpus", "prebuilt:wikipedia-dpr-100w", "--hybrid", "--dry-run"]) == 2
    cap = capsys.readouterr()
    assert "needs an explicit alpha" in cap.err and "[DOWNLOAD]" not in cap.out
    assert main(["retrieve", "--corpus", "prebuilt:wikipedia-dpr-100w", "--dense", "--dry-run"]) == 2
    assert "cannot search a Pyserini prebuilt corpus" in capsys.readouterr().err

def _expect_file(tmp_path: Path, tiny_dpr, figures: dict[str, dict[str, float]]) -> Path:
    import yaml

    topics = tmp_path / "topics.jsonl"
    topics.write_text("".join(json.dumps(t) + "\n" for t in TOPICS))
    spec = {
        "name": "tiny-dpr", "source": "this test", "corpus": "prebuilt:wikipedia-dpr-100w", "topics": "topics.jsonl",
        "tolerance": 0.001,
        "conditions": [
            {"name": "bm25", "retriever": "bm25", "params": {"k1": 0.9, "b": 0.4}, "expected": figures["bm25"]},
            {"name": "dpr", "retriever": "dpr", "params": {"query_encoder": str(tiny_dpr[1])}, "expected": figures["dpr"]},
            {"name": "hybrid", "retriever": "hybrid", "params": {"query_encoder": str(tiny_dpr[1]), "alpha": 0.95},
             "expected": figures["hybrid"]},
        ],
    }
    path = tmp_path / "tiny-dpr.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_expect_file_checks_each_condition(prebuilt, corpus, tiny_dpr, tmp_path, capsys):
    from pyserini.search.faiss import DenseSearchResult
    from pyserini.search.hybrid import HybridSearcher

    from retrieval import has_answer
    from retrieval.cli import main

    # the expected figures, computed here: DPR by hand (transformers), BM25 over the local corpus, Pyserini's fusion
    ref = _reference_dpr(tiny_dpr, corpus, _queries())
    bm25 = retrieve(corpus, _queries(), "bm25", k=12, cache_dir=tmp_path / "local")
    fused = {qid: [h.docid for h in HybridSearcher._hybrid_results(
        [DenseSearchResult(d, s) for d, s in ref[qid]], [DenseSearchResult(c["docid"], c["score"]) for c in bm25.ctxs[qid]], 0.95, 10)]
        for qid in _queries()}

    def recall(ranked: dict[str, list[str]], k: int) -> float:
        return sum(any(has_answer(corpus.get(d).text, t["answers"]) for d in ranked[t["qid"]][:k]) for t in TOPICS) / len(TOPICS)

    dpr_ranked = {q: [d for d, _ in r] for q, r in ref.items()}
    figures = {"bm25": {"answer_recall@1": recall({q: bm25.docids(q) for q in _queries()}, 1)},
               "dpr": {f"answer_recall@{k}": recall(dpr_ranked, k) for k in (1, 3, 5)},
               "hybrid": {f"answer_recall@{k}": recall(fused, k) for k in (1, 5)}}
    assert figures["bm25"]["answer_recall@1"] == 1.0  # every question's answer passage is BM25's first hit
    path = _expect_file(tmp_path, tiny_dpr, figures)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["retrieve", "eval", "--expect", str(path), "--json", *cache]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["ok"] and [c["name"] for c in res["conditions"]] == ["bm25", "dpr", "hybrid"]
    m = res["conditions"][1]["metrics"]["answer_recall@5"]
    assert m == {"expected": figures["dpr"]["answer_recall@5"], "measured": figures["dpr"]["answer_recall@5"], "diff": 0.0, "ok": True}
    assert res["conditions"][0]["num_queries"] == 4 and res["conditions"][1]["k"] == 5

    # a figure off by more than the tolerance fails the check (exit status 1) and is named
    figures["bm25"] = {"answer_recall@1": 0.9}
    path = _expect_file(tmp_path, tiny_dpr, figures)
    assert main(["retrieve", "eval", "--expect", str(path), "--condition", "bm25", *cache]) == 1
    out = capsys.readouterr().out
    assert "bm25             answer_recall@1        0.9000   1.0000  +0.1000  MISS" in out
    assert "1 figure(s) outside tolerance" in out

    # --run: score an existing run (the hybrid one made above) against one condition, without retrieving
    hyb = retrieve("prebuilt:" + LUCENE, _queries(), "hybrid", k=5, params={"query_encoder": str(tiny_dpr[1]), "alpha": 0.95},
                   cache_dir=tmp_path / "cache")
    assert hyb.searches == 0
    assert main(["retrieve", "eval", "--expect", str(path), "--condition", "hybrid", "--run", str(hyb.jsonl_path)]) == 0
    # ... and against the bm25 condition, whose 0.9 no recall over 4 questions can meet
    assert main(["retrieve", "eval", "--expect", str(path), "--condition", "bm25", "--run", str(hyb.jsonl_path)]) == 1
    capsys.readouterr()


def test_expect_file_errors(tmp_path):
    from retrieval import expect

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncorpus: nq-dpr-1k\ntopics: nq-oracle:5\nconditions:\n  - name: a\n    retreiver: bm25\n    expected: {answer_recall@5: 0.9}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: conditions\[0\]: unknown key 'retreiver' \(did you mean 'retriever'\?\)"):
        expect.load(bad)
    bad.write_text("name: x\ncorpus: nq-dpr-1k\ntopics: nq-oracle:5\nconditions:\n  - name: a\n    expected: {recall@5: 0.9}\n")
    with pytest.raises(ConfigError, match=r"condition 'a': unknown metric 'recall@5'"):
        expect.load(bad)
    for metric in ("gold@0", "answer_recall@00"):  # a cut-off of 0 is refused where the file is read, naming it
        bad.write_text(f"name: x\ncorpus: nq-dpr-1k\ntopics: nq-oracle:5\nconditions:\n  - name: a\n    expected: {{{metric}: 0.9}}\n")
        with pytest.raises(ConfigError, match=rf"bad.yaml.*condition 'a': unknown metric '{metric}'.*K an integer >= 1"):
            expect.load(bad)
    bad.write_text("name: x\ncorpus: nq-dpr-1k\nconditions:\n  - name: a\n    expected: {answer_recall@5: 0.9}\n")
    with pytest.raises(ConfigError, match=r"condition 'a': no 'topics'"):
        expect.load(bad)
    spec = expect.load(Path(__file__).resolve().parents[1] / "docs" / "expected" / "webq-dpr.yaml")
    assert [(c["name"], c["retriever"], c["expected"]["answer_recall@20"], c["k"]) for c in spec["conditions"]] == [
        ("bm25", "bm25", 0.6240, 100), ("dpr", "dpr", 0.7505, 100), ("hybrid", "hybrid", 0.7712, 100)]
    assert spec["conditions"][2]["params"]["alpha"] == 0.95
    with pytest.raises(ConfigError, match="no condition 'dense'; conditions: bm25, dpr, hybrid"):
        expect.select(spec, ["dense"])


def test_dry_run_names_the_pyserini_topics_download(capsys):
    """A real run's first download, offline its first failure, is a Pyserini topic set: the dry run (plain and with
    --expect) said nothing of it (found by a new-user trial). A local corpus: no JVM, no index plan."""
    from tokrag_model.cli import main

    line = ("topics pyserini:dpr-wq-test: Anserini downloads the topic file on first use (small; needs the internet "
            "unless downloaded before); offline, give a local topics file (TSV or JSONL with answers)")
    assert main(["retrieve", "--corpus", "nq-dpr-1k", "--topics", "pyserini:dpr-wq-test", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [line, "nq-dpr-1k: a local corpus or index folder: nothing to download"]
    assert main(["retrieve", "--corpus", "nq-dpr-1k", "--topics", "nq-oracle", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == ["nq-dpr-1k: a local corpus or index folder: nothing to download"]
    for bad, why in (("pyserini:dpr-wq-test:abc", "must be a number of questions"), ("pyserini:", "name a Pyserini topic set"),
                     ("pyserini", "name a Pyserini topic set")):  # this one was an IndexError traceback (run and dry run)
        for dry in (["--dry-run"], ["--output", "unused.jsonl"]):
            assert main(["retrieve", "--corpus", "nq-dpr-1k", "--topics", bad, *dry]) == 2  # the dry run as the run
            cap = capsys.readouterr()
            assert why in cap.err and cap.out == "" and "Traceback" not in cap.err


def test_expect_dry_run_names_the_pyserini_topics_download(tmp_path, monkeypatch, capsys):
    from tokrag_model.cli import main

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["retrieve", "eval", "--expect", str(Path(__file__).resolve().parents[1] / "docs/expected/webq-dpr.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    line = ("topics pyserini:dpr-wq-test: Anserini downloads the topic file on first use (small; needs the internet "
            "unless downloaded before); offline, in a copy of the expectation file, topics: PATH (TSV or JSONL with answers)")
    assert out.splitlines().count(line) == out.count("condition ") >= 1
