"""Noise passages are pure noise for what the model is shown: a passage whose *title* names a gold answer is never
drawn (the prompt shows ``[Reference]: <title>\\n<text>``), as one whose text holds it never was. No retrieval."""

from __future__ import annotations

import pytest

from retrieval import has_answer
from retrieval.corpus import Corpus, Passage
from retrieval.errors import ConfigError
from tasks.rag import add_noise

RETRIEVED = [{"docid": "r1", "title": "A", "text": "alpha text", "score": 1.0, "rank": 1, "source": "retrieved"}]


def _corpus() -> Corpus:
    return Corpus([
        Passage("r1", "A", "alpha text"),
        Passage("t1", "Paris", "It is the capital and most populous city of France."),  # the answer in its title only
        Passage("x1", "Lyon", "Paris is two hours away by train."),  # the answer in its text
        *(Passage(f"c{i}", f"Town {i}", f"A small town number {i} by a river.") for i in range(4)),
    ], name="toy-noise-titles")


def test_title_naming_the_answer_is_never_noise() -> None:
    c = _corpus()
    assert has_answer("Paris", ["Paris"]) and not has_answer(c.get("t1").text, ["Paris"])
    drawn = [add_noise(RETRIEVED, c, f"q{i}", ["Paris"], [], 1.0, seed)[0]["docid"]
             for i in range(10) for seed in (1, 1234)]
    # 20 draws over 6 candidates: the old filter (text only) drew t1 in some of them
    assert "t1" not in drawn and "x1" not in drawn
    assert set(drawn) <= {"c0", "c1", "c2", "c3"}


def test_only_answer_titled_candidates_is_refused() -> None:
    c = Corpus([Passage("r1", "A", "alpha text"), Passage("t1", "Paris", "A capital city of Europe.")], name="toy-t")
    with pytest.raises(ConfigError, match="title or text contains a gold answer"):
        add_noise(RETRIEVED, c, "q1", ["Paris"], [], 1.0, 1234)


def test_draw_is_deterministic() -> None:
    c = _corpus()
    a = add_noise(RETRIEVED, c, "q7", ["Paris"], [], 1.0, 1234)
    b = add_noise(RETRIEVED, c, "q7", ["Paris"], [], 1.0, 1234)
    assert a == b and a[0]["source"] == "noise"
