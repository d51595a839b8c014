"""A metric lm-eval averages over some of the questions shows its own denominator (s51 a2 M3).

gold@k is averaged by lm-eval over the questions whose gold passage is known: 17 of 21 printed ``0.810`` in a row
labelled n = 30 (v1's nq_open_bm25), next to answer recall@k over all 30, and the units line called it a "fraction of
questions". It reads ``0.810 (n=21)`` now, with a note, in the JSON (``n``) and in a CSV column ``gold_at_k_n``.
"""

from __future__ import annotations

import pytest

from leaderboards.page import render_html
from leaderboards.report import compute, render_csv, render_markdown
from s51_f4_synthetic import synthetic

GOLD = [1.0] * 17 + [0.0] * 4 + [None] * 9  # 17 of the 21 questions with a known gold passage; 30 questions


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    spec, loaded = synthetic(tmp_path_factory.mktemp("sub"), {"standard": {"em": [1.0] * 5 + [0.0] * 25, "gold_at_k": GOLD},
                                                             "none": {"em": [0.0] * 29 + [1.0], "gold_at_k": GOLD}})
    return compute(spec, loaded, timings=False)


def test_the_value_shows_its_own_n(data):
    row = next(r for r in data["rows"] if r["method"] == "standard")
    assert row["n"] == 30 and row["metrics"]["gold_at_k"] == {"mean": pytest.approx(17 / 21), "lo": None, "hi": None, "n": 21}
    md = render_markdown(data)
    # was "| 0.810 |"; EM's lower bound 0.049 -> 0.033 since s52 f5 (resamples seeded by the metric and the values)
    assert "| standard | toy_qa | - | 30 | 0.167 [0.033, 0.300] | 0.810 (n=21) |" in md
    note = ("(n=N) after a value of gold@k: lm-eval's mean over the N questions that carry the metric (gold@k: those "
            "whose gold passage is known), not over the row's n; no CI")
    assert f"- {note}" in md
    assert ("gold@k = fraction of the questions with a known gold passage that have it in the task's top k retrieved "
            "passages (the same for every method of a task, including methods shown no passages; its own n where only "
            "some questions have one)") in md
    assert "0.810 (n=21)" in render_html(data, [])


def test_the_csv_has_its_n_column(data):
    head, *lines = render_csv(data).splitlines()
    cols = head.split(",")
    assert cols[cols.index("gold_at_k"):cols.index("gold_at_k") + 4] == ["gold_at_k", "gold_at_k_ci_low", "gold_at_k_ci_high",
                                                                        "gold_at_k_n"]
    row = dict(zip(cols, lines[0].split(",")))
    assert (row["n"], row["gold_at_k"], row["gold_at_k_n"]) == ("30", "0.809524", "21")


def test_a_metric_every_question_carries_is_unchanged(tmp_path):
    gold = [1.0] * 17 + [0.0] * 13
    spec, loaded = synthetic(tmp_path, {"standard": {"em": [1.0] * 5 + [0.0] * 25, "gold_at_k": gold},
                                        "none": {"em": [0.0] * 29 + [1.0], "gold_at_k": gold}})
    data = compute(spec, loaded, timings=False)
    md = render_markdown(data)
    assert "(n=" not in md and "gold_at_k_n" not in render_csv(data)
    assert "| standard | toy_qa | - | 30 | 0.167 [0.033, 0.300] | 0.567 [" in md  # EM's 0.049 -> 0.033 since s52 f5
