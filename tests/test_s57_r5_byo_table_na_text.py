"""Bring-your-own CSV/TSV cells that pandas reads as missing (s57 r5, review of b1's 863e720).

863e720 reads a CSV/TSV questions file's id, question, answers and gold id cells "as written" (an id ``007`` stays
``"007"``), but pandas' default missing-value strings still applied: an id ``NA``, ``null``, ``None``, ``N/A`` or
``nan`` became None, so the question silently got the automatic id ``q<i>`` (another id than the file's), and a
question ``None`` was refused as "missing field 'question' ... it is null". Now only an empty cell is missing.
"""

from __future__ import annotations

import pytest

from retrieval.errors import DataError
from tasks.byo import load_questions

IDS = ["NA", "null", "None", "N/A", "nan", "007"]


@pytest.mark.parametrize("sep, name", [(",", "q.csv"), ("\t", "q.tsv")])
def test_na_like_ids_and_questions_are_read_as_written(tmp_path, sep, name):
    quote = (lambda s: '"' + s.replace('"', '""') + '"') if sep == "," else (lambda s: s)
    lines = [sep.join(["id", "question", "answers"])]
    lines += [sep.join([qid, f"question {i}" if qid != "None" else "None", quote(f'["a{i}"]')])
              for i, qid in enumerate(IDS)]
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    rows = load_questions(str(tmp_path / name))
    assert [r["qid"] for r in rows] == IDS
    assert [r["question"] for r in rows] == ["question 0", "question 1", "None", "question 3", "question 4",
                                             "question 5"]
    assert [r["answers"] for r in rows] == [[f"a{i}"] for i in range(len(IDS))]


def test_empty_cells_are_still_missing(tmp_path):
    (tmp_path / "q.csv").write_text('id,question,answers,gold_docids\n,who,"[""a""]",\n')
    rows = load_questions(str(tmp_path / "q.csv"))
    assert [(r["qid"], r["gold_docids"]) for r in rows] == [("q0", [])]
    (tmp_path / "r.csv").write_text('id,question,answers\nq1,,"[""a""]"\n')
    with pytest.raises(DataError, match=r"r\.csv row 0: missing field 'question'"):
        load_questions(str(tmp_path / "r.csv"))


def test_na_answers_cell_names_the_cell(tmp_path):
    (tmp_path / "q.csv").write_text("id,question,answers\nq1,who,N/A\n")
    with pytest.raises(DataError) as exc:
        load_questions(str(tmp_path / "q.csv"))
    assert str(exc.value) == (f"{tmp_path / 'q.csv'} row 0: 'answers' is 'N/A', not a list: a CSV cell holds text, so "
                              'write the list as JSON in the cell, "[""N/A""]" (as CSV quotes a cell with quotes), or '
                              "give the questions as a JSONL file")
