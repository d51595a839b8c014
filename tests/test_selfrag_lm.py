"""rag-selfrag-filter on language-modelling requests: the kept rate (kept passages / passages offered) is in the trace
of every request type at the level the leaderboard reads (leaderboards.traces.trace_columns), so its ``kept_rate``
column shows the filter's LM row too. A rolling text's trace used to carry it only inside its windows: on
wiki_lm_bm25 the critic kept 0 of 60 passages on the first 20 paragraphs and no column showed it."""

from __future__ import annotations

import pytest

from leaderboards.traces import sample_trace, trace_columns
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

TEXT = "The Eiffel Tower is a wrought-iron lattice tower in Paris. " * 3


def doc(i: int) -> dict:
    return {"qid": f"p{i}", "question": "The Eiffel Tower is a wrought-iron lattice tower",
            "ctxs": [{"docid": f"d{i}a", "title": "Eiffel Tower", "text": "The Eiffel Tower is a lattice tower in Paris.", "rank": 1},
                     {"docid": f"d{i}b", "title": "Banana", "text": "The banana is an elongated edible fruit.", "rank": 2},
                     {"docid": f"d{i}c", "title": "Jupiter", "text": "Jupiter is the fifth planet from the Sun.", "rank": 3}]}


def logged(req) -> dict:
    """The sample lm-eval logs for a request (``arguments.gen_args_0.arg_N``)."""
    return {"arguments": {"gen_args_0": {f"arg_{j}": a for j, a in enumerate(req.args)}}}


@pytest.mark.parametrize("threshold,kept", [(0.0, 1.0), (1.0, 0.0)])
def test_rolling_trace_carries_the_kept_rate_the_leaderboard_reads(backbone, threshold, kept):
    from lm_eval.api.instance import Instance

    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu", relevance_threshold=threshold)
    lm.max_length = 64  # several windows per text
    reqs = [Instance("loglikelihood_rolling", doc(i), (TEXT,), i) for i in range(2)]
    lm.loglikelihood_rolling(reqs, disable_tqdm=True)
    for r in reqs:
        tr = sample_trace(logged(r))
        assert len(tr["windows"]) > 1 and all(w["kept_rate"] == kept for w in tr["windows"])
        assert tr["kept_rate"] == kept and tr["critic_auc"] is None  # no gold_docids
    assert trace_columns([logged(r) for r in reqs])["kept_rate"] == {"mean": kept, "n": 2}


def test_rolling_kept_rate_is_the_critics_share_kept(backbone):
    from lm_eval.api.instance import Instance

    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu")  # default threshold 0.5
    d = doc(0)
    _, ratios = lm.relevance(d, "")
    expected = round(len(lm.select(ratios)) / 3, 4)
    req = Instance("loglikelihood_rolling", {**d, "gold_docids": ["d0a"]}, (TEXT,), 0)
    lm.loglikelihood_rolling([req], disable_tqdm=True)
    tr = sample_trace(logged(req))
    assert tr["kept_rate"] == expected and tr["critic_auc"] == tr["windows"][0]["critic_auc"] is not None


def test_loglikelihood_trace_carries_the_kept_rate(backbone):
    """A loglikelihood request (multiple choice, wikitext103_bm25_wiki) already had it at the top level: unchanged."""
    from lm_eval.api.instance import Instance

    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu", relevance_threshold=0.0)
    req = Instance("loglikelihood", doc(0), ("The Eiffel Tower is", " in Paris."), 0)
    lm.loglikelihood([req], disable_tqdm=True)
    assert trace_columns([logged(req)])["kept_rate"] == {"mean": 1.0, "n": 1}
