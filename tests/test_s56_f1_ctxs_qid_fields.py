"""A ctxs run's question ids were read only from ``qid``/``id`` (``retrieval.cache.read_ctxs_jsonl``) while a topics
file's, and a bring-your-own questions file's, are read from ``qid``/``id``/``qId``/``_id``, the first not null
(``retrieval.corpus.QID_FIELDS``, s55 f3). A run keyed as its BEIR-style topics (``_id``) or WebQuestions-style ones
(``qId``) was refused with ``expected {'qid' (or 'id'), 'ctxs': [...]}``, so ``tokrag retrieve eval`` could not score
it. Both readers now take the field from ``retrieval.corpus.qid_field`` (s56 f1)."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import DataError
from tokrag_model.cli import main as tokrag


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


ROWS = [  # each: the id fields of one record, and the id that a topics file reads from them
    ({"_id": "b1"}, "b1"),
    ({"qId": 7}, "7"),
    ({"qid": None, "_id": "b3"}, "b3"),  # a null field is skipped, as absent
    ({"qId": "w4", "_id": "b4"}, "w4"),  # qId comes before _id
    ({"id": 5, "_id": "b5"}, "5"),  # and id before both (as before: FiD-style runs)
]


def test_a_run_reads_the_question_ids_its_topics_file_reads(tmp_path):
    from retrieval.cache import read_ctxs_jsonl
    from retrieval.corpus import load_queries

    topics = _jsonl(tmp_path / "t.jsonl", [{**ids, "question": f"question {i}"} for i, (ids, _) in enumerate(ROWS)])
    run = _jsonl(tmp_path / "r.jsonl", [{**ids, "ctxs": [{"id": f"p{i}", "text": "x"}]} for i, (ids, _) in enumerate(ROWS)])
    expected = [qid for _, qid in ROWS]
    assert list(load_queries(topics)) == expected
    ctxs, _ = read_ctxs_jsonl(run)
    assert list(ctxs) == expected
    assert [hits[0]["docid"] for hits in ctxs.values()] == ["p0", "p1", "p2", "p3", "p4"]


def test_retrieve_eval_scores_a_run_keyed_by_underscore_id(tmp_path, capsys):
    topics = _jsonl(tmp_path / "t.jsonl", [{"_id": "q1", "text": "who wrote hamlet", "answers": ["Shakespeare"]},
                                           {"_id": "q2", "text": "capital of france", "answers": ["Paris"]}])
    run = _jsonl(tmp_path / "r.jsonl", [
        {"_id": "q1", "ctxs": [{"_id": "d1", "text": "Hamlet is a tragedy by William Shakespeare."}]},
        {"_id": "q2", "ctxs": [{"_id": "d2", "text": "Lyon is a city in France."}]}])
    assert tokrag(["retrieve", "eval", "--run", run, "--topics", topics, "--k", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["num_queries"] == 2 and out["answer_recall@1"] == 0.5


def test_a_row_without_a_read_id_names_the_fields_and_the_one_it_holds(tmp_path):
    from retrieval.cache import read_ctxs_jsonl

    run = _jsonl(tmp_path / "r.jsonl", [{"qid": "a", "ctxs": []}, {"question_id": "b", "ctxs": []}])
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value) == (f"{run}:2: expected {{'qid' (or 'id', 'qId', '_id'), 'ctxs': [...]}}; its 'question_id' "
                              "is not read as the question's id: rename it to 'qid'")
    run = _jsonl(tmp_path / "r2.jsonl", [{"ctxs": []}])
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value) == f"{run}:1: expected {{'qid' (or 'id', 'qId', '_id'), 'ctxs': [...]}}"


def test_an_id_under_underscore_id_is_checked_as_any_id(tmp_path):
    from retrieval.cache import read_ctxs_jsonl

    run = _jsonl(tmp_path / "r.jsonl", [{"_id": 3.0, "ctxs": []}])
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value) == (f"{run}:1: question '_id' is 3.0: an id must be a string or an integer, not a float; "
                              'write it as 3 or "3"')
    run = _jsonl(tmp_path / "r2.jsonl", [{"qId": "a", "ctxs": []}, {"_id": "a", "ctxs": []}])
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value) == f"{run}:2: duplicate qid 'a' (also on line 1); keep one row per question"
