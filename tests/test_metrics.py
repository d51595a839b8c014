"""QA metrics against hand-computed values (SQuAD normalisation, several gold answers, punctuation)."""

from __future__ import annotations

import math

import pytest

from retrieval.errors import DataError
from tasks.metrics import answer_match, exact_match, f1_score, mean_and_stderr, normalize_answer, qa_scores


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("The  U.S.!", "us"),
        ("1.5", "15"),
        ("An Apple a day", "apple day"),
        ("\u201cHello,\u201d she said", "hello she said"),  # Unicode quotes are punctuation too
        ("Theater", "theater"),  # 'the' only as a whole word
    ],
)
def test_normalize_answer(raw: str, norm: str) -> None:
    assert normalize_answer(raw) == norm


def test_exact_match_max_over_golds_and_punctuation() -> None:
    assert exact_match("The U.S.", ["United States", "U.S."]) == 1.0
    assert exact_match("U.S.A.", ["United States", "U.S."]) == 0.0
    assert exact_match("1.5", ["1.5"]) == 1.0
    assert exact_match("Paris, France", ["Paris"]) == 0.0
    assert exact_match("an apple", "apple") == 1.0


def test_f1_hand_computed() -> None:
    # pred tokens [barack, obama, jr]; gold 'obama': P=1/3, R=1 -> 0.5;
    # gold 'barack hussein obama': overlap 2, P=2/3, R=2/3 -> 2/3. Max = 2/3.
    assert f1_score("Barack Obama Jr.", ["Obama", "Barack Hussein Obama"]) == pytest.approx(2 / 3)
    # pred [paris, france], gold [paris]: P=1/2, R=1 -> 2/3
    assert f1_score("Paris, France", ["Paris"]) == pytest.approx(2 / 3)
    # repeated tokens are counted with multiplicity: pred [new, new, york], gold [new, york]
    # overlap min(2,1)+1 = 2, P=2/3, R=1 -> 0.8
    assert f1_score("new new york", ["New York"]) == pytest.approx(0.8)
    assert f1_score("London", ["Paris", "Rome"]) == 0.0


def test_answer_match_token_aligned() -> None:
    assert answer_match("It was about 1.5 million people.", ["1.5 million"]) == 1.0
    assert answer_match("10", ["1"]) == 0.0  # no substring false positive
    assert answer_match("The capital is Paris, France.", ["Rome", "paris"]) == 1.0
    assert answer_match("He moved to the U.S. in 1990", ["U.S."]) == 1.0
    assert answer_match("anything", ["."]) == 0.0  # a gold that normalises to nothing never matches


def test_qa_scores_and_empty_gold() -> None:
    assert qa_scores("Paris, France", ["Paris", "paris france"]) == {"em": 1.0, "f1": 1.0, "answer_match": 1.0}
    with pytest.raises(DataError):
        qa_scores("x", [])


def test_mean_and_stderr() -> None:
    mean, se = mean_and_stderr([1.0, 0.0, 1.0, 1.0])
    # mean 0.75; sample variance = (3*0.0625 + 0.5625)/3 = 0.25; se = sqrt(0.25/4) = 0.25
    assert mean == 0.75
    assert math.isclose(se, 0.25)
