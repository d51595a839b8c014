"""Module rule 2 of tasks/metrics.py is symmetric: sentence punctuation ending the GOLD beyond the prediction's
own costs nothing either, as SQuAD normalisation gives "Paris" EM 1 against the gold "Paris." (hand-computed)."""

from __future__ import annotations

import pytest

from tasks.metrics import qa_scores

ONE = {"em": 1.0, "f1": 1.0, "answer_match": 1.0}


@pytest.mark.parametrize(
    ("pred", "golds", "want"),
    [
        # [a, +] vs the gold [a, +, .]: the gold's run [.] starts with the prediction's (empty) run, cut to it
        ("A+", ["A+."], ONE),  # was EM 0, F1 4/5 (P=1, R=2/3), match 0
        ("a+", ["A+?!"], ONE),  # the whole final run of the gold
        ("The The", ["the the."], ONE),
        ("---", ["---."], ONE),  # "-" is not sentence punctuation
        # [?] vs [?, .]: a gold made only of sentence punctuation is not cut (it was cut to [?], ONE): P=1, R=1/2
        ("?", ["?."], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),
        ("A+.", ["A+."], ONE),  # equal runs, nothing cut
        # [the answer is a +] vs [a, +] (the gold's "." cut): P=2/5, R=1 -> F1 4/7; a + occurs
        ("The answer is A+", ["A+."], {"em": 0.0, "f1": 4 / 7, "answer_match": 1.0}),
        # [a + is the answer .] vs [a + .] (equal runs, nothing cut): P=3/6, R=1 -> F1 2/3; a + occurs, followed by "is"
        ("A+ is the answer.", ["A+."], {"em": 0.0, "f1": 2 / 3, "answer_match": 1.0}),
        # differing punctuation is kept both ways: [a + !] vs [a + .]: P=R=2/3
        ("A+!", ["A+."], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),
        ("A+.", ["A+!"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),
        # [a] vs [a, +] (the gold's "." cut): P=1, R=1/2 -> F1 2/3
        ("A", ["A+."], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),
        # a gold is never cut to nothing: [? x] vs [?]: P=1/2, R=1 -> F1 2/3, and [x] vs [.] shares nothing
        ("? x", ["?"], {"em": 0.0, "f1": 2 / 3, "answer_match": 1.0}),
        ("x", ["."], {"em": 0.0, "f1": 0.0, "answer_match": 0.0}),
    ],
)
def test_gold_trailing_sentence_punctuation_costs_nothing(pred: str, golds: list[str], want: dict[str, float]) -> None:
    got = qa_scores(pred, golds)
    assert got == pytest.approx(want)
    assert got["em"] <= got["f1"] and (got["em"] == 0 or got["answer_match"] == 1.0)


LIGHT = ["A+", "A+.", "a+ ,", "A+!", "?", "?.", "---", "+."]  # SQuAD normalisation empties each of them


@pytest.mark.parametrize("pred", LIGHT)
@pytest.mark.parametrize("gold", LIGHT)
def test_em_and_f1_are_symmetric_under_the_light_rule(pred: str, gold: str) -> None:
    """Swapping prediction and gold (both scored with the light rule) leaves EM and F1 unchanged, except where one side
    is made only of sentence punctuation and the other starts with it: the gold "?." is not cut, the prediction "?."
    is (tests/test_metrics.py: EM 1 against the gold "?")."""
    a, b = qa_scores(pred, [gold]), qa_scores(gold, [pred])
    if {pred, gold} == {"?", "?."}:
        short = a if pred == "?" else b  # [?] vs the gold [?, .]: P=1, R=1/2
        assert (short["em"], short["f1"]) == pytest.approx((0.0, 2 / 3))
        assert ((b if pred == "?" else a)["em"], (b if pred == "?" else a)["f1"]) == (1.0, 1.0)
        return
    assert (a["em"], a["f1"]) == pytest.approx((b["em"], b["f1"]))


@pytest.mark.parametrize(
    ("pred", "gold", "want"),
    [
        # a gold made only of sentence punctuation (the band "!!!") is the answer itself: it is never cut, and answer
        # match needs its whole run (3de51db cut it to the prediction's run: each of these scored EM or match 1)
        ("!", "!!!", (0.0, 0.5, 0.0)),  # [!] vs [! ! !]: P=1, R=1/3 -> F1 2*(1/3)/(4/3) = 1/2
        ("!!", "!!!", (0.0, 0.8, 0.0)),  # P=1, R=2/3 -> F1 4/5
        ("?", "?!", (0.0, 2 / 3, 0.0)),  # P=1, R=1/2
        (".", "...", (0.0, 0.5, 0.0)),
        ("I have no idea!", "!!!", (0.0, 0.25, 0.0)),  # [i have no idea !]: P=1/5, R=1/3 -> F1 1/4
        ("Wow! It is great.", "!!!", (0.0, 2 / 9, 0.0)),  # [wow ! it is great .]: P=1/6, R=1/3 -> F1 2/9
        ("Really? No.", "?!", (0.0, 1 / 3, 0.0)),  # [really ? no .]: P=1/4, R=1/2 -> F1 1/3
        ("Well. Maybe", "...", (0.0, 1 / 3, 0.0)),  # [well . maybe]: P=R=1/3
        # the whole run, token-aligned: [the band ! ! !] vs [! ! !]: P=3/5, R=1 -> F1 3/4
        ("The band !!!", "!!!", (0.0, 0.75, 1.0)),
        ("!!!", "!!!", (1.0, 1.0, 1.0)),
        ("!!!.", "!!!", (1.0, 1.0, 1.0)),  # the prediction side is cut as before: [! ! ! .] -> [! ! !]
    ],
)
def test_gold_of_sentence_punctuation_only_is_not_cut(pred: str, gold: str, want: tuple[float, float, float]) -> None:
    got = qa_scores(pred, [gold])
    assert (got["em"], got["f1"], got["answer_match"]) == pytest.approx(want)


@pytest.mark.parametrize(
    ("pred", "golds", "want"),
    [
        # ordinary answers take the SQuAD path and keep their values
        ("Paris", ["Paris."], ONE),
        ("Paris.", ["Paris"], ONE),
        ("Paris", ["Paris"], ONE),
        # [paris france] vs [france]: P=1/2, R=1 -> F1 2/3; france occurs
        ("Paris, France.", ["France"], {"em": 0.0, "f1": 2 / 3, "answer_match": 1.0}),
        ("London", ["Paris."], {"em": 0.0, "f1": 0.0, "answer_match": 0.0}),
        # [1990] vs [1990s]: nothing shared
        ("1990", ["1990s."], {"em": 0.0, "f1": 0.0, "answer_match": 0.0}),
    ],
)
def test_ordinary_answers_keep_their_values(pred: str, golds: list[str], want: dict[str, float]) -> None:
    assert qa_scores(pred, golds) == pytest.approx(want)
