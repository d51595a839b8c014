"""One rule decides whether a ``hub_id`` is the task's own default (the data folder's copy first) or the user's explicit
choice (read as given): :func:`tasks.data.explicit_hub_id`, used by the QA loaders and by
:func:`tasks.sources.local_copy` / ``offline_message`` (the families, WikiText-103). Hub ids are compared as the Hugging
Face Hub resolves them, ignoring case (huggingface/huggingface_hub#1453, #2090). The old code compared exactly:
``Mandarjoshi/trivia_qa`` (the default's other capitalisation) skipped the data folder's copy and, offline, failed on
the hub. A hub_id naming an existing path is a local copy and is never case-folded.

The data folder (``$TOKRAG_DATA_DIR``) holds each data set's copy with the question 'data folder q'; the hub and
datasets caches are empty and ``HF_HUB_OFFLINE=1``: nothing reaches the network.
"""

from __future__ import annotations

import json

import pytest

from tasks import TASK_DIR
from tasks import data as qa_data
from tasks import wikitext
from tasks.provenance import dataset_files, qa_provenance
from tasks.sources import hub_rows, load_family, offline_message
from tests import hub_cache_helpers

TQA_OTHER_CASE = "Mandarjoshi/trivia_qa"  # FAMILIES['triviaqa']['hub_id'] is 'mandarjoshi/trivia_qa'
NQ_OTHER_CASE = "Google-Research-Datasets/NQ_open"
WEBQ_OTHER_CASE = "StanfordNLP/Web_Questions"
WT_OTHER_CASE = "eleutherai/WikiText_Document_Level"
TQA_FILE = "trivia_qa/unfiltered.nocontext/validation.jsonl"
offline = hub_cache_helpers.offline  # the fixture: HF_HUB_OFFLINE=1, empty caches and data folder


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture
def data_folder(offline):
    data = offline
    (data / "nq_open").mkdir()
    (data / qa_data.NQ_OPEN_FILE).write_text(_jsonl([{"question": "data folder q", "answer": ["d"]}]))
    (data / "webquestions").mkdir()
    (data / "webquestions" / "test.json").write_text(json.dumps([{"qId": "d1", "qText": "data folder q", "answers": ["d"]}]))
    (data / TQA_FILE).parent.mkdir(parents=True)
    (data / TQA_FILE).write_text(_jsonl([{"question": "data folder q", "question_id": "d1",
                                          "answer": {"value": "d", "aliases": []}}]))
    wt = data / wikitext.LOCAL_NAME / wikitext.HUB_CONFIG
    wt.mkdir(parents=True)
    (wt / "test.jsonl").write_text(_jsonl([{"page": " = Data Folder = \n data folder text \n"}]))
    return data


def test_the_rule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rule = qa_data.explicit_hub_id
    assert [rule(h, "mandarjoshi/trivia_qa") for h in (None, "", "mandarjoshi/trivia_qa", TQA_OTHER_CASE,
                                                       "MANDARJOSHI/TRIVIA_QA", "someone/trivia_qa")] == [
        False, False, False, False, False, True]  # old: [False, False, False, True, True, True]
    assert rule(NQ_OTHER_CASE, qa_data.NQ_OPEN_HUB) is False and rule(WEBQ_OTHER_CASE, qa_data.WEBQ_HUB) is False
    assert rule("x/y", None) is True and rule(None, None) is False  # no default: any given hub id is explicit
    (tmp_path / TQA_OTHER_CASE).mkdir(parents=True)  # a local copy of that name: a path, compared as written
    assert rule(TQA_OTHER_CASE, "mandarjoshi/trivia_qa") is True
    assert rule(str(tmp_path / TQA_OTHER_CASE), "mandarjoshi/trivia_qa") is True


def test_another_case_of_the_default_reads_the_data_folder(data_folder):
    # old code: OfflineError "cannot load the hub dataset 'Google-Research-Datasets/NQ_open' ..." for each
    assert qa_data.load_nq_open(None, NQ_OTHER_CASE) == [
        {"qid": "nq-dev-0000", "question": "data folder q", "answers": ["d"]}]
    assert qa_data.load_webq(None, "test", WEBQ_OTHER_CASE) == [
        {"qid": "d1", "question": "data folder q", "answers": ["d"]}]
    assert [r["question"] for r in load_family("triviaqa", hub_id=TQA_OTHER_CASE)] == ["data folder q"]
    rows, source = hub_rows(WT_OTHER_CASE, wikitext.HUB_CONFIG, wikitext.HUB_SPLIT, local_name=wikitext.LOCAL_NAME)
    assert [r["page"] for r in rows] == [" = Data Folder = \n data folder text \n"]
    assert source.startswith(str(data_folder / wikitext.LOCAL_NAME))
    assert qa_data._nq_open_config(NQ_OTHER_CASE) == qa_data.NQ_OPEN_HUB_CONFIG  # old: None (a mirror's default)


def test_a_local_copy_named_like_the_default_is_read_as_given(data_folder, tmp_path, monkeypatch):
    """A folder 'Mandarjoshi/trivia_qa' under the working directory is a local copy, not the default case-folded."""
    monkeypatch.chdir(tmp_path)
    copy = tmp_path / TQA_OTHER_CASE / "unfiltered.nocontext"
    copy.mkdir(parents=True)
    (copy / "validation.jsonl").write_text(_jsonl([{"question": "copy q", "question_id": "c1",
                                                   "answer": {"value": "c", "aliases": []}}]))
    assert [r["question"] for r in load_family("triviaqa", hub_id=TQA_OTHER_CASE)] == ["copy q"]


def test_declared_files_and_offline_line_follow_the_rule(data_folder):
    from tasks.utils import qa_read_files

    assert dataset_files("nq_open", None, NQ_OTHER_CASE) == {qa_data.NQ_OPEN_FILE: data_folder / qa_data.NQ_OPEN_FILE}
    assert dataset_files("webq", None, WEBQ_OTHER_CASE) == {"webquestions/test.json": data_folder / "webquestions/test.json"}
    assert set(qa_provenance("nq_open", {"hub_id": NQ_OTHER_CASE}, {})["files"]) == {qa_data.NQ_OPEN_FILE}
    assert set(qa_provenance("triviaqa", {"hub_id": TQA_OTHER_CASE}, {})["files"]) == {TQA_FILE}
    corpus = {"corpus": str(data_folder / "passages.jsonl")}
    assert qa_read_files({"dataset": "triviaqa", "hub_id": TQA_OTHER_CASE, **corpus}, "triviaqa_bm25_wiki") == [
        data_folder / TQA_FILE]  # old: [] (the hub split)
    line = offline_message(TQA_OTHER_CASE, "unfiltered.nocontext", "validation", "r", "trivia_qa")
    assert "a 'trivia_qa' folder in the data folder" in line and "read only for the hub id" not in line
    mirror = offline_message("someone/trivia_qa", "unfiltered.nocontext", "validation", "r", "trivia_qa")
    assert mirror.endswith("(the data folder's 'trivia_qa' folder is read only for the hub id mandarjoshi/trivia_qa)")


def test_the_precheck_passes_another_case_of_the_default(data_folder):
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_selected_tasks

    corpus = data_folder / "passages.jsonl"
    corpus.write_text(_jsonl([{"id": "p1", "title": "T", "text": "t"}]))
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    for task, hub_id in (("nq_open_bm25", NQ_OTHER_CASE), ("triviaqa_bm25_wiki", TQA_OTHER_CASE)):
        check_selected_tasks(manager, [task], {"hub_id": hub_id, "corpus": str(corpus)})  # old: OfflineError
