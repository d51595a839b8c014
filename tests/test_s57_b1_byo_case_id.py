"""A bring-your-own questions file whose id field is ``ID``, ``Id``, ``QID`` or `` id`` (a spreadsheet's or a CSV
file's header) (s57 b1): field names are read as written, so such a file got the automatic ids q0, q1, ... without a
word, where ``query_id`` and the other :data:`tasks.byo.ID_FIELDS` were warned of. Now the same WARNING names it."""

from __future__ import annotations

import json
import logging

import pytest

from tasks import byo
from tasks.byo import load_questions


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(byo, "_WARNED", set())  # the WARNING is once per process and file


def _write(path, field):
    path.write_text("".join(json.dumps({field: f"x{i}", "question": f"question {i}", "answers": ["a"]}) + "\n"
                            for i in range(3)))
    return str(path)


@pytest.mark.parametrize("field", ["ID", "Id", "QID", " id", "_ID"])
def test_id_field_in_other_case_is_warned(tmp_path, caplog, field):
    spec = _write(tmp_path / "q.jsonl", field)
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = load_questions(spec)
    assert [r["qid"] for r in rows] == ["q0", "q1", "q2"]  # still the automatic ids, as tokrag retrieve --topics reads it
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"{spec}: questions without an id field (qid/id/qId/_id) have a {field!r} field, which is not read "
                      "as the id, so they get the automatic ids q<index of the question, from 0> (the first question "
                      "is q0, whatever its line): rename the field to 'id' to keep yours"]


@pytest.mark.parametrize("field", ["id", "qid", "qId", "_id"])
def test_read_id_fields_are_not_warned(tmp_path, caplog, field):
    spec = _write(tmp_path / "q.jsonl", field)
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        assert [r["qid"] for r in load_questions(spec)] == ["x0", "x1", "x2"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_id_beside_a_case_variant_is_read_and_not_warned(tmp_path, caplog):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "ID": "b", "question": "q", "answers": ["x"]}) + "\n")
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        assert [r["qid"] for r in load_questions(str(tmp_path / "q.jsonl"))] == ["a"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
