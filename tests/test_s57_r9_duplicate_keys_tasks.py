"""The task data readers outside ``retrieval.io.read_jsonl`` refuse a JSON key given twice in one object, as h1's
e70b0c4 made ``read_jsonl`` refuse it (s57 r9, h1's "noticed and left" 1): the NQ oracle reader (``oracle_file`` can
be a user's file), the WebQuestions JSON reader and a local copy's ``.json`` file (``tasks.sources._read_local``) kept
the key's last value, silently (a question read as another one). The refusal is one line naming ``file:line`` (a whole-
file JSON: the line where the object opens, :func:`retrieval.io.duplicate_key_line`) and the key; the same text inside
a string value is data, and the shipped files still read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from retrieval.errors import DataError

ORACLE_ROW = {"question": "who wrote hamlet", "answers": ["Shakespeare"],
              "ctxs": [{"title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."}]}
def _empty_data(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)  # a data folder without nq_open/: the oracle file alone
    return tmp_path / "data"


TAIL = "(a JSON reader keeps only the last value, silently); keep the one you mean and remove the other"


def test_nq_oracle_file_with_a_question_given_twice_is_one_line(tmp_path):
    from tasks.data import load_nq_oracle

    f = tmp_path / "my oracle.jsonl"  # a user's oracle_file, a space in its name
    bad = '{"question": "who wrote hamlet", "answers": ["Shakespeare"], "question": "who wrote macbeth", ' \
          '"ctxs": [{"title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."}]}'
    f.write_text(json.dumps(ORACLE_ROW) + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_nq_oracle(_empty_data(tmp_path), oracle_file=f)
    assert str(exc.value) == f"{f}:2: key 'question' is given twice in one JSON object {TAIL}"


def test_nq_oracle_file_with_a_passage_title_given_twice_is_one_line(tmp_path):
    from tasks.data import load_nq_oracle

    f = tmp_path / "oracle.jsonl.gz"
    bad = '{"question": "q", "answers": ["a"], "ctxs": [{"title": "A", "text": "a b", "title": "B"}]}'
    f.write_bytes(gzip.compress((bad + "\n").encode()))
    with pytest.raises(DataError) as exc:
        load_nq_oracle(_empty_data(tmp_path), oracle_file=f)
    assert str(exc.value) == f"{f}:1: key 'title' is given twice in one JSON object {TAIL}"


def test_nq_oracle_file_with_key_text_inside_a_value_reads(tmp_path):
    from tasks.data import load_nq_oracle

    row = dict(ORACLE_ROW, question='what does {"question": 1, "question": 2} keep')
    f = tmp_path / "oracle.jsonl"
    f.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (r,) = load_nq_oracle(_empty_data(tmp_path), oracle_file=f)
    assert r["qid"] == "nq-oracle-0000" and r["question"] == 'what does {"question": 1, "question": 2} keep' and r["answers"] == ["Shakespeare"]
    assert r["gold"] == {"title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."}


def _webq(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "data" / "webquestions" / "test.json"
    f.parent.mkdir(parents=True)
    f.write_text(text, encoding="utf-8")
    return f


def test_webquestions_item_with_qtext_given_twice_is_one_line_naming_its_line(tmp_path):
    from tasks.data import load_webq

    f = _webq(tmp_path, '[\n  {"qId": "wqr0", "qText": "what is a?", "answers": ["A"]},\n'
                        '  {"qId": "wqr1",\n   "qText": "what is b?", "answers": ["B"], "qText": "what is c?"}\n]\n')
    with pytest.raises(DataError) as exc:
        load_webq(tmp_path / "data", "test")
    assert str(exc.value) == f"{f}:3: key 'qText' is given twice in one JSON object {TAIL}"


def test_webquestions_without_repeated_keys_reads_as_before(tmp_path):
    from tasks.data import load_webq

    _webq(tmp_path, json.dumps([{"qId": "wqr0", "qText": 'say "qText": "x", "qText": "y"', "answers": ["A"]}]))
    assert load_webq(tmp_path / "data", "test") == [
        {"qid": "wqr0", "question": 'say "qText": "x", "qText": "y"', "answers": ["A"]}]


def test_local_copy_json_row_with_a_key_given_twice_is_one_line(tmp_path):
    from tasks.sources import _read_local

    f = tmp_path / "copy" / "test.json"
    f.parent.mkdir()
    f.write_text('[{"question": "q0", "answer": ["a0"]},\n{"question": "q1", "answer": ["a1"], "answer": ["b1"]}]',
                 encoding="utf-8")
    with pytest.raises(DataError) as exc:
        _read_local([f])
    assert str(exc.value) == f"{f}:2: key 'answer' is given twice in one JSON object {TAIL}"
    f.write_text('[{"question": "q0", "answer": ["a0"]},\n{"question": "q1", "answer": ["a1"]}]', encoding="utf-8")
    assert _read_local([f]) == [{"question": "q0", "answer": ["a0"]}, {"question": "q1", "answer": ["a1"]}]


def test_a_byte_order_mark_is_still_refused_as_json_refused_it(tmp_path):
    from tasks.data import load_webq

    f = _webq(tmp_path, "\ufeff[]")
    with pytest.raises(DataError) as exc:
        load_webq(tmp_path / "data", "test")
    assert str(exc.value).startswith(f"{f}: not a JSON array of {{qId, qText, answers}} (Unexpected UTF-8 BOM")


def test_duplicate_key_line_names_the_innermost_object():
    from retrieval.io import duplicate_key_line

    assert duplicate_key_line('[\n {"a": 1},\n {"b": {"x": 1,\n  "x": 2}}\n]') == 3
    assert duplicate_key_line('{"a": 1, "b": "\\"a\\": 2"}') is None
    assert duplicate_key_line('{"a": ') is None


SHARED = Path("/work/shared/data")


@pytest.mark.skipif(not (SHARED / "webquestions" / "test.json").is_file(), reason="no shared data folder")
def test_shared_webquestions_and_oracle_files_still_read():
    from tasks.data import _oracle_rows, load_webq

    assert len(load_webq(SHARED, "test")) == 2032
    assert len(load_webq(SHARED, "devtest")) > 0
    assert len(_oracle_rows(SHARED / "nq_open_oracle" / "nq-open-oracle.jsonl.gz", {})) == 2655
