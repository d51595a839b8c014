"""The file-hash memo (:class:`retrieval.io.HashMemo`, ``<cache_dir>/leaderboard-file-hashes.json``) drops the entries
of files that no longer exist when it saves (s61 c1). It only grew before: every test run and spec run that hashed files
in a temporary folder left their entries behind, and every ``HashMemo()`` parses the whole file (several a leaderboard
cell, one a plain lm_eval run's provenance). A machine that had run the test suite a few hundred times held 37,438
entries (8.1 MB), ~31,700 of them of deleted files: ``tests/test_leaderboard_v2.py`` took 33 s of CPU over that memo
and 20.5 s over the pruned one. An entry is served only when its stamp is the file's current one, so a dropped entry
could never have been served: no hash changes, nothing is hashed again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from retrieval.io import PYTHON_CODE_KIND, HashMemo, file_stamp, sha256_file


def _served(memo_file: Path, f: Path) -> tuple[str, int]:
    """What a next process's memo gives for ``f``, and how many times it hashed it."""
    calls = []

    def fn(p):
        calls.append(p)
        return sha256_file(p)

    return HashMemo(memo_file).derived(f, "", fn), len(calls)


def test_a_save_drops_the_entries_of_deleted_files_and_keeps_the_others(tmp_path):
    memo_file = tmp_path / "cache" / "memo.json"
    kept, gone, in_gone_dir, new = (tmp_path / "kept.jsonl", tmp_path / "gone.jsonl", tmp_path / "old run" / "a.yaml",
                                    tmp_path / "new.jsonl")
    in_gone_dir.parent.mkdir()
    for f in (kept, gone, in_gone_dir, new):
        f.write_text(f"{f.name}\n", encoding="utf-8")
    first = HashMemo(memo_file)
    for f in (kept, gone, in_gone_dir):
        first.sha(f)
    first.derived(kept, PYTHON_CODE_KIND, lambda p: "k" * 64)
    first.derived(gone, PYTHON_CODE_KIND, lambda p: "g" * 64)
    first.save()
    before = json.loads(memo_file.read_text(encoding="utf-8"))
    assert len(before) == 5
    gone.unlink()
    in_gone_dir.unlink()
    in_gone_dir.parent.rmdir()

    later = HashMemo(memo_file)  # reads all five; hashes one new file, so its save merges and writes
    assert later.sha(new) == sha256_file(new)
    later.save()
    after = json.loads(memo_file.read_text(encoding="utf-8"))
    # the old code wrote all six back
    assert after == {str(kept.resolve()): before[str(kept.resolve())],
                     f"{PYTHON_CODE_KIND}:{kept.resolve()}": before[f"{PYTHON_CODE_KIND}:{kept.resolve()}"],
                     str(new.resolve()): [*file_stamp(new), sha256_file(new)]}
    assert _served(memo_file, kept) == (sha256_file(kept), 0)  # a kept entry is still served without hashing


def test_an_entry_of_a_deleted_file_that_another_memo_wrote_meanwhile_is_dropped_too(tmp_path):
    """The file's entries (another process's) are pruned as well as this memo's own."""
    memo_file, a, b = tmp_path / "memo.json", tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a\n", encoding="utf-8")
    b.write_text("b\n", encoding="utf-8")
    mine, theirs = HashMemo(memo_file), HashMemo(memo_file)
    theirs.sha(a)
    theirs.save()
    a.unlink()
    mine.sha(b)
    mine.save()
    assert json.loads(memo_file.read_text(encoding="utf-8")) == {str(b.resolve()): [*file_stamp(b), sha256_file(b)]}


def test_a_stale_entry_of_an_existing_file_and_a_dangling_link_s_entry(tmp_path):
    """An existing file's entry with another stamp stays (pruning is by existence only: the merge keeps such an entry,
    tests/test_s58_p1_hash_memo_merge.py); the entry of a link whose target was deleted goes."""
    memo_file, f, target, link = tmp_path / "memo.json", tmp_path / "f.txt", tmp_path / "t.txt", tmp_path / "l.txt"
    f.write_text("one\n", encoding="utf-8")
    target.write_text("target\n", encoding="utf-8")
    os.symlink(target, link)
    stale = [file_stamp(f)[0] - 1, *file_stamp(f)[1:], "0" * 64]
    memo_file.write_text(json.dumps({str(f.resolve()): stale, f"{PYTHON_CODE_KIND}:{link}": [*file_stamp(link), "1" * 64]}),
                         encoding="utf-8")
    target.unlink()  # the link dangles
    memo = HashMemo(memo_file)
    memo.dirty = True
    memo.save()
    assert json.loads(memo_file.read_text(encoding="utf-8")) == {str(f.resolve()): stale}
    assert _served(memo_file, f) == (sha256_file(f), 1)  # a stale stamp is hashed again, as before
