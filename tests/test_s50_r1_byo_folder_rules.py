"""A rag_qa_* ``questions`` folder (tasks.byo, s50 f3) read by the rules of tasks.sources' local copies (s50 r1):

* what is a data file: ``test.PARQUET`` was taken for one (byo lower-cased the extension) and read as JSON Lines
  ("test.PARQUET:1: malformed JSON"), where ``datasets.load_dataset(folder)`` finds no supported data file and
  tasks.sources reads only lower-case extensions; now it is no data file, as in both.
* a card pattern that is a URL was told "or give the data set's hub id as hub_id", a key the rag_qa_* tasks do not
  read: now "as questions".
* a split of several formats is refused by the one rule and line of tasks.sources._one_format.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval.errors import ConfigError
from tasks.byo import load_questions

ROWS = [{"question": "who wrote hamlet", "answers": ["Shakespeare"]}]


@pytest.mark.parametrize("name", ["test.PARQUET", "test.JSONL"])
def test_an_upper_case_extension_is_no_data_file_as_for_datasets(tmp_path, name):
    import datasets
    from datasets.exceptions import DataFilesNotFoundError

    folder = tmp_path / "myqa"
    folder.mkdir()
    if name.endswith("PARQUET"):
        pq.write_table(pa.Table.from_pylist(ROWS), folder / name)
    else:
        (folder / name).write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    with pytest.raises(DataFilesNotFoundError, match="No \\(supported\\) data files found"):
        datasets.load_dataset(str(folder), split="test", cache_dir=str(tmp_path / "ds"))  # the premise
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == (
        f"questions folder {folder}: no split 'test'; it holds no .parquet, .jsonl, .json, .csv, .tsv file of a split, "
        "as datasets.load_dataset reads a folder without a README.md configs: card; name the question files test.jsonl "
        "or data/test-00000-of-00001.parquet")


def test_a_card_url_pattern_is_told_to_give_the_hub_id_as_questions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "myqa"
    folder.mkdir()
    url = "hf://datasets/me/qa/data/test-00000-of-00001.parquet"
    (folder / "README.md").write_text(f"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      f"    path: {url}\n---\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == (
        f"{folder / 'README.md'}: config 'default' declares split 'test' as {url}, a remote file, which a local copy is "
        f"not read from; download it into {folder} and make the card's path relative to the folder, or give the data "
        "set's hub id as questions")


def test_a_local_copy_given_as_hub_id_keeps_the_hub_id_advice(tmp_path, monkeypatch):
    from tasks.sources import local_copy

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: https://x.org/t.jsonl\n---\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r", or give the data set's hub id as hub_id$"):
        local_copy(str(folder), None, "test")


@pytest.mark.parametrize("files", [("test-1.csv", "test.tsv"), ("test-0.csv", "test-1.jsonl")])
def test_a_split_of_several_formats_gets_the_one_rule_and_line_of_tasks_sources(tmp_path, files):
    """The folder's layout (no card) and a card folder are refused by tasks.sources._one_format alike."""
    folder = tmp_path / "myqa"
    folder.mkdir()
    for name in files:
        if name.endswith(".jsonl"):
            (folder / name).write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
        else:
            sep = "\t" if name.endswith(".tsv") else ","
            (folder / name).write_text(f"question{sep}answers\na{sep}x\n", encoding="utf-8")
    formats = {"csv": "CSV", "tsv": "TSV", "jsonl": "JSON"}
    a, b = (formats[n.rsplit(".", 1)[1]] for n in files)
    line = (f"{folder}: split 'test' mixes {a} and {b} files ({files[0]}, {files[1]}); datasets.load_dataset reads all "
            "of a data set's files as one format, so it fails on such a split or reads it otherwise (only its most "
            "common format, or a .tsv as a .csv): keep the split in one format")
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == line
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: test*\n---\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == line
