"""Two helpers computed what another module's helper computes (s59 rt's leftover 2): ``leaderboards.cli._n_cells``
is ``leaderboards.estimate._count(n, "cell")`` and ``tokrag_model.methods.replug._finite`` is
``retrieval.cache._finite`` (the rank rule of 95f5003). Each now calls the other; the values are unchanged
(s59 f3)."""

from __future__ import annotations

import math

import pytest

import leaderboards.estimate as estimate
import retrieval.cache as cache
from leaderboards.cli import _n_cells
from retrieval.errors import DataError
from tokrag_model.methods import replug


def test_n_cells_values():
    assert [_n_cells(n) for n in (0, 1, 2, 3)] == ["0 cells", "1 cell", "2 cells", "3 cells"]
    assert [_n_cells(n) for n in (0, 1, 3)] == [estimate._count(n, "cell") for n in (0, 1, 3)]


def test_n_cells_is_the_estimate_rule(monkeypatch):
    monkeypatch.setattr(estimate, "_count", lambda n, noun: f"<{n} {noun}>")
    assert _n_cells(3) == "<3 cell>"


@pytest.mark.parametrize("x, finite", [(1.5, True), (-2, True), (10**300, True), (10**400, False), (-10**400, False),
                                       (math.nan, False), (math.inf, False), (-math.inf, False)])
def test_finite_values(x, finite):
    assert replug._finite(x) is finite
    assert cache._finite(x) is finite


def test_replug_finite_is_the_rank_rule(monkeypatch):
    seen = []
    monkeypatch.setattr(cache, "_finite", lambda x: seen.append(x) or False)
    assert replug._finite(1.0) is False and seen == [1.0]


def test_replug_score_line_unchanged():
    with pytest.raises(DataError) as err:
        replug.passage_scores({"qid": "q1"}, [{"docid": "p1", "rank": 1, "score": 10**400}])
    assert str(err.value) == (
        "--model rag-replug (replug_mode=mixture): doc 'q1', passage 'p1' (rank 1) has a score that is not a finite number "
        "(an integer of 1329 bits, too large for a float); the weights softmax(score/τ) need a finite one for every "
        "passage: give it its retriever's score in the docs, rebuild them with a tokrag retrieval task (it scores every "
        "attached passage), or use replug_mode=uniform")
