"""A folder in the working directory named like a family's default hub id (``mandarjoshi/trivia_qa``, e.g. left by
``hf download ... --local-dir mandarjoshi/trivia_qa``) must not replace the data folder's copy of that data set: the
default hub id, given or not, reads the data folder first (:func:`tasks.data.explicit_hub_id`'s rule), as NQ-open
does. The old :func:`tasks.sources.local_copy` tried the path first, so TriviaQA without any ``hub_id`` read the
working directory's folder, and its provenance recorded no questions file at all. Another case of the default
(``Mandarjoshi/trivia_qa``) that names an existing folder is a local copy, read as given; without a data folder copy
the folder of the default's name is still read, as ``datasets.load_dataset`` reads a local path.

The data folder (``$TOKRAG_DATA_DIR``) holds the question 'data folder q'; hub and datasets caches are empty and
``HF_HUB_OFFLINE=1``: nothing reaches the network.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tasks import data as qa_data
from tasks import wikitext
from tasks.provenance import qa_provenance
from tasks.sources import hub_rows, load_family
from tasks.utils import qa_read_files
from tests import hub_cache_helpers

TQA = "mandarjoshi/trivia_qa"  # FAMILIES['triviaqa']['hub_id']
TQA_FILE = "trivia_qa/unfiltered.nocontext/validation.jsonl"
offline = hub_cache_helpers.offline  # the fixture: HF_HUB_OFFLINE=1, empty caches and data folder


def _tqa(folder, question):
    folder.mkdir(parents=True)
    (folder / "validation.jsonl").write_text(json.dumps({"question": question, "question_id": "q1",
                                                         "answer": {"value": "a", "aliases": []}}) + "\n")


@pytest.fixture
def both(offline, tmp_path, monkeypatch):
    """The data folder's TriviaQA and WikiText copies, and folders of the default hub ids (and of another case of
    TriviaQA's) in the working directory."""
    data = offline
    _tqa(data / "trivia_qa" / "unfiltered.nocontext", "data folder q")
    wt = data / wikitext.LOCAL_NAME / wikitext.HUB_CONFIG
    wt.mkdir(parents=True)
    (wt / "test.jsonl").write_text(json.dumps({"page": " = Data Folder = \n data folder text \n"}) + "\n")
    work = tmp_path / "work"
    _tqa(work / TQA / "unfiltered.nocontext", "working directory q")
    _tqa(work / "Mandarjoshi/trivia_qa" / "unfiltered.nocontext", "other case q")
    cwt = work / wikitext.HUB_ID / wikitext.HUB_CONFIG
    cwt.mkdir(parents=True)
    (cwt / "test.jsonl").write_text(json.dumps({"page": " = Working Directory = \n cwd text \n"}) + "\n")
    monkeypatch.chdir(work)
    return data


def test_the_default_reads_the_data_folder_over_a_folder_of_its_name(both):
    data = both
    # old: ['working directory q'] for both, and provenance files [] (nothing recorded) without a hub_id
    assert [r["question"] for r in load_family("triviaqa")] == ["data folder q"]
    assert [r["question"] for r in load_family("triviaqa", hub_id=TQA)] == ["data folder q"]
    assert sorted(qa_provenance("triviaqa", {}, {})["files"]) == [TQA_FILE]
    corpus = data / "passages.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "T", "text": "t"}) + "\n")
    assert qa_read_files({"dataset": "triviaqa", "corpus": str(corpus)}, "triviaqa_bm25_wiki") == [
        data / TQA_FILE]  # old: the working directory's file (keyed as outside:validation.jsonl)
    rows, source = hub_rows(wikitext.HUB_ID, wikitext.HUB_CONFIG, wikitext.HUB_SPLIT, local_name=wikitext.LOCAL_NAME)
    assert [r["page"] for r in rows] == [" = Data Folder = \n data folder text \n"]
    assert source.startswith(str(data / wikitext.LOCAL_NAME))
    # NQ-open already read its data folder first: the same rule
    (data / "nq_open").mkdir()
    (data / qa_data.NQ_OPEN_FILE).write_text(json.dumps({"question": "data folder q", "answer": ["d"]}) + "\n")
    cnq = (both.parent / "work" / qa_data.NQ_OPEN_HUB / "nq_open")
    cnq.mkdir(parents=True)
    (cnq / "validation.jsonl").write_text(json.dumps({"question": "working directory q", "answer": ["c"]}) + "\n")
    assert [r["question"] for r in qa_data.load_nq_open(None, qa_data.NQ_OPEN_HUB)] == ["data folder q"]


def test_another_case_or_no_data_folder_copy_reads_the_folder(both):
    """Unchanged: another case of the default naming a folder is a local copy; with no copy in the data folder the
    folder of the default's name is read (as datasets.load_dataset would)."""
    assert [r["question"] for r in load_family("triviaqa", hub_id="Mandarjoshi/trivia_qa")] == ["other case q"]
    shutil.rmtree(both / "trivia_qa")
    assert [r["question"] for r in load_family("triviaqa")] == ["working directory q"]
    assert [r["question"] for r in load_family("triviaqa", hub_id=TQA)] == ["working directory q"]
