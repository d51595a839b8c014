"""A JSONL corpus record with both ``title`` and ``contents`` (breaker b1, s55).

With ``contents`` (Pyserini's JsonCollection) the title is the first line of ``contents``; a ``title`` field beside it
was dropped without a word: ``{"id": "p1", "title": "Hamlet", "contents": "A tragedy by Shakespeare."}`` was indexed
and shown to the model with no title, and ``{"title": "Paris", "contents": "Capital\\nof France."}`` got the title
``Capital``. Now such a record is one DataError naming file, line and passage; a ``title`` equal to the first line of
``contents`` (or empty) reads as before.
"""

from __future__ import annotations

import json

import pytest

from retrieval.corpus import check_corpus_files, load_corpus
from retrieval.errors import DataError


def _corpus(tmp_path, *recs):
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return p


@pytest.mark.parametrize("contents, first", [("A tragedy by Shakespeare.", "none ('contents' is one line)"),
                                             ("Capital\nof France.", "'Capital'")])
def test_a_title_beside_contents_is_refused_not_dropped(tmp_path, contents, first) -> None:
    p = _corpus(tmp_path, {"id": "p0", "contents": "Rome\nRome is in Italy."},
                {"id": "p1", "title": "Hamlet", "contents": contents})
    for check in (load_corpus, check_corpus_files):
        with pytest.raises(DataError) as exc:
            check(p)
        assert str(exc.value) == (f"{p}:2: passage 'p1' has a 'title' field ('Hamlet') that would be dropped: with "
                                  f"'contents' the title is its first line (Pyserini's JsonCollection), here {first}; "
                                  "rename 'contents' to 'text' to keep the 'title' field, or remove 'title'")


def test_a_title_equal_to_the_first_line_or_empty_reads_as_before(tmp_path) -> None:
    p = _corpus(tmp_path, {"id": "p1", "title": "Paris", "contents": '"Paris"\nParis is the capital of France.'},
                {"id": "p2", "title": "", "contents": "Rome is in Italy."},
                {"id": "p3", "title": None, "contents": "Berlin\nBerlin is in Germany."})
    assert [(x.docid, x.title, x.text) for x in load_corpus(p)] == [
        ("p1", "Paris", "Paris is the capital of France."), ("p2", "", "Rome is in Italy."),
        ("p3", "Berlin", "Berlin is in Germany.")]
