"""A JSONL corpus record with both ``title`` and ``contents`` is read, not refused (review r4 of b1's 80f0f82, s55).

Anserini's JsonCollection (Pyserini) indexes ``contents`` and keeps any other field, ``title`` included, as a field of
its own. Before 80f0f82 such a record lost its ``title`` without a word (``{"title": "Hamlet", "contents": "A
tragedy ..."}`` had no title; ``"Capital\\nof France."`` was titled ``Capital``); 80f0f82 refused it, so a corpus
that built before stopped with a DataError. It is now read as written: the ``title`` field is the title and the whole
``contents`` the text, the same passage as ``{"id", "title", "text"}``. A title equal to the first line of
``contents``, empty or null reads as before (tests/test_s55_b1_contents_with_title.py), so those corpora keep their
fingerprint.
"""

from __future__ import annotations

import json

from retrieval.corpus import check_corpus_files, load_corpus


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def test_a_title_beside_contents_is_the_title_and_contents_the_text(tmp_path) -> None:
    p = _write(tmp_path / "corpus.jsonl", [
        {"id": "p0", "contents": "Rome\nRome is in Italy."},
        {"id": "p1", "title": "Hamlet", "contents": "A tragedy by Shakespeare."},
        {"id": "p2", "title": "Paris", "contents": "Capital\nof France."},
    ])
    assert check_corpus_files(p) is None
    c = load_corpus(p)
    assert [(x.docid, x.title, x.text) for x in c] == [
        ("p0", "Rome", "Rome is in Italy."),
        ("p1", "Hamlet", "A tragedy by Shakespeare."),
        ("p2", "Paris", "Capital\nof France."),
    ]
    # the same passages as the {id, title, text} form of the file: same fingerprint, so the same index and run keys
    q = _write(tmp_path / "same.jsonl", [{"id": x.docid, "title": x.title, "text": x.text} for x in c])
    assert load_corpus(q).fingerprint == c.fingerprint


def test_a_folder_of_such_files_reads_every_title(tmp_path) -> None:
    d = tmp_path / "my corpus"
    d.mkdir()
    _write(d / "a.jsonl", [{"id": "a1", "title": "Faust", "contents": "A play by Goethe."}])
    _write(d / "b.jsonl", [{"id": "b1", "title": "", "contents": "Weimar\nA city in Thuringia."}])
    assert check_corpus_files(d) is None
    assert [(x.docid, x.title, x.text) for x in load_corpus(d)] == [
        ("a1", "Faust", "A play by Goethe."), ("b1", "Weimar", "A city in Thuringia.")]
