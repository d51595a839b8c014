"""Damaged files get one clear line (s50 breaker b2, findings D3 and D4).

D3: a damaged ``--use_cache`` SQLite file (a truncated copy, a disk error) made lm-eval fail only after the model load,
with two tracebacks ending ``sqlite3.DatabaseError: database disk image is malformed`` that named no file. The pre-load
check (``tasks.precheck._check_cache_file``) now runs SQLite's ``PRAGMA quick_check`` read-only on the file lm-eval
will open (``{use_cache}_rank{rank}.db``) and refuses a damaged one in one line."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--apply_chat_template", "--tasks", "nq_oracle_bm25", "--limit", "1"]


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)


def _cache(path: Path, rows: int = 200) -> Path:
    """An lm-eval ``--use_cache`` file as ``CachingLM`` writes it (sqlitedict, autocommit)."""
    from sqlitedict import SqliteDict

    with SqliteDict(str(path), autocommit=True) as db:
        for i in range(rows):
            db[f"key{i}"] = "answer " * 30
    return path


def _truncated(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    _cache(path)
    size = path.stat().st_size
    os.truncate(path, size // 2)
    return path


def _refused(args: list[str]) -> str:
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*BASE, *args])
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


TAIL = (", and lm-eval would fail on it after the model load: delete it (its answers are computed again) or pass "
        "another --use_cache path")


def test_truncated_cache_file_is_refused_before_the_model_load(no_model, tmp_path):
    db = _truncated(tmp_path / "c" / "run_rank0.db")
    msg = _refused(["--use_cache", str(tmp_path / "c" / "run")])
    assert msg == (f"--use_cache {tmp_path / 'c' / 'run'}: the cache file {db} is damaged (SQLite: database disk "
                   f"image is malformed){TAIL}"), msg


def test_a_file_that_is_no_database_and_a_folder_are_refused(no_model, tmp_path):
    (tmp_path / "t_rank0.db").write_text("not a database\n" * 20, encoding="utf-8")
    msg = _refused(["--use_cache", str(tmp_path / "t")])
    assert msg == (f"--use_cache {tmp_path / 't'}: the cache file {tmp_path / 't_rank0.db'} is damaged (SQLite: file "
                   f"is not a database){TAIL}"), msg
    (tmp_path / "d_rank0.db").mkdir()
    msg = _refused(["--use_cache", str(tmp_path / "d")])
    assert msg == (f"--use_cache {tmp_path / 'd'}: the cache file {tmp_path / 'd_rank0.db'} is a folder, not an SQLite "
                   f"file{TAIL}"), msg


def test_sound_missing_empty_and_interrupted_caches_pass(tmp_path):
    """A good cache, none yet, an empty file (SQLite reads it as an empty database) and a cache with the hot journal of
    a run killed mid-transaction (lm-eval's read-write open rolls it back: b2 saw such runs resume) all pass; the
    read-only check leaves the journal in place."""
    from tasks.precheck import _check_cache_file

    _cache(tmp_path / "good_rank0.db")
    _check_cache_file(str(tmp_path / "good"))
    _check_cache_file(str(tmp_path / "none"))
    (tmp_path / "empty_rank0.db").write_bytes(b"")
    _check_cache_file(str(tmp_path / "empty"))

    live = tmp_path / "live.db"
    con = sqlite3.connect(live, isolation_level=None)
    con.execute("PRAGMA cache_size=2")  # spills pages into the database file before the commit
    con.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)")
    con.execute("BEGIN")
    for i in range(300):
        con.execute("INSERT INTO t VALUES (?, ?)", (f"k{i}", b"z" * 500))
    shutil.copy(live, tmp_path / "hot_rank0.db")
    shutil.copy(f"{live}-journal", tmp_path / "hot_rank0.db-journal")
    con.execute("ROLLBACK")
    con.close()
    _check_cache_file(str(tmp_path / "hot"))
    assert (tmp_path / "hot_rank0.db-journal").exists()
    with sqlite3.connect(tmp_path / "hot_rank0.db") as rw:  # what lm-eval then sees: rolled back, sound
        assert rw.execute("PRAGMA quick_check").fetchall() == [("ok",)]


def test_the_file_of_this_process_rank_is_checked(monkeypatch, tmp_path):
    """lm-eval opens ``{use_cache}_rank{lm.rank or LOCAL_RANK}.db``; under a launcher (WORLD_SIZE > 1) lm.rank is
    RANK. Only that file is checked: another rank's damaged file is its own process's refusal."""
    from tasks.precheck import _check_cache_file, use_cache_file

    _truncated(tmp_path / "c_rank1.db")
    for var in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert use_cache_file(str(tmp_path / "c")) == f"{tmp_path / 'c'}_rank0.db"
    _check_cache_file(str(tmp_path / "c"))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert use_cache_file(str(tmp_path / "c")) == f"{tmp_path / 'c'}_rank1.db"
    with pytest.raises(ConfigError, match=r"the cache file .*c_rank1\.db is damaged \(SQLite: database disk image is "
                                          r"malformed\)"):
        _check_cache_file(str(tmp_path / "c"))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    _check_cache_file(str(tmp_path / "c"))


def test_lm_eval_refuses_a_truncated_cache_in_one_line_with_exit_2(tmp_path):
    """b2's repro through the real ``lm_eval`` entry: exit 2, one error line, no traceback, and the model path does
    not exist, so a load would have said so."""
    _truncated(tmp_path / "ct" / "db_rank0.db")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    start = time.monotonic()
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lm_eval"), "--model", "rag-standard", "--model_args",
         f"pretrained={tmp_path / 'no-such-model'}", "--device", "cpu", "--apply_chat_template", "--tasks",
         "nq_oracle_bm25", "--limit", "1", "--use_cache", "ct/db"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and time.monotonic() - start < 300, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "no-such-model" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].endswith(
        f"--use_cache ct/db: the cache file ct/db_rank0.db is damaged (SQLite: database disk image is malformed)"
        f"{TAIL}"), proc.stderr[-2000:]
