"""QA metrics against hand-computed values (SQuAD normalisation, several gold answers, punctuation)."""

from __future__ import annotations

import math

import pytest

from retrieval.errors import DataError
from tasks.metrics import (
    answer_match, exact_match, f1_score, light_rule_golds, light_tokens, mean_and_stderr, normalize_answer, qa_scores,
    unscorable_golds,
)


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


ZERO = {"em": 0.0, "f1": 0.0, "answer_match": 0.0}
ONE = {"em": 1.0, "f1": 1.0, "answer_match": 1.0}


def test_empty_prediction_never_scores() -> None:
    # issue 12.1: SQuAD normalisation maps "A+" and "AB+" to "", so the script gave EM = F1 = 1 to "".
    assert qa_scores("", ["A+", "AB+"]) == ZERO
    assert qa_scores("   \n", ["A+"]) == ZERO
    assert qa_scores("", ["Paris"]) == ZERO
    assert qa_scores("", [""]) == ZERO


@pytest.mark.parametrize(
    ("pred", "golds", "want"),
    [
        ("A+", ["A+", "AB+"], ONE),
        ("a+", ["A+"], ONE),
        ("AB+", ["A+", "AB+"], ONE),
        # light tokens [the most common blood type is a + .], the final "." cut (the gold does not end with it):
        # 8 tokens vs [a, +]: P=2/8, R=1 -> F1 2*(1/4)/(5/4) = 2/5
        ("The most common blood type is A+.", ["A+", "AB+"], {"em": 0.0, "f1": 2 / 5, "answer_match": 1.0}),
        ("A", ["A+", "AB+"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),  # [a] vs [a, +]: P=1, R=1/2
        ("B+", ["A+", "AB+"], {"em": 0.0, "f1": 0.5, "answer_match": 0.0}),  # shares the token "+"
        ("*", ["a rotationally symmetric saltire", "the symbol ×", "*"], ONE),
        ("the symbol ×", ["a rotationally symmetric saltire", "the symbol ×", "*"], ONE),
        (")", [")"], ONE),
        ("---", ["---"], ONE),
        ("-", ["---"], {"em": 0.0, "f1": 0.5, "answer_match": 0.0}),  # P=1, R=1/3 -> 0.5
        ("The The", ["The The"], ONE),
        ("the", ["The The"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),
        ("Paris", ["A+"], ZERO),
        (".", ["Paris"], ZERO),  # a prediction SQuAD-normalised to nothing does not score against a normal gold
    ],
)
def test_golds_that_normalise_to_nothing(pred: str, golds: list[str], want: dict[str, float]) -> None:
    got = qa_scores(pred, golds)
    assert got == pytest.approx(want)
    # per-sample invariants (issue 12.2): EM = 1 => F1 = 1 and EM = 1 => match = 1
    assert got["em"] <= got["f1"] and (got["em"] == 0 or got["answer_match"] == 1.0)


@pytest.mark.parametrize(
    ("pred", "golds", "want"),
    [
        # the sentence punctuation a prediction ends with costs nothing under the light rule, as "Paris." == "Paris"
        ("Paris.", ["Paris"], ONE),  # the SQuAD path, for comparison
        ("A+.", ["A+"], ONE),  # [a, +, .] -> [a, +]
        ("A+?!", ["A+"], ONE),  # the whole final run . , ; : ! ? is cut
        ("a+ ,", ["A+"], ONE),
        ("the the.", ["The The"], ONE),
        ("---.", ["---"], ONE),  # "-" is not sentence punctuation: only the "." goes
        ("*:", ["*"], ONE),
        ("?", ["?"], ONE),  # the gold's own ending is kept: [?] vs [?]
        ("?.", ["?"], ONE),  # [?, .]: the run starts with the gold's [?], cut to it
        # [a, +, .] vs the gold [a, +, !]: the run [.] does not start with [!], nothing cut; P=R=2/3 -> F1 2/3
        ("A+.", ["A+!"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),
        ("A", ["A+"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),  # [a] vs [a, +]: still no EM
        ("A.", ["A+"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),  # [a, .] -> [a]: P=1, R=1/2
        ("+.", ["A+"], {"em": 0.0, "f1": 2 / 3, "answer_match": 0.0}),  # [+, .] -> [+]: P=1, R=1/2
        (".", ["*"], ZERO),  # [.] -> []: nothing left, no score
        # [the answer is a + .] -> 5 tokens vs [a, +]: P=2/5, R=1 -> F1 2*(2/5)/(7/5) = 4/7
        ("The answer is A+.", ["A+"], {"em": 0.0, "f1": 4 / 7, "answer_match": 1.0}),
    ],
)
def test_light_rule_ignores_trailing_sentence_punctuation(pred: str, golds: list[str], want: dict[str, float]) -> None:
    got = qa_scores(pred, golds)
    assert got == pytest.approx(want)
    assert got["em"] <= got["f1"] and (got["em"] == 0 or got["answer_match"] == 1.0)


@pytest.mark.parametrize(
    ("generation", "golds", "em", "empty"),
    [
        (" A+", ["A+"], 1.0, 0.0),  # matched under the light rule: an answer, not an empty line
        (" The The", ["The The"], 1.0, 0.0),
        (" *", ["*"], 1.0, 0.0),
        (" A+.", ["A+"], 1.0, 0.0),
        (" The answer is A+", ["A+"], 0.0, 0.0),  # normalises to "answer is": never empty
        (" the A+ one", ["A+"], 0.0, 0.0),
        (" the +", ["A+"], 0.0, 1.0),  # [the, +] does not contain [a, +] (F1 1/2): punctuation/articles, empty
        (" ...", ["A+"], 0.0, 1.0),  # only punctuation, matching nothing: empty
        (" *", ["Paris"], 0.0, 1.0),
        ("\n\n", ["*"], 0.0, 1.0),
    ],
)
def test_empty_pred_is_not_a_light_rule_match(generation: str, golds: list[str], em: float, empty: float) -> None:
    from tasks.utils import process_results_qa

    out = process_results_qa({"answers": golds, "ctxs": []}, [generation])
    assert (out["em"], out["empty_pred"]) == (em, empty)
    assert not (out["em"] == 1.0 and out["empty_pred"] == 1.0)


def test_light_tokens() -> None:
    assert light_tokens("A+") == ["a", "+"]
    assert light_tokens("---") == ["-", "-", "-"]
    assert light_tokens("The The") == ["the", "the"]
    assert light_tokens(" ") == []
    assert unscorable_golds(["", " ", "A+", "Paris"]) == ["", " "]
    assert light_rule_golds(["", "A+", "*", "Paris", "The The"]) == ["A+", "*", "The The"]


def test_every_gold_of_every_task_is_scorable(data_dir) -> None:
    """Scan every gold answer of the QA data sets: none is unscorable, and exactly these four NQ-open
    questions (one of them also an NQ-oracle question) need the light rule (tasks/README.md)."""
    from tasks.data import load_nq_open, load_nq_oracle, load_webq

    sets = {"nq_open": load_nq_open(data_dir), "nq_oracle": load_nq_oracle(data_dir),
            "webq test": load_webq(data_dir, split="test"), "webq devtest": load_webq(data_dir, split="devtest")}
    light: dict[str, list[tuple[str, list[str]]]] = {}
    for name, rows in sets.items():
        assert rows, name
        for r in rows:
            assert unscorable_golds(r["answers"]) == [], (name, r["question"], r["answers"])
            if light_rule_golds(r["answers"]):
                light.setdefault(name, []).append((r["question"], light_rule_golds(r["answers"])))
    assert light == {
        "nq_open": [
            ("how many breeds of pigs are there in the uk", ["---"]),
            ("what season does bart bass die in gossip girl", [")"]),
            ("what is the most common blood type in sweden", ["A+"]),  # "AB+" -> "ab" (SQuAD rule)
            ("what is the multiplication sign on the computer", ["*"]),
        ],
        "nq_oracle": [("what is the multiplication sign on the computer", ["*"])],
    }


def test_mean_and_stderr() -> None:
    mean, se = mean_and_stderr([1.0, 0.0, 1.0, 1.0])
    # mean 0.75; sample variance = (3*0.0625 + 0.5625)/3 = 0.25; se = sqrt(0.25/4) = 0.25
    assert mean == 0.75
    assert math.isclose(se, 0.25)
