"""``--use_cache`` with a name longer than the file system allows is refused before the model load (s58 p1, beside
``--output_path``'s): ``tasks.precheck.check_run_arguments`` took an over-long folder name for a folder to create,
and lm-eval's ``CachingLM`` (made right after the model load) failed with a traceback, ``sqlite3.OperationalError:
unable to open database file``; so did a file name ``<use_cache>_rank0.db`` of up to 255 bytes whose SQLite journal
(``-journal`` appended, made on the first write) is longer. The boundary is SQLite's own: checked here with
``sqlitedict`` as lm-eval opens the file."""

from __future__ import annotations

import os

import pytest

from retrieval.errors import ConfigError
from tasks.precheck import check_run_arguments

TOO_LONG = "([Errno 36] File name too long); give a shorter path"


@pytest.fixture(autouse=True)
def _rank_0(monkeypatch):
    """One process: the SQLite file is ``<use_cache>_rank0.db`` whatever launcher ran the tests."""
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def _check(use_cache) -> None:
    check_run_arguments(None, [], model="rag-standard", use_cache=str(use_cache),
                        model_args="pretrained=smollm2-135m-instruct")


def _refused(use_cache) -> str:
    with pytest.raises(ConfigError) as exc:
        _check(use_cache)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_an_over_long_folder_name_is_refused(tmp_path):
    n = os.pathconf(tmp_path, "PC_NAME_MAX")
    cache = tmp_path / ("a" * (n + 45)) / "cache"
    assert _refused(cache) == (f"--use_cache {cache}: a name of {n + 45} bytes, more than the {n} its file system "
                               f"allows {TOO_LONG}")
    assert list(tmp_path.iterdir()) == []


def test_a_name_whose_sqlite_journal_would_be_over_long_is_refused(tmp_path):
    n = os.pathconf(tmp_path, "PC_NAME_MAX")
    longest = "c" * (n - len("_rank0.db-journal"))  # its journal's name: n bytes
    _check(tmp_path / longest)
    cache = tmp_path / (longest + "c")
    assert _refused(cache) == (f"--use_cache {cache} ({longest}c_rank0.db-journal, SQLite's journal of lm-eval's cache "
                               f"file): a name of {n + 1} bytes, more than the {n} its file system allows {TOO_LONG}")
    assert list(tmp_path.iterdir()) == []


def test_the_boundary_is_sqlites(tmp_path):
    """The longest name the check passes holds a cache as lm-eval opens it; one byte more fails in SQLite."""
    sqlitedict = pytest.importorskip("sqlitedict")
    n = os.pathconf(tmp_path, "PC_NAME_MAX")
    longest = tmp_path / ("c" * (n - len("_rank0.db-journal")))
    _check(longest)
    db = sqlitedict.SqliteDict(f"{longest}_rank0.db", autocommit=True)  # lm_eval.api.model.CachingLM's open
    try:
        db["request"] = "answer"
        assert db["request"] == "answer"
    finally:
        db.close()
    import sqlite3

    with pytest.raises(sqlite3.OperationalError, match="unable to open database file"):
        con = sqlite3.connect(f"{longest}c_rank0.db")
        try:
            con.execute("CREATE TABLE t (k TEXT)")  # the first write makes the journal
        finally:
            con.close()
