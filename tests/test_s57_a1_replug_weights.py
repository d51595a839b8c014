"""REPLUG's passage weights on scores that are not finite numbers, and on a temperature so small that ``s/τ`` overflows
(s57 a1 audit): both gave NaN weights, a NaN mixture and token 0 at every step, silently."""

from __future__ import annotations

import json
import math

import pytest
import torch

from retrieval.errors import DataError
from tokrag_model.methods.replug import mixture_logprobs, passage_scores, replug_weights

# A doc as a JSON docs file may hold it: Python's json reads NaN and Infinity as floats.
DOC_TEXT = ('{"qid": "q7", "ctxs": [{"docid": "d1", "score": 12.5, "rank": 1}, '
            '{"docid": "d2", "score": %s, "rank": 2}]}')


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_score_that_is_not_finite_is_refused_naming_doc_and_passage(bad):
    doc = json.loads(DOC_TEXT % bad)
    for mode in ("mixture", "answer_vote"):
        with pytest.raises(DataError, match=rf"replug_mode={mode}\): doc 'q7', passage 'd2' \(rank 2\) has a score that "
                                            r"is not a finite number \((nan|inf|-inf)\); .*replug_mode=uniform"):
            passage_scores(doc, doc["ctxs"], mode)


def test_an_int_score_too_large_for_a_float_is_refused():
    doc = {"qid": "q8", "ctxs": [{"docid": "d1", "score": 10 ** 400}]}
    with pytest.raises(DataError, match=r"doc 'q8', passage 'd1' \(rank 1\) has a score that is not a finite number"):
        passage_scores(doc, doc["ctxs"])


def test_finite_scores_and_missing_ones_read_as_before():
    doc = json.loads(DOC_TEXT % "9")
    assert passage_scores(doc, doc["ctxs"]) == [12.5, 9.0]
    with pytest.raises(DataError, match=r"passage 'd2' \(rank 2\) has no retriever score \(None\)"):
        passage_scores({"qid": "q7"}, [{"docid": "d1", "score": 1.0}, {"docid": "d2", "rank": 2}])


def test_weights_by_hand_unchanged():
    # softmax([10, 9] / 1) = [e/(1+e), 1/(1+e)] = [0.731059, 0.268941]
    w = replug_weights([10.0, 9.0], 1.0)
    assert w.tolist() == pytest.approx([math.e / (1 + math.e), 1 / (1 + math.e)], abs=1e-12)
    assert w.tolist() == pytest.approx([0.7310586, 0.2689414], abs=1e-7)
    # tau = 2: softmax([5, 4.5]) = [1/(1+e^-0.5), ...] = [0.622459, 0.377541]
    assert replug_weights([10.0, 9.0], 2.0).tolist() == pytest.approx([0.6224593, 0.3775407], abs=1e-7)


def test_a_tiny_temperature_gives_the_top_passage_all_the_weight_not_nan():
    # 10 / 1e-308 overflows to inf; inf - inf was NaN. softmax is shift-invariant: by hand the limit is one-hot
    w = replug_weights([10.0, 9.0, 8.0], 1e-308)
    assert w.tolist() == [1.0, 0.0, 0.0]
    # two passages tied at the top share it
    assert replug_weights([10.0, 10.0, 9.0], 1e-308).tolist() == [0.5, 0.5, 0.0]
    # the mixture is then the top passage's distribution, and its argmax that passage's token
    lp = torch.log(torch.tensor([[0.1, 0.7, 0.2], [0.6, 0.2, 0.2], [0.2, 0.2, 0.6]]))
    mix = mixture_logprobs(lp, w)
    assert mix.exp().tolist() == pytest.approx([0.1, 0.7, 0.2], abs=1e-6)
    assert int(mix.argmax()) == 1


def test_non_finite_scores_are_refused_by_the_weights_too():
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match="replug scores must be finite numbers"):
            replug_weights([1.0, bad], 1.0)
