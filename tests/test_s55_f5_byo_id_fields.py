"""Bring-your-own questions read their id as ``tokrag retrieve --topics`` does (helper f5, s55).

Before, :func:`tasks.byo.load_questions` read the id only from ``id``: a ``qid``, ``qId`` or ``_id`` field was not
read and the question got ``q<index>``, while the topics reader (:func:`retrieval.corpus.load_queries`, 0f0fc14)
reads the first not null of ``qid``/``id``/``qId``/``_id``. The same file thus had other ids in the two tools, and a
run retrieved with ``tokrag retrieve --topics`` or gold joins by qid matched none of the task's questions. Now both
use :func:`retrieval.corpus.qid_field`; a file whose ids are in ``id`` gives the same ids, docs and held-out pool as
before (checked in the s55 f5 report on a 25-question file: the docs and stats of the test, dev and fewshot splits
hash the same on 2426d02 and after).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import tasks.byo as byo
from retrieval.corpus import load_queries
from retrieval.errors import DataError


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("field", ["qid", "qId", "_id"])
def test_the_id_fields_of_the_topics_reader_are_read(tmp_path, field):
    path = _jsonl(tmp_path / "q.jsonl", [{field: "a1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
                                         {field: 7, "question": "capital of france", "answers": ["Paris"]},
                                         {"question": "no id here", "answers": ["x"]}])
    rows = byo.load_questions(path)
    assert [r["qid"] for r in rows] == ["a1", "7", "q2"]  # old: ["q0", "q1", "q2"]
    assert [r["qid"] for r in rows] == list(load_queries(path))  # the same ids as tokrag retrieve --topics


def test_a_file_with_id_keeps_its_ids(tmp_path, caplog):
    path = _jsonl(tmp_path / "q.jsonl", [{"id": "x1", "question": "q", "answers": ["a"]},
                                         {"id": 5, "question": "r", "answers": ["b"]},
                                         {"id": None, "question": "s", "answers": ["c"]}])
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = byo.load_questions(path)
    assert [r["qid"] for r in rows] == ["x1", "5", "q2"]
    assert not [r for r in caplog.records if r.name == "tasks.byo"]


def test_qid_beside_a_different_id_is_read_first_and_warned_once(tmp_path, caplog):
    path = _jsonl(tmp_path / "q.jsonl", [{"qid": "a1", "id": "b1", "question": "q", "answers": ["a"]},
                                         {"qid": "a2", "id": "b2", "question": "r", "answers": ["b"]}])
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = byo.load_questions(path)
    assert [r["qid"] for r in rows] == ["a1", "a2"] == list(load_queries(path))  # old: ["b1", "b2"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "tasks.byo"]
    assert warnings == [f"{path}:1: 'qid' is read as the id, not 'id' ('a1' vs 'b1'; ids are read from the first not "
                        "null of qid/id/qId/_id, as tokrag retrieve --topics reads them): keep one of the two fields"]


def test_an_unread_id_field_is_warned_once(tmp_path, caplog):
    path = _jsonl(tmp_path / "q.jsonl", [{"queryId": "a1", "question": "q", "answers": ["x"]}])
    byo._WARNED.discard((path, "queryId"))
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = byo.load_questions(path)
        byo.load_questions(path)
    assert [r["qid"] for r in rows] == ["q0"] == list(load_queries(path))
    warnings = [r.getMessage() for r in caplog.records if r.name == "tasks.byo"]
    assert warnings == [f"{path}: questions without an id field (qid/id/qId/_id) have a 'queryId' field, which is not "
                        "read as the id, so they get the automatic ids q<index of the question, from 0> (the first "
                        "question is q0, whatever its line): rename the field to 'id' to keep yours"]


def test_empty_or_bad_ids_under_another_name_are_refused_naming_the_field(tmp_path):
    path = _jsonl(tmp_path / "q.jsonl", [{"qid": "", "question": "q", "answers": ["x"]}])
    with pytest.raises(DataError) as exc:
        byo.load_questions(path)
    assert str(exc.value) == (f'{path}:1: \'qid\' is "": an id must not be empty; give the id, or write "qid": null or '
                              "leave the field out for the automatic id 'q0' (q<index of the question, from 0>)")
    path = _jsonl(tmp_path / "f.jsonl", [{"_id": 3.0, "question": "q", "answers": ["x"]}])
    with pytest.raises(DataError) as exc:
        byo.load_questions(path)
    assert str(exc.value).startswith(f"{path}:1: '_id'"), str(exc.value)
    path = _jsonl(tmp_path / "d.jsonl", [{"qid": "a", "question": "q", "answers": ["x"]},
                                         {"_id": "a", "question": "r", "answers": ["y"]}])
    with pytest.raises(DataError, match=r":2: duplicate id 'a' \(first at .*:1\)"):
        byo.load_questions(path)


def test_the_task_docs_carry_the_topics_ids(tmp_path, monkeypatch):
    from tasks.rag import build_qa_docs

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    corpus = _jsonl(tmp_path / "c.jsonl", [{"id": f"p{i}", "title": f"T{i}", "text": f"passage {i} about city{i}"}
                                           for i in range(12)])
    path = _jsonl(tmp_path / "q.jsonl", [{"_id": f"b{i}", "question": f"which city{i}", "answers": [f"city{i}"],
                                          "gold_docids": [f"p{i}"]} for i in range(12)])
    stats: dict = {}
    docs = build_qa_docs("byo", retriever="bm25", corpus=corpus, questions=path, k=2, stats=stats)
    held = stats["questions"]["held_out"]
    ids = [d["qid"] for d in docs] + held["dev"] + held["fewshot"]
    assert sorted(ids) == sorted(load_queries(path)) == sorted(f"b{i}" for i in range(12))  # old: q0 ... q11
