"""An empty NQ data file, beyond the two readers b1 guarded (s52 r1, review of cd8fef4/3383e52;
/work/scratch/s52/r1/probe1.py, probe1.txt, probe2.py, probe2.txt):

- the user's own ``oracle_file`` (lm-eval ``--metadata``) when empty was told to "copy
  nq_open_oracle/nq-open-oracle.jsonl.gz of the data folder (../shared/data) again", which is not its fix;
- ``tokrag retrieve --topics nq-oracle`` / ``nq-open`` over an empty data-folder file said only "no queries given: the
  query set is empty", naming no file (:func:`retrieval.corpus.nq_oracle_questions` returned ``[]``, also to the
  benchmarks)."""

import gzip
import shutil

import pytest

from retrieval.corpus import EMPTY_ORACLE, NQ_ORACLE, nq_oracle_questions
from retrieval.errors import DataError
from tasks.data import NQ_OPEN_FILE, load_nq_oracle

NQ_OPEN_EMPTY = ("holds no questions (an empty file: a download or copy that did not finish?); copy "
                 "nq_open/NQ-open.dev.jsonl of the data folder (../shared/data) again")


@pytest.mark.parametrize("name", ["mine.jsonl", "mine.jsonl.gz"])
def test_an_empty_oracle_file_of_ones_own_is_told_to_point_oracle_file_elsewhere(tmp_path, name):
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wb"):
            pass
    else:
        path.write_bytes(b"")
    with pytest.raises(DataError) as exc:
        load_nq_oracle(oracle_file=path)
    assert str(exc.value) == (f"{path}: holds no questions (an empty file?); point oracle_file at a file of one "
                              "{question, answers, ctxs} per line, or leave it out for the data folder's "
                              "nq_open_oracle/nq-open-oracle.jsonl.gz")


def test_ones_own_oracle_file_still_loads(tmp_path, data_dir):
    lines = gzip.open(data_dir / NQ_ORACLE, "rt", encoding="utf-8").read().splitlines()[:3]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = load_nq_oracle(oracle_file=path)
    assert [r["question"] for r in rows][:1] == ["who got the first nobel prize in physics"] and len(rows) == 3


def test_the_nq_oracle_topics_of_an_empty_data_folder_file_name_it(tmp_path):
    path = tmp_path / NQ_ORACLE
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    with pytest.raises(DataError) as exc:
        nq_oracle_questions(tmp_path, limit=3)
    assert str(exc.value) == f"{path}: {EMPTY_ORACLE}"
    assert nq_oracle_questions(tmp_path, limit=0) == []  # asked for none: none, as before


def test_retrieve_topics_nq_oracle_and_nq_open_over_empty_files_name_them(tmp_path):
    from retrieval.cli import load_topics

    (tmp_path / NQ_ORACLE).parent.mkdir(parents=True)
    (tmp_path / NQ_ORACLE).write_bytes(b"")
    (tmp_path / NQ_OPEN_FILE).parent.mkdir(parents=True)
    (tmp_path / NQ_OPEN_FILE).write_bytes(b"")
    with pytest.raises(DataError) as exc:
        load_topics("nq-oracle:3", str(tmp_path))
    assert str(exc.value) == f"{tmp_path / NQ_ORACLE}: {EMPTY_ORACLE}"
    with pytest.raises(DataError) as exc:
        load_topics("nq-open", str(tmp_path))
    assert str(exc.value) == f"{tmp_path / NQ_OPEN_FILE}: {NQ_OPEN_EMPTY}"


def test_the_topic_sets_of_the_data_folder_still_load(tmp_path, data_dir):
    from retrieval.cli import load_topics

    for sub in (NQ_ORACLE, NQ_OPEN_FILE):
        (tmp_path / sub).parent.mkdir(parents=True)
        shutil.copyfile(data_dir / sub, tmp_path / sub)
    queries, answers, gold = load_topics("nq-oracle:2", str(tmp_path))
    assert list(queries) == ["nq-oracle-0", "nq-oracle-1"]
    assert queries["nq-oracle-0"] == "who got the first nobel prize in physics"
    queries, _, _ = load_topics("nq-open:2", str(tmp_path))
    assert list(queries) == ["nq-open-0", "nq-open-1"]
