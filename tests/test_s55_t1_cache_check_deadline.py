"""The --use_cache pre-check (tasks.precheck._check_cache_file) stops its quick_check at CACHE_CHECK_SECONDS (s50 r5),
checked on a virtual clock: test_s50_r5_cache_check_lock timed the real check (``1.9 < took < 3.5`` s of wall time),
which a loaded machine can exceed though the check stopped where it should. Here SQLite's VM advances a fake
``time.monotonic`` by 0.08 s per 100 instructions (a quick_check of this file "takes" ~10 s, as one of GBs read from a
cold disk) and never sleeps: where the check stops is the same on any machine (s55 t1)."""
import sqlite3
import time

import pytest

sqlitedict = pytest.importorskip("sqlitedict")

STEP_S = 0.08  # virtual seconds per 100 SQLite VM instructions


def _cache(tmp_path) -> str:
    base = str(tmp_path / "cache")
    d = sqlitedict.SqliteDict(base + "_rank0.db", autocommit=True)
    for i in range(3000):
        d[f"k{i}"] = "x" * 500
    d.commit(blocking=True)
    d.close()
    return base


def _virtual_sqlite(monkeypatch) -> dict:
    """Patch ``sqlite3.connect`` to connections whose progress handler (any the code sets is still called) runs every
    100 instructions and advances the virtual clock by STEP_S, and ``time.monotonic`` to that clock. Returns the state:
    ``now`` (virtual seconds), ``calls`` (progress calls so far), ``stopped_at`` (the clock when the code's handler first
    returned true: SQLite interrupts the statement)."""
    state = {"now": 1000.0, "calls": 0, "stopped_at": None}

    class VirtualConnection(sqlite3.Connection):
        def set_progress_handler(self, handler, n):
            self._handler = handler

        def execute(self, *args):
            own = getattr(self, "_handler", None)

            def step():
                state["calls"] += 1
                state["now"] += STEP_S
                stop = own() if own is not None else 0
                if stop and state["stopped_at"] is None:
                    state["stopped_at"] = state["now"]
                return stop

            super().set_progress_handler(step, 100)
            return super().execute(*args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, factory=VirtualConnection, **k))
    monkeypatch.setattr(time, "monotonic", lambda: state["now"])
    return state


def test_a_slow_cache_check_stops_at_its_deadline_on_a_virtual_clock(tmp_path, monkeypatch):
    from tasks import precheck

    base = _cache(tmp_path)
    state = _virtual_sqlite(monkeypatch)
    con = sqlite3.connect(base + "_rank0.db")  # the whole check, with no deadline: how long it "takes"
    try:
        assert [str(r[0]) for r in con.execute("PRAGMA quick_check")] == ["ok"]
    finally:
        con.close()
    full_calls = state["calls"]
    assert full_calls * STEP_S > 2 * 2.0  # the full check is well past the 2 s deadline

    state.update(calls=0, stopped_at=None)
    start = state["now"]
    assert precheck._check_cache_file(base) is None  # a sound file, not checked to its end: passes
    assert state["stopped_at"] is not None  # the deadline interrupted the check ...
    assert precheck.CACHE_CHECK_SECONDS == 2.0
    assert precheck.CACHE_CHECK_SECONDS < state["stopped_at"] - start <= precheck.CACHE_CHECK_SECONDS + STEP_S
    assert state["calls"] < full_calls  # ... before its end


def test_a_damaged_cache_is_refused_before_the_deadline_on_a_virtual_clock(tmp_path, monkeypatch):
    from retrieval.errors import ConfigError
    from tasks import precheck

    base = _cache(tmp_path)
    with open(base + "_rank0.db", "r+b") as fh:  # cut to half: a truncated copy
        fh.truncate(len(fh.read()) // 2)
    state = _virtual_sqlite(monkeypatch)
    with pytest.raises(ConfigError, match=r"--use_cache .*: the cache file .*cache_rank0\.db is damaged \(SQLite: "):
        precheck._check_cache_file(base)
    assert state["stopped_at"] is None  # found before the deadline, not cut short by it
