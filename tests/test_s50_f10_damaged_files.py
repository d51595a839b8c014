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
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lm_eval"), "--model", "rag-standard", "--model_args",
         f"pretrained={tmp_path / 'no-such-model'}", "--device", "cpu", "--apply_chat_template", "--tasks",
         "nq_oracle_bm25", "--limit", "1", "--use_cache", "ct/db"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "no-such-model" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].endswith(
        f"--use_cache ct/db: the cache file ct/db_rank0.db is damaged (SQLite: database disk image is malformed)"
        f"{TAIL}"), proc.stderr[-2000:]


# ------------------------------------------------------------------------------------------------------------- D4
def _bm25_corpus(tmp_path: Path, n: int = 10) -> Path:
    import json

    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"passage {i} about topic {i % 3}"})
                            + "\n" for i in range(n)), encoding="utf-8")
    return path


def _cut_to_half(path: Path) -> int:
    os.truncate(path, path.stat().st_size // 2)
    return path.stat().st_size


@pytest.fixture
def damaged_index(tmp_path):
    """A small BM25 index built by ``tokrag index build`` whose postings file (``*.doc``) is cut to half its size (a
    truncated copy; b2 cut nq-wiki-12k's the same way); -> (corpus file, index folder, the .doc file's original size)."""
    from tokrag_model.cli import main

    corpus, idx = _bm25_corpus(tmp_path), tmp_path / "idx"
    assert main(["index", "build", "--corpus", str(corpus), "--index", str(idx), "--threads", "1"]) == 0
    doc = next(idx.glob("*.doc"))
    size = doc.stat().st_size
    _cut_to_half(doc)
    return corpus, idx.resolve(), size


def test_a_damaged_bm25_index_is_refused_in_one_line_with_the_rebuild_command(damaged_index, monkeypatch):
    """Lucene's error came with its 16-line Java stack inside the message, ending '; rebuild it' without saying how;
    now its first line (and the innermost cause, which names the file) and the exact command."""
    from retrieval.bm25 import Bm25Searcher
    from retrieval.corpus import load_corpus
    from retrieval.errors import IndexNotFoundError

    corpus_file, idx, size = damaged_index
    doc = next(idx.glob("*.doc"))
    with pytest.raises(IndexNotFoundError) as exc:  # s52 f4: refused before Java opens it, by the checksum check
        Bm25Searcher(idx, corpus=load_corpus(str(corpus_file)))
    assert str(exc.value) == (f"damaged Lucene index {idx}: {doc} ({size // 2} bytes) lacks Lucene's codec footer (a "
                              f"disk error or a bad copy); rebuild it: tokrag index build --corpus {corpus_file} "
                              f"--index {idx} --force")
    monkeypatch.setattr("retrieval.bm25.lucene_checksum_damage", lambda folder: None)  # damage only Lucene finds
    with pytest.raises(IndexNotFoundError) as exc:
        Bm25Searcher(idx, corpus=load_corpus(str(corpus_file)))
    msg = str(exc.value)
    assert "\n" not in msg and "\tat " not in msg and ".java:" not in msg, msg
    assert msg.startswith(f"cannot open the Lucene index {idx}: JVM exception occurred: "
                          "org.apache.lucene.index.CorruptIndexException: "), msg
    assert f'MemorySegmentIndexInput(path="{next(idx.glob("*.doc"))}")' in msg, msg  # the damaged file is named
    assert msg.endswith(f"; rebuild it: tokrag index build --corpus {corpus_file} --index {idx} --force"), msg
    with pytest.raises(IndexNotFoundError) as exc:  # `tokrag retrieve --index DIR` (no corpus): the folder at least
        Bm25Searcher(idx)
    assert str(exc.value).endswith(f"; rebuild it: tokrag index build --corpus <its corpus> --index {idx} --force")
    monkeypatch.setenv("TOKRAG_TRACEBACK", "1")  # the Java stack, for a bug report
    with pytest.raises(IndexNotFoundError) as exc:
        Bm25Searcher(idx)
    assert "Lucene99PostingsReader.java:" in str(exc.value) and str(exc.value).count("\n") > 5, exc.value


def test_index_build_rebuilds_a_damaged_index_instead_of_reusing_it(damaged_index, capsys, caplog):
    """``tokrag index build`` said 'already built, reused (--force rebuilds it)' and exit 0 over the damaged index;
    now a reused index whose Lucene files lack their codec header or footer is rebuilt, with a warning that names
    the file, and searches again."""
    import logging

    from retrieval.bm25 import Bm25Searcher, lucene_damage
    from tokrag_model.cli import main

    corpus_file, idx, size = damaged_index
    doc = next(idx.glob("*.doc"))
    assert lucene_damage(idx) == f"{doc} ({size // 2} bytes) lacks Lucene's codec footer"
    capsys.readouterr()
    with caplog.at_level(logging.WARNING, logger="retrieval.bm25"):
        assert main(["index", "build", "--corpus", str(corpus_file), "--index", str(idx), "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "already built, reused" not in err and "10 passages; built in" in err, err
    assert [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()] == [
        f"BM25 index {idx} is damaged: {doc} ({size // 2} bytes) lacks Lucene's codec footer (a truncated copy or a "
        "disk error?); rebuilding it"]
    assert doc.stat().st_size == size and lucene_damage(idx) is None
    s = Bm25Searcher(idx)
    try:
        assert s.num_docs == 10 and s.search("passage 3", k=1)[0][0] == "d3"
    finally:
        s.close()
    fnm = next(idx.glob("*.fnm"))  # a file whose start is damaged: its codec header
    fnm.write_bytes(b"\0\0\0\0" + fnm.read_bytes()[4:])
    assert lucene_damage(idx) == f"{fnm} ({fnm.stat().st_size} bytes) lacks Lucene's codec header"


def test_java_error_line_keeps_the_first_line_and_the_innermost_cause():
    """The layout of pyjnius' JavaException text (a .doc cut inside its header: Lucene's first line names only the
    folder, the cause names the file; /work/scratch/s50/f10/d4_old.txt)."""
    from retrieval.bm25 import java_error_line

    text = ("JVM exception occurred: org.apache.lucene.index.CorruptIndexException: Problem reading index from D\n"
            "org.apache.lucene.index.CorruptIndexException: Problem reading index from D\n"
            "\torg.apache.lucene.index.SegmentCoreReaders.<init>(SegmentCoreReaders.java:165)\n"
            "\tCaused by:\n\tjava.io.EOFException: read past EOF: MemorySegmentIndexInput(path=\"D/_0.doc\")\n"
            "\torg.apache.lucene.store.MemorySegmentIndexInput.readBytes(MemorySegmentIndexInput.java:154)\n")
    assert java_error_line(Exception(text)) == (
        "JVM exception occurred: org.apache.lucene.index.CorruptIndexException: Problem reading index from D "
        "(caused by java.io.EOFException: read past EOF: MemorySegmentIndexInput(path=\"D/_0.doc\"))")
    assert java_error_line(Exception("JVM exception occurred: x.Y: z\nx.Y: z\n\tx.Y.f(Y.java:1)")) == \
        "JVM exception occurred: x.Y: z"
    assert java_error_line(ValueError("")) == "ValueError"
