"""A local copy given as ``hub_id`` whose rows lack the hub's fields escaped as a bare ``KeyError: 'question'``: s50 f2's
before/after read of every task (/work/scratch/s50/f2/rows_snapshot.py) gave it for the data folder's own WebQuestions
folder (``webquestions/test.json``: qId, qText, answers) given as hub_id. The loaders now refuse such a row in one
line naming the row, the missing fields and the fields it has; WebQuestions' line also says its original files are
read from a data folder."""

from __future__ import annotations

import pytest

from retrieval.errors import DataError
from tasks.data import load_nq_open, load_webq
from tests.hub_cache_helpers import offline  # noqa: F401 (a fixture)


def test_the_original_webquestions_folder_as_hub_id_is_refused_in_one_line(data_dir, offline, monkeypatch):
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    folder = data_dir.resolve() / "webquestions"
    with pytest.raises(DataError) as exc:
        load_webq(None, hub_id=str(folder))
    assert str(exc.value) == (
        f"{folder}[0]: missing the hub's field 'question' (row has ['answers', 'qId', 'qText']); a copy given as hub_id "
        "holds the hub's rows; the data set's original files (webquestions/test.json) are read from a data folder: set "
        "TOKRAG_DATA_DIR (or --metadata data_dir) to the folder holding webquestions/ instead")


def test_an_nq_copy_row_without_answer_is_refused_naming_it(offline, tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    copy = tmp_path / "nq_copy"
    (copy / "nq_open").mkdir(parents=True)
    (copy / "nq_open" / "validation.jsonl").write_text('{"question": "q1", "answer": ["a"]}\n{"question": "q2"}\n',
                                                      encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_nq_open(None, hub_id=str(copy))
    assert str(exc.value) == (f"{copy}[1]: missing the hub's field 'answer' (row has ['question']); a copy given as "
                              "hub_id holds the hub's rows")
