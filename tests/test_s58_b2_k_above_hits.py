"""``lm_eval --model rag-standard --model_args k=10 --tasks nq_oracle_bm25`` (hits 5) scored the 5 passages the task
retrieves, as ``k=5`` does, while the results recorded ``k=10``, without a word (s58 b2). lm-eval merges
``--model_args`` into the task's metadata, so the QA task build now logs one WARNING naming the task, ``k``, ``hits``
and the ``--metadata`` that retrieves ``k``; a ``k`` at most ``hits`` and a gold-only task say nothing. Built here on a
bring-your-own task over a two-passage corpus (BM25, no model)."""

from __future__ import annotations

import json
import logging

import pytest

from tasks.utils import load_qa


@pytest.fixture
def byo(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": t, "text": x}) + "\n" for i, (t, x) in enumerate(
        [("Hamlet", "Hamlet is a tragedy by William Shakespeare."), ("Paris", "Paris is the capital of France.")])))
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}) + "\n")
    return {"dataset": "byo", "questions": str(questions), "corpus": str(corpus), "hits": 1, "split": "all",
            "config_source": "/x/rag_qa_bm25.yaml", "cache_dir": str(tmp_path / "cache")}


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "model argument k=" in r.getMessage()]


def test_k_above_hits_is_warned(byo, caplog):
    with caplog.at_level(logging.WARNING, logger="tasks.utils"):
        data = load_qa(**byo, k=3, pretrained="x")
    assert [len(d["ctxs"]) for d in data["test"]] == [1]  # the model can show one passage, not 3
    assert _warnings(caplog) == [
        "task rag_qa_bm25: the model argument k=3 is above the 1 passages the task retrieves per question (metadata "
        "hits), so the model shows at most 1 of them while the results record k=3; pass --metadata '{\"hits\": 3}' "
        "to retrieve 3"]


@pytest.mark.parametrize("k", [1, None])
def test_k_at_most_hits_or_not_given_says_nothing(byo, caplog, k):
    with caplog.at_level(logging.WARNING, logger="tasks.utils"):
        load_qa(**byo, **({} if k is None else {"k": k}))
    assert _warnings(caplog) == []
