"""Task metadata ``split: all``: every question of a bring-your-own questions file scored (helper f5, s55).

A researcher with a curated test file wants every question scored; by default one in ten (by hash of its text) is
held out as the dev/few-shot pool. ``split: all`` scores them all, in file order, and the results record it
(``tokrag_data.questions``: split 'all', in_split = total). It is refused in one line, before the model load, for
NQ/WebQ and the hub families (their pool stays out of the scored questions) and with ``--num_fewshot`` > 0 (the
examples would be scored questions); ``tokrag calibrate`` takes dev records only. The default ('test') is unchanged.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tasks.data import load_qa_split, qa_split_of
from tasks.rag import build_qa_docs

N = 30


def _files(tmp_path: Path) -> tuple[str, str]:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage {i} about city{i}"}) + "\n"
                              for i in range(N)), encoding="utf-8")
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps({"id": f"x{i:02d}", "question": f"which city{i}", "answers": [f"city{i}"],
                                     "gold_docids": [f"p{i}"]}) + "\n" for i in range(N)), encoding="utf-8")
    return str(corpus), str(q)


def test_the_file_is_cut_by_hash_so_the_test_has_a_pool():
    parts = [qa_split_of(f"which city{i}") for i in range(N)]
    assert parts.count("test") == 28 and parts.count("dev") == 2 and parts.count("fewshot") == 0


def test_split_all_scores_every_question_in_file_order_and_records_it(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    corpus, q = _files(tmp_path)
    every = [f"x{i:02d}" for i in range(N)]
    assert [r["qid"] for r in load_qa_split("byo", "all", questions=q)] == every
    stats: dict = {}
    with caplog.at_level(logging.INFO, logger="tasks.rag"):
        docs = build_qa_docs("byo", retriever="bm25", corpus=corpus, questions=q, k=2, split="all", stats=stats)
    assert [d["qid"] for d in docs] == every
    assert [d["ctxs"][0]["docid"] for d in docs] == [f"p{i}" for i in range(N)]
    rec = stats["questions"]
    assert rec["split"] == "all" and rec["in_split"] == rec["total"] == N
    info = [r.getMessage() for r in caplog.records if r.name == "tasks.rag" and "split 'all'" in r.getMessage()]
    assert len(info) == 1 and f"all {N} are in split 'all' and scored in file order" in info[0], info
    assert "none is held out" in info[0]
    # the default is unchanged: the pool is held out
    stats = {}
    docs = build_qa_docs("byo", retriever="bm25", corpus=corpus, questions=q, k=2, stats=stats)
    assert len(docs) == stats["questions"]["in_split"] == 28 and stats["questions"]["split"] == "test"


def test_split_all_is_refused_for_the_built_in_data_sets():
    from tasks.utils import qa_arguments

    with pytest.raises(ConfigError) as exc:
        qa_arguments({"dataset": "nq_open", "split": "all"}, "nq_open_bm25")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("nq_open_bm25: task metadata split='all' scores every question of a "
                                              "bring-your-own questions file"), msg
    assert "drop 'split'" in msg
    with pytest.raises(ConfigError, match=r"^split='all': only a bring-your-own questions file"):
        load_qa_split("webq", "all")


def test_split_all_with_few_shot_examples_is_refused_before_the_model_load(tmp_path):
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_selected_tasks

    corpus, q = _files(tmp_path)
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    meta = {"questions": q, "corpus": corpus, "split": "all"}
    check_selected_tasks(manager, ["rag_qa_bm25"], meta)  # accepted; without split 'all' too
    check_selected_tasks(manager, ["rag_qa_bm25"], meta, num_fewshot=0)
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(manager, ["rag_qa_bm25"], meta, num_fewshot=2)
    assert str(exc.value) == (f"--num_fewshot 2: task rag_qa_bm25 scores every question of {q} (task metadata "
                              "split='all'), so its few-shot examples would be scored questions; drop --num_fewshot, "
                              "or drop split='all' (one question in ten is then held out as the dev/few-shot pool)")
    with pytest.raises(ConfigError, match=r"^nq_open_bm25: task metadata split='all'"):
        check_selected_tasks(manager, ["nq_open_bm25"], {"split": "all"})
