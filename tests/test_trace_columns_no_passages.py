"""A question shown no passage adds nothing to the passage-weight and branch columns (leaderboards.traces.trace_columns):
REPLUG and the entropy ensemble logged ``weights: [1.0]`` for it (top1_weight 1.0, entropy 0: a certain top passage),
and Tok-RAG labelled its tokens ``R=``, so such questions raised ``top1_weight`` and ``rag_token_share``."""
from leaderboards.traces import trace_columns


def _sample(trace: dict) -> dict:
    return {"arguments": {"gen_args_0": {"arg_0": "q", "arg_1": {}, "arg_2": {"tokrag_trace": trace}}}}


def test_replug_question_without_passages_is_left_out_of_the_weight_columns():
    shown = {"method": "rag-replug", "passages": ["a", "b"], "weights": [0.5, 0.5], "top1_weight": 0.5,
             "weight_entropy": 0.6931471805599453}
    none = {"method": "rag-replug", "passages": [], "weights": [1.0], "top1_weight": 1.0, "weight_entropy": 0.0,
            "closed_book": True}
    cols = trace_columns([_sample(shown), _sample(none)])
    assert cols["top1_weight"] == {"mean": 0.5, "n": 1}
    assert cols["weight_entropy"] == {"mean": 0.6931471805599453, "n": 1}


def test_tokrag_question_without_passages_is_left_out_of_the_token_share():
    shown = {"method": "tokrag", "passages": ["a"], "tokens": [["R", 0.1, 0.0, 14, "x"], ["L", 0.0, 0.1, 14, "y"]]}
    none = {"method": "tokrag", "passages": [], "tokens": [["R=", 0.0, 0.0, 14, "x"], ["R=", 0.0, 0.0, 14, "y"]]}
    cols = trace_columns([_sample(shown), _sample(none)])
    assert cols["rag_token_share"] == {"mean": 0.5, "n": 1}
    assert cols["rag_win_rate"] == {"mean": 0.5, "n": 1, "tokens": 2}


def test_filter_closed_book_still_counts_its_kept_rate():
    cols = trace_columns([_sample({"method": "rag-selfrag-filter", "passages": [], "kept_rate": 0.0, "closed_book": True}),
                          _sample({"method": "rag-selfrag-filter", "passages": ["a"], "kept_rate": 0.5})])
    assert cols["kept_rate"] == {"mean": 0.25, "n": 2}
