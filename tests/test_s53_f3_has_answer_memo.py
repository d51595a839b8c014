"""retrieval.has_answer tokenises each text once (s52 p1: DPR's match, run by Pyserini's has_answers on every noise
candidate, tokenised the passage again for each question that saw it, and each answer twice per call: ~2.5 s of the
4.3 s nq_oracle_bm25_noise60 load). The booleans stay Pyserini's: checked here against ``has_answers`` itself on the
normalisation edge cases (NFD/NFC, case, punctuation, token boundaries, blank answers)."""

from __future__ import annotations

import pytest
from pyserini.eval.evaluate_dpr_retrieval import has_answers

import retrieval.metrics as rm
from retrieval import has_answer

TEXTS = ["Dag Hammarskj\u00f6ld won the Nobel Peace Prize", "Dag Hammarskjo\u0308ld", "THE U.S. ARMY", "a party",
         "rock-n-roll hall", "2.4 million", "\u0130stanbul", "Stra\u00dfe", "\u039f\u0394\u039f\u03a3 road",
         "\ufb01nal", "caf\u00e9 au lait", "a\0b", "", " \u200b "]
ANSWERS = [["Hammarskj\u00f6ld"], ["hammarskjo\u0308ld"], ["dag hammarskjöld won"], ["u.s."], ["U.S"], ["us"],
           ["art"], ["party"], ["rock n roll"], ["n-roll"], ["24"], ["2.4"], ["\u0130stanbul"], ["istanbul"],
           ["stra\u00dfe"], ["strasse"], ["\u03bf\u03b4\u03bf\u03c2"], ["\u03bf\u03b4\u03bf\u03c3"], ["final"],
           ["cafe\u0301"], ["a b"], ["ab"], ["", "lait"], ["\u200b"], [""], [" "], []]


@pytest.mark.parametrize("text", TEXTS)
def test_the_booleans_are_pyserinis(text):
    tok = rm._tokenizer()
    for answers in ANSWERS:
        nonblank = [a for a in answers if tok.tokenize(a).words()]
        want = bool(nonblank) and has_answers(text, nonblank, tok, regex=False)
        assert has_answer(text, answers) is want, (text, answers)


def test_pinned_values():
    assert has_answer("Dag Hammarskj\u00f6ld won", ["hammarskjo\u0308ld"]) is True  # NFC text, NFD answer
    assert has_answer("THE U.S. ARMY", "u.s.") is True  # case; a string is one answer
    assert has_answer("a party", ["art"]) is False  # tokens, not characters
    assert has_answer("rock-n-roll hall", ["rock - n"]) is True  # a '-' is a token of its own, spaces are none ...
    assert has_answer("rock-n-roll hall", ["rock n roll"]) is False  # ... so the answer must hold it too
    assert has_answer("rock n roll", ["rock-n-roll"]) is False
    assert has_answer("a\0b", ["a b"]) is True and has_answer("ab", ["a\0b"]) is False  # NUL is dropped
    assert has_answer("anything", ["", "\u200b"]) is False and has_answer("", ["x"]) is False


def test_a_passage_is_tokenised_once_for_all_the_questions_that_see_it(monkeypatch):
    tok = rm._tokenizer()
    seen: list[str] = []
    real = tok.tokenize
    monkeypatch.setattr(tok, "tokenize", lambda text: seen.append(text) or real(text))
    passage = "f3 probe: Sigrid Undset won the Nobel Prize in Literature in 1928 for her novels of Norway"
    questions = [["Sigrid Undset"], ["1928"], ["Knut Hamsun", "Hamsun"], ["Norway"], ["Nobel Prize in Physics"]]
    assert [has_answer(passage, a) for a in questions] == [True, True, False, True, False]
    assert [has_answer(passage, a) for a in questions] == [True, True, False, True, False]
    assert seen.count(passage) == 1  # the old code: 10, once per call
    assert seen.count("Hamsun") == 1  # an answer too (the old code: 4, twice per call)
