"""A process parses the file-hash memo (``<cache_dir>/leaderboard-file-hashes.json``) once while its bytes do not change
(s61 c1): every ``HashMemo()`` parsed the whole file (several a leaderboard cell), ~45 ms of CPU at 21,000 entries (the key
of a cell whose model is lm-eval's ``hf`` hashes the whole ``lm_eval`` package, ~14,000 task YAMLs included). The bytes are compared, not the time stamps: an in-place rewrite
within the file system's timestamp tick is read as what it holds. Each memo gets its own table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import retrieval.io as rio
from retrieval.io import HashMemo, file_stamp, sha256_file


def _parses(monkeypatch) -> list[int]:
    """The length of every text ``json.loads`` parses from now on."""
    seen: list[int] = []
    real = json.loads

    def spy(s, *a, **k):
        seen.append(len(s))
        return real(s, *a, **k)

    monkeypatch.setattr(rio.json, "loads", spy)
    return seen


def _memo_with(tmp_path: Path, n: int) -> tuple[Path, list[Path]]:
    memo_file = tmp_path / "cache" / "memo.json"
    files = []
    for i in range(n):
        f = tmp_path / f"f{i}.txt"
        f.write_text(f"file {i}\n", encoding="utf-8")
        files.append(f)
    m = HashMemo(memo_file)
    for f in files:
        m.sha(f)
    m.save()
    return memo_file, files


def test_unchanged_bytes_are_parsed_once_and_each_memo_has_its_own_table(tmp_path, monkeypatch):
    memo_file, files = _memo_with(tmp_path, 3)
    getattr(rio, "_MEMO_READS", {}).clear()  # what this process parsed before
    seen = _parses(monkeypatch)
    a, b = HashMemo(memo_file), HashMemo(memo_file)
    assert len(seen) == 1  # the old code parsed it for each memo: 2
    assert a.table == b.table == json.loads(memo_file.read_text(encoding="utf-8"))
    assert a.table is not b.table
    extra = tmp_path / "extra.txt"
    extra.write_text("x\n", encoding="utf-8")
    a.sha(extra)
    assert str(extra.resolve()) in a.table and str(extra.resolve()) not in b.table
    assert str(extra.resolve()) not in HashMemo(memo_file).table  # nor in the next memo (a has not saved)
    assert [b.sha(f) for f in files] == [sha256_file(f) for f in files]


def test_a_save_or_an_in_place_rewrite_is_read_as_the_file_now_holds(tmp_path, monkeypatch):
    memo_file, files = _memo_with(tmp_path, 2)
    first = HashMemo(memo_file)
    g = tmp_path / "g.txt"
    g.write_text("g\n", encoding="utf-8")
    other = HashMemo(memo_file)
    other.sha(g)
    other.save()
    assert str(g.resolve()) in HashMemo(memo_file).table and str(g.resolve()) not in first.table

    # the same size, the same inode, the mtime put back: only the bytes tell
    text = memo_file.read_text(encoding="utf-8")
    key = str(files[0].resolve())
    old_entry = json.loads(text)[key]
    new_entry = [old_entry[0], old_entry[1], old_entry[2], old_entry[3], "f" * 64]
    edited = text.replace(json.dumps(old_entry), json.dumps(new_entry))
    assert edited != text and len(edited) == len(text)
    st = memo_file.stat()
    with open(memo_file, "r+", encoding="utf-8") as fh:
        fh.write(edited)
    os.utime(memo_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (memo_file.stat().st_size, memo_file.stat().st_mtime_ns, memo_file.stat().st_ino) == (
        st.st_size, st.st_mtime_ns, st.st_ino)
    assert HashMemo(memo_file).table[key] == new_entry
    assert HashMemo(memo_file).table[key][:-1] == file_stamp(files[0])


def test_a_file_that_is_not_a_json_object_is_read_as_before(tmp_path):
    memo_file = tmp_path / "memo.json"
    memo_file.write_text("[1, 2]", encoding="utf-8")
    assert HashMemo(memo_file).table == {}
    memo_file.write_text("{not json", encoding="utf-8")
    assert HashMemo(memo_file).table == {}
    memo_file.write_bytes(b"\xff\xfe{}")
    assert HashMemo(memo_file).table == {}
