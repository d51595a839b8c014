"""The report's held-out ids from a damaged or hand-edited results.json (read-through of s56 f2's 2e22afa): a
``tokrag_data.files.questions`` that is no object stopped ``tokrag leaderboard report`` with ``AttributeError: 'str'
object has no attribute 'get'``, and a ``held_out.dev`` that is a string was listed character by character."""

from __future__ import annotations

from leaderboards.report import held_out_record, questions_text


def _meta(held_out, files=None):
    td = {"questions": {"split": "test", "in_split": 21, "total": 24, "dev": 2, "fewshot": 1, "held_out": held_out}}
    if files is not None:
        td["files"] = files
    return {"questions": "/data/q.jsonl", "tokrag_data": td}


def test_a_questions_file_record_that_is_no_object_falls_back_to_the_metadata_path():
    rec = held_out_record(_meta({"dev": ["q05", "q21"], "fewshot": ["q10"]}, files={"questions": "x"}))
    assert rec == {"questions": "/data/q.jsonl", "dev": ["q05", "q21"], "fewshot": ["q10"]}
    rec = held_out_record(_meta({"dev": ["q05"], "fewshot": []}, files={"questions": {"path": "/abs/q.jsonl"}}))
    assert rec == {"questions": "/abs/q.jsonl", "dev": ["q05"], "fewshot": []}


def test_ids_that_are_no_list_are_no_ids():
    rec = held_out_record(_meta({"dev": "q05", "fewshot": 7}))
    assert rec == {"questions": "/data/q.jsonl", "dev": [], "fewshot": []}
    line = questions_text(_meta({"dev": "q05", "fewshot": [10]}), 8, 21)
    assert "(3 held out by hash: 2 dev; 1 few-shot: 10)" in line, line
