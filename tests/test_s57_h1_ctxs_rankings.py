"""A ctxs run's rankings, as ``tokrag retrieve eval`` reads them (``retrieval.cache.read_ctxs_jsonl``; s57 b1,
finding 3). The list order is the ranking scored (best first: DPR's and FiD's ``ctxs`` and Pyserini's ``contexts``
carry no rank, tokrag's ``rank`` is the position), so

* ``rank`` fields that contradict the list order (a passage ranked above one listed before it) were ignored without
  a word: the file's ranks said p1 first, recall@1 and gold@1 were scored on p2. Now one line naming the file, line,
  question, both positions and ranks. Equal ranks (a ``0`` placeholder) and gaps agree with any order and still read;
  a rank that is not a number (``"2"``, ``true``, ``NaN``) is refused, since it cannot be checked;
* the same passage id twice in one question's ranking counted as two ranks (with a stderr note since 1358d12). Now
  one line naming the file, line, question, both positions and the id, as trec_eval refuses such a run (an id
  ``12`` and ``"12"`` are one id, as every id is read); the same passage for two questions is fine.
"""

from __future__ import annotations

import json

import pytest

from retrieval.cache import jsonl_lines, read_ctxs_jsonl
from retrieval.errors import DataError
from tokrag_model.cli import main as tokrag

TOPICS = [{"qid": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["p1"]},
          {"qid": "q2", "question": "capital of france", "answers": ["Paris"], "gold_docids": ["p3"]}]
P1 = {"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare"}
P2 = {"id": "p2", "title": "x", "text": "nothing here"}
P3 = {"id": "p3", "title": "France", "text": "Paris is the capital"}


def _file(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def _eval(capsys, run, topics, *args):
    """-> (exit status, parsed JSON or None, stderr)."""
    code = tokrag(["retrieve", "eval", "--run", str(run), "--topics", str(topics), "--json", *args])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if code == 0 else None), cap.err


@pytest.fixture()
def topics(tmp_path):
    return _file(tmp_path / "topics.jsonl", TOPICS)


def test_ranks_that_contradict_the_list_order_are_an_error(tmp_path, topics, capsys):
    # b1's repro: the list puts p2 first, its ranks p1; scored on the list before (recall@1 0, gold@1 0), silently
    run = _file(tmp_path / "rankorder.jsonl", [
        {"id": "q1", "ctxs": [dict(P2, score=1.0, rank=2), dict(P1, score=5.0, rank=1)]},
        {"id": "q2", "ctxs": [dict(P3, rank=1)]}])
    code, m, err = _eval(capsys, run, topics, "--k", "1")
    assert (code, m) == (2, None)
    assert err == (f"tokrag retrieve: error: {run}:1: question 'q1', ctxs[1] (passage 'p1') has rank 1 but is listed "
                   "after ctxs[0] of rank 2: the ranks contradict the list order, which is the ranking scored (best "
                   "first); sort the list by rank, or drop the 'rank' fields\n")


def test_a_contradiction_among_the_ranked_passages_is_found_past_unranked_ones(tmp_path):
    run = _file(tmp_path / "mixed.jsonl", [{"qid": "q1", "ctxs": [dict(P1, rank=3), P2, dict(P3, rank=2)]}])
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value).startswith(f"{run}:1: question 'q1', ctxs[2] (passage 'p3') has rank 2 but is listed after "
                                     "ctxs[0] of rank 3: ")


@pytest.mark.parametrize("rank, shown", [('"2"', '"2"'), ("true", "true"), ("NaN", "NaN"), ("[1]", "[1]")])
def test_a_rank_that_is_not_a_number_is_refused(tmp_path, rank, shown):
    run = _file(tmp_path / "r.jsonl", ['{"qid": "q1", "ctxs": [{"id": "p1", "text": "t", "rank": %s}]}' % rank])
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value) == (f"{run}:1: question 'q1', ctxs[0] (passage 'p1') 'rank' is {shown}: a rank must be a "
                              "number (its position, 1 for the best passage) or absent")


def test_ranks_that_agree_with_the_list_read_and_score_the_list_order(tmp_path, topics, capsys):
    # ties (a 0 placeholder everywhere), gaps, floats and rankless passages agree with any list order
    run = _file(tmp_path / "agree.jsonl", [
        {"id": "q1", "ctxs": [dict(P2, rank=0), dict(P1, rank=0)]},
        {"id": "q2", "ctxs": [dict(P3, rank=1), dict(P2), dict(P1, rank=5.0)]}])
    code, m, err = _eval(capsys, run, topics, "--k", "1", "2")
    assert (code, err) == (0, "")
    assert m == pytest.approx({"num_queries": 2, "answer_recall@1": 0.5, "answer_recall@2": 1.0, "gold@1": 0.5,
                               "gold@2": 1.0, "mrr": (1 / 2 + 1) / 2})


def test_a_passage_twice_in_one_ranking_is_an_error_naming_the_id(tmp_path, topics, capsys):
    # id 12 and "12" are one id (json_id): counted as two ranks before, gold@1 and recall@2 over one passage
    run = _file(tmp_path / "dupdoc.jsonl", [
        {"id": "q1", "ctxs": [{"docid": "p2", "text": "x"}, {"id": 12, "text": "Shakespeare"}, {"docid": "12", "text": "Shakespeare"}]},
        {"id": "q2", "ctxs": [P3]}])
    code, m, err = _eval(capsys, run, topics, "--k", "1")
    assert (code, m) == (2, None)
    assert err == (f"tokrag retrieve: error: {run}:1: question 'q1', ctxs[2] (passage '12') is listed twice (also "
                   "ctxs[1]); each copy would count as a rank (trec_eval refuses such a run): keep one copy, the "
                   "better-ranked\n")


def test_one_passage_for_two_questions_and_tokrags_own_runs_still_read(tmp_path):
    ctxs = {"q1": [dict(P1, docid="p1", score=2.0, rank=1), dict(P2, docid="p2", score=1.0, rank=2)],
            "q2": [dict(P1, docid="p1", score=3.0, rank=1)]}
    run = tmp_path / "ctxs.jsonl"
    run.write_text(jsonl_lines(ctxs, {"q1": "who wrote hamlet", "q2": "capital of france"}))
    got, queries = read_ctxs_jsonl(run)
    assert {q: [(c["docid"], c["rank"]) for c in rows] for q, rows in got.items()} == {
        "q1": [("p1", 1), ("p2", 2)], "q2": [("p1", 1)]}
    assert queries == {"q1": "who wrote hamlet", "q2": "capital of france"}
