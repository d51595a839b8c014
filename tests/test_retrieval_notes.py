"""What ``tokrag retrieve`` and the JVM print besides the run: the one-line note on questions that got fewer than
``--hits`` passages, and no Lucene INFO line (``Using MemorySegmentIndexInput with Java 21``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.cli import main

REPO = Path(__file__).resolve().parents[1]
PASSAGES = [
    {"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare around 1600."},
    {"id": "p2", "title": "William Shakespeare", "text": "William Shakespeare was an English playwright who wrote Hamlet."},
    {"id": "p3", "title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"id": "p4", "title": "Mona Lisa", "text": "The Mona Lisa is a portrait painted by Leonardo da Vinci."},
]
TOPICS = [  # BM25 finds: q1 p2, p1; q2 p3; q3 p1, p4 (tragedy, painted); q4 none
    {"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
    {"id": "q2", "question": "capital of france", "answers": ["Paris"]},
    {"id": "q3", "question": "which tragedy was painted", "answers": ["Hamlet"]},
    {"id": "q4", "question": "zebra", "answers": ["stripes"]},
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A four-passage corpus, its topics and a cache folder."""
    root = tmp_path_factory.mktemp("notes")
    corpus, topics = root / "passages.jsonl", root / "topics.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    topics.write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    return {"root": root, "corpus": str(corpus), "topics": str(topics), "cache": ["--cache-dir", str(root / "cache")]}


def _counts(ctxs_file: Path) -> dict[str, int]:
    """Passages per topic in a run's ctxs file (a question with none has no line: 0)."""
    got = {r["qid"]: len(r["ctxs"]) for r in map(json.loads, ctxs_file.read_text().splitlines())}
    return {t["id"]: got.get(t["id"], 0) for t in TOPICS}


def test_retrieve_notes_questions_with_fewer_than_hits_passages(tiny, capsys):
    """One stderr line: how many questions got fewer than --hits passages and the fewest (0: q4 matches nothing),
    worded as the tasks' warning; the corpus size is a cause only when it is below --hits."""
    out = tiny["root"] / "k2.trec"
    assert main(["retrieve", "--corpus", tiny["corpus"], "--bm25", "--topics", tiny["topics"], "--hits", "2",
                 "--output", str(out), *tiny["cache"]]) == 0
    err = capsys.readouterr().err
    counts = _counts(out.with_suffix(".ctxs.jsonl"))
    short = [n for n in counts.values() if n < 2]
    assert counts == {"q1": 2, "q2": 1, "q3": 2, "q4": 0}  # the fixture's premise
    notes = [ln for ln in err.splitlines() if "got fewer than" in ln]
    assert notes == [
        f"note: {len(short)} of 4 questions got fewer than --hits 2 passages from bm25 over corpus {tiny['corpus']} "
        "(fewest: 0; BM25 returns only passages that share a word, not a stop word, with the question); the run "
        'holds the passages they have (tasks/README.md, "Passages per question")']

    out = tiny["root"] / "k9.trec"
    assert main(["retrieve", "--corpus", tiny["corpus"], "--bm25", "--topics", tiny["topics"], "--hits", "9",
                 "--output", str(out), *tiny["cache"]]) == 0
    note = next(ln for ln in capsys.readouterr().err.splitlines() if "got fewer than" in ln)
    assert note.startswith("note: 4 of 4 questions got fewer than --hits 9 passages") and "(fewest: 0; " in note
    assert "the corpus has only 4 passages" in note


def test_retrieve_is_silent_when_every_question_gets_hits_passages(tiny, capsys, tmp_path):
    topics = tmp_path / "two.jsonl"
    topics.write_text("".join(json.dumps(t) + "\n" for t in TOPICS[:1]), encoding="utf-8")  # q1: p1 and p2
    assert main(["retrieve", "--corpus", tiny["corpus"], "--bm25", "--topics", str(topics), "--hits", "2",
                 "--output", str(tmp_path / "r.trec"), *tiny["cache"]]) == 0
    err = capsys.readouterr().err
    assert "1 queries, k=2" in err and "got fewer than" not in err


def test_retrieve_over_an_index_folder_notes_them_too(tiny, capsys):
    assert main(["index", "build", "--corpus", tiny["corpus"], "--bm25", *tiny["cache"]]) == 0
    index = capsys.readouterr().out.strip().splitlines()[-1]
    out = tiny["root"] / "idx.trec"
    assert main(["retrieve", "--index", index, "--topics", tiny["topics"], "--hits", "2", "--output", str(out),
                 *tiny["cache"]]) == 0
    note = next(ln for ln in capsys.readouterr().err.splitlines() if "got fewer than" in ln)
    assert note.startswith(f"note: 2 of 4 questions got fewer than --hits 2 passages from bm25 over index {index} (fewest: 0;")


def test_no_lucene_info_line_but_warnings_show(tiny, capsys):
    """A fresh JVM that opens an index outside Anserini's own classes (the BM25 scorer of noise passages: Lucene's
    DirectoryReader first) printed Lucene's INFO 'Using MemorySegmentIndexInput with Java 21; ...' through
    java.util.logging; retrieval.java now sets org.apache.lucene to WARNING when it starts the JVM. A Lucene warning
    and another logger's INFO still print."""
    assert main(["index", "build", "--corpus", tiny["corpus"], "--bm25", *tiny["cache"]]) == 0
    index = capsys.readouterr().out.strip().splitlines()[-1]
    code = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from retrieval.bm25 import Bm25Searcher
s = Bm25Searcher({index!r})
print(s.score_passages("who wrote hamlet", [("Hamlet", "Hamlet is a play")]))
from jnius import autoclass
log = autoclass("java.util.logging.Logger")
log.getLogger("org.apache.lucene.store.Probe").warning("a lucene warning")
log.getLogger("org.apache.lucene.store.Probe").info("a lucene info")
log.getLogger("other.Probe").info("another info")
"""
    env = {**os.environ, "TOKRAG_JVM_IN_PROCESS": "1"}
    env.pop("JAVA_TOOL_OPTIONS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "MemorySegmentIndexInput" not in done.stderr, done.stderr
    assert "WARNING: a lucene warning" in done.stderr and "INFO: another info" in done.stderr
    assert "a lucene info" not in done.stderr


def test_the_cli_note_and_the_tasks_warning_count_with_one_helper(capsys, caplog):
    """``retrieval.api.short_hits`` counts for both: the CLI's note and the tasks' warning give the same numbers and
    causes for the same run (a question absent from the run got 0)."""
    import logging

    from retrieval.api import short_hits
    from retrieval.cli import _short_note
    from tasks.rag import _warn_short

    ctxs = {"q1": [{}, {}, {}], "q2": [{}], "q3": []}
    assert short_hits(ctxs, ["q1", "q2", "q3", "q4"], 3, "bm25", size=2) == (
        3, 4, 0, "BM25 returns only passages that share a word, not a stop word, with the question; "
                 "the corpus has only 2 passages")
    assert short_hits(ctxs, ["q1"], 3, "dense") is None
    assert short_hits(ctxs, ["q2"], 3, "dense") == (1, 1, 1, "dense returned fewer")
    _short_note(ctxs, {"q1": "a", "q2": "b", "q3": "c", "q4": "d"}, 3, "bm25", "corpus c.jsonl", 2)
    note = capsys.readouterr().err
    with caplog.at_level(logging.WARNING, logger="tasks.rag"):
        _warn_short(ctxs, [{"qid": q} for q in ("q1", "q2", "q3", "q4")], 3, "bm25", "c.jsonl", [1, 2], 0.0, "t")
    warning = caplog.records[-1].getMessage()
    for text in (note, warning):
        assert "3 of 4 questions got fewer than" in text and "(fewest: 0; BM25 returns only passages" in text
        assert "the corpus has only 2 passages)" in text
