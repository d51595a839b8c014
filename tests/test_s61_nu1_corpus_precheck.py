"""A duplicate passage id among the first records of a corpus file is refused before the model loads (s61 nu1,
new-user trial of the README's "Your own questions and corpus").

Measured on 44eac06: ``lm_eval --model tokrag ... --tasks rag_qa_bm25 --metadata '{"questions": "q.jsonl",
"corpus": "p_dup.jsonl", "hits": 2}'`` with ``p_dup.jsonl`` holding id ``p1`` on lines 1 and 2 loaded the model (about
10 s for SmolLM2-135M, minutes for a large one) and only then stopped, at the task build, with
``p_dup.jsonl:2: duplicate id 'p1' (first at p_dup.jsonl:1); ids must be unique``, exit status 1, while the pre-load
check (:func:`retrieval.corpus.check_corpus_files`) had read both lines and let them pass. A missing field on line 2 was
refused before the load, exit 2. Now the records the check reads go through :class:`retrieval.corpus.Corpus`'s own
checks, so the same line comes before the load.
"""
from __future__ import annotations

import json

import pytest

from retrieval.corpus import CHECK_RECORDS, check_corpus_files, load_corpus
from retrieval.errors import DataError


def _write(path, ids):
    path.write_text("".join(json.dumps({"id": i, "title": f"T {i}", "text": f"text of {i}"}) + "\n" for i in ids),
                    encoding="utf-8")
    return path


def test_duplicate_id_in_the_first_records_is_refused_by_the_check_as_by_the_load(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "p_dup.jsonl", ["p1", "p1", "p2"])
    with pytest.raises(DataError) as loaded:
        load_corpus("p_dup.jsonl")
    with pytest.raises(DataError) as checked:
        check_corpus_files("p_dup.jsonl")
    assert str(checked.value) == "p_dup.jsonl:2: duplicate id 'p1' (first at p_dup.jsonl:1); ids must be unique"
    assert str(checked.value) == str(loaded.value)


def test_duplicate_across_the_files_of_a_folder_is_refused(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    _write(folder / "a.jsonl", ["p1", "p2"])
    _write(folder / "b.jsonl", ["p3", "p2"])
    with pytest.raises(DataError) as checked:
        check_corpus_files(folder)
    message = str(checked.value)
    assert message.endswith("duplicate id 'p2' (first at " + str(folder / "a.jsonl") + ":2); ids must be unique")
    assert message.startswith(str(folder / "b.jsonl") + ":2: ")


def test_a_duplicate_past_the_records_read_is_left_to_the_load(tmp_path):
    ids = [f"p{i}" for i in range(CHECK_RECORDS)] + ["p0"]  # the repeat is record CHECK_RECORDS + 1
    path = _write(tmp_path / "p.jsonl", ids)
    check_corpus_files(path)  # reads only the first CHECK_RECORDS records: as before
    with pytest.raises(DataError, match=rf"p\.jsonl:{CHECK_RECORDS + 1}: duplicate id 'p0' \(first at .*p\.jsonl:1\)"):
        load_corpus(path)


def test_a_valid_corpus_passes_and_tsv_is_still_left_to_the_load(tmp_path):
    check_corpus_files(_write(tmp_path / "ok.jsonl", ["p1", "p2", "p3"]))
    tsv = tmp_path / "dpr.tsv"
    tsv.write_text("id\ttext\ttitle\n1\tsome text\tT\n1\tsome text\tT\n", encoding="utf-8")
    check_corpus_files(tsv)  # a DPR TSV is read whole by the load only (its duplicate is the load's to find)
    assert len(load_corpus(_write(tmp_path / "ok2.jsonl", ["a", "b"]))) == 2


def test_the_lm_eval_precheck_refuses_the_duplicate_before_the_model_loads(tmp_path, monkeypatch):
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR
    from tasks.precheck import check_selected_tasks

    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "who wrote hamlet",
                                                  "answers": ["Shakespeare"]}) + "\n", encoding="utf-8")
    _write(tmp_path / "p_dup.jsonl", ["p1", "p1"])
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    with pytest.raises(DataError, match=r"^p_dup\.jsonl:2: duplicate id 'p1' \(first at p_dup\.jsonl:1\)"):
        check_selected_tasks(manager, ["rag_qa_bm25"], {"questions": "q.jsonl", "corpus": "p_dup.jsonl", "hits": 2})
