"""One rule for the ranks and the repeated ids of a ranking (s59 d1): a ctxs run (``retrieval.cache.read_ctxs_jsonl``,
read by ``tokrag retrieve eval``) and a doc's passages (``tokrag_model.prompt.get_ctxs``, what every method is given)
each carried a copy of the same two checks (a ``rank`` that is not a number or that contradicts the list order; a
passage id listed twice), with lines that had drifted apart (``(1 for the best passage)`` against ``(its position, 1
for the best passage)``; ``passage 'x' is listed twice in the question's ranking`` against ``(passage 'x') is listed
twice``). Both now call ``retrieval.cache.check_rank`` and ``check_listed_once``: the same lists are refused, at the
same passage, by one line that differs only where the two readers differ on purpose (where the passage is, what the
list order is used for, what a copy would do)."""

from __future__ import annotations

import itertools
import json

import pytest

from retrieval.errors import DataError

RANKS = [None, 0, 1, 2, "2", True, float("nan")]
IDS = [("p1", "p2", "p3"), ("p1", "p2", "p1"), ("p1", "p1", "p2")]


def _run_line(tmp_path, ids, ranks) -> str | None:
    from retrieval.cache import read_ctxs_jsonl

    ctxs = [{"docid": d, "text": "t"} | ({} if r is None else {"rank": r}) for d, r in zip(ids, ranks)]
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"qid": "q1", "ctxs": ctxs}) + "\n", encoding="utf-8")
    try:
        read_ctxs_jsonl(path)
    except DataError as exc:
        return str(exc).replace(f"{path}:1: question 'q1', ", "")
    return None


def _doc_line(ids, ranks) -> str | None:
    from tokrag_model.prompt import get_ctxs

    doc = {"qid": "q1", "ctxs": [{"docid": d, "text": "t"} | ({} if r is None else {"rank": r})
                                 for d, r in zip(ids, ranks)]}
    try:
        get_ctxs(doc, "tokrag", 1)
    except DataError as exc:
        return str(exc).replace("--model tokrag: doc 'q1', ", "")
    return None


def test_a_run_and_a_doc_refuse_the_same_lists_with_one_line(tmp_path) -> None:
    from retrieval.cache import COUNTS_AS_RANK, RANKING_SCORED
    from tokrag_model.prompt import PASSAGE_COPIES, PASSAGES_ORDER

    refused = 0
    for ids in IDS:
        for ranks in itertools.product(RANKS, repeat=3):
            run, doc = _run_line(tmp_path, ids, ranks), _doc_line(ids, ranks)
            assert (run is None) == (doc is None), (ids, ranks, run, doc)
            if run is None:
                continue
            refused += 1
            # the one line: only where the passage is, what the order is used for and what a copy would do differ
            assert doc.replace("doc['ctxs']", "ctxs").replace(PASSAGES_ORDER, RANKING_SCORED) \
                .replace(PASSAGE_COPIES, COUNTS_AS_RANK) == run, (ids, ranks)
    assert refused == 3 * 7 ** 3 - 38  # the lists accepted: 38 (counted below)


def test_the_count_of_accepted_lists() -> None:
    """The 38 of the test above: distinct ids only (the first of the 3 id patterns), and ranks that are absent or
    numbers not decreasing down the list among those given: 1 + 3·3 + 3·6 + 10 (none, one, two or three given)."""
    ok = 0
    for ranks in itertools.product(RANKS, repeat=3):
        given = [r for r in ranks if r is not None]
        if all(isinstance(r, int) and not isinstance(r, bool) for r in given) and given == sorted(given):
            ok += 1
    assert ok == 38


def test_the_lines_of_each_reader(tmp_path) -> None:
    assert _run_line(tmp_path, ("p1", "p2", "p3"), (3, None, 2)) == (
        "ctxs[2] (passage 'p3') has rank 2 but is listed after ctxs[0] of rank 3: the ranks contradict the list order, "
        "which is the ranking scored (best first); sort the list by rank, or drop the 'rank' fields")
    assert _doc_line(("p1", "p2", "p3"), (3, None, 2)) == (
        "doc['ctxs'][2] (passage 'p3') has rank 2 but is listed after doc['ctxs'][0] of rank 3: the ranks contradict "
        "the list order, which is the order the passages are given in (best first); sort the list by rank, or drop "
        "the 'rank' fields")
    assert _run_line(tmp_path, ("p1", "p2", "p1"), (None, None, None)) == (
        "ctxs[2] (passage 'p1') is listed twice (also ctxs[0]); each copy would count as a rank (trec_eval refuses "
        "such a run): keep one copy, the better-ranked")
    assert _doc_line(("p1", "p2", "p1"), (None, None, None)) == (
        "doc['ctxs'][2] (passage 'p1') is listed twice (also doc['ctxs'][0]); each copy would be given to the method as "
        "a passage of its own: keep one copy, the better-ranked")
    for line in (_run_line(tmp_path, ("p1", "p2", "p3"), (1, "2", 3)), _doc_line(("p1", "p2", "p3"), (1, "2", 3))):
        assert line.endswith("[1] (passage 'p2') 'rank' is \"2\": a rank must be a number (its position, 1 for the best "
                             "passage) or absent")


@pytest.mark.parametrize("reader", ["run", "doc"])
def test_both_readers_call_the_one_rule(reader, tmp_path, monkeypatch) -> None:
    import retrieval.cache as cache

    calls = []
    rank, once = cache.check_rank, cache.check_listed_once
    monkeypatch.setattr(cache, "check_rank", lambda *a, **k: calls.append("rank") or rank(*a, **k))
    monkeypatch.setattr(cache, "check_listed_once", lambda *a, **k: calls.append("once") or once(*a, **k))
    if reader == "run":
        assert _run_line(tmp_path, ("p1", "p2"), (1, 2)) is None
    else:
        assert _doc_line(("p1", "p2"), (1, 2)) is None
    assert calls == ["once", "rank", "once", "rank"]


def test_the_doc_is_named_only_for_a_refusal() -> None:
    """A doc whose name cannot be written (an int id past Python's 4300-digit limit) still gives its passages: the
    head of the line is built only when a passage is refused, as before the rules were shared."""
    import sys

    from tokrag_model.prompt import get_ctxs

    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("Python before 3.11 has no int digit limit")
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    try:
        doc = {"qid": 10 ** 5000, "ctxs": [{"docid": "a", "text": "t", "rank": 1}, {"docid": "b", "text": "u"}]}
        assert get_ctxs(doc, "tokrag", 1) == [{"docid": "a", "text": "t", "rank": 1}]
    finally:
        sys.set_int_max_str_digits(before)
