"""Bring-your-own questions from a folder (``rag_qa_{bm25,dense,hybrid}``): ``--metadata '{"questions": "/path/myqa"}'``
was refused ("questions '/path/myqa' is a folder, not a JSONL file; give the file itself"), while a researcher's
question set very often is a folder (``hf download <repo> --repo-type dataset --local-dir myqa``). A folder is now read
as ``datasets.load_dataset(folder, split=hub_split)`` reads it (same rows, same order): where its README.md
``configs:`` card declares the split's files (:func:`tasks.sources.local_copy`), else by ``datasets``' inference from the
file names; rows get the same checks as a JSONL file's, ``where`` naming the file (``file:line``, ``file row i``); a
folder without the split is refused in one line naming the splits it has; a leaderboard's run key and the results'
provenance fingerprint the folder by its content."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval.errors import ConfigError, DataError
from tasks import TASK_DIR, add_include_path
from tasks.byo import load_questions

BM25 = Path(TASK_DIR) / "qa" / "rag_qa_bm25.yaml"
ROWS = [{"id": f"q{i}", "question": f"who wrote book number {i}", "answers": [f"A{i}"]} for i in range(30)]
CARD = ("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*\n"
        "  - split: validation\n    path: data/validation-*\n---\n# my questions\n")


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _card_folder(root: Path) -> Path:
    """``hf download --local-dir`` layout: a card, two test shards, a validation shard, a decoy ``test.jsonl`` at the
    top that the card's patterns do not name (datasets does not read it), and ``.cache/`` as hf download leaves it."""
    _parquet(root / "data" / "test-00000-of-00002.parquet", ROWS[:20])
    _parquet(root / "data" / "test-00001-of-00002.parquet", ROWS[20:])
    _parquet(root / "data" / "validation-00000-of-00001.parquet", [{"question": "val?", "answers": ["v"]}])
    _jsonl(root / "test.jsonl", [{"question": "decoy", "answers": ["no"]}])
    (root / ".cache" / "huggingface").mkdir(parents=True)
    (root / ".cache" / "huggingface" / "download.lock").write_text("x")
    (root / "README.md").write_text(CARD, encoding="utf-8")
    return root


def _datasets_rows(folder: Path, split: str, cache: Path) -> list[tuple[str, list[str]]]:
    import datasets

    return [(r["question"], r["answers"]) for r in datasets.load_dataset(str(folder), split=split, cache_dir=str(cache))]


def test_a_card_folder_reads_the_cards_files_as_datasets_does(tmp_path):
    folder = _card_folder(tmp_path / "myqa")
    rows = load_questions(str(folder))
    got = [(r["question"], r["answers"]) for r in rows]
    assert got == _datasets_rows(folder, "test", tmp_path / "ds") == [(r["question"], r["answers"]) for r in ROWS]
    assert [r["qid"] for r in rows] == [f"q{i}" for i in range(30)]
    assert rows[0]["where"] == f"{folder / 'data' / 'test-00000-of-00002.parquet'} row 0"
    assert rows[25]["where"] == f"{folder / 'data' / 'test-00001-of-00002.parquet'} row 5"
    val = load_questions(str(folder), split="validation")
    assert [(r["qid"], r["question"]) for r in val] == [("q0", "val?")]
    assert val[0]["where"] == f"{folder / 'data' / 'validation-00000-of-00001.parquet'} row 0"


LAYOUTS = {  # name -> (the files, the file the test split reads)
    "flat": ({"test.jsonl": ROWS, "train.jsonl": ROWS[:2]}, "test.jsonl"),
    "hub parquet names": ({"data/test-00000-of-00001.parquet": ROWS, "data/train-00000-of-00001.parquet": ROWS[:2]},
                          "data/test-00000-of-00001.parquet"),
    "prefixed name": ({"nq-test.jsonl": ROWS}, "nq-test.jsonl"),  # datasets' *-test pattern; not the hub's layout
    "nested folder": ({"qa/test.jsonl": ROWS}, "qa/test.jsonl"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_folder_without_a_card_is_read_by_its_file_names_as_datasets_does(tmp_path, layout):
    files, read = LAYOUTS[layout]
    folder = tmp_path / "myqa"
    for name, rows in files.items():
        (_parquet if name.endswith(".parquet") else _jsonl)(folder / name, rows)
    rows = load_questions(str(folder))
    assert [(r["question"], r["answers"]) for r in rows] == _datasets_rows(folder, "test", tmp_path / "ds")
    assert [r["qid"] for r in rows] == [f"q{i}" for i in range(30)]
    where = f"{folder / read}:2" if read.endswith(".jsonl") else f"{folder / read} row 1"
    assert rows[1]["where"] == where


def test_hub_split_chooses_the_folders_split(tmp_path):
    folder = tmp_path / "myqa"
    _jsonl(folder / "test.jsonl", ROWS)
    _jsonl(folder / "dev.jsonl", [{"id": "d1", "question": "dev?", "answers": ["x"]}])  # datasets: split validation
    assert [(r["qid"], r["where"]) for r in load_questions(str(folder), split="validation")] == [
        ("d1", f"{folder / 'dev.jsonl'}:1")]


def test_a_folder_without_the_split_is_refused_naming_its_splits(tmp_path):
    import datasets

    folder = tmp_path / "myqa"
    _jsonl(folder / "train.jsonl", ROWS)
    _jsonl(folder / "dev.jsonl", ROWS[:3])
    with pytest.raises(ValueError, match=r"Unknown split \"test\". Should be one of \['train', 'validation'\]"):
        datasets.load_dataset(str(folder), split="test", cache_dir=str(tmp_path / "ds"))  # the premise
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == (
        f"questions folder {folder}: no split 'test'; its file names give the splits (train: train.jsonl; validation: "
        "dev.jsonl), as datasets.load_dataset reads a folder without a README.md configs: card; choose one with "
        "--metadata '{\"hub_split\": \"train\"}' (in a leaderboard, the task YAML's metadata: {hub_split: train}), or "
        "name the question files test.jsonl or data/test-00000-of-00001.parquet")


def test_a_card_folder_without_the_split_is_refused_naming_the_cards_splits(tmp_path):
    folder = _card_folder(tmp_path / "myqa")
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder), split="train")
    assert str(exc.value) == (
        f"{folder}: no files for split 'train' (its README.md configs: metadata declares for config 'default' only the "
        "splits test, validation; as datasets reads a data set folder, files outside the card's patterns are not read); "
        "add the split's files to the card's configs:")


def test_an_empty_folder_is_refused_in_one_line(tmp_path):
    (tmp_path / "myqa").mkdir()
    (tmp_path / "myqa" / "README.md").write_text("# nothing\n")
    with pytest.raises(ConfigError) as exc:
        load_questions(str(tmp_path / "myqa"))
    assert str(exc.value) == (f"questions folder {tmp_path / 'myqa'}: no data file (give a folder with test.jsonl or "
                              "data/test-00000-of-00001.parquet, as `hf download <repo> --repo-type dataset --local-dir` "
                              "leaves it, or a JSONL file)")


def test_a_split_of_several_formats_is_refused(tmp_path):
    """datasets reads a folder's files with one builder (its most common format), so test.tsv beside test-1.csv
    would be read with one separator; refused, naming the formats and files."""
    folder = tmp_path / "myqa"
    folder.mkdir()
    (folder / "test.tsv").write_text("question\tanswers\na\tx\n")
    (folder / "test-1.csv").write_text("question,answers\nb,y\n")
    with pytest.raises(ConfigError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == (f"{folder}: split 'test' mixes CSV and TSV files (test-1.csv, test.tsv); "
                              "datasets.load_dataset reads all of a data set's files as one format, so it fails on such "
                              "a split or reads it otherwise (only its most common format, or a .tsv as a .csv): keep "
                              "the split in one format")  # tasks.sources._one_format's line (s50 r1: one rule)


def test_a_folders_rows_get_a_files_checks_naming_the_file(tmp_path):
    folder = tmp_path / "myqa"
    shard = _parquet(folder / "data" / "test-00000-of-00001.parquet",
                     [{"question": "a", "answers": ["x"]}, {"question": "b", "answers": []}])
    with pytest.raises(DataError) as exc:
        load_questions(str(folder))
    assert str(exc.value) == f"{shard} row 1: 'answers' is empty; give at least one gold answer"
    other = tmp_path / "other"
    first = _jsonl(other / "test" / "part-0.jsonl", [{"id": "a", "question": "a", "answers": ["x"]}])
    second = _jsonl(other / "test" / "part-1.jsonl", [{"question": "b", "answers": ["y"]}, {"id": "a", "question": "c",
                                                                                           "answers": ["z"]}])
    with pytest.raises(DataError) as exc:
        load_questions(str(other))
    assert str(exc.value) == f"{second}:2: duplicate id 'a' (first at {first}:1); ids must be unique"


def test_a_relative_folder_is_read_not_taken_for_a_hub_id(tmp_path, monkeypatch):
    """``org/qs`` that exists is a folder (before: refused as a folder; it is not a hub id either); ``where`` names the
    file by its absolute path, as datasets resolves a folder's files."""
    from tasks.byo import is_hub_id

    monkeypatch.chdir(tmp_path)
    _jsonl(tmp_path / "org" / "qs" / "test.jsonl", [{"question": "a", "answers": ["x"]}])
    assert not is_hub_id("org/qs")
    assert [(r["question"], r["where"]) for r in load_questions("org/qs")] == [("a", f"{tmp_path}/org/qs/test.jsonl:1")]


def test_a_leaderboard_run_key_changes_with_a_row_of_the_folder(tmp_path, monkeypatch):
    """leaderboards.keys.task_data_files fingerprints the folder named as questions by its files' content
    (retrieval.io.tree_fingerprint): a changed answer in a parquet shard gives a new key; the hidden .cache/ of hf
    download (which datasets does not read either) does not."""
    from leaderboard_helpers import write_spec

    from leaderboards import keys
    from leaderboards.spec import load_spec

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    folder = _card_folder(tmp_path / "myqa")
    corpus = _jsonl(tmp_path / "c.jsonl", [{"id": "p1", "title": "T", "text": "book 1 was written by A1"}])
    mine = tmp_path / "mytasks"
    mine.mkdir()
    (mine / "my_qa.yaml").write_text(f"include: {BM25}\ntask: my_qa\nmetadata: {{dataset: byo, retriever: bm25, "
                                     f"questions: {folder}, corpus: {corpus}}}\n", encoding="utf-8")
    assert set(keys.task_data_files("my_qa", [mine], keys._HashMemo())) == {str(folder), str(corpus)}
    spec = load_spec(write_spec(tmp_path / "lb", tasks=["my_qa"], include=mine))

    def cell_keys() -> list[str]:
        return [k for _c, k, _m in keys.cell_keys(spec)]

    before = cell_keys()
    (folder / ".cache" / "huggingface" / "download.lock").write_text("y")
    assert cell_keys() == before
    changed = [dict(r, answers=["B5"]) if r["id"] == "q5" else r for r in ROWS[:20]]
    _parquet(folder / "data" / "test-00000-of-00002.parquet", changed)
    assert load_questions(str(folder))[5]["answers"] == ["B5"]
    after = cell_keys()
    assert len(after) == len(before) and all(a != b for a, b in zip(after, before))


def test_the_task_build_gives_the_folders_questions_and_records_the_folder(tmp_path):
    """lm-eval's TaskManager builds rag_qa_bm25 over the folder (no model): its docs are the folder's test questions
    (the nine in ten of the test split, tasks/data.py), the pre-load check passes, and the results' provenance records
    the folder's fingerprint, which a changed row changes."""
    from lm_eval.tasks import TaskManager

    from tasks.data import qa_split_of
    from tasks.precheck import check_selected_tasks
    from tasks.provenance import qa_provenance

    folder = _card_folder(tmp_path / "myqa")
    corpus = _jsonl(tmp_path / "c.jsonl", [{"id": f"d{i}", "title": f"T{i}", "text": f"book {i} was written by A{i}"}
                                           for i in range(3)])
    meta = {"questions": str(folder), "corpus": str(corpus), "hits": 1}
    tm = TaskManager(include_path=add_include_path([]), include_defaults=False, metadata=meta)
    check_selected_tasks(tm, ["rag_qa_bm25"], meta)
    task = tm.load(["rag_qa_bm25"])["tasks"]["rag_qa_bm25"]
    docs = list(task.test_docs())
    expected = [r["question"] for r in ROWS if qa_split_of(r["question"]) == "test"]
    assert 20 <= len(expected) < 30
    assert [d["question"] for d in docs] == expected
    record = task.config.metadata["tokrag_data"]["files"]["questions"]
    assert record["path"] == str(folder) and len(record["fingerprint"]) == 16
    _parquet(folder / "data" / "test-00001-of-00002.parquet", [dict(r, question=r["question"] + "?") for r in ROWS[20:]])
    assert qa_provenance("byo", meta, {})["files"]["questions"]["fingerprint"] != record["fingerprint"]
