"""Bring-your-own questions in CSV, TSV and Parquet (s57 b1).

A CSV or TSV cell holds text, never a list, so every question of such a file (in a folder, the form the docs name)
was refused ("'answers' must be a list of strings, got 'Paris'; write [\"Paris\"]"), and the fix shown gave a cell that
was text again. Such a file given as ``questions`` itself was read as JSON Lines ("malformed JSON" at line 1; a
Parquet file "invalid UTF-8"), and a missing ``q.csv`` was taken for a hub id. Now the list fields are JSON lists in
their cells, the files are read as a folder's are, and a missing data file is "no such file".
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError, DataError
from tasks.byo import is_hub_id, load_questions

CSV = ('id,question,answers,gold_docids\n'
       'q1,who wrote hamlet,"[""William Shakespeare"", ""Shakespeare""]","[""p1"", ""p2""]"\n'
       'q2,capital of france,"[""Paris""]",\n')
TSV = 'id\tquestion\tanswers\nq1\twho wrote hamlet\t["Shakespeare"]\n7\tcapital of france\t["Paris"]\n'


def _got(rows):
    return [(r["qid"], r["question"], r["answers"], r["gold_docids"]) for r in rows]


def test_csv_folder_reads_json_list_cells(tmp_path):
    (tmp_path / "myqa").mkdir()
    (tmp_path / "myqa" / "test.csv").write_text(CSV)
    rows = load_questions(str(tmp_path / "myqa"))
    assert _got(rows) == [("q1", "who wrote hamlet", ["William Shakespeare", "Shakespeare"], ["p1", "p2"]),
                          ("q2", "capital of france", ["Paris"], [])]
    assert [r["where"] for r in rows] == [f"{tmp_path / 'myqa' / 'test.csv'} row {i}" for i in (0, 1)]


def test_tsv_folder_reads_json_list_cells(tmp_path):
    (tmp_path / "myqa").mkdir()
    (tmp_path / "myqa" / "test.tsv").write_text(TSV)
    assert _got(load_questions(str(tmp_path / "myqa"))) == [("q1", "who wrote hamlet", ["Shakespeare"], []),
                                                            ("7", "capital of france", ["Paris"], [])]


@pytest.mark.parametrize("name, text, field, fix", [
    ("test.csv", "question,answers\ncapital of france,Paris\n", "answers",
     "'answers' is 'Paris', not a list: a CSV cell holds text, so write the list as JSON in the cell, "
     '"[""Paris""]" (as CSV quotes a cell with quotes), or give the questions as a JSONL file'),
    ("test.tsv", "question\tanswers\ncapital of france\tParis\n", "answers",
     "'answers' is 'Paris', not a list: a TSV cell holds text, so write the list as JSON in the cell, [\"Paris\"], "
     "or give the questions as a JSONL file"),
    ("test.csv", "question,answers\nwhen was it ratified,1788\n", "answers",
     "'answers' is '1788', not a list: a CSV cell holds text, so write the list as JSON in the cell, "
     '"[""1788""]" (as CSV quotes a cell with quotes), or give the questions as a JSONL file'),
    ("test.csv", 'question,answers,gold_docids\nq,"[""a""]",p7\n', "gold_docids",
     "'gold_docids' is 'p7', not a list: a CSV cell holds text, so write the list as JSON in the cell, "
     '"[""p7""]" (as CSV quotes a cell with quotes), or give the questions as a JSONL file'),
])
def test_text_cell_is_one_line_with_the_cell_to_write(tmp_path, name, text, field, fix):
    (tmp_path / "myqa").mkdir()
    (tmp_path / "myqa" / name).write_text(text)
    with pytest.raises(DataError) as exc:
        load_questions(str(tmp_path / "myqa"))
    assert str(exc.value) == f"{tmp_path / 'myqa' / name} row 0: {fix}"


@pytest.mark.parametrize("name, text", [("q.csv", CSV), ("q.tsv", TSV)])
def test_csv_or_tsv_file_given_as_questions_is_read_as_a_folder_file(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    rows = load_questions(str(tmp_path / name))
    assert _got(rows)[0][2] == (["William Shakespeare", "Shakespeare"] if name == "q.csv" else ["Shakespeare"])
    assert [r["qid"] for r in rows] == (["q1", "q2"] if name == "q.csv" else ["q1", "7"])
    assert rows[1]["where"] == f"{tmp_path / name} row 1"


def test_parquet_file_given_as_questions(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["a", "b"], "question": ["who", "what"], "answers": [["x"], ["y", "z"]]}),
                   tmp_path / "q.parquet")
    assert _got(load_questions(str(tmp_path / "q.parquet"))) == [("a", "who", ["x"], []), ("b", "what", ["y", "z"], [])]


@pytest.mark.parametrize("name", ["nope.csv", "nope.tsv", "nope.parquet", "nope.csv.gz", "nope.json.gz"])
def test_missing_data_file_is_no_such_file_not_a_hub_id(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    assert is_hub_id(name) is False
    with pytest.raises(ConfigError) as exc:
        load_questions(name)
    assert str(exc.value).startswith(f"questions {name!r}: no such file (relative to the working directory {tmp_path})")


def test_hub_ids_stay_hub_ids():
    assert is_hub_id("akariasai/PopQA") is True and is_hub_id("org/name.v2") is True
