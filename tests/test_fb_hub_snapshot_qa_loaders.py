"""Offline (``HF_HUB_OFFLINE=1``), a question set only in the hub cache (a ``huggingface_hub`` snapshot, e.g.
``hf download --repo-type dataset``) is read by the NQ-open / WebQuestions loaders (tasks/data.py) and by a bring-your-own
hub id (tasks/byo.py), as :func:`tasks.sources.hub_rows` reads it for the other families: both called
``datasets.load_dataset``, which offline reads only the ``datasets`` cache, and failed (a review, stop 47)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval.errors import OfflineError
from tasks import byo, data
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)


@pytest.fixture()
def hub_only(offline, monkeypatch):
    """Offline, empty caches, and no data folder: the loaders go to the hub (its cache)."""
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    return offline.parent / "hub"


def test_nq_open_from_a_hub_snapshot_offline(hub_only):
    snap = hub_snapshot(hub_only, data.NQ_OPEN_HUB, {"README.md": "---\nlicense: cc-by-sa-3.0\n---\n"})
    (snap / "nq_open").mkdir()  # the hub's layout: the config's folder of parquet files
    pq.write_table(pa.Table.from_pylist([{"question": "who wrote hamlet", "answer": ["Shakespeare", "W. Shakespeare"]},
                                         {"question": "capital of peru", "answer": ["Lima"]}]),
                   snap / "nq_open" / "validation-00000-of-00001.parquet")
    assert data.load_nq_open(None) == [
        {"qid": "nq-dev-0000", "question": "who wrote hamlet", "answers": ["Shakespeare", "W. Shakespeare"]},
        {"qid": "nq-dev-0001", "question": "capital of peru", "answers": ["Lima"]}]


def test_webq_test_and_pool_from_a_hub_snapshot_offline(hub_only):
    hub_snapshot(hub_only, data.WEBQ_HUB, {
        "test.jsonl": '{"url": "u1", "question": "what is the capital of chile?", "answers": ["Santiago"]}\n',
        "train.jsonl": "".join(f'{{"url": "u", "question": "train question {i}?", "answers": ["a{i}"]}}\n' for i in range(40))})
    assert data.load_webq(None) == [{"qid": "wqs000000", "question": "what is the capital of chile?", "answers": ["Santiago"]}]
    pool = data.load_qa_split("webq", "dev") + data.load_qa_split("webq", "fewshot")  # the hub's train split
    assert len(pool) == 40 and all(r["qid"].startswith("wqtrain") for r in pool)


def test_byo_hub_id_from_a_hub_snapshot_offline(hub_only):
    hub_snapshot(hub_only, "me/my-questions", {"dev.jsonl": '{"id": "x1", "question": "q one", "answers": ["one"]}\n'})
    assert byo.load_questions("me/my-questions", split="dev") == [
        {"qid": "x1", "question": "q one", "answers": ["one"], "gold_docids": [], "where": "me/my-questions[dev][0]"}]


def test_offline_without_any_copy_the_messages_are_unchanged(hub_only):
    with pytest.raises(OfflineError, match=r"^cannot load the hub dataset 'google-research-datasets/nq_open' \(split "
                                           r"'validation'\): ConnectionError: .*Offline, point the task at a local folder "
                                           r"laid out like ../shared/data: set TOKRAG_DATA_DIR=/path/to/data"):
        data.load_nq_open(None)
    with pytest.raises(OfflineError, match=r"^questions 'me/none' is not a file and cannot be loaded from the hub \(split "
                                           r"'test'\): ConnectionError; give a local JSONL file instead$"):
        byo.load_questions("me/none")


def test_webq_from_a_hub_snapshot_in_the_hubs_data_folder_layout(hub_only):
    """stanfordnlp/web_questions keeps its parquet files under ``data/`` (``data/test-00000-of-00001.parquet``), the
    hub's layout of a one-config data set; the reader looked only at the snapshot's top level and ``<config>/``."""
    snap = hub_snapshot(hub_only, data.WEBQ_HUB, {"README.md": "---\nlicense: cc-by-4.0\n---\n"})
    (snap / "data").mkdir()
    pq.write_table(pa.Table.from_pylist([{"url": "u1", "question": "what is the capital of chile?", "answers": ["Santiago"]}]),
                   snap / "data" / "test-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([{"url": "u", "question": f"train question {i}?", "answers": [f"a{i}"]}
                                         for i in range(40)]), snap / "data" / "train-00000-of-00001.parquet")
    assert data.load_webq(None) == [{"qid": "wqs000000", "question": "what is the capital of chile?", "answers": ["Santiago"]}]
    pool = data.load_qa_split("webq", "dev") + data.load_qa_split("webq", "fewshot")
    assert len(pool) == 40 and all(r["qid"].startswith("wqtrain") for r in pool)


def test_a_hidden_file_in_a_local_copys_split_folder_is_not_read(tmp_path):
    """A local copy's ``<split>/`` folder was read whole, hidden files included, while a leaderboard's run key
    (retrieval.io.tree_fingerprint) skips them: an added ``.extra.jsonl`` changed the questions, not the key."""
    from retrieval.io import HashMemo, tree_fingerprint
    from tasks.sources import _local_files

    copy = tmp_path / "copy"
    (copy / "test").mkdir(parents=True)
    (copy / "test" / "a.jsonl").write_text('{"q": 1}\n')
    key = tree_fingerprint(copy, HashMemo(tmp_path / "memo.json"), None, max_bytes=None)
    (copy / "test" / ".extra.jsonl").write_text('{"q": 2}\n')
    assert [f.name for f in _local_files(copy, None, "test")] == ["a.jsonl"]
    assert tree_fingerprint(copy, HashMemo(tmp_path / "memo.json"), None, max_bytes=None) == key


_NQ_ROWS = [{"question": "who wrote hamlet", "answer": ["Shakespeare"]}, {"question": "capital of peru", "answer": ["Lima"]}]
_NQ_README = ("---\nconfigs:\n- config_name: nq_open\n  data_files:\n  - split: train\n    path: nq_open/train-*\n"
              "  - split: validation\n    path: nq_open/validation-*\n  default: true\n---\n")


@pytest.mark.parametrize("layout", ["hub", "flat", "data"])
def test_nq_open_from_a_local_copy_given_as_hub_id(hub_only, tmp_path, layout):
    """A local copy of NQ-open as hub_id (tasks/README: "a local copy in the hub's layout"): the hub's nq_open/ folder
    (refused as "no files for split 'validation'" after ddc62e7, which named the config only for the hub id), or the
    split's files directly in the copy or its data/ folder (as datasets.load_dataset read them before)."""
    copy = tmp_path / "nq_open_copy"
    if layout == "hub":
        (copy / "nq_open").mkdir(parents=True)
        (copy / "README.md").write_text(_NQ_README)
        pq.write_table(pa.Table.from_pylist(_NQ_ROWS), copy / "nq_open" / "validation-00000-of-00001.parquet")
        pq.write_table(pa.Table.from_pylist([{"question": "q", "answer": ["a"]}]), copy / "nq_open" / "train-00000-of-00001.parquet")
    elif layout == "flat":
        copy.mkdir()
        (copy / "validation.jsonl").write_text("".join(f'{{"question": "{r["question"]}", "answer": ["{r["answer"][0]}"]}}\n'
                                                       for r in _NQ_ROWS))
    else:
        (copy / "data").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(_NQ_ROWS), copy / "data" / "validation-00000-of-00001.parquet")
    expected = [{"qid": "nq-dev-0000", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
                {"qid": "nq-dev-0001", "question": "capital of peru", "answers": ["Lima"]}]
    assert data.load_nq_open(None, hub_id=str(copy)) == expected
    rows = [r for split in data.SPLITS for r in data.load_qa_split("nq_open", split, None, None, str(copy))]  # the tasks' way
    assert sorted(r["qid"] for r in rows) == ["nq-dev-0000", "nq-dev-0001"]


def test_nq_open_hub_mirror_keeps_its_default_config(monkeypatch):
    """A hub id other than google-research-datasets/nq_open (a mirror, not a local path) is read with its default config,
    as before ddc62e7: its config need not be named nq_open."""
    from tasks import sources

    asked = []
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    monkeypatch.setattr(sources, "hub_rows", lambda hub_id, config, split, **kw: (asked.append((hub_id, config, split)) or [], hub_id))
    data.load_nq_open(None, hub_id="me/nq_open_mirror")
    data.load_nq_open(None)
    assert asked == [("me/nq_open_mirror", None, "validation"), (data.NQ_OPEN_HUB, "nq_open", "validation")]


def test_a_hidden_file_in_a_split_folder_is_skipped_with_one_warning_naming_it(hub_only, tmp_path, caplog):
    """A corpus folder's hidden files are skipped with a WARNING naming them (retrieval.corpus.load_corpus), a local
    copy's <split>/ folder's silently (a review, stop 47): now one WARNING too, worded alike, once per process (the
    pre-load check, the provenance record and the build each look for the copy's files)."""
    import logging

    from tasks.data import load_nq_open

    copy = tmp_path / "copy"
    (copy / "nq_open" / "validation").mkdir(parents=True)
    (copy / "nq_open" / "validation" / "a.jsonl").write_text('{"question": "who wrote hamlet", "answer": ["Shakespeare"]}\n')
    (copy / "nq_open" / "validation" / ".extra.jsonl").write_text('{"question": "q2", "answer": ["a2"]}\n')
    (copy / "nq_open" / "validation" / ".notes.txt").write_text("not a data file\n")
    with caplog.at_level(logging.WARNING, logger="tasks.sources"):
        assert [r["question"] for r in load_nq_open(None, hub_id=str(copy))] == ["who wrote hamlet"]
        assert [r["question"] for r in load_nq_open(None, hub_id=str(copy))] == ["who wrote hamlet"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"split folder {copy.resolve() / 'nq_open' / 'validation'}: skipping hidden file .extra.jsonl (a "
                        "leading '.'; neither read nor keyed by a leaderboard); rename it without the '.' to read it"]
