"""A JSONL corpus record with both ``title`` and ``contents`` (breaker b1, s55).

With ``contents`` (Pyserini's JsonCollection) the title is the first line of ``contents``; a ``title`` field beside it
was dropped without a word: ``{"id": "p1", "title": "Hamlet", "contents": "A tragedy by Shakespeare."}`` was indexed
and shown to the model with no title, and ``{"title": "Paris", "contents": "Capital\\nof France."}`` got the title
``Capital``. Now (r4's review of b1's 80f0f82, which refused it) such a record is read with the ``title`` field as its
title and the whole ``contents`` as its text; a ``title`` equal to the first line of ``contents`` (or empty) reads as
before.
"""

from __future__ import annotations

import json

import pytest

from retrieval.corpus import check_corpus_files, load_corpus


def _corpus(tmp_path, *recs):
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return p


@pytest.mark.parametrize("contents", ["A tragedy by Shakespeare.", "Capital\nof France."])
def test_a_title_beside_contents_is_read_not_dropped(tmp_path, contents) -> None:
    # r4's review of 80f0f82: such a record is read (the 'title' field the title, the whole 'contents' the text, as
    # Anserini's JsonCollection keeps a 'title' field beside 'contents'), not refused; see test_s55_r4_contents_with_title
    p = _corpus(tmp_path, {"id": "p0", "contents": "Rome\nRome is in Italy."},
                {"id": "p1", "title": "Hamlet", "contents": contents})
    assert check_corpus_files(p) is None
    assert [(x.docid, x.title, x.text) for x in load_corpus(p)] == [
        ("p0", "Rome", "Rome is in Italy."), ("p1", "Hamlet", contents)]


def test_a_title_equal_to_the_first_line_or_empty_reads_as_before(tmp_path) -> None:
    p = _corpus(tmp_path, {"id": "p1", "title": "Paris", "contents": '"Paris"\nParis is the capital of France.'},
                {"id": "p2", "title": "", "contents": "Rome is in Italy."},
                {"id": "p3", "title": None, "contents": "Berlin\nBerlin is in Germany."})
    assert [(x.docid, x.title, x.text) for x in load_corpus(p)] == [
        ("p1", "Paris", "Paris is the capital of France."), ("p2", "", "Rome is in Italy."),
        ("p3", "Berlin", "Berlin is in Germany.")]
