"""A JSON object that gives the same key twice was read with its last value, without a word (s57 b1, finding 1):
``{"id": "q1", ..., "id": "q2"}`` was question ``q2``, a corpus row passage ``p2``, a ctxs passage the second id.
``retrieval.io.read_jsonl`` (questions, corpus, topics, ctxs runs) and the Wikipedia summaries reader now refuse it in
one line naming the file, the line and the key, at any depth of the line (a ctxs passage's ``id`` is nested)."""

from __future__ import annotations

import glob
import json
import os

import pytest

from retrieval.cache import read_ctxs_jsonl
from retrieval.corpus import load_corpus, load_queries
from retrieval.errors import DataError
from retrieval.io import read_jsonl
from tasks.byo import load_questions

SHARED = "/work/shared/data"


def _line(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _msg(where: str, key: str) -> str:
    return (f"{where}: key {key!r} is given twice in one JSON object (a JSON reader keeps only the last value, "
            "silently); keep the one you mean and remove the other")


def test_questions_with_an_id_twice_are_refused(tmp_path):
    q = _line(tmp_path / "q.jsonl", '{"id": "q0", "question": "what", "answers": ["b"]}\n'
                                    '{"id": "q1", "question": "who", "answers": ["a"], "id": "q2"}\n')
    with pytest.raises(DataError) as exc:
        load_questions(q)
    assert str(exc.value) == _msg(f"{q}:2", "id")


def test_a_corpus_row_with_an_id_twice_is_refused(tmp_path):
    c = _line(tmp_path / "c.jsonl", '{"id": "p1", "title": "A", "text": "alpha", "id": "p2"}\n')
    with pytest.raises(DataError) as exc:
        load_corpus(c)
    assert str(exc.value) == _msg(f"{c}:1", "id")


def test_topics_with_a_question_twice_are_refused(tmp_path):
    t = _line(tmp_path / "t.jsonl", '{"qid": "1", "question": "who wrote hamlet", "question": "capital of france"}\n')
    with pytest.raises(DataError) as exc:
        load_queries(t)
    assert str(exc.value) == _msg(f"{t}:1", "question")


def test_a_nested_duplicate_in_a_ctxs_passage_is_refused(tmp_path):
    # the passage's id is one level down: a check of the row's own keys alone would have passed it as 'p2'
    run = _line(tmp_path / "run.jsonl", '{"qid": "1", "ctxs": [{"id": "p1", "text": "t", "id": "p2"}]}\n')
    with pytest.raises(DataError) as exc:
        read_ctxs_jsonl(run)
    assert str(exc.value) == _msg(f"{run}:1", "id")


def test_the_same_key_in_different_objects_and_crlf_bom_lines_still_read(tmp_path):
    p = tmp_path / "ok.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "q1", "a": {"id": 1, "x": [{"id": 2}, {"id": 3}]}, "b": {"id": 4}}\r\n\r\n'
                  b'{"id": "q2"}\n')
    assert list(read_jsonl(p)) == [(1, {"id": "q1", "a": {"id": 1, "x": [{"id": 2}, {"id": 3}]}, "b": {"id": 4}}),
                                   (3, {"id": "q2"})]


def test_unique_keys_is_the_plain_dict_or_names_the_first_repeated_key():
    from retrieval.io import DuplicateKeyError, unique_keys

    assert unique_keys([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    with pytest.raises(DuplicateKeyError) as exc:
        unique_keys([("a", 1), ("b", 2), ("b", 3), ("a", 4)])
    assert exc.value.key == "b"


def test_a_wikipedia_summaries_file_with_a_title_twice_is_refused(tmp_path):
    # the second article replaced the first one in the corpus
    w = _line(tmp_path / "summaries.json", json.dumps({"Hamlet": {"title": "Hamlet", "extract": "A play."}})[:-1]
              + ', "Hamlet": {"title": "Hamlet", "extract": "Another text."}}')
    with pytest.raises(DataError) as exc:
        load_corpus(w, fmt="wiki-summaries")
    assert str(exc.value) == _msg(w, "Hamlet")


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="the shared data folder is not here")
def test_every_shared_jsonl_file_still_reads():
    counts = {os.path.relpath(p, SHARED): sum(1 for _ in read_jsonl(p))
              for p in sorted(glob.glob(f"{SHARED}/**/*.jsonl*", recursive=True))}
    assert counts == {"dpr_wiki_sample1k/sample_data.jsonl": 1000, "nq_open/NQ-open.dev.jsonl": 3610,
                      "nq_open_oracle/nq-open-oracle.jsonl.gz": 2655}
    assert len(load_corpus(f"{SHARED}/wiki_vital_summaries/summaries_en-us.json")) == 10033
