"""A damaged NQ oracle file in the data folder (s52 b1, /work/scratch/s52/b1/data/, probe lines in
/work/scratch/s52/b1/report.md): a truncated nq-open-oracle.jsonl.gz (a copy cut short) ended the QA tasks' loader
(tasks.data.load_nq_oracle) in 'EOFError: Compressed file ended before the end-of-stream marker was reached', a plain
JSONL under the .gz name in 'BadGzipFile', while the corpus build named the file; a 0-byte .gz (a download that did
not finish) reads as an empty file without error: the loader gave 0 questions and nq-wiki-12k was built of the 10,033
Wikipedia paragraphs alone (no gold passage), silently. Each is now one DataError line naming the file."""

import gzip
import shutil

import pytest

from retrieval.corpus import NQ_ORACLE, named_corpus
from retrieval.errors import DataError
from tasks.data import load_nq_oracle


@pytest.fixture
def folder(tmp_path, data_dir):
    """A data folder holding a copy of the oracle file (the tests damage it) and nothing else: the Wikipedia
    summaries of nq-wiki-12k then come from the installed wheel, as without the data folder's copy."""
    (tmp_path / NQ_ORACLE).parent.mkdir(parents=True)
    shutil.copyfile(data_dir / NQ_ORACLE, tmp_path / NQ_ORACLE)
    return tmp_path


def test_a_truncated_oracle_file_is_one_line(folder):
    path = folder / NQ_ORACLE
    path.write_bytes(path.read_bytes()[:300_000])
    with pytest.raises(DataError) as exc:
        load_nq_oracle(folder)
    assert str(exc.value) == (f"{path}: the gzip file is truncated or corrupt (Compressed file ended before the "
                              "end-of-stream marker was reached); download or compress it again")


def test_a_plain_file_under_the_gz_name_is_one_line(folder):
    path = folder / NQ_ORACLE
    path.write_bytes(gzip.decompress(path.read_bytes()))
    with pytest.raises(DataError, match=r"the gzip file is truncated or corrupt \(Not a gzipped file"):
        load_nq_oracle(folder)


@pytest.mark.parametrize("load", [load_nq_oracle, lambda d: named_corpus("nq-wiki-12k", d)], ids=["tasks", "corpus"])
def test_an_empty_oracle_file_is_refused_not_read_as_no_questions(folder, load):
    path = folder / NQ_ORACLE
    path.write_bytes(b"")
    with pytest.raises(DataError) as exc:
        load(folder)
    assert str(exc.value) == (f"{path}: holds no questions (an empty file: a download or copy that did not finish?); "
                              f"copy {NQ_ORACLE} of the data folder (../shared/data) again")


def test_the_whole_file_still_loads(folder):
    rows = load_nq_oracle(folder)
    assert len(rows) == 2655 and rows[0]["question"] == "who got the first nobel prize in physics"


def test_an_empty_nq_open_file_is_refused_not_read_as_no_questions(tmp_path):
    """The same for nq_open/NQ-open.dev.jsonl (the nq_open_* tasks, and the oracle questions' qids): an empty file
    gave 0 questions without a word."""
    from tasks.data import NQ_OPEN_FILE, load_nq_open

    path = tmp_path / NQ_OPEN_FILE
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    with pytest.raises(DataError) as exc:
        load_nq_open(tmp_path)
    assert str(exc.value) == (f"{path}: holds no questions (an empty file: a download or copy that did not finish?); "
                              f"copy {NQ_OPEN_FILE} of the data folder (../shared/data) again")
