"""The corpus precheck (:func:`retrieval.corpus.check_corpus_files`, run by ``tasks.precheck`` before a model loads
and by ``tokrag leaderboard run [--estimate]`` before the first cell) reads a corpus's first records with the loader's
own reader: a first line without ``text`` or an id, or malformed JSON, was found only after lm-eval had loaded the
model (leaderboards/README.md promises "a corpus's first lines")."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.corpus import check_corpus_files, load_corpus
from retrieval.errors import DataError

GOOD = {"id": "p1", "title": "Loire", "text": "The Loire is 1012 kilometres long."}


def _write(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _load_error(path: Path) -> str:
    with pytest.raises(DataError) as exc:
        load_corpus(path)
    return str(exc.value)


@pytest.mark.parametrize("name,lines,expected", [
    ("no_text.jsonl", [{"id": "p1", "title": "Loire", "body": "x"}, GOOD],
     "no_text.jsonl:1: missing field 'text' (record has ['body', 'id', 'title'])"),
    ("no_id.jsonl", [{"title": "Loire", "text": "x"}],
     "no_id.jsonl:1: missing field 'id' (record has ['text', 'title'])"),
    ("malformed.jsonl", [GOOD, dict(GOOD, id="p2"), '{"id": "p3", "text": "x"'], "malformed.jsonl:3: malformed JSON"),
    ("lines.json", [dict(GOOD, text=None)], "lines.json:1: field 'text' must be a string, got null"),
    ("gz.jsonl.gz", [GOOD, {"id": "p2", "contents": "x", "text": "y"}], "gz.jsonl.gz:2: passage 'p2' has both"),
    ("jsonc.jsonl", [{"id": "p1", "contents": "Loire\nThe Loire."}, {"id": "p2", "text": "x"}],
     "jsonc.jsonl:2: missing field 'contents' (record has ['id', 'text'])"),
])
def test_a_bad_first_record_is_refused_with_the_loaders_message(tmp_path, name, lines, expected):
    corpus = _write(tmp_path / name, lines)
    with pytest.raises(DataError) as exc:
        check_corpus_files(corpus)
    assert str(exc.value) == _load_error(corpus)
    assert str(exc.value).startswith(str(tmp_path / expected)) and "\n" not in str(exc.value)


def test_a_folder_is_checked_file_by_file(tmp_path):
    _write(tmp_path / "c" / "a.jsonl", [GOOD])
    _write(tmp_path / "c" / "b.jsonl", [dict(GOOD, id="p2"), {"id": "p3", "txt": "x"}])
    with pytest.raises(DataError) as exc:
        check_corpus_files(tmp_path / "c")
    assert str(exc.value) == _load_error(tmp_path / "c") == \
        f"{tmp_path / 'c' / 'b.jsonl'}:2: missing field 'text' (record has ['id', 'txt'])"


def test_good_corpora_pass_and_only_the_first_records_are_read(tmp_path):
    from retrieval.corpus import CHECK_RECORDS

    check_corpus_files(_write(tmp_path / "ok.jsonl", ["", GOOD, dict(GOOD, id="p2", title=None)]))
    check_corpus_files(_write(tmp_path / "ok.ndjson", [GOOD]))
    check_corpus_files(_write(tmp_path / "ok.json", [GOOD, dict(GOOD, id="p2")]))
    wiki = tmp_path / "wiki.json"  # Wikipedia summaries: one pretty-printed JSON object, left to the loader
    wiki.write_text(json.dumps({"Loire": {"title": "Loire", "extract": "The Loire is a river."}}, indent=2))
    check_corpus_files(wiki)
    assert len(load_corpus(wiki)) == 1
    late = _write(tmp_path / "late.jsonl", [dict(GOOD, id=f"p{i}") for i in range(CHECK_RECORDS)] + [{"id": "bad"}])
    check_corpus_files(late)  # record 6: the loader's to report (the precheck reads the first lines only)
    assert _load_error(late).startswith(f"{late}:{CHECK_RECORDS + 1}: missing field 'text'")


def test_lm_eval_refuses_the_corpus_before_loading_the_model(tmp_path):
    """The model path does not exist: the error is the corpus's, so the model was never loaded."""
    questions = _write(tmp_path / "q.jsonl", [{"id": "l", "question": "How long is the Loire?", "answers": ["1012 km"]}])
    corpus = _write(tmp_path / "passages.jsonl", [{"id": "p1", "title": "Loire", "passage": "The Loire is long."}])
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lm_eval"), "--model", "rag-none", "--model_args",
         f"pretrained={tmp_path / 'no-such-model'}", "--tasks", "rag_qa_bm25", "--limit", "1",
         "--metadata", json.dumps({"questions": str(questions), "corpus": str(corpus)})],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "no-such-model" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].endswith(f"{corpus}:1: missing field 'text' (record has ['id', 'passage', "
                                                  "'title'])"), proc.stderr[-2000:]
