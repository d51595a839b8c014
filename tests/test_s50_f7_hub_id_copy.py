"""s50 u1 findings H1, M1, L1, L3 (fixer f7).

H1: a local copy given as ``hub_id`` was ignored by the nq_open_* / webq_* loaders when ``$TOKRAG_DATA_DIR`` was set
(the README tells every user to set it): ``load_qa_split("nq_open", hub_id=<copy>)`` gave NQ-open's 3,230 test
questions, while the results' ``tokrag_data.files`` listed the copy. A copy given as ``hub_id`` is now read before the
data folder, as the hub families read one (``tasks.sources.local_copy``); the provenance, the files the task declares
(the leaderboard key's data files) and the pre-load check follow what is read.
M1: a ``hub_id`` written as a path that does not exist was looked up as a hub id (offline: a hub-cache line advising a
local path); it is refused with the leaderboard's line.
L1: a plain YAML reached through ``..`` was called "the file the YAML links to".
L3: the WARNING about an id kept in another field named the automatic ids ``q<index>``; they count from 0.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tasks import data as qa_data
from tasks.precheck import check_selected_tasks
from tasks.provenance import dataset_files, qa_provenance

SHARED = Path("/work/shared/data")
needs_shared = pytest.mark.skipif(not (SHARED / qa_data.NQ_OPEN_FILE).is_file(), reason="needs ../shared/data")


@pytest.fixture
def data_folder(monkeypatch):
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(SHARED))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


def _nq_copy(folder: Path) -> Path:
    folder.mkdir()
    rows = [{"question": "who wrote hamlet", "answer": ["Shakespeare"]},
            {"question": "what is the capital of france", "answer": ["Paris"]}]
    (folder / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _webq_copy(folder: Path) -> Path:
    folder.mkdir()
    (folder / "test.jsonl").write_text(json.dumps({"question": "who wrote hamlet", "answers": ["Shakespeare"]}) + "\n")
    (folder / "train.jsonl").write_text(json.dumps({"question": "what is the capital of france",
                                                    "answers": ["Paris"]}) + "\n")
    return folder


@needs_shared
def test_nq_open_reads_a_given_copy_with_the_data_folder_set(tmp_path, data_folder, monkeypatch):
    copy = _nq_copy(tmp_path / "mynq")
    rows = qa_data.load_qa_split("nq_open", "test", hub_id=str(copy))  # old code: 3230 rows of NQ-open
    assert [(r["qid"], r["question"], r["answers"]) for r in rows] == [
        ("nq-dev-0000", "who wrote hamlet", ["Shakespeare"]), ("nq-dev-0001", "what is the capital of france", ["Paris"])]
    monkeypatch.chdir(tmp_path)  # relative, as --metadata '{"hub_id": "./mynq"}' from the folder that holds it
    assert [r["question"] for r in qa_data.load_qa_split("nq_open", "test", hub_id="./mynq")] == [
        "who wrote hamlet", "what is the capital of france"]
    # without hub_id, or with the default hub id: the data folder, as before
    for hub_id in (None, qa_data.NQ_OPEN_HUB):
        rows = qa_data.load_qa_split("nq_open", "test", hub_id=hub_id)
        assert (len(rows), rows[0]["qid"], rows[-1]["qid"]) == (3230, "nq-dev-0000", "nq-dev-3608")


@needs_shared
def test_webq_reads_a_given_copy_with_the_data_folder_set(tmp_path, data_folder):
    copy = _webq_copy(tmp_path / "mywebq")
    rows = qa_data.load_qa_split("webq", "test", hub_id=str(copy))  # old code: 2032 rows of webquestions/test.json
    assert [(r["qid"], r["question"]) for r in rows] == [("wqs000000", "who wrote hamlet")]
    pool = qa_data.load_qa_split("webq", "dev", hub_id=str(copy)) + qa_data.load_qa_split("webq", "fewshot", hub_id=str(copy))
    assert [r["question"] for r in pool] == ["what is the capital of france"]  # the copy's train split, not devtest.json
    rows = qa_data.load_qa_split("webq", "test")
    assert (len(rows), rows[0]["qid"], rows[-1]["qid"]) == (2032, "wqs000000", "wqs002031")


@needs_shared
def test_declared_and_recorded_files_follow_the_copy(tmp_path, data_folder):
    from leaderboards.keys import _HashMemo, data_fingerprint, task_read_files

    nq, webq = _nq_copy(tmp_path / "mynq"), _webq_copy(tmp_path / "mywebq")
    oracle = SHARED / qa_data.NQ_ORACLE_FILE  # NQ-open's gold ids, by question text
    assert dataset_files("nq_open", None, str(nq)) == {qa_data.NQ_ORACLE_FILE: oracle}  # old: NQ-open.dev.jsonl too
    assert dataset_files("webq", None, str(webq)) == {}
    assert set(dataset_files("nq_open")) == {qa_data.NQ_OPEN_FILE, qa_data.NQ_ORACLE_FILE}  # unchanged without a copy
    assert set(dataset_files("nq_open", None, qa_data.NQ_OPEN_HUB)) == {qa_data.NQ_OPEN_FILE, qa_data.NQ_ORACLE_FILE}

    memo = _HashMemo()
    declared = task_read_files("nq_open_bm25", [], memo, {"hub_id": str(nq)})
    assert SHARED / qa_data.NQ_OPEN_FILE not in declared and oracle in declared
    plain = task_read_files("nq_open_bm25", [], memo, None)
    assert SHARED / qa_data.NQ_OPEN_FILE in plain
    assert data_fingerprint(memo, None, declared) != data_fingerprint(memo, None, plain)
    assert not any("webquestions" in str(f) for f in task_read_files("webq_bm25", [], memo, {"hub_id": str(webq)}))

    files = qa_provenance("nq_open", {"hub_id": str(nq)}, {})["files"]
    assert set(files) == {"hub_id", qa_data.NQ_ORACLE_FILE}  # old: nq_open/NQ-open.dev.jsonl listed, not read
    assert files["hub_id"]["path"] == str(nq.resolve())
    assert set(qa_provenance("webq", {"hub_id": str(webq)}, {})["files"]) == {"hub_id"}


@needs_shared
def test_precheck_checks_the_given_copy(tmp_path, data_folder, manager):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as exc:  # old code: passed (the data folder has NQ-open), the task read NQ-open
        check_selected_tasks(manager, ["nq_open_bm25"], {"hub_id": str(empty)})
    assert str(exc.value).startswith(f"{empty}: no files for split 'validation'"), str(exc.value)
    check_selected_tasks(manager, ["nq_open_bm25"], {"hub_id": str(_nq_copy(tmp_path / "mynq"))})
    check_selected_tasks(manager, ["webq_bm25"], {"hub_id": str(_webq_copy(tmp_path / "mywebq"))})


@pytest.mark.parametrize("task", ["nq_open_bm25", "triviaqa_bm25_wiki"])
def test_a_missing_hub_id_path_gets_the_leaderboards_line(tmp_path, monkeypatch, manager, task):
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    import tasks.precheck  # the index of triviaqa_bm25_wiki passes: its line alone (both: test_s52_f3_every_data_problem)

    monkeypatch.setattr(tasks.precheck, "check_prebuilt_download", lambda corpus, kw: None)
    with pytest.raises(ConfigError) as exc:  # old code: OfflineError "cannot load the hub dataset './mynq_nope' ..."
        check_selected_tasks(manager, [task], {"hub_id": "./mynq_nope"})
    assert str(exc.value) == (
        f"task {task}: metadata hub_id './mynq_nope' (in --metadata) names {tmp_path / 'mynq_nope'}, which does not "
        f"exist (relative to the working directory {tmp_path}); run from the directory that holds './mynq_nope', or "
        "give an absolute path as hub_id in --metadata")
    gone = str(tmp_path / "abs_nope")
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(manager, [task], {"hub_id": gone})
    assert str(exc.value) == (f"task {task}: metadata hub_id {gone!r} (in --metadata) names {gone}, which does not "
                              f"exist; create it or give an existing path as hub_id in --metadata")


def test_missing_include_through_dotdot_is_next_to_the_yaml(tmp_path, monkeypatch):
    from tasks.precheck import _missing_files_error, missing_task_files

    folder = tmp_path / "lb" / "t4"
    folder.mkdir(parents=True)
    text = (Path(TASK_DIR) / "qa" / "rag_qa_bm25.yaml").read_text()
    (folder / "rag_qa_bm25.yaml").write_text(text)  # a plain copy, without _qa_template beside it
    (tmp_path / "byo").mkdir()
    monkeypatch.chdir(tmp_path / "byo")
    path = Path("../lb/t4/rag_qa_bm25.yaml")
    msg = str(_missing_files_error("--include_path", "../lb/t4", path, missing_task_files(path)))
    assert "(lm-eval reads it next to the YAML)" in msg, msg  # old: "next to <abs>, the file the YAML links to"
    link = tmp_path / "lb" / "link.yaml"
    link.symlink_to(folder / "rag_qa_bm25.yaml")
    msg = str(_missing_files_error("--include_path", "../lb", Path("../lb/link.yaml"),
                                   missing_task_files(Path("../lb/link.yaml"))))
    assert f"(lm-eval reads it next to {folder / 'rag_qa_bm25.yaml'}, the file the YAML links to)" in msg, msg


def test_automatic_id_warning_counts_from_0(tmp_path, caplog):
    from tasks import byo
    from tasks.byo import load_questions

    q = tmp_path / "q.jsonl"
    # s55 f5: 'qid' is now read as the id (as tokrag retrieve --topics reads it); 'query_id' is still not read
    q.write_text("".join(json.dumps({"query_id": f"x{i}", "question": f"question {i}", "answers": ["a"]}) + "\n"
                         for i in range(2)))
    byo._WARNED.discard((str(q), "query_id"))
    with caplog.at_level(logging.WARNING, logger="tasks.byo"):
        rows = load_questions(str(q))
    assert [r["qid"] for r in rows] == ["q0", "q1"]  # the ids are unchanged: they key results
    assert "automatic ids q<index of the question, from 0> (the first question is q0, whatever its line)" in caplog.text
    assert os.fspath(q) in caplog.text
