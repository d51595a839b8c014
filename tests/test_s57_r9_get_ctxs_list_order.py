"""A doc's passages reach the methods in their list order, and ``rank`` fields that contradict it are one line (s57 r9,
h1's "noticed and left" 3). ``tokrag_model.prompt.get_ctxs`` sorted a doc's passages by ``rank`` (a passage without a
rank counted as its position), so a user's docs (tasks/README.md, "A language-modelling task of your own with
passages") whose ranks contradict their list were silently reordered for every method, and a passage without a rank
listed after ranked ones could move above them; ``tokrag retrieve eval`` scores the list order of a ctxs run and
refuses such ranks (h1's c59b374). The shipped tasks write ``rank`` = position (noise and counterfactual passages
included: checked on 300 nq_oracle docs of each variant in /work/scratch/s57/r9/w/tasks_ranks.py), so they read as
before."""

from __future__ import annotations

import pytest

from retrieval.errors import DataError
from tokrag_model.prompt import get_ctxs


def _p(docid: str, **extra) -> dict:
    return {"docid": docid, "title": docid.upper(), "text": f"passage {docid}", **extra}


def test_contradicting_ranks_are_one_line_naming_the_doc_and_both_passages():
    doc = {"id": "d1", "question": "who wrote hamlet", "ctxs": [_p("p1", rank=1), _p("p2", rank=3), _p("p3", rank=2)]}
    with pytest.raises(DataError) as exc:
        get_ctxs(doc, "rag-standard", 5)
    assert str(exc.value) == (
        "--model rag-standard: doc 'd1', doc['ctxs'][2] (passage 'p3') has rank 2 but is listed after doc['ctxs'][1] "
        "of rank 3: the ranks contradict the list order, which is the order the passages are given in (best first); "
        "sort the list by rank, or drop the 'rank' fields")


def test_a_contradiction_past_rankless_passages_and_past_k_is_refused():
    doc = {"qid": "q9", "ctxs": [_p("a", rank=4), _p("b"), _p("c", rank=1)]}
    with pytest.raises(DataError, match=r"^--model tokrag: doc 'q9', doc\['ctxs'\]\[2\] \(passage 'c'\) has rank 1 but "
                                        r"is listed after doc\['ctxs'\]\[0\] of rank 4: "):
        get_ctxs(doc, "tokrag", 1)


@pytest.mark.parametrize("rank, shown", [("2", '"2"'), (True, "true"), (float("nan"), "NaN"), ([1], "[1]")])
def test_a_rank_that_is_not_a_number_is_refused(rank, shown):
    doc = {"question": "who wrote hamlet", "ctxs": [_p("p1", rank=1), _p("p2", rank=rank)]}
    with pytest.raises(DataError) as exc:
        get_ctxs(doc, "rag-cad", None)
    assert str(exc.value) == (f"--model rag-cad: doc (question 'who wrote hamlet'), doc['ctxs'][1] (passage 'p2') "
                              f"'rank' is {shown}: a rank must be a number (its position, 1 for the best passage) or "
                              "absent")


def test_a_rankless_passage_keeps_its_place_after_ranked_ones():
    doc = {"id": "d2", "ctxs": [_p("a", rank=3), _p("b"), _p("c", rank=5)]}  # was sorted b (2), a (3), c (5)
    assert [c["docid"] for c in get_ctxs(doc, "rag-standard", None)] == ["a", "b", "c"]
    assert [c["docid"] for c in get_ctxs(doc, "rag-standard", 2)] == ["a", "b"]


@pytest.mark.parametrize("ranks", [[1, 2, 3], [0, 0, 0], [1, 5, 9], [1.0, 1.5, 2], [None, None, None], [2, 2, 7]])
def test_ranks_that_agree_with_the_list_keep_it(ranks):
    ctxs = [_p(d, **({} if r is None else {"rank": r})) for d, r in zip("xyz", ranks)]
    doc = {"qid": "q1", "ctxs": ctxs}
    out = get_ctxs(doc, "rag-replug", None)
    assert [c["docid"] for c in out] == ["x", "y", "z"] and out == ctxs and out is not ctxs
    assert [c["docid"] for c in get_ctxs(doc, "rag-replug", 2)] == ["x", "y"]
    assert get_ctxs({"qid": "q1", "ctxs": []}, "rag-replug", 2) == []


def test_a_shipped_task_doc_reads_as_before():
    """A QA doc as tasks.rag.build_qa_docs writes it, 40% noise: a noise passage in position 2 has rank 2."""
    doc = {"qid": "nq-dev-0001", "ctxs": [_p("r1", rank=1, source="retrieved"), _p("n2", rank=2, source="noise"),
                                          _p("r3", rank=3, source="retrieved")]}
    assert [c["docid"] for c in get_ctxs(doc, "tokrag", 5)] == ["r1", "n2", "r3"]
