"""Edge cases of the decoding methods found at stop 43 (SmolLM2-135M-Instruct, CPU).

1. A question shown no passage (none retrieved, or all dropped for ``max_length``): ``rag-replug`` and
   ``rag-ensemble-entropy`` traced ``weights [1.0], top1_weight 1.0, weight_entropy 0.0``, and the leaderboard's
   trace columns averaged it in (REPLUG's top1_weight 0.5 -> 0.75 with one such question). Now null, left out.
2. ``loglikelihood`` of an empty continuation: probability 1 for tokrag and the ensemble (an empty multiple-choice
   option always won), IndexError / RuntimeError for the others. Now one ConfigError for every method.
3. ``rag-selfrag-filter`` applied the length budget after its critic and could show a passage ``rag-standard``
   dropped for length. Now the critic judges the passages the budget keeps.
4. The filter's ``critic`` trace was keyed by docid: two judged passages with one docid left one entry.
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from leaderboards.traces import trace_columns
from retrieval.errors import ConfigError
from tokrag_model.methods import METHODS, load

Q = "who wrote the play hamlet"
P1 = {"docid": "a", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600.",
      "score": 12.0, "rank": 1}
P2 = {"docid": "b", "title": "Macbeth", "text": "Macbeth is a tragedy by William Shakespeare, first performed in 1606.",
      "score": 12.0, "rank": 2}
GEN = {"until": ["\n"], "max_gen_toks": 4}


def _doc(ctxs: list[dict]) -> dict:
    return {"question": Q, "answers": ["Shakespeare"], "ctxs": ctxs, "scored_by": "bm25"}


def _ctx(tok) -> str:
    return tok.apply_chat_template([{"role": "user", "content": f"Answer briefly. {Q}?"}], tokenize=False,
                                   add_generation_prompt=True)


# ------------------------------------------------------------------ 1. closed-book weights
@pytest.mark.parametrize("name", ["rag-replug", "rag-ensemble-entropy"])
def test_closed_book_question_has_no_weight_summary_and_is_left_out_of_the_columns(backbone, name):
    lm = load(name).with_backbone(backbone, device="cpu")
    ctx = _ctx(backbone.tokenizer)
    docs = [_doc([P1, P2]), _doc([])]
    reqs = [Instance("generate_until", d, (ctx, dict(GEN)), i) for i, d in enumerate(docs)]
    lm.generate_until(reqs, disable_tqdm=True)
    with_passages, closed = (r.args[-1]["tokrag_trace"] for r in reqs)
    assert closed["closed_book"] is True and closed["passages"] == []
    assert closed["top1_weight"] is None and closed["weight_entropy"] is None and closed["weights"] == []
    assert isinstance(with_passages["top1_weight"], float) and len(with_passages["weights"]) == 2
    samples = [{"arguments": [list(r.args)]} for r in reqs]
    cols, first = trace_columns(samples), trace_columns(samples[:1])
    # the closed-book question adds nothing to the passage columns; budget_hit (why a generation stopped) counts it
    assert {k: v for k, v in cols.items() if k != "budget_hit"} == {k: v for k, v in first.items() if k != "budget_hit"}
    assert cols["budget_hit"]["n"] == 2 and first["budget_hit"]["n"] == 1
    assert trace_columns(samples)["top1_weight"]["n"] == 1
    # the same for a loglikelihood request of a question without passages
    req = Instance("loglikelihood", docs[1], (ctx, " Shakespeare"), 0)
    lm.loglikelihood([req], disable_tqdm=True)
    tr = req.args[-1]["tokrag_trace"]
    assert tr["closed_book"] is True and tr["top1_weight"] is None and tr["weight_entropy"] is None
    assert trace_columns([{"arguments": [list(req.args)]}]) == {}


def test_all_passages_dropped_for_the_budget_is_closed_book_without_weights(backbone):
    # no token of the passage fits 5 passage tokens (its '[Reference]: Macbeth' line is more); max_length=200 alone used
    # to drop it too, now it is cut to fit (s52 f1: tests/test_s52_f1_long_top_passage.py), one weighted branch
    long = dict(P2, text="Macbeth is long. " * 400)
    for name in ("rag-replug", "rag-ensemble-entropy"):
        lm = load(name).with_backbone(backbone, device="cpu", max_length=200, max_passage_tokens=5)
        req = Instance("generate_until", _doc([long]), (_ctx(backbone.tokenizer), dict(GEN)), 0)
        lm.generate_until([req], disable_tqdm=True)
        tr = req.args[-1]["tokrag_trace"]
        assert (tr["passages"], tr["dropped"], tr["closed_book"]) == ([], ["b"], True), (name, tr)
        assert tr["top1_weight"] is None and tr["weight_entropy"] is None, (name, tr)
        lm = load(name).with_backbone(backbone, device="cpu", max_length=200)
        req = Instance("generate_until", _doc([long]), (_ctx(backbone.tokenizer), dict(GEN)), 0)
        lm.generate_until([req], disable_tqdm=True)
        tr = req.args[-1]["tokrag_trace"]
        assert (tr["passages"], tr["dropped"], tr["weights"], tr["cut"]["b"][1]) == (["b"], [], [1.0], 1602), (name, tr)


# ------------------------------------------------------------------ 2. empty continuation
@pytest.mark.parametrize("name", sorted(METHODS))
def test_an_empty_continuation_is_refused_by_every_method(backbone, name):
    lm = load(name).with_backbone(backbone, device="cpu")
    ctx = "Question: who wrote hamlet?\nAnswer:"
    ok = Instance("loglikelihood", _doc([P1, P2]), (ctx, " Shakespeare"), 0, metadata=("nq_toy", 7, 1))
    empty = Instance("loglikelihood", dict(_doc([P1, P2]), qid="q7"), (ctx, ""), 1, metadata=("nq_toy", 8, 1))
    with pytest.raises(ConfigError) as err:
        lm.loglikelihood([ok, empty], disable_tqdm=True)
    msg = str(err.value)
    assert "\n" not in msg and f"--model {name}" in msg and "empty continuation" in msg
    assert "task 'nq_toy'" in msg and "doc_id 8" in msg and "qid 'q7'" in msg and "Answer:" in msg
    (ll, _), = lm.loglikelihood([ok], disable_tqdm=True)  # a continuation with tokens is scored as before
    assert ll < 0


# ------------------------------------------------------------------ 3. the filter's budget before its critic
# with max_length=400 and 4 generated tokens, rag-standard's prompt shows 'a' and drops 'b' (84 repeats), while 'b'
# alone fits; the critic gives 'a' r .17 and 'b' r .28, so with threshold .2 the old filter showed 'b' alone
LONG_B = dict(P2, text="Macbeth is long. " * 84, score=10.0)


def _gen_trace(lm, doc, ctx):
    req = Instance("generate_until", doc, (ctx, dict(GEN)), 0)
    lm.generate_until([req], disable_tqdm=True)
    return req.args[-1]["tokrag_trace"]


@pytest.mark.parametrize("selection", ["threshold", "rank"])
def test_the_filter_judges_only_the_passages_the_budget_keeps(backbone, selection):
    ctx = _ctx(backbone.tokenizer)
    doc = _doc([P1, LONG_B])
    std = _gen_trace(load("rag-standard").with_backbone(backbone, device="cpu", max_length=400), doc, ctx)
    assert (std["passages"], std["dropped"]) == (["a"], ["b"])  # the premise: 'b' alone would fit
    flt = load("rag-selfrag-filter").with_backbone(backbone, device="cpu", max_length=400, relevance_threshold=0.2,
                                                   selection=selection)
    assert flt.encode_rag(doc, ctx, 396, ctxs=[LONG_B]).kept == ["b"]
    tr = _gen_trace(flt, doc, ctx)
    assert tr["dropped"] == ["b"] and "b" not in tr["passages"], tr
    assert list(tr["critic"]) == ["a"] and tr["kept_rate"] == 0.0  # 'a' (r .17) judged alone
    assert tr["passages"] == [] and tr["closed_book"] is True


def test_the_filters_loglikelihood_also_judges_within_the_budget(backbone):
    ctx = _ctx(backbone.tokenizer)
    flt = load("rag-selfrag-filter").with_backbone(backbone, device="cpu", max_length=400, relevance_threshold=0.2)
    req = Instance("loglikelihood", _doc([P1, LONG_B]), (ctx, " Shakespeare"), 0)
    flt.loglikelihood([req], disable_tqdm=True)
    tr = req.args[-1]["tokrag_trace"]
    assert (tr["passages"], tr["dropped"], list(tr["critic"])) == ([], ["b"], ["a"]), tr


def test_the_filter_without_budget_drops_judges_every_passage(backbone):
    # the default budget drops nothing here: both passages judged, as before
    tr = _gen_trace(load("rag-selfrag-filter").with_backbone(backbone, device="cpu"), _doc([P1, P2]),
                    _ctx(backbone.tokenizer))
    assert list(tr["critic"]) == ["a", "b"] and tr["dropped"] == []



# ------------------------------------------------------------------ 4. one critic entry per judged passage
def test_passage_keys_by_hand():
    from tokrag_model.methods.selfrag_filter import passage_keys

    assert passage_keys([{"docid": "a"}, {"docid": "b"}]) == ["a", "b"]  # distinct docids: the docids, as before
    assert passage_keys([{"docid": "a"}, {"docid": "a"}, {"docid": "a"}]) == ["a", "a#2", "a#3"]
    assert passage_keys([{"docid": "a#2"}, {"docid": "a"}, {"docid": "a"}]) == ["a#2", "a", "a#3"]  # never a clash
    assert passage_keys([{}, {"docid": 0}]) == ["0", "0#2"]  # no docid: the index


def test_duplicate_passages_are_refused_before_the_critic(backbone):
    """A passage listed twice in a doc is refused by get_ctxs since s57 h4 (as a ctxs run's, h1's c59b374): it
    reached the critic twice and was traced as 'a', 'a#2'. passage_keys still keys what it is given (by hand above)."""
    from retrieval.errors import DataError

    flt = load("rag-selfrag-filter").with_backbone(backbone, device="cpu")
    with pytest.raises(DataError) as exc:
        _gen_trace(flt, _doc([P1, dict(P1, rank=2), P2]), _ctx(backbone.tokenizer))
    assert str(exc.value) == (
        f"--model rag-selfrag-filter: doc (question {Q!r}), doc['ctxs'][1] (passage 'a') is listed twice (also "
        "doc['ctxs'][0]); each copy would be given to the method as a passage of its own: keep one copy, the "
        "better-ranked")
