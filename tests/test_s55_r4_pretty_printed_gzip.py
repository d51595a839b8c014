"""The conversion command of the pretty-printed JSON line for a gzip file (review r4 of b1's 1488af9, s55).

b1's line for a corpus or topics file of JSON written over several lines ends in a command to convert it. For a gzip
file (``.jsonl.gz``, documented as a corpus format) it said ``jq -c '.[]' c.jsonl.gz > c.jsonl``: jq reads no gzip
(it fails with a parse error), and the shell empties ``c.jsonl`` before jq runs, so a ``c.jsonl`` kept beside the
``.gz`` (often the very file it was made from) was lost. The command now pipes a gzip file (told by its content)
through ``gunzip -c`` and writes ``.lines.jsonl`` where the ``.jsonl`` name exists.
"""

from __future__ import annotations

import gzip
import json

import pytest

from retrieval.corpus import check_corpus_files, load_corpus, load_queries
from retrieval.errors import DataError

ARRAY = json.dumps([{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}], indent=2)
OBJECT = json.dumps({"qid": "1", "question": "capital of france"}, indent=2)
HEAD = "JSON written over several lines (pretty-printed) is not JSON Lines; a {} file holds one JSON object per line: "


def test_gzip_corpus_is_piped_through_gunzip_and_a_file_beside_it_is_not_overwritten(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my data").mkdir()
    (tmp_path / "my data" / "c.jsonl.gz").write_bytes(gzip.compress(ARRAY.encode()))
    (tmp_path / "my data" / "c.jsonl").write_text(ARRAY, encoding="utf-8")  # the file the .gz was made from
    for check in (load_corpus, check_corpus_files):
        with pytest.raises(DataError) as exc:
            check("my data/c.jsonl.gz")
        assert str(exc.value) == ("my data/c.jsonl.gz:1: " + HEAD.format("corpus") + "convert it (gunzip -c "
                                  "'my data/c.jsonl.gz' | jq -c '.[]' > 'my data/c.lines.jsonl')")
    with pytest.raises(DataError) as exc:  # the plain file: jq reads it, and c.jsonl is itself, so .lines.jsonl
        load_corpus("my data/c.jsonl")
    assert str(exc.value).endswith("convert it (jq -c '.[]' 'my data/c.jsonl' > 'my data/c.lines.jsonl')")


def test_gzip_topics_by_content_get_gunzip(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_bytes(gzip.compress(OBJECT.encode()))  # gzip without a .gz name: read by content
    with pytest.raises(DataError) as exc:
        load_queries("q.jsonl")
    assert str(exc.value) == ("q.jsonl:1: " + HEAD.format("topics") + "convert it (gunzip -c q.jsonl | jq -c . > "
                              "q.lines.jsonl)")
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(OBJECT.encode()))  # no t.jsonl beside it: that name
    with pytest.raises(DataError) as exc:
        load_queries("t.jsonl.gz")
    assert str(exc.value).endswith("convert it (gunzip -c t.jsonl.gz | jq -c . > t.jsonl)")
