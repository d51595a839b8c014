"""A plain ``lm_eval`` results JSON says which tokrag and which data produced it (new-user trial, issue 1):
tokrag's version and commit (``config.tokrag_versions``), and per task the absolute paths and SHA-256 of the files
read, the corpus fingerprint and the TREC run fingerprint (``configs.<task>.metadata.tokrag_data``). The budget a
task generated with is lm-eval's ``configs.<task>.generation_kwargs.max_gen_toks`` (issue 2)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

QUESTIONS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["p1"]},
             {"id": "q2", "question": "what is the capital of france", "answers": ["Paris"]}]
PASSAGES = [{"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."},
            {"id": "p2", "title": "Paris", "text": "Paris is the capital of France."},
            {"id": "p3", "title": "Berlin", "text": "Berlin is the capital of Germany."}]


def _write(folder: Path) -> tuple[Path, Path]:
    q, c = folder / "q.jsonl", folder / "passages.jsonl"
    q.write_text("".join(json.dumps(r) + "\n" for r in QUESTIONS), encoding="utf-8")
    c.write_text("".join(json.dumps(r) + "\n" for r in PASSAGES), encoding="utf-8")
    return q, c


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _corpus_fingerprint(rows: list[dict]) -> str:
    """retrieval.Corpus's fingerprint, computed here from the rows: SHA-256 over length-prefixed id, title, text."""
    h = hashlib.sha256()
    for r in rows:
        for field in (r["id"], r["title"], r["text"]):
            b = field.encode("utf-8")
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    return h.hexdigest()[:16]


@pytest.mark.slow
def test_plain_lm_eval_on_byo_data_records_paths_hashes_fingerprints_and_tokrag(tmp_path):
    """Run from the data folder with relative paths, as a user does: the results hold the absolute paths."""
    from importlib.metadata import version

    q, c = _write(tmp_path)
    lm_eval = Path(sys.executable).parent / "lm_eval"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKRAG_CACHE_DIR": str(tmp_path / "cache"), "TOKRAG_GIT_COMMIT": "0123abc+test"}
    cmd = [str(lm_eval), "--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct",
           "--tasks", "rag_qa_bm25", "--device", "cpu", "--limit", "1", "--gen_kwargs", "max_gen_toks=3",
           "--metadata", json.dumps({"questions": "q.jsonl", "corpus": "passages.jsonl"}),
           "--output_path", "results", "--log_samples"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    [results] = list((tmp_path / "results").rglob("results_*.json"))
    [samples] = list((tmp_path / "results").rglob("samples_rag_qa_bm25_*.jsonl"))
    res = json.loads(results.read_text())

    versions = res["config"]["tokrag_versions"]
    assert versions["tokrag"] == version("tokrag") and versions["tokrag_commit"] == "0123abc+test"
    meta = res["configs"]["rag_qa_bm25"]["metadata"]
    assert (meta["questions"], meta["corpus"]) == ("q.jsonl", "passages.jsonl")  # as typed, as before
    data = meta["tokrag_data"]
    assert data["tokrag"] == {"version": version("tokrag"), "commit": "0123abc+test"}
    assert data["files"] == {"questions": {"path": str(q.resolve()), "sha256": _sha(q)},
                             "corpus": {"path": str(c.resolve()), "sha256": _sha(c)}}
    assert data["corpus"] == {"name": "passages.jsonl", "passages": 3, "fingerprint": _corpus_fingerprint(PASSAGES)}
    doc = json.loads(samples.read_text().splitlines()[0])["doc"]
    assert data["run_fingerprint"] == doc["run_fingerprint"] and len(data["run_fingerprint"]) >= 16
    # issue 2: the budget used is the task config's; the model's resolved default stays as it was
    assert res["configs"]["rag_qa_bm25"]["generation_kwargs"]["max_gen_toks"] == 3
    assert res["config"]["tokrag_resolved_config"]["max_gen_toks"] == 256
    assert res["config"]["tokrag_resolved_config"]["k"] is None and meta["hits"] == 5


def test_a_built_in_task_records_the_data_folder_files_it_read(tmp_path, data_dir):
    """nq_oracle_bm25 over a named corpus: the oracle and NQ-open files of $TOKRAG_DATA_DIR, the named corpus'
    fingerprint and folder; the record lands in the task config lm-eval dumps (no model needed)."""
    from lm_eval.tasks import TaskManager

    from retrieval import named_corpus
    from tasks import TASK_DIR
    from tasks.data import NQ_OPEN_FILE, NQ_ORACLE_FILE

    meta = {"corpus": "nq-dpr-1k", "max_docs": 2, "cache_dir": str(tmp_path / "cache")}
    task = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata=meta).load(
        ["nq_oracle_bm25"])["tasks"]["nq_oracle_bm25"]
    data = task.dump_config()["metadata"]["tokrag_data"]
    files = {name: data_dir.resolve() / name for name in (NQ_ORACLE_FILE, NQ_OPEN_FILE)}
    assert data["files"] == {n: {"path": str(p), "sha256": _sha(p)} for n, p in files.items()}
    corpus = named_corpus("nq-dpr-1k", data_dir=data_dir)
    assert data["corpus"]["fingerprint"] == corpus.fingerprint and data["corpus"]["passages"] == len(corpus)
    assert data["corpus"]["name"] == "nq-dpr-1k" and data["corpus"]["source"] == str(Path(corpus.source).resolve())
    assert data["run_fingerprint"] == next(iter(task.test_docs()))["run_fingerprint"]
    assert json.loads(json.dumps(data)) == data  # plain JSON


def test_tokrag_commit_is_the_leaderboards_commit_and_none_outside_a_checkout(tmp_path, monkeypatch):
    from leaderboards.runner import git_commit
    from tokrag_model import provenance

    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    if (provenance.SOURCE_ROOT / ".git").exists():
        assert provenance.tokrag_commit() == git_commit(provenance.SOURCE_ROOT)
    monkeypatch.setattr(provenance, "SOURCE_ROOT", tmp_path)  # an installed wheel: no .git beside the packages
    assert provenance.tokrag_commit() is None
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "ci-build-7")
    assert provenance.tokrag_commit() == "ci-build-7"


def test_a_hub_questions_id_is_recorded_as_hub_id_and_split(tmp_path):
    from tasks.provenance import path_record, qa_provenance

    _, c = _write(tmp_path)
    rec = qa_provenance("byo", {"questions": "someone/my_questions", "hub_split": "validation", "corpus": str(c)},
                        {"corpus": None, "run_fingerprint": "abc"})
    assert rec["files"]["questions"] == {"hub_id": "someone/my_questions", "split": "validation"}
    assert rec["files"]["corpus"] == {"path": str(c.resolve()), "sha256": _sha(c)}
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "a.jsonl").write_text("x\n")
    assert set(path_record(tmp_path / "folder")) == {"path", "fingerprint"}
