"""``--use_cache`` whose SQLite file has a full path longer than SQLite opens is refused before the model load (s58 r2,
review of p1's e770986, which refuses names over the file system's 255 bytes).

SQLite's unix file layer opens no full path over 512 bytes (``MAX_PATHNAME``), and refuses a database whose journal's
path (``-journal`` appended) would be longer: a ``<use_cache>_rank0.db`` of more than 504 bytes, absolute (SQLite
3.40.1 also resolves its links), fails with ``sqlite3.OperationalError: unable to open database file`` even when every
name in it is short. ``tasks.precheck.check_run_arguments`` let it through: a real ``lm_eval --model rag-standard ... --use_cache
<a 534-byte path>/c`` loaded SmolLM2, then died in lm-eval's ``CachingLM`` with three tracebacks, exit 1. The
boundary is SQLite's own: each test opens the longest path the check passes, and one byte more, with sqlite3 (as
sqlitedict does for lm-eval)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.precheck import check_run_arguments
from tests.eval_helpers import stop_at_model_load

DB = "_rank0.db"
MODEL_ARGS = "pretrained=smollm2-135m-instruct"


@pytest.fixture(autouse=True)
def _rank_0(monkeypatch):
    """One process: the SQLite file is ``<use_cache>_rank0.db`` whatever launcher ran the tests."""
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def _cache_of(folder: Path, total: int) -> Path:
    """A ``--use_cache`` path under ``folder`` (a resolved path) whose ``_rank0.db`` file's path has ``total`` bytes:
    folders of 99-byte names, then the cache's own name (all far below 255 bytes)."""
    left = total - len(os.fsencode(str(folder)))
    parts = []
    while left > 1 + 120 + len(DB):
        parts.append("d" * 99)
        left -= 100
    parts.append("c" * (left - 1 - len(DB)))
    cache = folder.joinpath(*parts)
    assert len(os.fsencode(str(cache) + DB)) == total
    return cache


def _check(use_cache: Path) -> None:
    check_run_arguments(None, [], model="rag-standard", use_cache=str(use_cache), model_args=MODEL_ARGS)


def _refused(use_cache: Path) -> str:
    with pytest.raises(ConfigError) as exc:
        _check(use_cache)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def _sqlite_opens(db: str) -> bool:
    """Whether SQLite creates and writes ``db`` (its parent made first), as lm-eval's cache does on its first write."""
    os.makedirs(os.path.dirname(db), exist_ok=True)
    try:
        con = sqlite3.connect(db)
        try:
            con.execute("CREATE TABLE t (k TEXT)")  # the first write: the journal is made and removed
            con.commit()
        finally:
            con.close()
    except sqlite3.OperationalError as exc:
        assert str(exc) == "unable to open database file"
        return False
    return True


def test_a_cache_file_path_over_504_bytes_is_refused(tmp_path):
    base = Path(os.path.realpath(tmp_path))
    longest, over = _cache_of(base, 504), _cache_of(base, 505)
    _check(longest)
    assert _refused(over) == (f"--use_cache {over} ({over.name}{DB}, lm-eval's cache file): a full path of 505 bytes, "
                              "more than the 504 SQLite opens (512 with its -journal); give a shorter path")
    assert list(tmp_path.iterdir()) == []  # checked, nothing made
    assert _sqlite_opens(f"{longest}{DB}")  # the boundary is SQLite's
    assert not _sqlite_opens(f"{over}{DB}")


def test_a_relative_path_counts_from_the_working_folder(tmp_path, monkeypatch):
    base = Path(os.path.realpath(tmp_path))
    over = _cache_of(base, 505)
    monkeypatch.chdir(base)
    relative = over.relative_to(base)
    assert _refused(relative) == (f"--use_cache {relative} ({over.name}{DB}, lm-eval's cache file): a full path of 505 "
                                  "bytes, more than the 504 SQLite opens (512 with its -journal); give a shorter path")
    _check(_cache_of(base, 504).relative_to(base))


def test_a_path_with_links_is_refused_only_when_both_forms_are_too_long(tmp_path):
    """SQLite 3.40.1 (measured here) counts the path with its links resolved; an older SQLite may count it as given.
    A path too long both ways is refused, naming the resolved path; a path too long one way only passes, so that no
    SQLite that could open it is refused (a short link to a deep folder then still fails after the load here)."""
    base = Path(os.path.realpath(tmp_path))
    deep = _cache_of(base / "deep", 505).parent
    name = _cache_of(base / "deep", 505).name
    deep.mkdir(parents=True)
    (deep / "back").symlink_to(base)
    both = deep / "back" / deep.relative_to(base) / name  # given: far over 504 bytes; resolved: deep/name, 505
    assert len(os.fsencode(str(both) + DB)) > 504
    assert _refused(both) == (f"--use_cache {both} ({name}{DB}, lm-eval's cache file): a full path of 505 bytes "
                              f"({deep / name}{DB}), more than the 504 SQLite opens (512 with its -journal); give a "
                              "shorter path")

    through = deep / "back" / ("c" * 140)  # given: over 504 bytes; resolved: base/ccc..._rank0.db, far below
    assert len(os.fsencode(str(through) + DB)) > 504
    _check(through)
    (base / "L").symlink_to(deep)
    short = base / "L" / name  # given: far below 504 bytes; resolved: deep/name, 505
    assert len(os.fsencode(str(short) + DB)) < 504
    _check(short)


def test_tokrag_eval_refuses_it_before_the_model_load(tmp_path, monkeypatch):
    """The CLI path (``tokrag eval``, lm-eval's CLI in-process): refused with the before-load mark (lm_eval: one line,
    exit 2); the longest path SQLite opens reaches the model load."""
    from tokrag_model.eval_cli import main

    class Reached(Exception):
        pass

    def reached(*args, **kwargs):
        raise Reached(kwargs.get("model"))

    stop_at_model_load(monkeypatch, reached)
    base = Path(os.path.realpath(tmp_path))
    args = ["--model", "rag-standard", "--model_args", MODEL_ARGS, "--device", "cpu", "--tasks", "wiki_lm_bm25",
            "--limit", "1", "--use_cache"]
    with pytest.raises(ConfigError) as exc:
        main([*args, str(_cache_of(base, 505))])
    assert str(exc.value).endswith("a full path of 505 bytes, more than the 504 SQLite opens (512 with its -journal); "
                                   "give a shorter path")
    assert getattr(exc.value, "_tokrag_before_load", False)
    with pytest.raises(Reached):
        main([*args, str(_cache_of(base, 504))])
