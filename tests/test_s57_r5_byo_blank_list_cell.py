"""A blank ``answers`` cell of a bring-your-own CSV/TSV file (s57 r5, review of b1's 2ee2746).

A cell of spaces only is no JSON list; ``_cell_lists`` offered ``"[""Paris"", ""City of Light""]"`` as the cell to
write without saying it is an example (for a cell ``Paris`` it offers ``"[""Paris""]"``, the cell itself as a list),
so the line read as if those were the answers to write. It now says "e.g.", as for a list that does not parse.
"""

from __future__ import annotations

import pytest

from retrieval.errors import DataError
from tasks.byo import load_questions


@pytest.mark.parametrize("name, text, write", [
    ("q.csv", 'id,question,answers\nq1,who,"   "\n',
     'e.g. "[""Paris"", ""City of Light""]" (as CSV quotes a cell with quotes)'),
    ("q.tsv", "id\tquestion\tanswers\nq1\twho\t   \n", 'e.g. ["Paris", "City of Light"]'),
])
def test_blank_cell_gets_an_example(tmp_path, name, text, write):
    (tmp_path / name).write_text(text)
    with pytest.raises(DataError) as exc:
        load_questions(str(tmp_path / name))
    kind = "CSV" if name.endswith(".csv") else "TSV"
    assert str(exc.value) == (f"{tmp_path / name} row 0: 'answers' is '   ', not a list: a {kind} cell holds text, so "
                              f"write the list as JSON in the cell, {write}, or give the questions as a JSONL file")
