"""Review of s55 f5 (1b31b07, 5bc9f28): bring-your-own questions' id fields and ``split: all``.

* The "every question went to the pool" error suggests ``split: all`` (which then scores them).
* The gold_docids near-miss error lists the id fields now read (qid/id/qId/_id), not ``id`` alone.
* ``{"qid": 7, "id": "7"}`` is one id (json_id: 7 is "7"): no WARNING that the id changed.
* A file with ``_id`` and no ``id`` now gets its own ids, which seed the noise draws (tasks.rag.draw_id): the
  passages of a noise task, hence its numbers, change for such files, so rag_qa_bm25/dense/hybrid's
  ``metadata.version`` moves from 3.0 to 4.0 (house style: bump it on any change that can move a number).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from retrieval.errors import DataError

REPO = Path(__file__).resolve().parents[1]
POOL_ONLY = [{"id": "fr", "question": "Which city is the capital of France?", "answers": ["Paris"]},
             {"id": "mx", "question": "Where is Mexico?", "answers": ["North America"]}]  # 1 dev, 1 few-shot
PASSAGES = [("p0", "Paris", "Paris is the capital city of France."),
            ("p1", "Mexico", "Mexico is a country in North America.")]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _corpus(path: Path, passages) -> Path:
    return _jsonl(path, [{"id": i, "title": t, "text": x} for i, t, x in passages])


def test_pool_only_file_error_suggests_split_all_which_scores_them(tmp_path):
    from tasks.data import qa_split_of
    from tasks.rag import build_qa_docs

    assert [qa_split_of(r["question"]) for r in POOL_ONLY] == ["dev", "fewshot"]
    qs, corpus = _jsonl(tmp_path / "pool.jsonl", POOL_ONLY), _corpus(tmp_path / "c.jsonl", PASSAGES)
    with pytest.raises(DataError) as e:
        build_qa_docs("byo", questions=str(qs), corpus=str(corpus), cache_dir=tmp_path / "cache")
    assert str(e.value) == (
        f"dataset 'byo', split 'test': no questions: of the 2 questions in {qs}, 0 are test, 1 dev and 1 few-shot (one "
        "question in ten, by hash of its text, goes to the dev/few-shot pool; tasks/README.md, 'Splits'), so every one "
        "went to the pool; score every question of the file with --metadata '{\"split\": \"all\"}', or add questions "
        "(about nine in ten are scored), or evaluate the dev ones with --metadata '{\"split\": \"dev\"}'")
    docs = build_qa_docs("byo", questions=str(qs), corpus=str(corpus), cache_dir=tmp_path / "cache", split="all")
    assert [d["qid"] for d in docs] == ["fr", "mx"]  # the advice works: both scored, in file order


def test_gold_docids_near_miss_lists_the_id_fields_read(tmp_path):
    from tasks.byo import load_questions

    path = _jsonl(tmp_path / "q.jsonl", [{"_id": "a", "question": "q", "answers": ["x"], "gold_docid": ["p1"]}])
    with pytest.raises(DataError) as exc:
        load_questions(path)
    assert str(exc.value) == (f"{path}:1: unknown field 'gold_docid' (did you mean 'gold_docids'?); the fields read: "
                              "qid/id/qId/_id (the id: the first not null), question, answers, gold_docids")


def test_an_integer_qid_equal_to_a_string_id_is_not_warned(tmp_path, caplog):
    from tasks.byo import load_questions

    path = _jsonl(tmp_path / "q.jsonl", [{"qid": 7, "id": "7", "question": "a b?", "answers": ["x"]},
                                         {"qid": "8", "id": 9, "question": "c d?", "answers": ["y"]}])
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = load_questions(path)
    assert [r["qid"] for r in rows] == ["7", "8"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"{path}:2: 'qid' is read as the id, not 'id' ('8' vs 9; ids are read from the first not null "
                      "of qid/id/qId/_id, as tokrag retrieve --topics reads them): keep one of the two fields"]


def test_underscore_id_seeds_the_noise_draws_and_the_task_versions_moved(tmp_path):
    from tasks.rag import add_noise, build_qa_docs

    passages = [("p0", "Paris", "Paris is the capital of France.")] + [
        (f"p{i}", f"T{i}", f"Passage {i} about topic {i} and its capital.") for i in range(1, 61)]
    corpus = _corpus(tmp_path / "c.jsonl", passages)
    qs = _jsonl(tmp_path / "q.jsonl", [{"_id": f"Z{i}", "question": f"What is topic {i} capital?", "answers": ["Paris"]}
                                       for i in range(1, 4)])
    docs = build_qa_docs("byo", questions=str(qs), corpus=str(corpus), noise=0.6, k=5, cache_dir=tmp_path / "cache",
                         split="all")
    assert [d["qid"] for d in docs] == ["Z1", "Z2", "Z3"]  # was q0, q1, q2: the draws were seeded by those
    clean = build_qa_docs("byo", questions=str(qs), corpus=str(corpus), k=5, cache_dir=tmp_path / "cache", split="all")
    from retrieval.corpus import resolve_corpus

    c = resolve_corpus(str(corpus))
    for i, (d, base) in enumerate(zip(docs, clean)):  # split 'all': the automatic id was q<file index>
        by_id = add_noise(base["ctxs"], c, d["qid"], ["Paris"], [], 0.6, 1234)
        by_index = add_noise(base["ctxs"], c, f"q{i}", ["Paris"], [], 0.6, 1234)
        assert [x["docid"] for x in d["ctxs"]] == [x["docid"] for x in by_id]
        assert [x["docid"] for x in by_id] != [x["docid"] for x in by_index]  # the passages (and numbers) moved
    for name in ("rag_qa_bm25", "rag_qa_dense", "rag_qa_hybrid"):
        meta = yaml.safe_load((REPO / "tasks" / "qa" / f"{name}.yaml").read_text(encoding="utf-8"))["metadata"]
        assert meta["version"] == 4.0, name
