"""A corpus or topics file of pretty-printed JSON (``jq .``, ``json.dump(..., indent=2)``) (breaker b1, s55).

The line reader reported valid JSON as ``file:1: malformed JSON (Expecting property name enclosed in double quotes
at column 2); fix or remove the line``: no line is wrong, the file is JSON over several lines. Now one line says so
and gives the ``jq`` command that writes JSON Lines. Files of one record per line, and a pretty-printed Wikipedia
summaries ``.json`` file (one object of ``{title, extract}`` records, a corpus format), read as before.
"""

from __future__ import annotations

import json

import pytest

from retrieval.corpus import check_corpus_files, load_corpus, load_queries
from retrieval.errors import DataError

RECS = [{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."},
        {"id": "p2", "title": "Rome", "text": "Rome is the capital of Italy."}]


def test_pretty_printed_jsonl_corpus_is_named_with_the_jq_command(tmp_path) -> None:
    p = tmp_path / "corpus.jsonl"
    p.write_text("\n".join(json.dumps(r, indent=2) for r in RECS) + "\n", encoding="utf-8")
    want = (f"{p}:1: JSON written over several lines (pretty-printed) is not JSON Lines; a corpus file holds one JSON "
            f"object per line: convert it (jq -c . {p} > {tmp_path / 'corpus.lines.jsonl'})")
    for check in (load_corpus, check_corpus_files):
        with pytest.raises(DataError) as exc:
            check(p)
        assert str(exc.value) == want


def test_pretty_printed_array_and_json_record(tmp_path) -> None:
    arr = tmp_path / "corpus.jsonl"
    arr.write_text("\n\n" + json.dumps(RECS, indent=2), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_corpus(arr)
    assert str(exc.value) == (f"{arr}:3: JSON written over several lines (pretty-printed) is not JSON Lines; a corpus "
                              f"file holds one JSON object per line: convert it (jq -c '.[]' {arr} > "
                              f"{tmp_path / 'corpus.lines.jsonl'})")
    one = tmp_path / "one.json"
    one.write_text(json.dumps(RECS[0], indent=2), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_corpus(one)
    assert str(exc.value).startswith(f"{one}:1: JSON written over several lines (pretty-printed) is not JSON Lines")
    assert str(exc.value).endswith(f"(jq -c . {one} > {tmp_path / 'one.jsonl'})")


def test_pretty_printed_topics(tmp_path) -> None:
    t = tmp_path / "topics.jsonl"
    t.write_text("\ufeff" + json.dumps({"qid": "1", "question": "capital of France"}, indent=2), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_queries(t)
    assert str(exc.value) == (f"{t}:1: JSON written over several lines (pretty-printed) is not JSON Lines; a topics "
                              f"file holds one JSON object per line: convert it (jq -c . {t} > "
                              f"{tmp_path / 'topics.lines.jsonl'})")


def test_one_record_per_line_and_pretty_wikipedia_summaries_read_as_before(tmp_path) -> None:
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in RECS), encoding="utf-8")
    assert [x.docid for x in load_corpus(p)] == ["p1", "p2"]
    w = tmp_path / "summaries.json"
    w.write_text(json.dumps({"Paris": {"title": "Paris", "extract": "Paris is the capital of France."}}, indent=2),
                 encoding="utf-8")
    assert [(x.title, x.text) for x in load_corpus(w)] == [("Paris", "Paris is the capital of France.")]
    t = tmp_path / "topics.jsonl"
    t.write_text(json.dumps({"qid": "1", "question": "capital of France"}) + "\n", encoding="utf-8")
    assert load_queries(t) == {"1": "capital of France"}
