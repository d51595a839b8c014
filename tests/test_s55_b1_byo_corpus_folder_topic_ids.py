"""Bring-your-own corpus folders and topics files whose data was silently lost or misnumbered (breaker b1, s55).

* A corpus folder entry named as a corpus file that cannot be read (a symbolic link to a missing file, a loop of
  links, a named pipe): ``Path.is_file`` is false for it, so the loader left it out without a word and the corpus
  held only the other files' passages. Now a DataError names the folder and the entry.
* Corpus data a folder does not read (``part2.ndjson``: read as JSONL when it is the corpus file, not in a folder;
  ``part2.jsonl.bz2``; a subfolder of ``.jsonl`` files): one WARNING names them (the passages stay unread, as
  documented: a folder is its top-level ``.jsonl``/``.json``/``.tsv`` files).
* BEIR's ``queries.jsonl`` (``{"_id", "text"}``): the corpus reader reads ``_id`` but the topics reader did not, so
  every question got the id ``q<row>``: the run's ids matched none of the user's, and ``retrieve eval`` scored no
  question of a run retrieved elsewhere under the real ids. Now ``_id`` is a topics id field; an id field that is
  still not read (``query_id``) gets one WARNING.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from retrieval.cli import main
from retrieval.corpus import check_corpus_files, load_corpus, load_queries
from retrieval.errors import DataError


def _rec(pid: str, text: str) -> str:
    return json.dumps({"id": pid, "title": pid.upper(), "text": text}) + "\n"


def _folder(tmp_path: Path) -> Path:
    d = tmp_path / "corpus dir é"  # a path with a space and a non-ASCII letter
    d.mkdir()
    (d / "part1.jsonl").write_text(_rec("a1", "Paris is the capital of France."), encoding="utf-8")
    return d


@pytest.mark.parametrize("kind", ["dangling", "loop", "fifo"])
def test_unreadable_corpus_entry_in_a_folder_is_refused_by_both_checks(tmp_path, kind) -> None:
    d = _folder(tmp_path)
    entry = d / "part2.jsonl"
    if kind == "dangling":
        entry.symlink_to(tmp_path / "moved" / "part2.jsonl")
        what = "which does not exist (or a loop of links)"
    elif kind == "loop":
        entry.symlink_to(d / "other.jsonl")
        (d / "other.jsonl").symlink_to(entry)
        what = "which does not exist (or a loop of links)"
    else:
        os.mkfifo(entry)
        what = "is no regular file (a named pipe, a socket or a device)"
    for check in (load_corpus, check_corpus_files):
        with pytest.raises(DataError) as exc:
            check(d)
        msg = str(exc.value)
        assert "\n" not in msg and msg.startswith(f"corpus folder {d}: ")
        assert ("part2.jsonl is " if kind == "fifo" else "is a symbolic link to ") in msg or "other.jsonl" in msg
        assert what in msg and "remove the entry" in msg
    entry.unlink()
    if kind == "loop":
        (d / "other.jsonl").unlink()
    assert [p.docid for p in load_corpus(d)] == ["a1"]


def test_corpus_data_a_folder_does_not_read_gets_one_warning(tmp_path, caplog) -> None:
    d = _folder(tmp_path)
    (d / "part2.ndjson").write_text(_rec("b1", "Tokyo is the capital of Japan."), encoding="utf-8")
    (d / "part3.jsonl.bz2").write_bytes(b"BZh91AY&SY")
    (d / "more").mkdir()
    (d / "more" / "part4.jsonl").write_text(_rec("c1", "Rome is the capital of Italy."), encoding="utf-8")
    (d / "notes.txt").write_text("hand-written notes, not JSON\n", encoding="utf-8")
    (d / "empty").mkdir()
    with caplog.at_level(logging.WARNING, logger="retrieval.corpus"):
        c = load_corpus(d)
    assert [p.docid for p in c] == ["a1"]  # as documented: a folder is its top-level corpus files
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"corpus folder {d}: not reading more/, part2.ndjson, part3.jsonl.bz2 (a corpus folder is its "
                        "top-level .jsonl/.json/.tsv files, each also .gz; other files and subfolders are not read); "
                        "rename a file to .jsonl (recompress as .gz) or move it to the folder's top level to read it"]
    caplog.clear()
    for name in ("part2.ndjson", "part3.jsonl.bz2", "more/part4.jsonl"):
        (d / name).unlink()
    with caplog.at_level(logging.WARNING, logger="retrieval.corpus"):
        assert load_corpus(d).fingerprint == c.fingerprint
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_beir_topics_keep_their_underscore_ids(tmp_path, caplog) -> None:
    topics = tmp_path / "queries.jsonl"
    topics.write_text(json.dumps({"_id": "b7", "text": "who wrote hamlet", "metadata": {}}) + "\n"
                      + json.dumps({"_id": 12, "text": "capital of france", "metadata": {}}) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="retrieval.corpus"):
        assert load_queries(topics) == {"b7": "who wrote hamlet", "12": "capital of france"}
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_an_id_field_that_is_not_read_is_named_once(tmp_path, caplog) -> None:
    topics = tmp_path / "questions.jsonl"
    topics.write_text("".join(json.dumps({"query_id": f"x{i}", "question": f"question {i}"}) + "\n" for i in range(3)),
                      encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="retrieval.corpus"):
        assert load_queries(topics) == {"q0": "question 0", "q1": "question 1", "q2": "question 2"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"{topics}:1: 'query_id' is not read as the query id (ids are read from qid/id/qId/_id), so "
                        "questions without those get the id q<row>; rename the field to 'qid' to keep your ids"]


def test_retrieve_eval_scores_a_run_under_beir_ids(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(_rec("d1", "Paris is the capital of France.") + _rec("d2", "Berlin is the capital of Germany."),
                      encoding="utf-8")
    topics = tmp_path / "queries.jsonl"
    topics.write_text(json.dumps({"_id": "b2", "text": "capital of Germany", "answers": ["Berlin"], "gold_docids": ["d2"]})
                      + "\n" + json.dumps({"_id": "b1", "text": "capital of France", "answers": ["Paris"],
                                           "gold_docids": ["d1"]}) + "\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("b1 Q0 d1 1 2.0 x\nb1 Q0 d2 2 1.0 x\nb2 Q0 d1 1 2.0 x\nb2 Q0 d2 2 1.0 x\n", encoding="utf-8")
    assert main(["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics), "--json",
                 "--k", "1", "2"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["num_queries"] == 2
    assert m["gold@1"] == 0.5 and m["gold@2"] == 1.0
    assert m["answer_recall@1"] == 0.5 and m["answer_recall@2"] == 1.0


def test_a_corpus_or_topics_path_that_is_a_broken_link_says_so(tmp_path) -> None:
    """``--corpus corpus.jsonl`` where the link loops (or its target moved) said only 'does not exist', beside a
    file ``ls`` lists; the line now names the link's target."""
    from retrieval.errors import ConfigError
    loop = tmp_path / "corpus.jsonl"
    loop.symlink_to(tmp_path / "corpus.jsonl")
    with pytest.raises(ConfigError) as exc:
        load_corpus(loop)
    assert str(exc.value) == (f"corpus path {loop} does not exist (a symbolic link to {loop}, which does not exist, or "
                              "a loop of links; fix or remove the link)")
    topics = tmp_path / "topics.jsonl"
    topics.symlink_to("moved/topics.jsonl")
    with pytest.raises(ConfigError) as exc:
        load_queries(topics)
    assert str(exc.value) == (f"topics file {topics} does not exist (a symbolic link to moved/topics.jsonl, which does "
                              "not exist, or a loop of links; fix or remove the link)")
