"""A passage listed twice in a doc is one line naming the doc, both positions and the docid (s57 h4, the rule of a
ctxs run since h1's c59b374, ``retrieval.cache.read_ctxs_jsonl``). ``tokrag_model.prompt.get_ctxs`` gave both copies
to the methods: REPLUG weighed the passage twice, Tok-RAG's passages block repeated it. The shipped tasks never list a
docid twice: their noise passages are drawn from the passages not listed (``tasks.rag.add_noise``; measured on the
first 300 docs of every nq_oracle_* / nq_open_* noise and counterfactual task, /work/scratch/s57/h4/w/dup_docids.py)."""

from __future__ import annotations

import pytest

from retrieval.corpus import Passage
from retrieval.errors import DataError
from tasks.rag import add_noise
from tokrag_model.prompt import get_ctxs


def _p(docid, **extra) -> dict:
    return {"docid": docid, "title": "T", "text": f"passage {docid}", **extra}


def test_a_docid_listed_twice_is_one_line_naming_the_doc_both_positions_and_the_docid():
    doc = {"id": "d1", "question": "who wrote hamlet", "ctxs": [_p("p1", rank=1), _p("p2", rank=2), _p("p1", rank=3)]}
    with pytest.raises(DataError) as exc:
        get_ctxs(doc, "rag-replug", 5)
    assert str(exc.value) == (
        "--model rag-replug: doc 'd1', doc['ctxs'][2] (passage 'p1') is listed twice (also doc['ctxs'][0]); each copy "
        "would be given to the method as a passage of its own: keep one copy, the better-ranked")


def test_a_copy_past_k_and_without_ranks_is_refused_too():
    doc = {"question": "who wrote hamlet", "ctxs": [_p("a"), _p("b"), _p("c"), _p("b")]}
    with pytest.raises(DataError) as exc:
        get_ctxs(doc, "tokrag", 2)
    assert str(exc.value).startswith("--model tokrag: doc (question 'who wrote hamlet'), doc['ctxs'][3] (passage 'b') "
                                     "is listed twice (also doc['ctxs'][1]); ")


def test_an_int_docid_and_its_text_are_the_same_passage():
    doc = {"qid": "q3", "ctxs": [_p(7), _p("7")]}
    with pytest.raises(DataError, match=r"^--model rag-cad: doc 'q3', doc\['ctxs'\]\[1\] \(passage '7'\) is listed "
                                        r"twice \(also doc\['ctxs'\]\[0\]\); "):
        get_ctxs(doc, "rag-cad", None)


def test_passages_without_a_docid_and_distinct_docids_read_as_before():
    doc = {"qid": "q1", "ctxs": [_p("x", rank=1), {"text": "no id"}, {"text": "no id"}, _p("", rank=4), _p("", rank=5),
                                 _p("y", rank=6)]}
    out = get_ctxs(doc, "rag-standard", None)
    assert out == doc["ctxs"] and out is not doc["ctxs"]
    assert [c.get("docid") for c in get_ctxs(doc, "rag-standard", 2)] == ["x", None]


def test_noise_passages_never_repeat_a_listed_one():
    """tasks.rag.add_noise draws from a corpus holding the retrieved passages: at every fraction the doc reads."""
    corpus = [Passage(f"c{i}", f"Title {i}", f"filler text number {i}") for i in range(12)]
    retrieved = [{"docid": f"c{i}", "title": f"Title {i}", "text": f"filler text number {i}", "score": 1.0,
                  "rank": i + 1, "source": "retrieved"} for i in range(5)]
    for fraction in (0.2, 0.4, 0.6, 0.8, 1.0):
        for q in range(20):
            ctxs = add_noise(retrieved, corpus, f"q{q}", ["zzz"], ["c0"], fraction, 1234)
            assert len({c["docid"] for c in ctxs}) == 5
            assert get_ctxs({"qid": f"q{q}", "ctxs": ctxs}, "tokrag", 5) == ctxs
