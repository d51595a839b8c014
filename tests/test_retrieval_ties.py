"""Deterministic tie order (issue 12.4): every retriever and fusion ranks by (score desc, docid asc), the same at
every k, so a shallower run is a prefix of a deeper one; stored scores are exact, and the TREC file's scores
make trec_eval read the file's order."""

from __future__ import annotations

import json

import pytest

from retrieval import Corpus, Passage, retrieve
from retrieval.cache import trec_lines

TIED = ["z9", "a1", "m5", "b2", "y8", "c3"]  # corpus order on purpose: not the docid order
TEXT = "The quick brown fox jumps over the lazy dog near the river bank."
DISTRACTORS = [
    "Photosynthesis converts light energy into chemical energy in plants.", "The stock market closed higher on Friday.",
    "A brown bear was seen near the quick mountain stream.", "Foxes are small omnivorous mammals of the dog family.",
    "The river bank was flooded after the storm.", "Quantum computers use qubits instead of bits.",
    "The lazy afternoon passed slowly in the village.", "Jumping spiders have excellent eyesight.",
    "The capital of France is Paris.", "Brown rice is a whole grain.", "The dog barked at the mail carrier.",
    "Mount Everest is the highest mountain above sea level.", "The quick service restaurant opened downtown.",
    "Rivers carry sediment to the sea.", "A fox terrier is a breed of dog.", "Coffee beans are roasted seeds.",
    "The brown paper bag tore open.", "Lightning is a discharge of static electricity.",
    "The old bank building became a museum.", "Jazz originated in New Orleans.",
]
QUERIES = {"fox": "quick brown fox", "dog": "lazy dog river", "bank": "old bank museum"}


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    passages = [Passage(d, "", TEXT) for d in TIED]
    passages += [Passage(f"x{i:02d}", "", t) for i, t in enumerate(DISTRACTORS)]
    return Corpus(passages, name="ties-toy")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ties-cache")


RETRIEVERS = [("bm25", None), ("dense", None), ("hybrid", {"fusion": "rrf"}), ("hybrid", {"fusion": "weighted", "alpha": 0.1})]


@pytest.mark.parametrize(("retriever", "params"), RETRIEVERS)
def test_top_k_is_a_prefix_of_every_deeper_run(corpus, cache, retriever, params) -> None:
    deep = retrieve(corpus, QUERIES, retriever, k=len(corpus), params=params, cache_dir=cache)
    for qid, hits in deep.ctxs.items():
        order = [(-h["score"], h["docid"]) for h in hits]
        assert order == sorted(order), (retriever, qid)  # score desc, then docid asc
    # the six identical passages come first, in docid order; dense scores them exactly equal (BM25 scores carry
    # Anserini's 1e-6 offsets of tied ranks, and the fusions inherit them or fuse different ranks)
    assert [h["docid"] for h in deep.ctxs["fox"][:6]] == sorted(TIED)
    top6 = [h["score"] for h in deep.ctxs["fox"][:6]]
    if retriever == "dense":
        assert len(set(top6)) == 1
    elif retriever == "bm25":
        assert max(top6) - min(top6) < 1e-5
    for k in (1, 2, 3, 5, 6, 7, 10):
        run = retrieve(corpus, QUERIES, retriever, k=k, params=params, cache_dir=cache)
        for qid in QUERIES:
            assert [h["docid"] for h in run.ctxs[qid]] == [h["docid"] for h in deep.ctxs[qid]][:k], (retriever, k, qid)
            assert [h["score"] for h in run.ctxs[qid]] == [h["score"] for h in deep.ctxs[qid]][:k]


def test_dense_k1_returns_the_first_docid_of_the_tie(corpus, cache) -> None:
    # issue 12.4: dense k=1 returned z9 (FAISS's pick among the six) while k=100 started a1, b2, ...
    assert [h["docid"] for h in retrieve(corpus, {"fox": "quick brown fox"}, "dense", k=1, cache_dir=cache).ctxs["fox"]] == ["a1"]
    assert [h["docid"] for h in retrieve(corpus, {"fox": "quick brown fox"}, "bm25", k=1, cache_dir=cache).ctxs["fox"]] == ["a1"]


def test_tie_complete_top_k_deepens_until_the_boundary_is_clear() -> None:
    from retrieval.dense import TIE_PAD, tie_complete_top_k

    # 40 tied docs listed in reverse docid order (what a BLAS heap may return), then lower ones
    docs = [(f"d{i:02d}", 1.0) for i in range(39, -1, -1)] + [(f"e{i:02d}", 0.5) for i in range(40)]
    calls = []

    def search(idx, depth):
        calls.append(depth)
        return [docs[:depth] for _ in idx]

    got = tie_complete_top_k(search, 1, 3, len(docs))
    assert got == [[("d00", 1.0), ("d01", 1.0), ("d02", 1.0)]]
    assert calls == [3 + TIE_PAD, 4 * (3 + TIE_PAD)]  # 19 hits all tied: searched again, 76 deep


def test_exact_scores_do_not_depend_on_the_batch() -> None:
    import numpy as np

    from retrieval.dense import exact_inner_products

    rng = np.random.default_rng(0)
    q = rng.standard_normal(384).astype("float32")
    p = rng.standard_normal(384).astype("float32")
    many = np.stack([rng.standard_normal(384).astype("float32") for _ in range(7)] + [p])
    assert exact_inner_products(q, [p]) == exact_inner_products(q, many)[-1:]
    assert exact_inner_products(q, [p])[0] == pytest.approx(float(np.dot(q.astype(np.float64), p.astype(np.float64))), abs=1e-12)


def _trec_eval_order(text: str) -> dict[str, list[str]]:
    """trec_eval's reading of a run: per query, score descending, ties by docid descending."""
    rows: dict[str, list[tuple[float, str]]] = {}
    for line in text.splitlines():
        qid, _, docid, _, score, _ = line.split()
        rows.setdefault(qid, []).append((float(score), docid))
    return {q: [d for _, d in sorted(r, key=lambda x: (x[0], x[1]), reverse=True)] for q, r in rows.items()}


def test_trec_scores_make_trec_eval_read_the_file_order() -> None:
    ctxs = {"q": [{"docid": d, "score": s, "rank": r} for r, (d, s) in enumerate(
        [("a1", 0.679375), ("b2", 0.679375), ("c3", 0.679375), ("d4", 0.6793745), ("e5", 8e-7), ("f6", 0.0), ("g7", -0.5)], 1)]}
    ctxs["bm25"] = [{"docid": d, "score": s, "rank": r} for r, (d, s) in enumerate(
        [("a", 8.113400459289551), ("b", 8.113399505615234), ("c", 8.113399505615234), ("d", 7.0)], 1)]
    text = trec_lines(ctxs, "t")
    assert _trec_eval_order(text) == {q: [h["docid"] for h in v] for q, v in ctxs.items()}
    scores = [line.split()[4] for line in text.splitlines()]
    assert scores[:7] == ["0.679375", "0.679374", "0.679373", "0.679372", "0.000001", "0.000000", "-0.500000"]
    assert scores[7:] == ["8.113400", "8.113399", "8.113398", "7.000000"]


def test_ctxs_jsonl_keeps_exact_scores(corpus, cache) -> None:
    run = retrieve(corpus, QUERIES, "bm25", k=8, cache_dir=cache)
    stored = {json.loads(line)["qid"]: json.loads(line)["ctxs"] for line in run.jsonl_path.read_text().splitlines()}
    assert stored == run.ctxs
    assert any(round(h["score"], 6) != h["score"] for v in stored.values() for h in v)  # not rounded to 6 decimals
