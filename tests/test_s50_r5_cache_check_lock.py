"""The --use_cache pre-check (tasks.precheck._check_cache_file) holds SQLite's read lock while its quick_check runs:
a check slower than the 5 s that another lm_eval run writing the same cache waits (sqlitedict's timeout; a cache
of GBs read cold) made that run fail with 'database is locked'. The check now stops at CACHE_CHECK_SECONDS and the
file passes (s50 r5; repro /work/scratch/s50/r5/qc_lock_repro.py)."""
import multiprocessing as mp
import sqlite3
import time

import pytest

sqlitedict = pytest.importorskip("sqlitedict")


class _SlowConnection(sqlite3.Connection):
    """A connection whose SQLite VM is slow (0.08 s per 100 instructions: a quick_check of this file takes ~10 s, as
    one of GBs read from a cold disk), whatever progress handler the code under test sets (it still runs)."""

    def set_progress_handler(self, handler, n):
        self._handler = handler

    def execute(self, *args):
        own = getattr(self, "_handler", None)

        def slow():
            time.sleep(0.08)
            return own() if own is not None else 0

        super().set_progress_handler(slow, 100)
        return super().execute(*args)


def _writer(path, out):  # the other lm_eval run: lm-eval's sqlitedict, writing an answer every 0.1 s
    d = sqlitedict.SqliteDict(path, autocommit=True)
    try:
        for i in range(40):
            d[f"new{i}"] = "answer"
            time.sleep(0.1)
        d.commit(blocking=True)
        d.close()
        out.put("ok")
    except Exception as exc:  # sqlite3.OperationalError: database is locked
        out.put(f"{type(exc).__name__}: {exc}")


def test_a_slow_cache_check_stops_before_a_concurrent_writer_times_out(tmp_path, monkeypatch):
    from tasks import precheck

    base = str(tmp_path / "cache")
    path = base + "_rank0.db"
    d = sqlitedict.SqliteDict(path, autocommit=True)
    for i in range(3000):
        d[f"k{i}"] = "x" * 500
    d.commit(blocking=True)
    d.close()

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    writer = ctx.Process(target=_writer, args=(path, out))
    writer.start()
    time.sleep(0.5)
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, factory=_SlowConnection, **k))
    t0 = time.monotonic()
    assert precheck._check_cache_file(base) is None  # a sound file, not checked to its end: passes
    took = time.monotonic() - t0
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    writer.join(30)
    assert out.get(timeout=5) == "ok"
    assert precheck.CACHE_CHECK_SECONDS == 2.0
    # the check ran to its deadline, not further: ``took < 3.5`` bounded the wall time, which a loaded machine can
    # exceed though the check stopped where it should; where it stops is checked on a virtual clock in
    # test_s55_t1_cache_check_deadline (s55 t1)
    assert took > precheck.CACHE_CHECK_SECONDS


def test_a_damaged_cache_is_still_refused_within_the_deadline(tmp_path):
    from retrieval.errors import ConfigError
    from tasks import precheck

    base = str(tmp_path / "cache")
    path = base + "_rank0.db"
    d = sqlitedict.SqliteDict(path, autocommit=True)
    for i in range(3000):
        d[f"k{i}"] = "x" * 500
    d.commit(blocking=True)
    d.close()
    with open(path, "r+b") as fh:  # cut to half: a truncated copy
        fh.truncate(len(fh.read()) // 2)
    with pytest.raises(ConfigError, match=r"the cache file .*cache_rank0\.db is damaged \(SQLite: "):
        precheck._check_cache_file(base)
