"""The WARNING of a top passage cut to the budget names the bound that cut it (s52 r5, review of e4d1753).

e4d1753's WARNING said a cut top passage 'was longer than the room the question left' also where max_passage_tokens
cut it and max_length=8192 left the question thousands of tokens, and a one-passage doc's cut read '0 passage(s)
dropped and 1 cut'. Real SmolLM2 tokens.
"""

from __future__ import annotations

import logging

import pytest
from lm_eval.api.instance import Instance

from tokrag_model.methods import load

TEXT = "The tower is 330 metres tall and the tallest structure in Paris. " * 20  # 321 tokens
DOC = {"question": "how tall is the tower", "answers": ["330"], "scored_by": "bm25",
       "ctxs": [{"docid": "a", "title": "Eiffel", "text": TEXT, "rank": 1, "score": 3.0}]}
TAIL = ("the trace's 'passages' lists those shown and 'cut' [tokens kept, tokens] of a cut one; answer_recall/gold_at_k "
        "still count them)")


@pytest.mark.parametrize("kw,message", [
    ({"max_length": 120},
     "rag-standard: 1 passage(s) cut from 1 prompt(s) to fit max_length=120 (cut token-wise from its end where the top "
     f"passage alone was longer than the room the question left: rank 1 (1), 71 of its 321 tokens kept; {TAIL}: raise "
     "max_length"),
    ({"max_passage_tokens": 30},
     "rag-standard: 1 passage(s) cut from 1 prompt(s) to fit max_length=8192 and max_passage_tokens=30 (cut token-wise "
     "from its end where the top passage alone was longer than max_passage_tokens or the room the question left: rank 1 "
     f"(1), 23 of its 321 tokens kept; {TAIL}: raise max_passage_tokens or max_length"),
])
def test_the_cut_warning_names_the_bound_and_no_dropped_count_of_zero(backbone, caplog, kw, message):
    lm = load("rag-standard").with_backbone(backbone, device="cpu", **kw)
    ctx = lm.apply_chat_template([{"role": "user", "content": "Question: how tall is the tower?\nAnswer:"}])
    req = Instance("generate_until", DOC, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.generate_until([req], disable_tqdm=True)
    tr = req.args[-1]["tokrag_trace"]
    assert (tr["passages"], tr["dropped"]) == (["a"], [])
    assert [r.getMessage() for r in caplog.records] == [message]
