"""The report's contract says which questions were scored (s52 u1, P6).

u1's 24 questions (data/questions.jsonl) lost 3 to the dev/few-shot pool by hash (myq05 and myq18 dev, myq12 few-shot),
so "first 8" meant the first 8 of the 21 test-split questions; the report said only ``n = 8`` and the spec's subset
text. The run now records the split in the results (``configs.<task>.metadata.tokrag_data.questions``: split, its
size, the file's total and the held-out counts, :func:`tasks.rag.split_record`), and the contract says, per QA task,
``questions.<task> (as run, from the results): questions <file>, 21 of 24 in split test (3 held out by hash: 2 dev,
1 few-shot), first 8 of 21 scored``; a run from before the record says "not recorded" for what it lacks. The INFO line
said ``21 in split 'test' are evaluated`` under ``limit: 8``, where 8 were: it now says ``21 are in split 'test' (a
limit scores the first N of them)`` (and what ``max_docs`` keeps).
"""

from __future__ import annotations

import copy
import json
import logging

import pytest

from leaderboards.report import compute, render_markdown
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec

QUESTIONS = [{"id": f"q{i}", "question": f"What is the capital of land number {i}?", "answers": [f"City{i}"]}
             for i in range(24)]  # by hash: q10 few-shot, q21 dev, the other 22 test
PASSAGES = [{"id": f"p{i}", "title": f"Land {i}", "text": f"The capital of land number {i} is City{i}."} for i in range(24)]


@pytest.fixture
def byo(tmp_path):
    q, c = tmp_path / "q.jsonl", tmp_path / "passages.jsonl"
    q.write_text("".join(json.dumps(r) + "\n" for r in QUESTIONS), encoding="utf-8")
    c.write_text("".join(json.dumps(r) + "\n" for r in PASSAGES), encoding="utf-8")
    return q, c


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


def test_the_run_records_the_split_and_the_held_out_questions(tmp_path, byo, rag_info):
    from tasks.data import qa_split_of
    from tasks.provenance import qa_provenance
    from tasks.rag import build_qa_docs

    q, c = byo
    parts = [qa_split_of(r["question"]) for r in QUESTIONS]
    assert (parts.count("test"), parts[21], parts[10]) == (22, "dev", "fewshot")
    stats: dict = {}
    docs = build_qa_docs("byo", questions=str(q), corpus=str(c), cache_dir=tmp_path / "cache", stats=stats)
    assert len(docs) == 22 and "q10" not in {d["qid"] for d in docs} and "q21" not in {d["qid"] for d in docs}
    rec = qa_provenance("byo", {"questions": str(q), "corpus": str(c)}, stats)
    assert rec["questions"] == {"split": "test", "in_split": 22, "total": 24, "dev": 1, "fewshot": 1,
                                "held_out": {"dev": ["q21"], "fewshot": ["q10"]}}  # their ids (s55 f3)
    info = [r.getMessage() for r in rag_info if r.levelno == logging.INFO and r.getMessage().startswith("questions ")]
    assert info == [f"questions {q}: 2 of 24 held out as the dev/few-shot pool (1 dev: q21; 1 few-shot: q10): one "
                    "question in ten, by hash of its text, as for every QA task (tasks/README.md, \"Splits\"; the "
                    "results record their ids: tokrag_data.questions.held_out); 22 are in split 'test' (a limit scores "
                    "the first N of them)"]  # the held-out ids named (s55 f3)
    assert not any("are evaluated" in m for m in info)

    rag_info.clear()
    stats = {}
    docs = build_qa_docs("byo", questions=str(q), corpus=str(c), cache_dir=tmp_path / "cache", stats=stats, max_docs=5)
    assert len(docs) == 5
    assert qa_provenance("byo", {"questions": str(q), "corpus": str(c)}, stats)["questions"] == {
        "split": "test", "in_split": 22, "max_docs": 5, "total": 24, "dev": 1, "fewshot": 1,
        "held_out": {"dev": ["q21"], "fewshot": ["q10"]}}
    info = [r.getMessage() for r in rag_info if r.levelno == logging.INFO and r.getMessage().startswith("questions ")]
    assert info[0].endswith("; 22 are in split 'test', of which max_docs keeps the first 5 (a limit scores the first N "
                            "of them)")


# ----------------------------------------------------------------------------------------- the report's contract

U1_FILE = "/work/scratch/s52/u1/data/questions.jsonl"
U1_RECORD = {"split": "test", "in_split": 21, "total": 24, "dev": 2, "fewshot": 1}


def _loaded(spec, meta: dict, n: int = 8, original: int = 21) -> dict:
    """A finished cell per cell of ``spec`` whose results' task metadata is ``meta`` (lm-eval: ``original`` docs, the
    first ``n`` scored)."""
    out = {}
    for cell in spec.cells():
        t = cell.task.task
        samples = [{"doc_id": i, "doc": {"qid": f"q{i}"}, "filter": "none", "em": 0.0,
                    "arguments": [["ctx", {"until": ["\n"], "max_gen_toks": 8}]]} for i in range(n)]
        results = {"results": {t: {"em,none": 0.0}}, "n-samples": {t: {"original": original, "effective": n}},
                   "configs": {t: {"output_type": "generate_until", "metadata": copy.deepcopy(meta)}},
                   "config": {"limit": n}}
        out[cell.cell_id] = (cell, f"key-{cell.cell_id}",
                             {"samples": {t: samples}, "results": results, "cost": {}, "provenance": {}, "config": {}})
    return out


def _questions_lines(tmp_path, meta: dict, **kw) -> list[str]:
    spec = load_spec(write_spec(tmp_path, limit=8, tasks=["toy_qa"], extra={"bootstrap": {"iters": 100, "seed": 7}}))
    data = compute(spec, _loaded(spec, meta, **kw), timings=False)
    lines = [x for x in data["models"][0]["contract"] if x.startswith("questions.")]
    assert all(f"- {x}\n" in render_markdown(data) for x in lines)
    return lines


def test_the_contract_says_which_of_the_file_s_questions_were_scored(tmp_path):
    meta = {"dataset": "byo", "questions": "../data/questions.jsonl",
            "tokrag_data": {"files": {"questions": {"path": U1_FILE, "sha256": "3bb3dd8a"}}, "questions": U1_RECORD}}
    assert _questions_lines(tmp_path, meta) == [
        f"questions.toy_qa (as run, from the results): questions {U1_FILE}, 21 of 24 in split test (3 held out by hash: "
        "2 dev, 1 few-shot), first 8 of 21 scored"]


def test_a_run_from_before_the_record_says_what_is_not_recorded(tmp_path):
    meta = {"dataset": "byo", "questions": U1_FILE, "tokrag_data": {"files": {"questions": {"path": U1_FILE}}}}
    assert _questions_lines(tmp_path, meta) == [
        f"questions.toy_qa (as run, from the results): questions {U1_FILE}, split test (its size and the questions held "
        "out by hash: not recorded, a run from before s53), first 8 of 21 scored"]


def test_a_built_in_data_set_max_docs_and_a_task_without_questions(tmp_path):
    rec = {"split": "test", "in_split": 2383}
    assert _questions_lines(tmp_path, {"dataset": "nq_oracle", "tokrag_data": {"questions": rec}}, original=2383) == [
        "questions.toy_qa (as run, from the results): dataset nq_oracle, 2383 in split test (dev / few-shot held out by "
        "hash: tasks/README.md, \"Splits\"), first 8 of 2383 scored"]
    rec = {"split": "dev", "in_split": 188, "max_docs": 8}
    assert _questions_lines(tmp_path / "b", {"dataset": "nq_oracle", "tokrag_data": {"questions": rec}}, original=8) == [
        "questions.toy_qa (as run, from the results): dataset nq_oracle, 188 in split dev (dev / few-shot held out by "
        "hash: tasks/README.md, \"Splits\"), max_docs keeps the first 8, all 8 scored"]
    assert _questions_lines(tmp_path / "c", {"version": 1.0}) == []  # not a QA task: no claim
    # the dev split of a file: the other splits' counts, not "held out"
    rec = {"split": "dev", "in_split": 2, "total": 24, "dev": 2, "fewshot": 1}
    assert _questions_lines(tmp_path / "d", {"dataset": "byo", "questions": U1_FILE, "tokrag_data": {"questions": rec}},
                            n=2, original=2) == [
        f"questions.toy_qa (as run, from the results): questions {U1_FILE}, 2 of 24 in split dev (by hash: 21 test, "
        "2 dev, 1 few-shot), all 2 scored"]
