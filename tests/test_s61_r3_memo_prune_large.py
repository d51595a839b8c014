"""The file-hash memo's pruning (s61 c1, fafe0ea) keeps the entries of large files whose path is gone for now (s61 r3,
review): fafe0ea dropped every entry whose file did not exist at a save, so a corpus on a drive that is not mounted at
that moment (or a data folder only another machine or container sharing the cache folder sees) lost its entry, and the
next run that sees the file again hashed the whole corpus again (the memo is there so that "a multi-GB corpus is hashed
once"). A file's entry is dropped only when the file was smaller than MEMO_PRUNE_MAX_BYTES (16 MiB); the growth c1
measured was of small files in deleted temporary folders. The large file here is sparse (no 16 MiB written)."""

from __future__ import annotations

import json

from retrieval.io import MEMO_PRUNE_MAX_BYTES, HashMemo, file_stamp, sha256_file


def _served(memo_file, f) -> tuple[str, int]:
    """What a next process's memo gives for ``f``, and how many times it hashed it."""
    calls = []

    def fn(p):
        calls.append(p)
        return sha256_file(p)

    return HashMemo(memo_file).derived(f, "", fn), len(calls)


def test_a_large_file_s_entry_survives_a_save_while_its_folder_is_away(tmp_path):
    assert MEMO_PRUNE_MAX_BYTES == 16 << 20
    memo_file, drive = tmp_path / "cache" / "memo.json", tmp_path / "drive"
    drive.mkdir()
    big, small, other = drive / "corpus.jsonl", drive / "small.jsonl", tmp_path / "other.txt"
    with open(big, "wb") as fh:
        fh.truncate(MEMO_PRUNE_MAX_BYTES)  # sparse: 16 MiB of zeros, none written
    small.write_text("small\n", encoding="utf-8")
    other.write_text("other\n", encoding="utf-8")
    first = HashMemo(memo_file)
    big_sha, small_sha = first.sha(big), first.sha(small)
    first.save()
    big_stamp = file_stamp(big)

    drive.rename(tmp_path / "unmounted")  # the drive is away: both paths are gone
    later = HashMemo(memo_file)
    later.sha(other)
    later.save()  # prunes
    table = json.loads(memo_file.read_text(encoding="utf-8"))
    assert table[str(big.resolve())] == [*big_stamp, big_sha]  # fafe0ea dropped it
    assert str(small.resolve()) not in table  # a small file's entry goes, as in fafe0ea
    assert str(other.resolve()) in table

    (tmp_path / "unmounted").rename(drive)  # back: same inode, same ctime, same size
    assert file_stamp(big) == big_stamp
    assert _served(memo_file, big) == (big_sha, 0)  # not hashed again (fafe0ea: hashed again, 1)
    assert _served(memo_file, small) == (small_sha, 1)


def test_a_gone_entry_just_below_the_bound_or_malformed_is_dropped(tmp_path):
    memo_file = tmp_path / "memo.json"
    gone = str(tmp_path / "gone")
    memo_file.write_text(json.dumps({
        f"{gone}/below.bin": [MEMO_PRUNE_MAX_BYTES - 1, 1, 1, 1, "a" * 64],
        f"{gone}/at.bin": [MEMO_PRUNE_MAX_BYTES, 1, 1, 1, "b" * 64],
        f"{gone}/odd.bin": "not a list",
        f"{gone}/empty.bin": [],
    }), encoding="utf-8")
    memo = HashMemo(memo_file)
    memo.dirty = True
    memo.save()
    assert json.loads(memo_file.read_text(encoding="utf-8")) == {f"{gone}/at.bin": [MEMO_PRUNE_MAX_BYTES, 1, 1, 1, "b" * 64]}
