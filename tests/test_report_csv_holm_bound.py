"""The CSV wrote ``..._p_holm`` with no bound flag, so a Holm value that is only an upper bound (the Markdown's
``holm≤``: a Monte Carlo p at its floor raised it) read as exact in the CSV (found by a review). Each ``_p_holm``
column is now followed by ``_p_holm_bound`` (true/false; empty where the pair has no test)."""

from __future__ import annotations

import csv
import io

from leaderboards.report import render_csv

FLOOR = 2 / 2001


def _data(rows):
    return {"metrics": ["em"], "multi_model": False, "references": ["standard"], "closed_book": False,
            "trace_columns": [], "timings": False, "specific_settings": {}, "rows": rows}


def _row(method, paired):
    return {"method": method, "task": "t", "n": 100, "metrics": {"em": {"mean": 0.5, "lo": 0.4, "hi": 0.6}},
            "paired": paired, "cost": {}}


def test_each_p_holm_column_has_its_bound_column():
    exact = {"diff": 0.1, "lo": 0.0, "hi": 0.2, "p": 0.01, "p_holm": 0.02}
    bound = {"diff": 0.2, "lo": 0.1, "hi": 0.3, "p": FLOOR, "p_holm": 2 * FLOOR, "p_holm_bound": True}
    text = render_csv(_data([_row("standard", None), _row("a", {"standard": {"em": exact}}),
                             _row("b", {"standard": {"em": bound}})]))
    table = list(csv.reader(io.StringIO(text)))
    head = table[0]
    i = head.index("delta_em_vs_standard_p_holm")
    assert head[i + 1] == "delta_em_vs_standard_p_holm_bound" and len(head) == len(set(head))
    assert all(len(r) == len(head) for r in table)
    got = {r[0]: (r[i], r[i + 1]) for r in table[1:]}
    assert got == {"standard": ("", ""), "a": ("0.020000", "false"), "b": ("0.001999", "true")}
