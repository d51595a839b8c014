"""A researcher's own data (s55 u1 F4, F1; fixed by s55 f3):

* ``lm_eval --tasks velmora_bm25`` for a task YAML of one's own, without ``--include_path``, said only ``unknown task
  'velmora_bm25' (closest: ...); 'lm_eval ls tasks' lists them all``: it now adds that such a task needs
  ``--include_path <the folder that holds it>``;
* ``'answers' must be a list of strings, got 'Idrena Solvathe'`` now shows the fix as the file needs it,
  ``write ["Idrena Solvathe"]`` (JSON-quoted);
* 10 questions with ``--limit 10`` scored 9 (one held out as the dev/few-shot pool, by hash) and neither the INFO
  line nor the results said which: the line now names the held-out ids and the results record them
  (``configs.<task>.metadata.tokrag_data.questions.held_out``). Which questions are held out is unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from retrieval.errors import DataError

QUESTIONS = [{"id": f"q{i}", "question": f"What is the capital of land number {i}?", "answers": [f"City{i}"]}
             for i in range(24)]  # by hash: q10 few-shot, q21 dev, the other 22 test (tests/test_s53_f1_...)
PASSAGES = [{"id": f"p{i}", "title": f"Land {i}", "text": f"The capital of land number {i} is City{i}."}
            for i in range(24)]


def _jsonl(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("answers, fix", [
    ("Idrena Solvathe", '; write ["Idrena Solvathe"]'),
    (1788, '; write ["1788"]'),
    (["Idrena", 2], '; write ["Idrena", "2"]'),
    ("Zürich", '; write ["Zürich"]'),
    ({"a": 1}, ""),  # nothing to quote
])
def test_answers_not_a_list_of_strings_shows_the_json_fix(tmp_path, answers, fix):
    from tasks.byo import load_questions

    q = _jsonl(tmp_path / "q_str.jsonl", [{"id": "q1", "question": "Who founded Velmora?", "answers": answers}])
    with pytest.raises(DataError) as err:
        load_questions(q)
    assert str(err.value) == f"{q}:1: 'answers' must be a list of strings, got {answers!r}{fix}"


def test_unknown_task_without_include_path_says_a_task_of_your_own_needs_it(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    lm_eval = os.path.join(os.path.dirname(sys.executable), "lm_eval")
    proc = subprocess.run([lm_eval, "--model", "rag-none", "--tasks", "velmora_bm25", "--limit", "1"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "error: unknown task 'velmora_bm25' (closest: " in lines[0]
    assert lines[0].endswith("; 'lm_eval ls tasks' lists them all; a task YAML of your own needs --include_path "
                             "<the folder that holds it>"), lines[0]


@pytest.fixture
def rag_info():
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    lg, handler = logging.getLogger("tasks.rag"), Keep(logging.INFO)
    level = lg.level
    lg.addHandler(handler)
    lg.setLevel(logging.INFO)
    yield records
    lg.removeHandler(handler)
    lg.setLevel(level)


def test_the_held_out_questions_are_named_and_recorded(tmp_path, rag_info):
    from tasks.provenance import qa_provenance
    from tasks.rag import build_qa_docs

    q, c = _jsonl(tmp_path / "q.jsonl", QUESTIONS), _jsonl(tmp_path / "passages.jsonl", PASSAGES)
    stats: dict = {}
    docs = build_qa_docs("byo", questions=q, corpus=c, cache_dir=tmp_path / "cache", stats=stats)
    scored = [d["qid"] for d in docs]
    assert scored == [f"q{i}" for i in range(24) if i not in (10, 21)]  # unchanged: the same two held out
    rec = qa_provenance("byo", {"questions": q, "corpus": c}, stats)["questions"]
    assert rec["held_out"] == {"dev": ["q21"], "fewshot": ["q10"]}
    assert (rec["dev"], rec["fewshot"], rec["in_split"], rec["total"]) == (1, 1, 22, 24)
    info = [r.getMessage() for r in rag_info if r.getMessage().startswith("questions ")]
    assert len(info) == 1
    assert info[0].startswith(f"questions {q}: 2 of 24 held out as the dev/few-shot pool (1 dev: q21; 1 few-shot: "
                              "q10): ")
    assert "the results record their ids: tokrag_data.questions.held_out" in info[0]


def test_many_held_out_questions_name_the_first_few_and_a_count(tmp_path, rag_info):
    from tasks.data import qa_split_of
    from tasks.rag import HELD_OUT_NAMED, build_qa_docs

    rows = [{"id": f"x{i:03d}", "question": f"Which river runs through town number {i}?", "answers": [f"River{i}"]}
            for i in range(250)]
    parts = [qa_split_of(r["question"]) for r in rows]
    dev = [r["id"] for r, p in zip(rows, parts) if p == "dev"]
    shot = [r["id"] for r, p in zip(rows, parts) if p == "fewshot"]
    # the hash rule holds out about one in ten: 250 questions give 14 dev, more than the 10 named since s57 (200 gave 10)
    assert len(dev) > HELD_OUT_NAMED and shot
    q = _jsonl(tmp_path / "q.jsonl", rows)
    c = _jsonl(tmp_path / "p.jsonl", [{"id": f"p{i}", "title": f"T{i}", "text": f"River{i} runs through town {i}."}
                                      for i in range(250)])
    stats: dict = {}
    build_qa_docs("byo", questions=q, corpus=c, cache_dir=tmp_path / "cache", stats=stats)
    assert stats["questions"]["held_out"] == {"dev": dev, "fewshot": shot}  # all of them, in file order
    info = [r.getMessage() for r in rag_info if r.getMessage().startswith("questions ")][0]
    more = f" and {len(shot) - HELD_OUT_NAMED} more" if len(shot) > HELD_OUT_NAMED else ""
    assert (f"({len(dev)} dev: {', '.join(dev[:HELD_OUT_NAMED])} and {len(dev) - HELD_OUT_NAMED} more; "
            f"{len(shot)} few-shot: {', '.join(shot[:HELD_OUT_NAMED])}{more})") in info
