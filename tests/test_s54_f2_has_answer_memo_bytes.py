"""retrieval.has_answer's memo of tokenised texts (s53 f3) was bounded by count (32,768 texts), not by size: texts of
100 kB (a BYO corpus's long passages) kept ~190 KiB each, ~5.9 GiB at the bound (/work/scratch/s54/f2/
memo_memory.py: 400 such passages asked once kept 73.7 MiB). It is now bounded by bytes
(``WORDS_MEMO_BYTES``, each text and its tokens counted), least recently used first out, and an entry larger than
``WORDS_MEMO_MAX_ENTRY`` is not kept; the booleans stay Pyserini's whatever is kept."""

from __future__ import annotations

import random
import sys
import tracemalloc

import pytest
from pyserini.eval.evaluate_dpr_retrieval import has_answers

import retrieval.metrics as rm
from retrieval import has_answer


@pytest.fixture(autouse=True)
def _empty_memo():
    clear = getattr(rm, "_clear_words", None) or rm._words.cache_clear  # the old code's lru_cache
    clear()
    yield
    clear()


def _passages(n: int, size: int, seed: int = 54) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)] + ["Paris", "the", "of"]
    return [" ".join(rng.choice(words) for _ in range(size // 5)) for _ in range(n)]


def test_the_memo_keeps_at_most_its_bytes(monkeypatch):
    monkeypatch.setattr(rm, "WORDS_MEMO_BYTES", 128 << 10, raising=False)
    has_answer("warm up", ["x"])  # the tokenizer built before the measure
    texts = _passages(40, 10_000)
    want = [has_answers(t, ["Paris"], rm._tokenizer(), regex=False) for t in texts]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        got = [has_answer(t, ["Paris"]) for t in _passages(40, 10_000)]  # new string objects: only the memo keeps them
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert got == want and 0 < sum(got) < 40
    # 40 texts of 10 kB: ~1.2 MiB kept before (each text and its tokens); now at most the bound (and small change)
    assert kept < (128 << 10) + (64 << 10), kept
    assert rm._memo_bytes <= rm.WORDS_MEMO_BYTES
    assert rm._memo_bytes == sum(sys.getsizeof(t) + sys.getsizeof(w) for t, (w, _) in rm._memo.items()) == sum(
        n for _, n in rm._memo.values())  # each entry's bytes as counted when it came in (ASCII: as measured now)


def test_the_least_recently_used_text_leaves_first_and_a_large_one_is_not_kept(monkeypatch):
    a, b, c = _passages(3, 2_000)
    one = sys.getsizeof(a) + sys.getsizeof(rm._tokens(a))
    monkeypatch.setattr(rm, "WORDS_MEMO_BYTES", 2 * one + one // 2)  # room for two such texts (and the answer)
    for t in (a, b, a, c):  # a used again after b: b leaves when c comes
        has_answer(t, ["Paris"])
    assert list(rm._memo) == [a, "Paris", c]  # each call looks its answer up first
    big = _passages(1, 4_000, seed=1)[0]
    monkeypatch.setattr(rm, "WORDS_MEMO_MAX_ENTRY", one)
    assert has_answer(big, ["w1"]) is has_answers(big, ["w1"], rm._tokenizer(), regex=False)
    assert list(rm._memo) == [a, "Paris", c, "w1"]  # big tokenised, not kept: nothing pushed out


@pytest.mark.parametrize("budget", [0, 300])
def test_the_booleans_are_pyserinis_whatever_the_memo_keeps(monkeypatch, budget):
    """With no memo (0) and one that keeps a few short texts (300 bytes), on s53 f3's edge cases."""
    from test_s53_f3_has_answer_memo import ANSWERS, TEXTS

    monkeypatch.setattr(rm, "WORDS_MEMO_BYTES", budget)
    tok = rm._tokenizer()
    for _ in range(2):  # the second round from the memo where it kept the text
        for text in TEXTS:
            for answers in ANSWERS:
                nonblank = [x for x in answers if tok.tokenize(x).words()]
                assert has_answer(text, answers) is (bool(nonblank) and has_answers(text, nonblank, tok, regex=False))
    assert rm._memo_bytes <= budget
