"""A corpus folder's hidden files (``.extra.jsonl``): :func:`retrieval.corpus.load_corpus` read every top-level
file matching CORPUS_FILE, dot-files included, while a leaderboard's run key hashes a corpus folder with
:func:`retrieval.io.tree_fingerprint`, which skips names starting with ``.`` (leaderboards/keys.py task_data_files).
Adding ``<folder>/.extra.jsonl`` after a cell ran changed the passages (31 instead of 30; fresh BM25 ranked the
new passage first) but not the key, so ``tokrag leaderboard run`` reused the finished cell with stale passages
(breaker b4, s47). Now the loader skips hidden files (with a WARNING naming them): the files read are among the
files keyed, and the corpus fingerprint changes exactly when a keyed file's passages change."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from retrieval.corpus import check_corpus_files, load_corpus
from retrieval.errors import DataError
from retrieval.io import HashMemo, tree_fingerprint


def _passage(pid: str, text: str) -> str:
    return json.dumps({"id": pid, "title": pid.upper(), "text": text}) + "\n"


def _folder(tmp_path: Path) -> Path:
    d = tmp_path / "corpusdir"
    d.mkdir()
    (d / "a.jsonl").write_text(_passage("a1", "Paris is the capital of France.") + _passage("a2", "Rome is in Italy."))
    (d / "b.jsonl").write_text(_passage("b1", "Tokyo is the capital of Japan."))
    (d / ".extra.jsonl").write_text(_passage("x1", "The capital of France is Lyons, not Paris."))
    return d


def _key(d: Path, tmp_path: Path) -> str:
    """The run key's fingerprint of a corpus folder, as leaderboards.keys.task_data_files computes it."""
    return tree_fingerprint(d, HashMemo(tmp_path / "memo.json"), None, max_bytes=None)


def test_hidden_corpus_file_is_skipped_with_one_warning_naming_it(tmp_path, caplog) -> None:
    d = _folder(tmp_path)
    with caplog.at_level(logging.WARNING, logger="retrieval.corpus"):
        c = load_corpus(d)
    assert [p.docid for p in c] == ["a1", "a2", "b1"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and ".extra.jsonl" in warnings[0] and str(d) in warnings[0]
    caplog.clear()
    (d / ".extra.jsonl").unlink()
    with caplog.at_level(logging.WARNING, logger="retrieval.corpus"):
        assert load_corpus(d).fingerprint == c.fingerprint  # the hidden file never counted
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_every_file_whose_edit_changes_the_passages_changes_the_run_key(tmp_path) -> None:
    """Edit each file of the folder (hidden one included) in turn: whenever the loaded corpus's fingerprint (the
    BM25/dense index key) changes, the run key's tree_fingerprint changes too; each visible file does both."""
    d = _folder(tmp_path)
    changed = []
    for name in ("a.jsonl", "b.jsonl", ".extra.jsonl"):
        before_corpus, before_key = load_corpus(d).fingerprint, _key(d, tmp_path)
        with open(d / name, "a", encoding="utf-8") as f:
            f.write(_passage(f"new-{name.strip('.').split('.')[0]}", "Lyons is the capital of France."))
        after_corpus, after_key = load_corpus(d).fingerprint, _key(d, tmp_path)
        if after_corpus != before_corpus:
            changed.append(name)
            assert after_key != before_key, f"{name}: the passages changed but the run key did not"
    assert changed == ["a.jsonl", "b.jsonl"]


def test_a_new_hidden_file_changes_neither_passages_nor_key(tmp_path) -> None:
    d = _folder(tmp_path)
    (d / ".extra.jsonl").unlink()
    before = (load_corpus(d).fingerprint, _key(d, tmp_path))
    (d / ".extra.jsonl").write_text(_passage("x1", "The capital of France is Lyons, not Paris."))
    assert (load_corpus(d).fingerprint, _key(d, tmp_path)) == before


def test_precheck_skips_hidden_files_as_the_loader_does(tmp_path) -> None:
    d = _folder(tmp_path)
    (d / ".broken.jsonl").write_text("{not json\n")
    check_corpus_files(d)  # the loader never reads it, so the precheck does not refuse it
    assert len(load_corpus(d)) == 3


def test_folder_of_only_hidden_files_names_them(tmp_path) -> None:
    d = tmp_path / "hid"
    d.mkdir()
    (d / ".x.jsonl").write_text(_passage("x1", "text"))
    with pytest.raises(DataError, match=r"holds no \.jsonl/\.json/\.tsv files \(hidden files are skipped: \.x\.jsonl"):
        load_corpus(d)
