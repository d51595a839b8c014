"""The Markdown report says why a row over several questions shows a mean without a CI (s59 rt, read-through of
s1's bca3cec).

s1 made a row whose questions all score one value (F1 0.5 on each of 10 questions) print ``0.500`` without the
bootstrap's zero-width ``[0.500, 0.500]``; the results table's notes explained a mean without a CI only "over n = 1
question", so the row read as a CI left out by mistake beside the other rows' intervals. The notes now name that
case too; a report without such a row keeps its notes.

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs.
"""

from __future__ import annotations

from leaderboards.report import compute, render_markdown
from tests.s51_f4_synthetic import synthetic

N = 10
NOTE = ("a mean without a CI over n > 1 questions: every question scores that value, so there is no spread to "
        "estimate (the bootstrap's zero-width [v, v] is not shown)")


def test_a_constant_row_is_explained_in_the_notes(tmp_path):
    data = compute(*synthetic(tmp_path, {"standard": {"em": [1, 0] * 5, "f1": [0.5] * N},
                                         "none": {"em": [0, 1] * 5, "f1": [0.0, 1.0] * 5}}), timings=False)
    f1 = next(r for r in data["rows"] if r["method"] == "standard")["metrics"]["f1"]
    assert (f1["mean"], f1["n"], f1["lo"], f1["hi"]) == (0.5, N, None, None)
    md = render_markdown(data)
    assert "| standard | toy_qa | - | 10 | 0.500 [0.200, 0.800] | 0.500 |" in md
    assert md.count(NOTE) == 1  # was absent: the bare 0.500 unexplained
    assert "over n = 1 question" not in md


def test_rows_with_intervals_keep_their_notes(tmp_path):
    data = compute(*synthetic(tmp_path, {"standard": {"em": [1, 0] * 5, "f1": [0.5, 1.0] * 5},
                                         "none": {"em": [0, 1] * 5, "f1": [0.0, 1.0] * 5}}), timings=False)
    assert all(m["lo"] is not None for r in data["rows"] for m in r["metrics"].values())
    assert "a mean without a CI" not in render_markdown(data)
