"""A cut-off ``k`` of ``True`` is refused wherever a k is checked: ``bool`` is an ``int`` subclass, so ``k=True``
passed ``isinstance(k, int) and k >= 1`` and scored (or searched) the top passage only, as ``k=1``. The CLI's
``--k``/``--hits`` (argparse ``type=int``) and an expectation file's cut-offs (read from metric names such as
``answer_recall@20``) cannot hold a bool."""

from __future__ import annotations

import json

import pytest

from retrieval import Corpus, Passage
from retrieval.errors import ConfigError

RUN = {"1": [{"docid": "a", "text": "nothing"}, {"docid": "b", "text": "Paris is"}]}
MESSAGE = "k=True: k must be an integer >= 1"


def test_the_metrics_refuse_k_true():
    from retrieval.metrics import answer_hits, answer_recall_at_k, evaluate_run, gold_at_k, mrr

    answers, gold = {"1": ["Paris"]}, {"1": ["b"]}
    assert answer_recall_at_k(RUN, answers, 2) == gold_at_k(RUN, gold, 2) == 1.0 and mrr(RUN, gold, k=2) == 0.5
    for call in (lambda: answer_hits(RUN, answers, True), lambda: answer_recall_at_k(RUN, answers, True),
                 lambda: gold_at_k(RUN, gold, True), lambda: evaluate_run(RUN, answers, gold, ks=(1, True))):
        with pytest.raises(ConfigError, match=f"^{MESSAGE}$"):  # was 0.0: the top passage only
            call()
    with pytest.raises(ConfigError, match=rf"^{MESSAGE} \(or None: the whole ranking\)$"):
        mrr(RUN, gold, k=True)


def test_bm25_search_refuses_k_true(tmp_path):
    from retrieval.bm25 import Bm25Searcher, build_bm25_index

    corpus = Corpus([Passage("d1", "Paris", "Paris is the capital of France."),
                     Passage("d2", "Berlin", "Berlin is the capital of Germany.")], name="two")
    searcher = Bm25Searcher(build_bm25_index(corpus, cache_dir=tmp_path), corpus=corpus)
    assert [d for d, _ in searcher.search("capital", 2)] == ["d1", "d2"]
    with pytest.raises(ConfigError, match=f"^{MESSAGE}$"):
        searcher.search("capital", True)
    with pytest.raises(ConfigError, match=f"^{MESSAGE}$"):
        searcher.batch_search({"q": "capital"}, k=True)
    import numpy as np  # a numpy integer is a k (search took it before cf62772, batch_search refused it)

    assert [d for d, _ in searcher.search("capital", np.int64(1))] == ["d1"]
    assert [d for d, _ in searcher.batch_search({"q": "capital"}, k=np.int64(1))["q"]] == ["d1"]


def test_prebuilt_hybrid_depth_true_is_refused():
    from retrieval.prebuilt import check_params

    check_params("wikipedia-dpr-100w", "hybrid", {"alpha": 1.3, "depth": 1000, "max_length": 256})
    with pytest.raises(ConfigError, match=r"^depth=True: hits per retriever before fusion must be an integer >= 1$"):
        check_params("wikipedia-dpr-100w", "hybrid", {"alpha": 1.3, "depth": True, "max_length": 256})


def test_the_qa_docs_refuse_k_true(tmp_path):
    from tasks.rag import build_qa_docs

    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "a", "question": "capital of France", "answers": ["Paris"]}) + "\n")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n")
    with pytest.raises(ConfigError, match=r"^k=True: the number of passages per question must be an integer >= 1$"):
        build_qa_docs("byo", questions=str(qs), corpus=str(corpus), k=True, cache_dir=tmp_path / "cache")
