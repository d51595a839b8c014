"""Rows of the paper's task families read from a mirror or a local copy (``hub_id``; tasks.sources) that were
scored otherwise than their data says (s57 b1).

* A TriviaQA row whose ``answer.aliases`` is one string (``"Paris"``) gave the answers P, a, r, i, s.
* An answer that is not text (``1969`` in PopQA's ``possible_answers``, ``true`` in a KILT output) was dropped
  without a word, so the question was scored against fewer answers.
* A blank question (``""``, ``"  "``) was asked of the model; a list ``["who"]`` became the text ``['who']``.
Each is now one line naming the file's row. Null or blank answers (a KILT output without one) are skipped as before.
"""

from __future__ import annotations

import json

import pytest

from retrieval.errors import DataError
from tasks.sources import kilt_gen_row, kilt_slot_row, load_family, popqa_row, squad_row, triviaqa_row


def _trivia(**answer):
    return {"question_id": "t1", "question": "What is the capital of France?", "answer": answer}


@pytest.mark.parametrize("convert, row, message", [
    (triviaqa_row, _trivia(value="Paris", aliases="Paris"),
     "'answer.aliases' must be a list of answers, got 'Paris'; write [\"Paris\"]"),
    (triviaqa_row, _trivia(value="Paris", aliases=["Paris", 1788]),
     "'answer' value or alias 1788 is not text; write it as text, \"1788\""),
    (popqa_row, {"id": 7, "question": "q", "possible_answers": '["1969 film", 1969]'},
     "'possible_answers' entry 1969 is not text; write it as text, \"1969\""),
    (squad_row, {"id": "s", "question": "q", "answers": {"text": ["x", 2.5]}},
     "'answers.text' entry 2.5 is not text; write it as text, \"2.5\""),
    (kilt_gen_row, {"id": "k", "input": "q", "output": [{"answer": "x"}, {"answer": True}]},
     "'output' answer True is not text"),
    (triviaqa_row, {"question_id": "t1", "question": "  ", "answer": {"value": "Paris"}},
     "'question' is empty; every row needs a question"),
    (popqa_row, {"id": 7, "question": "", "possible_answers": '["a"]'}, "'question' is empty; every row needs a question"),
    (squad_row, {"id": "s", "question": ["who"], "answers": {"text": ["x"]}}, "'question' must be text, got ['who']"),
    (kilt_slot_row, {"id": "k", "input": " ", "output": [{"answer": "x"}]}, "'input' is empty; every row needs a question"),
])
def test_bad_rows_are_one_line(convert, row, message):
    with pytest.raises(DataError) as exc:
        convert(row, "mirror/test.jsonl row 3")
    assert str(exc.value) == f"mirror/test.jsonl row 3: {message}"


def test_good_rows_unchanged():
    assert triviaqa_row(_trivia(value="Paris", aliases=["Paris", "City of Light", ""]), "w") == {
        "qid": "t1", "question": "What is the capital of France?", "answers": ["Paris", "City of Light"]}
    assert triviaqa_row(_trivia(value="Paris", aliases=None), "w")["answers"] == ["Paris"]
    assert popqa_row({"id": 7, "question": "Who?", "possible_answers": '["a", "", null, "a"]'}, "w") == {
        "qid": "popqa-7", "question": "Who?", "answers": ["a"]}
    assert kilt_gen_row({"id": "k", "input": " Why? ", "output": [{"answer": "b"}, {"provenance": []}]}, "w") == {
        "qid": "k", "question": "Why?", "answers": ["b"]}
    assert squad_row({"id": "s", "question": 1999, "answers": {"text": ["x"]}}, "w")["question"] == "1999"


def test_local_copy_of_triviaqa_with_string_aliases(tmp_path):
    """Through the family loader: a hand-written TriviaQA copy (config folder, as the hub lays it out)."""
    folder = tmp_path / "trivia_qa" / "unfiltered.nocontext"
    folder.mkdir(parents=True)
    rows = [_trivia(value="Paris", aliases=["Paris"]), {**_trivia(value="Rome", aliases="Rome"), "question_id": "t2"}]
    (folder / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as exc:
        load_family("triviaqa", data_dir=tmp_path)
    assert str(exc.value).endswith(" row 1: 'answer.aliases' must be a list of answers, got 'Rome'; write [\"Rome\"]")
