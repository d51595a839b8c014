"""A CSV/TSV questions file whose header names a column twice is refused (s57 rt1, read-through of h1's JSON
duplicate-key refusal beside b1's CSV/TSV bring-your-own readers): pandas reads the second column as ``answers.1``,
so ``id,question,answers,answers`` kept the first answers cell only, silently, where the same row in JSON Lines is
refused by h1's rule."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from retrieval.errors import DataError
from tasks.byo import load_questions


def _write(path: Path, text: str) -> Path:
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, text, column, cols", [
    ("q.csv", 'id,question,answers,answers\nq1,who is it,"[""a""]","[""b""]"\n', "answers", "3 and 4"),
    ("q.tsv", 'id\tquestion\tanswers\tquestion\nq1\twho\t["a"]\twhat\n', "question", "2 and 4"),
    ("q.csv.gz", 'id,id,question,answers\nq1,q2,who,"[""a""]"\n', "id", "1 and 2"),
])
def test_a_header_naming_a_column_twice_is_one_line(tmp_path, name, text, column, cols):
    f = _write(tmp_path / name, text)
    with pytest.raises(DataError) as e:
        load_questions(str(f))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}: column {column!r} is given twice in its header (columns {cols}; ")
    assert msg.endswith("keep the one you mean and remove the other")


def test_a_folders_test_csv_is_refused_too(tmp_path):
    _write(tmp_path / "test.csv", 'id,question,answers,answers\nq1,who is it,"[""a""]","[""b""]"\n')
    with pytest.raises(DataError, match=r"test\.csv: column 'answers' is given twice in its header \(columns 3 and 4"):
        load_questions(str(tmp_path))


def test_a_column_named_like_a_renamed_one_reads_as_before(tmp_path):
    # 'answers.1' written as such is no second 'answers': the header is read again and has no name twice
    f = _write(tmp_path / "q.csv", 'id,question,answers,answers.1\nq1,who,"[""a"", ""b""]",x\nq2,what,"[""c""]",y\n')
    rows = load_questions(str(f))
    assert [(r["qid"], r["question"], r["answers"]) for r in rows] == [("q1", "who", ["a", "b"]), ("q2", "what", ["c"])]
