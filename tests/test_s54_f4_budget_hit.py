"""The report's hygiene had no column for answers cut by the generation budget (u3's F12: 14 of 16 Tok-RAG answers
ran into ``max_gen_toks`` 16; "overlong answer" counts more than 10 words). ``budget_hit`` (a trace column of
:func:`leaderboards.traces.trace_columns`, shown in the diagnostics table beside empty/overlong answer, in the CSV and
the JSON) is the share of questions whose trace's ``stop_reason`` is ``budget``; traces without one (run folders
written before) give no column."""

from leaderboards.traces import TRACE_COLUMNS, trace_columns


def _sample(trace: dict) -> dict:
    return {"arguments": {"gen_args_0": {"arg_0": "q", "arg_1": {"max_gen_toks": 16}, "arg_2": {"tokrag_trace": trace}}}}


def test_budget_hit_is_the_share_of_questions_stopped_by_the_budget():
    samples = [_sample({"method": "tokrag", "passages": ["a"], "stop_reason": why})
               for why in ["budget"] * 14 + ["stop", "eos"]]
    assert trace_columns(samples)["budget_hit"] == {"mean": 14 / 16, "n": 16}
    # every method's trace counts, closed book (no passages) too; a trace without stop_reason is left out
    mixed = [_sample({"method": "rag-none", "stop_reason": "budget"}),
             _sample({"method": "rag-none", "passages": [], "closed_book": True, "stop_reason": "eos"}),
             _sample({"method": "rag-none"})]
    assert trace_columns(mixed)["budget_hit"] == {"mean": 0.5, "n": 2}
    assert "budget_hit" not in trace_columns([_sample({"method": "rag-standard", "passages": ["a"]})])
    assert "budget_hit" in TRACE_COLUMNS and list(TRACE_COLUMNS)[-1] == "budget_hit"  # the column next to the hygiene
