"""The report's budget column and the CSV's p columns (s55 f2).

A. ``budget_hit`` (leaderboards/traces.py, f4 f139acb) was headed by its raw key in the Markdown and HTML diagnostics
   table, between ``noise flips (right on clean, wrong here)`` and ``empty answer`` / ``overlong answer``; it is now
   headed ``stopped at budget`` there (and in the note under the table), while the CSV column and the JSON key stay
   ``budget_hit``, as every trace column's machine key does (the method-specific columns keep their keys everywhere).
B. A p that underflowed to 0.0 (more than 1074 discordant questions all one way) was written ``<1e-300`` in the CSV,
   which turned the whole p column into text for pandas or a spreadsheet; it is now the number ``1e-300``, an upper
   bound, and the column reads as float64.

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs.
"""

from __future__ import annotations

import csv
import io
import json

import pandas as pd

from leaderboards.page import render_html
from leaderboards.report import compute, render_csv, render_markdown, tables
from tests.s51_f4_synthetic import synthetic

STD = [1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0]
NONE = [0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]


def _with_stop_reasons(loaded, reasons: dict[str, list[str]]):
    """Give each sample of method m a trace whose stop_reason is reasons[m][doc_id] (as a run folder logs it)."""
    for _cid, (cell, _key, data) in loaded.items():
        for s in data["samples"]["toy_qa"]:
            why = reasons[cell.method.name][s["doc_id"]]
            s["arguments"] = [["q", {"until": ["\n"], "max_gen_toks": 16},
                               {"tokrag_trace": {"method": cell.method.name, "passages": ["a"], "stop_reason": why}}]]
    return loaded


def test_budget_hit_is_headed_in_words_in_the_tables_and_keyed_in_the_csv_and_json(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"em": STD}, "none": {"em": NONE}})
    loaded = _with_stop_reasons(loaded, {"standard": ["budget"] * 3 + ["stop"] * 9, "none": ["eos"] * 12})
    data = compute(spec, loaded, timings=False)
    assert data["trace_columns"] == ["budget_hit"]
    (diag,) = [t for t in tables(data) if t[0] == "diagnostics"]
    _anchor, _title, head, body, under = diag
    assert "budget_hit" not in head  # was the raw key, between the noise flips and the hygiene columns
    i = head.index("stopped at budget")
    assert head[i - 1] == "noise flips (right on clean, wrong here)"
    assert {row[0]: row[i] for row in body} == {"standard": "0.250", "none": "0.000"}
    assert any(x.startswith("stopped at budget: share of questions whose generation stopped at the max_gen_toks "
                            "budget") for x in under)
    md = render_markdown(data)
    assert "| stopped at budget |" in md and "budget_hit" not in md
    html = render_html(data, [])
    assert ">stopped at budget<" in html and "budget_hit" not in html
    # the machine outputs keep the key, as for every trace column
    rows = {r["method"]: r for r in csv.DictReader(io.StringIO(render_csv(data)))}
    assert (rows["standard"]["budget_hit"], rows["none"]["budget_hit"]) == ("0.250000", "0.000000")
    j = json.loads(json.dumps(data))  # leaderboard.json is the data itself (atomic_write_json)
    assert {r["method"]: r["trace"]["budget_hit"] for r in j["rows"]} == {"standard": {"mean": 0.25, "n": 12},
                                                                           "none": {"mean": 0.0, "n": 12}}


def test_a_p_that_underflowed_keeps_the_csv_column_numeric(tmp_path):
    n = 1100  # 1100 discordant questions, all one way: exact binomial p = 2 / 2^1100, below the smallest double
    data = compute(*synthetic(tmp_path, {"standard": {"em": [1] * n}, "none": {"em": [0] * n},
                                         "other": {"em": [1] * (n - 100) + [0] * 100}}), timings=False)
    rows = {r["method"]: r for r in data["rows"]}
    assert rows["none"]["paired"]["standard"]["em"]["p"] == 0.0  # the underflow this is about
    text = render_csv(data)
    assert "<1e-300" not in text
    line = {r["method"]: r for r in csv.DictReader(io.StringIO(text))}
    assert (line["none"]["delta_em_vs_standard_p"], line["none"]["delta_em_vs_standard_p_holm"]) == ("1e-300", "1e-300")
    frame = pd.read_csv(io.StringIO(text))
    for col in ("delta_em_vs_standard_p", "delta_em_vs_standard_p_holm"):
        assert str(frame[col].dtype) == "float64", col  # was object: '<1e-300' beside the other rows' floats
    by = frame.set_index("method")
    assert by.loc["none", "delta_em_vs_standard_p"] == 1e-300
    assert 0 < by.loc["none", "delta_em_vs_standard_p"] < by.loc["other", "delta_em_vs_standard_p"] < 0.001
    # the human tables keep p<0.001
    assert "p<0.001" in render_markdown(data) and "1e-300" not in render_markdown(data)
