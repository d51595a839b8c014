"""Two hash memos on one memo file (two runners on one cache folder, ``tokrag leaderboard run --jobs 2``) keep the
fresher entry when they save in the bad order (s58 p1): :meth:`retrieval.io.HashMemo.save` merged with
``current.update(self.table)``, so the memo that saved last wrote every entry it held over the file's, also its hash
of a file seen before an edit over the other memo's hash of it seen after the edit, and an entry it had only read when
made over one written since. That costs a re-hash in the next process, never a wrong hash (an entry is served only when
its stamp is the file's current one: asserted here too, old code and new).

The edits change the file's size, so its stamp changes whatever the file system's timestamp tick: no timing."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval.io import HashMemo, file_stamp, sha256_file


def _entry(memo_file: Path, f: Path) -> list:
    return json.loads(memo_file.read_text(encoding="utf-8"))[str(f.resolve())]


def _served_without_hashing(memo_file: Path, f: Path) -> tuple[str, int]:
    """What a next process's memo gives for ``f``, and how many times it hashed it."""
    calls = []

    def fn(p):
        calls.append(p)
        return sha256_file(p)

    return HashMemo(memo_file).derived(f, "", fn), len(calls)


def test_the_memo_that_saw_the_file_before_an_edit_saving_last_keeps_the_newer_entry(tmp_path):
    memo_file, f = tmp_path / "cache" / "memo.json", tmp_path / "passages.jsonl"
    f.write_text("version one\n", encoding="utf-8")
    old, new = HashMemo(memo_file), HashMemo(memo_file)  # both made before either saves
    before = old.sha(f)
    f.write_text("version two, longer\n", encoding="utf-8")
    after = new.sha(f)
    assert before != after == sha256_file(f)

    new.save()
    old.save()  # the bad order: the older view last
    assert _entry(memo_file, f) == [*file_stamp(f), after]  # was: the stamp before the edit and its hash
    assert _served_without_hashing(memo_file, f) == (after, 0)  # was: (after, 1), hashed again


def test_the_good_order_keeps_the_newer_entry_too(tmp_path):
    memo_file, f = tmp_path / "memo.json", tmp_path / "passages.jsonl"
    f.write_text("version one\n", encoding="utf-8")
    old, new = HashMemo(memo_file), HashMemo(memo_file)
    old.sha(f)
    f.write_text("version two, longer\n", encoding="utf-8")
    after = new.sha(f)
    old.save()
    new.save()
    assert _entry(memo_file, f) == [*file_stamp(f), after]
    assert _served_without_hashing(memo_file, f) == (after, 0)


def test_an_entry_only_read_is_not_written_back_over_a_later_one(tmp_path):
    """A memo made when the file held the pre-edit entry, saving for another file after a newer memo saved the edit's
    entry, wrote the pre-edit entry back (it held it since it read the file)."""
    memo_file, f, g = tmp_path / "memo.json", tmp_path / "passages.jsonl", tmp_path / "queries.jsonl"
    f.write_text("version one\n", encoding="utf-8")
    g.write_text("who?\n", encoding="utf-8")
    first = HashMemo(memo_file)
    first.sha(f)
    first.save()
    reader = HashMemo(memo_file)  # reads f's pre-edit entry; never asks for f
    f.write_text("version two, longer\n", encoding="utf-8")
    newer = HashMemo(memo_file)
    after = newer.sha(f)
    newer.save()
    assert reader.sha(g) == sha256_file(g)
    reader.save()
    assert _entry(memo_file, f) == [*file_stamp(f), after]
    assert _entry(memo_file, g) == [*file_stamp(g), sha256_file(g)]
    assert _served_without_hashing(memo_file, f) == (after, 0)


def test_a_stale_entry_is_never_served(tmp_path):
    """The claim checked before the fix (it holds on the old code too): whatever entry the file holds for ``f``, a
    memo gives ``f``'s current hash; a stamp that is not ``f``'s current one is hashed again."""
    memo_file, f = tmp_path / "memo.json", tmp_path / "passages.jsonl"
    f.write_text("version one\n", encoding="utf-8")
    stale = HashMemo(memo_file)
    before = stale.sha(f)
    f.write_text("version two, longer\n", encoding="utf-8")
    stale.dirty = True
    stale.save()  # whatever the merge keeps
    assert HashMemo(memo_file).sha(f) == sha256_file(f) != before
    memo_file.write_text(json.dumps({str(f.resolve()): [*_entry_stamp_before(f), before]}), encoding="utf-8")
    assert HashMemo(memo_file).sha(f) == sha256_file(f) != before


def _entry_stamp_before(f: Path) -> list[int]:
    """A stamp of ``f`` other than its current one (its size one byte less)."""
    stamp = file_stamp(f)
    return [stamp[0] - 1, *stamp[1:]]


def test_a_computed_entry_wins_over_the_files_when_neither_or_only_it_matches(tmp_path):
    """Of two computed entries, the file's is kept only when its stamp is the file's current one and this memo's is
    not; otherwise this memo's (the merge never keeps a stamp the file no longer has over one it has)."""
    memo_file, f = tmp_path / "memo.json", tmp_path / "passages.jsonl"
    f.write_text("version one\n", encoding="utf-8")
    a, b = HashMemo(memo_file), HashMemo(memo_file)
    a.sha(f)
    f.write_text("version two, longer\n", encoding="utf-8")
    b.sha(f)
    f.write_text("version three, longer still\n", encoding="utf-8")
    mine = a.table[str(f.resolve())]
    b.save()
    a.save()  # neither stamp is f's current one: a's own
    assert _entry(memo_file, f) == mine
    assert _served_without_hashing(memo_file, f) == (sha256_file(f), 1)
