"""A JSON document holding an integer of more digits than Python converts (4300 by default) is one DataError line
naming the file (and line), not a traceback (s59 r4, r1's leftover).

The JSON is valid, but CPython's reader raises a plain ``ValueError`` ("Exceeds the limit (4300 digits) for integer
string conversion ...", naming no file), which the readers did not catch: ``tokrag retrieve eval --run run.jsonl``
and ``tokrag retrieve --corpus c.jsonl`` ended in a traceback, as did the whole-file JSON readers (a Wikipedia
summaries corpus, WebQuestions, a bring-your-own ``.json`` array) and the NQ-oracle JSONL reader.
"""

from __future__ import annotations

import json
import sys

import pytest

from retrieval.errors import DataError
from retrieval.io import read_jsonl
from tokrag_model.cli import main

BIG = "1" + "0" * 5000  # 5001 digits
LIMIT = 4300  # Python's default (PYTHONINTMAXSTRDIGITS may set another: the fixture sets this one)
SAYS = f"holds an integer of more than {LIMIT} digits, more than Python's JSON reader converts"


@pytest.fixture(autouse=True)
def _default_limit():
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(LIMIT)
    yield
    sys.set_int_max_str_digits(before)


def _q(tmp_path):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "x", "answers": ["y"]}) + "\n")


def test_read_jsonl_names_file_and_line(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"id": "a", "n": 7}\n\n{"id": "b", "n": %s}\n' % BIG)
    with pytest.raises(DataError) as err:
        list(read_jsonl(p))
    assert str(err.value) == f"{p}:3: {SAYS}; fix or remove the line"
    # a long integer under the limit reads as before
    p.write_text('{"id": "b", "n": %s}\n' % ("9" * LIMIT))
    assert list(read_jsonl(p)) == [(1, {"id": "b", "n": int("9" * LIMIT)})]


def test_retrieve_eval_of_a_ctxs_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _q(tmp_path)
    (tmp_path / "run.jsonl").write_text(
        '{"id": "q1", "question": "x", "ctxs": [{"id": "p1", "title": "t", "text": "y", "rank": %s}]}\n' % BIG)
    assert main(["retrieve", "eval", "--run", "run.jsonl", "--topics", "q.jsonl"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: run.jsonl:1: {SAYS}; fix or remove the line\n"


@pytest.mark.parametrize("name, text, where, fix", [
    ("c.jsonl", '{"id": "p1", "title": "t", "text": "y"}\n{"id": "p2", "title": "t", "text": "z", "n": %s}\n' % BIG,
     "c.jsonl:2", "fix or remove the line"),
    ("wiki.json", '{\n "A": {"title": "A", "extract": "a", "n": %s}\n}\n' % BIG, "wiki.json", "fix the number"),
])
def test_retrieve_over_a_corpus(tmp_path, monkeypatch, capsys, name, text, where, fix):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    _q(tmp_path)
    (tmp_path / name).write_text(text)
    assert main(["retrieve", "--corpus", name, "--bm25", "--topics", "q.jsonl", "--output", "o.trec"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: {where}: {SAYS}; {fix}\n"
    assert not (tmp_path / "o.trec").exists()


def test_the_nq_oracle_reader(tmp_path):
    from tasks.data import _oracle_rows

    oracle = tmp_path / "oracle.jsonl"
    oracle.write_text(json.dumps({"question": "q", "answers": ["a"], "ctxs": [{"title": "t", "text": "x"}]}) + "\n"
                      + '{"question": "q2", "answers": ["a"], "ctxs": [{"title": "t", "text": "x", "n": %s}]}\n' % BIG)
    with pytest.raises(DataError) as err:
        _oracle_rows(oracle, {})
    assert str(err.value) == f"{oracle}:2: {SAYS}; fix or remove the line"


def test_a_local_json_array(tmp_path):
    from tasks.sources import _read_local

    rows = tmp_path / "rows.json"
    rows.write_text('[{"question": "q", "answer": %s}]' % BIG)
    with pytest.raises(DataError) as err:
        _read_local([rows])
    assert str(err.value) == f"{rows}: {SAYS}; fix the number"


def test_popqa_possible_answers():
    from tasks.sources import popqa_row

    with pytest.raises(DataError) as err:
        popqa_row({"id": 1, "question": "q", "possible_answers": "[%s]" % BIG}, "popqa.parquet row 0")
    assert str(err.value) == f"popqa.parquet row 0: 'possible_answers': {SAYS}; fix the number"


def test_webquestions(tmp_path):
    from tasks.data import WEBQ_FILE, load_webq

    path = tmp_path / WEBQ_FILE.format(split="test")
    path.parent.mkdir(parents=True)
    path.write_text('[{"qId": "w1", "qText": "q", "answers": [%s]}]' % BIG)
    with pytest.raises(DataError) as err:
        load_webq(tmp_path, "test")
    assert str(err.value) == f"{path}: {SAYS}; fix the number"
