"""CSV/TSV rows read one column off, and a JSON list cell that does not parse (s57 b1).

pandas (with the ``datasets`` csv builder's settings, :func:`tasks.sources._read_table`) reads a first row with one
more field than the header as a row index: ``q1,who,"[""a""]","[""b""]"`` under ``id,question,answers`` gave the id
``who``, the question ``["a"]`` and the answers ``["b"]``, and the index (``q1``) was dropped, without a word; a
PopQA-style TSV of a mirror was read so too. Now that is one line naming the file. A CSV cell that starts a JSON list
but does not parse (a quote lost) was told to be wrapped as one answer; now it is named as invalid JSON.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import DataError
from tasks.byo import load_questions
from tasks.sources import _read_table


@pytest.mark.parametrize("name, text, hint", [
    ("q.csv", 'id,question,answers\nq1,who,"[""a""]","[""b""]"\nq2,what,"[""c""]","[""d""]"\n',
     " (a comma in an unquoted field?)"),
    ("q.tsv", 'id\tquestion\tanswers\nq1\twho\t["a"]\t["b"]\n', " (a tab inside a field?)"),
])
def test_first_row_longer_than_the_header_is_refused(tmp_path, name, text, hint):
    (tmp_path / name).write_text(text)
    message = (f"{tmp_path / name}: its first row has more fields than its header (3: id, question, answers), so every "
               "column would be read one place off (the first field as no column, the second as 'id'); give the header "
               f"a name for each field, or remove the extra field{hint}")
    with pytest.raises(DataError) as exc:
        load_questions(str(tmp_path / name))
    assert str(exc.value) == message
    (tmp_path / "myqa").mkdir()
    (tmp_path / "myqa" / f"test{Path(name).suffix}").write_text(text)  # a folder's file, as a family's local copy
    with pytest.raises(DataError, match="its first row has more fields than its header"):
        load_questions(str(tmp_path / "myqa"))


def test_rows_as_long_as_the_header_unchanged(tmp_path):
    (tmp_path / "t.tsv").write_text("id\tquestion\tpossible_answers\n7\twho\t[\"a\"]\n8\twhat\t\n")
    assert _read_table(tmp_path / "t.tsv") == [{"id": 7, "question": "who", "possible_answers": '["a"]'},
                                               {"id": 8, "question": "what", "possible_answers": None}]


def test_cell_that_is_no_valid_json_list(tmp_path):
    (tmp_path / "q.csv").write_text('id,question,answers\nq1,who,"[""a"""\n')
    with pytest.raises(DataError) as exc:
        load_questions(str(tmp_path / "q.csv"))
    assert str(exc.value) == (f"{tmp_path / 'q.csv'} row 0: 'answers' is '[\"a\"', which is not valid JSON: a CSV cell "
                              'holds text, so write the list as JSON in the cell, e.g. "[""Paris"", ""City of Light""]" '
                              "(as CSV quotes a cell with quotes), or give the questions as a JSONL file")


def test_family_tsv_read_one_column_off_is_refused(tmp_path):
    """A PopQA-style TSV of a local copy (tasks.sources reads it for the popqa tasks): the old reader returned
    ``{'id': 'who', 'question': '["a"]', 'possible_answers': '["b"]'}`` for the row ``7 who ["a"] ["b"]``."""
    (tmp_path / "test.tsv").write_text('id\tquestion\tpossible_answers\n7\twho\t["a"]\t["b"]\n')
    with pytest.raises(DataError, match=r"test\.tsv: its first row has more fields than its header \(3: id, question, "
                                        r"possible_answers\)"):
        _read_table(tmp_path / "test.tsv")


def test_ids_and_questions_read_as_written(tmp_path):
    """pandas typed the id column: ``007`` became the id ``7`` (silently another id), and in a column with an empty
    cell ``7.0``, refused as a float id the file does not hold; ``1e3`` became 1000.0; a question ``3.50`` the float
    3.5. Bring-your-own CSV/TSV cells of the id, question, answers and gold id fields are now read as written."""
    (tmp_path / "q.csv").write_text('id,question,answers\n007,who,"[""a""]"\n,what,"[""b""]"\n1e3,3.50,"[""c""]"\n')
    rows = load_questions(str(tmp_path / "q.csv"))
    assert [(r["qid"], r["question"], r["answers"]) for r in rows] == [
        ("007", "who", ["a"]), ("q1", "what", ["b"]), ("1e3", "3.50", ["c"])]
    (tmp_path / "t.tsv").write_text('qid\tquestion\tanswers\n0042\twho\t["a"]\n')
    assert [r["qid"] for r in load_questions(str(tmp_path / "t.tsv"))] == ["0042"]


def test_family_tables_keep_pandas_types(tmp_path):
    """Only the bring-your-own reader asks for text columns; a family's TSV (PopQA) is typed as datasets types it."""
    (tmp_path / "t.tsv").write_text('id\tquestion\tpossible_answers\n007\twho\t["a"]\n')
    assert _read_table(tmp_path / "t.tsv")[0]["id"] == 7
    assert _read_table(tmp_path / "t.tsv", ("id", "nope"))[0]["id"] == "007"
