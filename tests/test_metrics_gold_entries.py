"""retrieval.metrics (Python API): a gold or answers entry that is one string is refused (query named), and a query
with an empty gold (or answers) list is skipped, not counted a miss, as ``tokrag retrieve eval`` does. A string was
iterated letter by letter (gold "31" matched passage "3"), and {"a": [], "c": ["3"]} gave gold@1 0.5 (the CLI 1.0)."""

from __future__ import annotations

import pytest

from retrieval import metrics as M
from retrieval.errors import ConfigError

RUN = {"a": [{"docid": "p1", "text": "Hamlet was written by William Shakespeare"}, {"docid": "p2", "text": "x"}],
       "c": [{"docid": "3", "text": "Neil Armstrong walked on the moon"}, {"docid": "p1", "text": "y"}]}


@pytest.mark.parametrize("call", [
    lambda g: M.gold_at_k(RUN, g, 1), lambda g: M.mrr(RUN, g), lambda g: M.evaluate_run(RUN, None, g, ks=[1]),
], ids=["gold_at_k", "mrr", "evaluate_run"])
@pytest.mark.parametrize("entry", ["31", "p1", b"p1"])
def test_a_string_gold_entry_is_refused_naming_the_query(call, entry):
    with pytest.raises(ConfigError, match=r"query 'c': gold is .*a single string"):
        call({"a": ["p1"], "c": entry})


@pytest.mark.parametrize("call", [
    lambda a: M.answer_hits(RUN, a, 1), lambda a: M.answer_recall_at_k(RUN, a, 1),
    lambda a: M.evaluate_run(RUN, a, None, ks=[1]),
], ids=["answer_hits", "answer_recall_at_k", "evaluate_run"])
def test_a_string_answers_entry_is_refused_naming_the_query(call):
    with pytest.raises(ConfigError, match=r"query 'a': answers is 'Shakespeare', a single string"):
        call({"a": "Shakespeare"})


def test_an_empty_gold_list_is_skipped_not_a_miss():
    gold = {"a": [], "c": ["3"]}
    assert M.gold_at_k(RUN, gold, 1) == 1.0
    assert M.mrr(RUN, gold) == 1.0
    assert M.evaluate_run(RUN, None, gold, ks=[1]) == {"num_queries": 1, "gold@1": 1.0, "mrr": 1.0}
    assert M.gold_at_k(RUN, {"a": []}, 1) == 0.0 and M.mrr(RUN, {"a": []}) == 0.0


def test_an_empty_answers_list_is_skipped_not_a_miss():
    answers = {"a": [], "c": ["Armstrong"]}
    assert M.answer_hits(RUN, answers, 1) == {"c": True}
    assert M.answer_recall_at_k(RUN, answers, 1) == 1.0
    assert M.evaluate_run(RUN, answers, None, ks=[1]) == {"num_queries": 1, "answer_recall@1": 1.0}


def test_each_figure_is_over_the_queries_of_its_kind():
    # a: gold only (a miss at 1: p1 is first, gold p2); c: answers only (a hit)
    m = M.evaluate_run(RUN, {"a": [], "c": ["Armstrong"]}, {"a": ["p2"], "c": []}, ks=[1])
    assert m == {"num_queries": 2, "answer_recall@1": 1.0, "gold@1": 0.0, "mrr": 0.5}
