"""Issue 11.1: every passage a task attaches carries its retriever's score for the question (noise, gold and
counterfactual passages scored by the same retriever, index and parameters; hybrid: the fused score), the doc
records the score scale, REPLUG takes τ from it, a missing score is an error, and the trace records the
weights, the top-1 weight and the weight entropy."""

from __future__ import annotations

import json
import math

import pytest
import torch

from retrieval import Corpus, retrieve, score_passages
from retrieval.errors import ConfigError, DataError
from tokrag_model.methods.replug import REPLUG_TAU, doc_temperature, passage_scores, replug_weights, weight_summary

from test_retrieval_dense import mini  # noqa: F401 - the fixture: 20 NQ-oracle questions, gold + 20 DPR passages


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("scores-cache")


RETRIEVERS = [("bm25", None), ("dense", None), ("hybrid", {"fusion": "rrf"}), ("hybrid", {"fusion": "weighted", "alpha": 0.1})]


@pytest.mark.parametrize(("retriever", "params"), RETRIEVERS)
def test_retrieved_passages_get_their_run_scores(mini, cache, retriever, params) -> None:
    corpus, queries, _ = mini
    run = retrieve(corpus, queries, retriever, k=5, params=params, cache_dir=cache)
    passages = {q: [{"docid": h["docid"], "title": h["title"], "text": h["text"]} for h in hits] for q, hits in run.ctxs.items()}
    got = score_passages(corpus, queries, passages, retriever, k=5, params=params, cache_dir=cache)
    for q, hits in run.ctxs.items():
        want = [h["score"] for h in hits]
        if retriever == "dense" or (retriever == "hybrid" and params["fusion"] == "rrf"):
            assert got[q] == want, q  # same query vectors, same exact inner products / same ranks
        else:  # BM25: Anserini rounds to 1e-4, and Lucene's search and its one-document scoring sum the
            # query terms in different orders, so a score at a rounding boundary may differ by one 1e-4 step;
            # tied ranks carry Anserini's 1e-6 offsets (weighted fusion: alpha * either)
            assert got[q] == pytest.approx(want, abs=1.01e-4), q
    # not-retrieved passages score no higher than the run's last passage
    others = {q: [{"docid": p.docid, "title": p.title, "text": p.text} for p in list(corpus)[-10:]
                  if p.docid not in {h["docid"] for h in run.ctxs[q]}] for q in queries}
    low = score_passages(corpus, queries, others, retriever, k=5, params=params, cache_dir=cache)
    for q in queries:
        assert all(s <= run.ctxs[q][-1]["score"] + 1.01e-4 for s in low[q]), (q, low[q])
    again = score_passages(corpus, queries, passages, retriever, k=5, params=params, cache_dir=cache)
    assert again == got  # from the cache


def test_bm25_scores_text_that_is_not_in_the_index(mini, cache) -> None:
    corpus, queries, _ = mini
    run = retrieve(corpus, queries, "bm25", k=1, cache_dir=cache)
    top = run.ctxs["nq-oracle-0"][0]  # the gold passage of "who got the first nobel prize in physics"
    swapped = top["text"].replace("Röntgen", "Einstein")  # same length, no query term touched
    assert swapped != top["text"]
    got = score_passages(corpus, queries, {"nq-oracle-0": [
        {"docid": top["docid"] + "#cf", "title": top["title"], "text": swapped},
        {"docid": "new", "title": "", "text": "physics physics nobel prize first"}]}, "bm25", k=1, cache_dir=cache)
    assert got["nq-oracle-0"][0] == pytest.approx(top["score"], abs=1.01e-4)
    assert got["nq-oracle-0"][1] > 0


@pytest.mark.parametrize("params", [{"fusion": "rrf"}, {"fusion": "weighted", "alpha": 0.1}])
def test_hybrid_scores_an_edited_passage_by_its_text_not_its_docid(mini, cache, params) -> None:
    """An edited passage keeping a corpus docid got the original's fused score (its rank in the component lists,
    whatever its text); like bm25 and dense, a listed rank now counts only for the corpus passage itself. It replaces
    the corpus passage in what the model sees, so it is ranked in its place (as the counterfactual ``X#cf`` of the
    same text is), not below it as a new passage with a new docid may be (s46 b7)."""
    corpus, queries, _ = mini
    q = "nq-oracle-0"
    top = retrieve(corpus, queries, "hybrid", k=5, params=params, cache_dir=cache).ctxs[q][0]
    text = "Bananas are rich in potassium and grow in the tropics."
    edited = {"docid": top["docid"], "title": "Bananas", "text": text}
    fresh = dict(edited, docid="new-id")
    cf = dict(edited, docid=top["docid"] + "#cf")
    got = score_passages(corpus, queries, {q: [{k: top[k] for k in ("docid", "title", "text")}, edited, fresh, cf]},
                         "hybrid", k=5, params=params, cache_dir=cache)[q]
    assert got[0] == pytest.approx(top["score"], abs=1.01e-4)  # the corpus passage keeps its run score
    # the edited text scores by its text in the original's place: as its counterfactual, at least as a new passage
    assert got[2] <= got[1] == got[3] < got[0]


def test_every_attached_passage_has_a_score_and_the_doc_its_scale(mini, data_dir, cache) -> None:
    from tasks.rag import build_qa_docs

    corpus, _, _ = mini
    common = {"corpus": corpus, "data_dir": data_dir, "max_docs": 12, "cache_dir": cache}
    kinds = {
        "noise": build_qa_docs("nq_oracle", noise=0.6, **common),
        "cf": build_qa_docs("nq_oracle", counterfactual=True, **common),
        "gold": build_qa_docs("nq_oracle", gold_only=True, counterfactual=True, **common),
        "dense": build_qa_docs("nq_oracle", retriever="dense", noise=0.4, **common),
        "hybrid": build_qa_docs("nq_oracle", retriever="hybrid", noise=0.4, **common),
    }
    for name, docs in kinds.items():
        assert docs, name
        for d in docs:
            assert all(isinstance(c["score"], float) for c in d["ctxs"]), (name, d["qid"], d["ctxs"])
    assert {d["scored_by"] for d in kinds["noise"]} == {"bm25"}
    assert {d["scored_by"] for d in kinds["dense"]} == {"dense"}
    assert {d["scored_by"] for d in kinds["hybrid"]} == {"hybrid-rrf"}
    assert {c["source"] for d in kinds["cf"] for c in d["ctxs"]} >= {"counterfactual", "retrieved"}
    # a noise passage carries its own retriever score: the clean doc's score at that position is the replaced one's
    clean = {d["qid"]: d for d in build_qa_docs("nq_oracle", **common)}
    for d in kinds["noise"]:
        for i, c in enumerate(d["ctxs"]):
            if c["source"] == "noise":
                alone = score_passages(corpus, {d["qid"]: d["question"]}, {d["qid"]: [c]}, "bm25",
                                       cache_dir=cache)[d["qid"]][0]
                assert c["score"] == alone and c["score"] <= clean[d["qid"]]["ctxs"][-1]["score"] + 1.01e-4


def test_noise_passage_weight_follows_its_retriever_score(data_dir, cache) -> None:
    """On a corpus where every distractor contains every question's words, the noise passages drawn from it
    (tasks.rag.add_noise) score like the retrieved passages they replace, and REPLUG weights them alike;
    before the fix they had no score, read as 0, and got ~1e-5 of the weight."""
    from retrieval import Passage, has_answer
    from tasks.data import load_qa_split
    from tasks.rag import add_noise

    rows = load_qa_split("nq_oracle", "test", data_dir)[:6]
    words = " ".join(r["question"] for r in rows)
    echo = [Passage(f"echo-{j:02d}", "", f"{words} note {j} of the series") for j in range(40)]
    assert not any(has_answer(p.text, r["answers"]) for p in echo for r in rows)
    corpus = Corpus(echo + [Passage(r["gold_docids"][0], r["gold"]["title"], r["gold"]["text"]) for r in rows], name="echo")
    queries = {r["qid"]: r["question"] for r in rows}
    run = retrieve(corpus, queries, "bm25", k=5, cache_dir=cache)
    ratios, legacy = [], []
    for r in rows:
        clean = {"qid": r["qid"], "scored_by": "bm25",
                 "ctxs": [dict(h, source="retrieved") for h in run.ctxs[r["qid"]]]}
        noisy = dict(clean, ctxs=add_noise(clean["ctxs"], corpus, r["qid"], r["answers"], r["gold_docids"], 0.6, 1234))
        inserted = [c for c in noisy["ctxs"] if c["score"] is None]
        assert len(inserted) == 3
        for c, s in zip(inserted, score_passages(corpus, queries, {r["qid"]: inserted}, "bm25", k=5, cache_dir=cache)[r["qid"]]):
            c["score"] = s
        # BM25 scores are small here (every passage holds the query words): τ = 0.05 makes weights sensitive
        tau = doc_temperature(noisy, 0.05)
        w = replug_weights(passage_scores(noisy, noisy["ctxs"]), tau, "mixture")
        wc = replug_weights(passage_scores(clean, clean["ctxs"]), tau, "mixture")
        w_old = replug_weights([0.0 if c["source"] == "noise" else c["score"] for c in noisy["ctxs"]], tau, "mixture")
        for i, c in enumerate(noisy["ctxs"]):
            if c["source"] == "noise" and c["docid"].startswith("echo") and clean["ctxs"][i]["docid"].startswith("echo"):
                assert c["score"] > 0.1 and c["score"] == pytest.approx(clean["ctxs"][i]["score"], abs=1e-4)
                ratios.append(float(w[i] / wc[i]))
                legacy.append(float(w_old[i] / wc[i]))
    assert len(ratios) >= 10
    assert all(0.5 < x < 2.0 for x in ratios), ratios  # comparable to the weight of the passage it replaced
    assert all(x < 1e-2 for x in legacy), legacy  # the old rule (no score -> 0): under 1% of that weight


def test_temperature_from_the_doc_and_explicit_override() -> None:
    assert doc_temperature({"scored_by": "bm25"}, None) == 1.0 == REPLUG_TAU["bm25"]
    assert doc_temperature({"scored_by": "dense"}, None) == 0.05
    assert doc_temperature({"scored_by": "hybrid-rrf"}, None) == 0.005
    assert doc_temperature({"scored_by": "dense"}, 2.0) == 2.0  # the model argument wins
    with pytest.raises(ConfigError, match=r"doc 'q7' does not record which retriever scored its passages.*replug_temperature"):
        doc_temperature({"qid": "q7"}, None)
    with pytest.raises(ConfigError, match=r"no default temperature for scores from 'hybrid-weighted'"):
        doc_temperature({"qid": "q7", "scored_by": "hybrid-weighted"}, None)


def test_missing_score_names_the_doc_and_the_passage() -> None:
    doc = {"qid": "nq-dev-0001", "ctxs": [{"docid": "a", "score": 3.0, "rank": 1}, {"docid": "n1", "score": None, "rank": 2}]}
    with pytest.raises(DataError, match=r"doc 'nq-dev-0001', passage 'n1' \(rank 2\) has no retriever score"):
        passage_scores(doc, doc["ctxs"])


def test_trace_records_weights_top1_and_entropy() -> None:
    """The SmolLM2 golden docs' scores [20, 18.5] at τ=1 (bm25): hand-computed top-1 weight and entropy (nats)."""
    w = replug_weights([20.0, 18.5], doc_temperature({"scored_by": "bm25"}, None))
    p = 1 / (1 + math.exp(-1.5))
    top1, ent = weight_summary(w)
    assert top1 == pytest.approx(p) and ent == pytest.approx(-(p * math.log(p) + (1 - p) * math.log(1 - p)))
