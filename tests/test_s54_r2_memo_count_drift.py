"""retrieval.has_answer's byte-bounded memo (s54 f2, cf77b5c) counted each entry with ``sys.getsizeof`` when it came in
and measured it again when it left. A str's ``sys.getsizeof`` grows once C or Rust code reads it as UTF-8 (CPython
keeps that copy in the object: a Hugging Face tokenizer's ``encode``, sqlite3, ``compile``), which a non-ASCII passage
shown to a model gets: each eviction then took off more than its entry had added, the count fell below what the memo
held, and the memo grew past its bound with every such text (a 256 KiB bound held 2.3 MB after 2,000 passages of
2 kB, and more with each further one: /work/scratch/s54/r2/probe_memo_drift.py, .old.txt / .new.txt). Each entry now
keeps the bytes counted for it, and leaves with them."""

from __future__ import annotations

import random
import sqlite3
import sys
import tracemalloc

import pytest

import retrieval.metrics as rm
from retrieval import has_answer


@pytest.fixture(autouse=True)
def _empty_memo():
    rm._clear_words()
    yield
    rm._clear_words()


def _read_as_utf8(db: sqlite3.Connection, text: str) -> None:
    """What a tokenizer's ``encode(text)`` does to ``text`` too: CPython caches its UTF-8 in the str."""
    db.execute("select ?", (text,))


def test_a_text_read_as_utf8_while_kept_leaves_with_the_bytes_it_came_in_with(monkeypatch):
    monkeypatch.setattr(rm, "WORDS_MEMO_BYTES", 64 << 10)
    has_answer("warm up", ["x"])  # the tokenizer built before the measure
    rm._clear_words()
    rng = random.Random(54)
    words = ["Zürich", "café", "naïve", "São", "Köln", "the", "of"] + [f"w{i}" for i in range(500)]
    db = sqlite3.connect(":memory:")
    probe = " ".join(rng.choice(words) for _ in range(300))
    size = sys.getsizeof(probe)
    _read_as_utf8(db, probe)
    assert sys.getsizeof(probe) > size + 1000  # the effect this test is about (else it could not fail)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(600):
            text = " ".join(rng.choice(words) for _ in range(300))  # ~2 kB, non-ASCII
            assert has_answer(text, ["Paris"]) is False
            _read_as_utf8(db, text)
        del text
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # held: what was counted plus each kept text's UTF-8 copy (~2 kB a text), the answer and the containers; on the
    # old code 600 texts held ~700 KiB (the count drifted ~2 kB a text pushed out), growing with each further text
    assert len(rm._memo) < 30, len(rm._memo)
    assert kept < 2 * (64 << 10) + (32 << 10), kept
    counted = sum(n for _, n in rm._memo.values())
    assert rm._memo_bytes == counted <= 64 << 10  # the count is the entries' own
