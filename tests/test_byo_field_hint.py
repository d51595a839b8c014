"""A bring-your-own questions line without ``answers`` (or ``question``) names the fields the line has and, for a
near name (``answer``, ``Answers``, ``questions``), the field it is taken for; it said only ``missing field
'answers'``, while the corpus reader lists a record's fields."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import DataError
from tasks.byo import load_questions

GOOD = {"id": "a", "question": "Where is Berlin?", "answers": ["Germany"]}


def _error(tmp_path, bad: dict) -> str:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [GOOD, dict(GOOD, id="b"), bad]), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_questions(str(path))
    assert "\n" not in str(exc.value)
    return str(exc.value).removeprefix(f"{path}:")


@pytest.mark.parametrize("bad,expected", [
    ({"id": "c", "question": "Where is Paris?", "answer": "France"},
     "3: missing field 'answers' (a list of gold answer strings, e.g. [\"Paris\"]); the line has ['answer', 'id', "
     "'question'] ('answer' is not read: did you mean 'answers'?)"),
    ({"id": "c", "question": "Where is Paris?", "Answers": ["France"]},
     "3: missing field 'answers' (a list of gold answer strings, e.g. [\"Paris\"]); the line has ['Answers', 'id', "
     "'question'] ('Answers' is not read: did you mean 'answers'?)"),
    ({"id": "c", "questions": "Where is Paris?", "answers": ["France"]},
     "3: missing field 'question' (each line needs \"question\" and \"answers\": [...]); the line has ['answers', 'id', "
     "'questions'] ('questions' is not read: did you mean 'question'?)"),
    ({"id": "c", "query": "Where is Paris?", "golds": ["France"]},  # nothing near: the fields only
     "3: missing field 'question' (each line needs \"question\" and \"answers\": [...]); the line has ['golds', 'id', "
     "'query']"),
    ({"id": "c", "question": "Where is Paris?", "answers": None},
     "3: missing field 'answers' (a list of gold answer strings, e.g. [\"Paris\"]): it is null"),
    ({}, "3: missing field 'question' (each line needs \"question\" and \"answers\": [...]); the line is an empty "
         "object {}"),
])
def test_a_missing_field_names_the_fields_the_line_has(tmp_path, bad, expected):
    assert _error(tmp_path, bad) == expected
