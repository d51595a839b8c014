"""Tok-RAG's ``rag_token_share`` counts every token labelled with the RAG branch, agreed (``R=``) and bypassed
(``Rb``) ones too, where the test never ran (tokrag_method.md §3.3): read alone, 0.9 looked like "the rule picked
RAG 90% of the time" when the rule picked it on 0 of 1 tested tokens. ``rag_win_rate`` is the test's own decisions,
``R`` / (``R`` + ``L``), pooled over the cell's tested tokens (a mean of per-question rates read 0.340 where 11 of
22 tested tokens went to RAG, 0.500)."""

from __future__ import annotations

import pytest

from leaderboards.traces import TRACE_COLUMNS, trace_columns


def _sample(branches: list[str]) -> dict:
    tokens = [[b, 0.5, 0.4, 19, " x"] for b in branches]
    return {"arguments": {"gen_args_0": {"arg_0": "q", "arg_1": {"until": ["\n"], "max_gen_toks": 8},
                                         "arg_2": {"tokrag_trace": {"tokens": tokens}}}}}


def test_win_rate_counts_only_tested_tokens():
    # question 1: 9 agreed tokens and one tested token won by the pure branch (the reviewer's trace)
    # question 2: R, L, L tested, Rb bypassed, R= agreed -> share 3/5, win rate 1/3
    # question 3: agreed tokens only -> no tested token, no win rate
    samples = [_sample(["R="] * 9 + ["L"]), _sample(["R", "L", "L", "Rb", "R="]), _sample(["R=", "R="])]
    cols = trace_columns(samples)
    assert cols["rag_token_share"]["n"] == 3
    assert cols["rag_token_share"]["mean"] == pytest.approx((0.9 + 0.6 + 1.0) / 3)
    # pooled over the cell's tested tokens: 1 R of 4 (L; R, L, L), not the mean of per-question rates (0 and 1/3)
    assert cols["rag_win_rate"] == {"mean": 0.25, "n": 2, "tokens": 4}


def test_columns_say_what_they_count():
    assert "agreed" in TRACE_COLUMNS["rag_token_share"] and "bypass" in TRACE_COLUMNS["rag_token_share"]
    assert TRACE_COLUMNS["rag_win_rate"].startswith("share of tested tokens")


def test_no_win_rate_without_a_tested_token():
    assert "rag_win_rate" not in trace_columns([_sample(["R=", "Rb", "L="])])
