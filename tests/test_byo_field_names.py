"""tasks.byo.load_questions and the question fields it does not read.

A field one edit from ``gold_docids`` (``gold_docid``) used to be ignored silently: the questions were scored with no
gold ids (``gold_at_k`` unavailable) and no message. An id kept in another data set's field (``qid``, ``_id``, ...)
was dropped silently too: every question got the automatic ``q<index>`` id, so per-question results no longer
carried the user's ids. The first is now refused (file, line, did-you-mean), the second logged once per file."""

from __future__ import annotations

import json
import logging

import pytest

from retrieval.errors import DataError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("field", ["gold_docid", "gold_docidss", "glod_docids", "gold-docids"])
def test_a_near_miss_of_gold_docids_is_refused(tmp_path, field):
    from tasks.byo import load_questions

    path = _jsonl(tmp_path / "q.jsonl", [{"question": "q", "answers": ["x"], "gold_docids": ["p1"]},
                                         {"question": "r", "answers": ["y"], field: ["p2"]}])
    with pytest.raises(DataError) as exc:
        load_questions(path)
    assert str(exc.value) == (f"{path}:2: unknown field {field!r} (did you mean 'gold_docids'?); the fields read: "
                              "qid/id/qId/_id (the id: the first not null), question, answers, gold_docids")


def test_a_near_miss_beside_gold_docids_and_other_fields_are_ignored(tmp_path):
    from tasks.byo import load_questions

    rows = load_questions(_jsonl(tmp_path / "q.jsonl", [
        {"question": "q", "answers": ["x"], "gold_docids": ["p1"], "gold_docid": "p1", "title": "T", "ctxs": []}]))
    assert [(r["qid"], r["gold_docids"]) for r in rows] == [("q0", ["p1"])]


def test_an_id_in_another_field_is_not_read_and_warned_once(tmp_path, caplog):
    import tasks.byo as byo

    # s55 f5: 'qid' is now read as the id (as tokrag retrieve --topics reads it); 'query_id' is still not read
    path = _jsonl(tmp_path / "q.jsonl", [{"query_id": "a1", "question": "q", "answers": ["x"]},
                                         {"query_id": "a2", "question": "r", "answers": ["y"]}])
    byo._WARNED.discard((path, "query_id"))
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        first = byo.load_questions(path)
        again = byo.load_questions(path)  # the precheck and the task build both read the file
    assert [r["qid"] for r in first] == [r["qid"] for r in again] == ["q0", "q1"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "tasks.byo"]
    assert warnings == [f"{path}: questions without an id field (qid/id/qId/_id) have a 'query_id' field, which is "
                        "not read as the id, so they get the automatic ids q<index of the question, from 0> (the "
                        "first question is q0, whatever its line): rename the field to 'id' to keep yours"]


def test_an_id_field_beside_id_gives_no_warning(tmp_path, caplog):
    import tasks.byo as byo

    path = _jsonl(tmp_path / "q.jsonl", [{"id": "x1", "_id": "a1", "question": "q", "answers": ["x"]}])
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = byo.load_questions(path)
    assert [r["qid"] for r in rows] == ["x1"]
    assert not [r for r in caplog.records if r.name == "tasks.byo"]
