"""A JSON document nested deeper than Python's recursion limit (``[[[...]]]`` 100,000 deep) is one DataError line
naming the file (and line), not a RecursionError traceback (s59 f3, r4's leftover): the same readers as the
integer-limit line of 4186778 (tests/test_s59_r4_json_int_limit.py)."""

from __future__ import annotations

import json
import sys

import pytest

from retrieval.errors import DataError
from retrieval.io import loads_unique, read_jsonl
from tokrag_model.cli import main

DEEP = "[" * 100_000 + "]" * 100_000


def says() -> str:
    return f"holds JSON nested too deep for Python's JSON reader (past its recursion limit, {sys.getrecursionlimit()})"


def _q(tmp_path):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "x", "answers": ["y"]}) + "\n")


def test_read_jsonl_names_file_and_line(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"id": "a"}\n\n{"id": "b", "n": %s}\n' % DEEP)
    with pytest.raises(DataError) as err:
        list(read_jsonl(p))
    assert str(err.value) == f"{p}:3: {says()}; fix or remove the line"
    p.write_text('{"id": "b", "n": %s}\n' % ("[" * 50 + "]" * 50))  # a nesting the reader follows: as before
    assert list(read_jsonl(p))[0][1]["n"] == json.loads("[" * 50 + "]" * 50)


def test_loads_unique():
    with pytest.raises(DataError) as err:
        loads_unique(DEEP, "x.json")
    assert str(err.value) == f"x.json: {says()}; fix the nesting"


def test_retrieve_eval_of_a_ctxs_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _q(tmp_path)
    (tmp_path / "deep.jsonl").write_text('{"id": "q1", "question": "x", "ctxs": %s}\n' % DEEP)
    assert main(["retrieve", "eval", "--run", "deep.jsonl", "--topics", "q.jsonl"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: deep.jsonl:1: {says()}; fix or remove the line\n"


@pytest.mark.parametrize("name, text, where, fix", [
    ("c.jsonl", '{"id": "p1", "title": "t", "text": "y"}\n{"id": "p2", "title": "t", "text": "z", "n": %s}\n' % DEEP,
     "c.jsonl:2", "fix or remove the line"),
    ("wiki.json", '{\n "A": {"title": "A", "extract": "a", "n": %s}\n}\n' % DEEP, "wiki.json", "fix the nesting"),
])
def test_retrieve_over_a_corpus(tmp_path, monkeypatch, capsys, name, text, where, fix):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    _q(tmp_path)
    (tmp_path / name).write_text(text)
    assert main(["retrieve", "--corpus", name, "--bm25", "--topics", "q.jsonl", "--output", "o.trec"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: {where}: {says()}; {fix}\n"
    assert not (tmp_path / "o.trec").exists()


def test_the_wiki_summaries_reader(tmp_path):
    from retrieval.corpus import _passages_wiki

    wiki = tmp_path / "wiki.json"
    wiki.write_text('{"A": {"title": "A", "extract": %s}}' % DEEP)
    with pytest.raises(DataError) as err:
        list(_passages_wiki(wiki))
    assert str(err.value) == f"{wiki}: {says()}; fix the nesting"


def test_the_nq_oracle_reader(tmp_path):
    from tasks.data import _oracle_rows

    oracle = tmp_path / "oracle.jsonl"
    oracle.write_text(json.dumps({"question": "q", "answers": ["a"], "ctxs": [{"title": "t", "text": "x"}]}) + "\n"
                      + '{"question": "q2", "answers": ["a"], "ctxs": [{"title": "t", "text": "x", "n": %s}]}\n' % DEEP)
    with pytest.raises(DataError) as err:
        _oracle_rows(oracle, {})
    assert str(err.value) == f"{oracle}:2: {says()}; fix or remove the line"


def test_a_local_json_array(tmp_path):
    from tasks.sources import _read_local

    rows = tmp_path / "rows.json"
    rows.write_text('[{"question": "q", "answer": %s}]' % DEEP)
    with pytest.raises(DataError) as err:
        _read_local([rows])
    assert str(err.value) == f"{rows}: {says()}; fix the nesting"


def test_popqa_possible_answers():
    from tasks.sources import popqa_row

    with pytest.raises(DataError) as err:
        popqa_row({"id": 1, "question": "q", "possible_answers": DEEP}, "popqa.parquet row 0")
    assert str(err.value) == f"popqa.parquet row 0: 'possible_answers': {says()}; fix the nesting"


def test_webquestions(tmp_path):
    from tasks.data import WEBQ_FILE, load_webq

    path = tmp_path / WEBQ_FILE.format(split="test")
    path.parent.mkdir(parents=True)
    path.write_text('[{"qId": "w1", "qText": "q", "answers": [%s]}]' % DEEP)
    with pytest.raises(DataError) as err:
        load_webq(tmp_path, "test")
    assert str(err.value) == f"{path}: {says()}; fix the nesting"
