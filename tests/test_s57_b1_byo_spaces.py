"""A bring-your-own ``questions`` value with a space copied around it (s57 b1): ``"q.jsonl "`` did not end with
``.jsonl``, so it was taken for a hub id; the pre-load check skipped it and the task build, after the model load, said
``is not a file and cannot be loaded from the hub (split 'test'): ConnectionError``. A hub id holds no whitespace:
now it is "no such file", naming the file that exists without the spaces."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks.byo import is_hub_id, load_questions


@pytest.mark.parametrize("spec", ["q.jsonl ", " q.jsonl", "q.jsonl\t", "my qa"])
def test_whitespace_is_no_hub_id(spec):
    assert is_hub_id(spec) is False


@pytest.mark.parametrize("spec", ["q.jsonl ", "  q.jsonl"])
def test_spaces_around_an_existing_file_are_named(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text('{"question": "capital of france", "answers": ["Paris"]}\n')
    with pytest.raises(ConfigError) as exc:
        load_questions(spec)
    assert str(exc.value) == (f"questions {spec!r}: no such file (relative to the working directory {tmp_path}); "
                              "without the spaces around it, 'q.jsonl' exists: remove them (give a JSONL file with "
                              "question and answers per line, or a hub id)")


def test_spaces_around_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        load_questions("nope.jsonl ")
    assert str(exc.value) == (f"questions 'nope.jsonl ': no such file (relative to the working directory {tmp_path}) "
                              "(give a JSONL file with question and answers per line, or a hub id)")
