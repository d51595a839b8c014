"""Offline, a data set only in the hub cache (a ``huggingface_hub`` snapshot, e.g. ``hf download --repo-type dataset``)
passed the pre-load check (:func:`tasks.sources.check_hub_source`), but ``datasets.load_dataset`` (5.2) offline reads
only the ``datasets`` cache, so the task build failed after the model load ("Couldn't reach 'akariasai/PopQA' on the
Hub (OfflineModeIsEnabled)"; a reviewer, stop 46). :func:`tasks.sources.hub_rows` now reads the snapshot's files of the
split itself, and the check passes a hub cache only when it holds them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval.errors import OfflineError
from tasks.sources import check_hub_source, hub_rows, load_family
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)


def test_offline_a_hub_snapshot_is_read_as_the_check_promised(tmp_path, offline):
    snap = hub_snapshot(tmp_path / "hub", "akariasai/PopQA",
                        {"README.md": "---\nlicense: mit\n---\n", "test.tsv": 'id\tquestion\tpossible_answers\n7\tq?\t["a", "b"]\n'})
    check_hub_source("akariasai/PopQA", None, "test", local_name="PopQA")
    assert load_family("popqa") == [{"qid": "popqa-7", "question": "q?", "answers": ["a", "b"], "gold_docids": []}]
    assert hub_rows("akariasai/PopQA", None, "test", local_name="PopQA")[1] == str(snap)
    # a data set of several configs: the config's folder of the snapshot, as the hub lays out its parquet files
    snap = hub_snapshot(tmp_path / "hub", "mandarjoshi/trivia_qa", {})
    (snap / "unfiltered.nocontext").mkdir()
    pq.write_table(pa.Table.from_pylist([{"question": "Who?", "question_id": "tc_1",
                                          "answer": {"value": "Ann", "aliases": ["Ann", "Anne"]}}]),
                   snap / "unfiltered.nocontext" / "validation-00000-of-00001.parquet")
    check_hub_source("mandarjoshi/trivia_qa", "unfiltered.nocontext", "validation", local_name="trivia_qa")
    rows = load_family("triviaqa")
    assert [(r["qid"], r["question"], sorted(r["answers"])) for r in rows] == [("tc_1", "Who?", ["Ann", "Anne"])]


def test_offline_a_hub_cache_without_the_split_files_is_refused_before_the_model_load(tmp_path, offline):
    hub_snapshot(tmp_path / "hub", "akariasai/PopQA", {"README.md": "---\nlicense: mit\n---\n"})  # the card only
    with pytest.raises(OfflineError) as exc:
        check_hub_source("akariasai/PopQA", None, "test", local_name="PopQA")
    assert str(exc.value).startswith(
        "cannot load the hub dataset 'akariasai/PopQA', split 'test': HF_HUB_OFFLINE=1 and neither the hub cache "
        f"({tmp_path / 'hub' / 'datasets--akariasai--PopQA'}) nor the datasets cache "
        f"({tmp_path / 'datasets' / 'akariasai___pop_qa'}) holds split 'test'. Offline, give a local copy"), exc.value
    with pytest.raises(OfflineError, match=r"^cannot load the hub dataset 'akariasai/PopQA', split 'test': ConnectionError"):
        hub_rows("akariasai/PopQA", None, "test", local_name="PopQA")  # the loader agrees
