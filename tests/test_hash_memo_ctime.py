"""A same-size edit whose mtime is put back (``touch -r``, ``cp -p``, ``rsync -a``, tar) is a new file to the hash
memo (:class:`retrieval.io.HashMemo`) and to the model weights fingerprint (:func:`tokrag_model.loading.weights_fingerprint`):
both were keyed by size and mtime only, so the changed corpus kept its old SHA-256 in the leaderboard run keys and in
the results' ``tokrag_data`` provenance."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from retrieval.io import HashMemo, sha256_file

ORIG = b'{"id": "1", "title": "Loire", "text": "The Loire is 1012 kilometres long; 412 kilometres are navigable."}\n'


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """A fresh persistent memo (``<cache_dir>/leaderboard-file-hashes.json``) per test."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _edit_keeping_mtime(path: Path, old: bytes, new: bytes) -> None:
    """Rewrite ``path`` in place (same inode, same size) and restore its mtime to the ns, as ``touch -r`` does."""
    st = path.stat()
    time.sleep(0.05)  # past the file system's timestamp tick, as a user's later edit is
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    with open(path, "r+b") as f:  # in place, as `sed ... > passages.jsonl` truncates and rewrites it
        f.write(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_same_size_edit_with_restored_mtime_gets_a_new_sha(tmp_path):
    corpus = tmp_path / "passages.jsonl"
    corpus.write_bytes(ORIG)
    memo = HashMemo()
    first = memo.sha(corpus)
    assert first == sha256_file(corpus)
    memo.save()

    _edit_keeping_mtime(corpus, b"412 kilometres", b"555 kilometres")
    # a later process (the persisted memo) and the same process (its in-memory table) both see the new bytes
    assert HashMemo().sha(corpus) == sha256_file(corpus) != first
    assert memo.sha(corpus) == sha256_file(corpus) != first


def test_results_provenance_records_the_new_sha(tmp_path):
    """What plain lm_eval writes to ``configs.*.metadata.tokrag_data.files.corpus.sha256``."""
    from tasks.provenance import path_record

    corpus = tmp_path / "passages.jsonl"
    corpus.write_bytes(ORIG)
    first = path_record(corpus)["sha256"]
    _edit_keeping_mtime(corpus, b"412 kilometres", b"777 kilometres")
    assert path_record(corpus) == {"path": str(corpus.resolve()), "sha256": sha256_file(corpus)}
    assert sha256_file(corpus) != first


def test_unchanged_file_is_still_hashed_once(tmp_path):
    """The memo still saves the re-hash of a file that did not change (same stamp), across processes."""
    from retrieval.io import file_stamp

    f = tmp_path / "big.jsonl"
    f.write_bytes(ORIG)
    calls = []

    def fn(p):
        calls.append(p)
        return sha256_file(p)

    memo = HashMemo()
    memo.derived(f, "", fn)
    memo.save()
    assert HashMemo().derived(f, "", fn) == sha256_file(f) and len(calls) == 1
    assert file_stamp(f) == [f.stat().st_size, f.stat().st_mtime_ns, f.stat().st_ctime_ns, f.stat().st_ino]


def test_old_memo_entries_are_recomputed(tmp_path):
    """An entry of the older ``[size, mtime_ns, sha]`` form (a memo file written before this change) is not
    trusted: it is what served the stale hash."""
    from retrieval.io import HASH_MEMO_FILE, atomic_write_json
    from retrieval.paths import cache_dir

    f = tmp_path / "passages.jsonl"
    f.write_bytes(ORIG)
    st = f.stat()
    atomic_write_json(cache_dir() / HASH_MEMO_FILE, {str(f.resolve()): [st.st_size, st.st_mtime_ns, "0" * 64]})
    assert HashMemo().sha(f) == sha256_file(f)


def test_weights_fingerprint_sees_a_same_size_edit_with_restored_mtime(tmp_path):
    from tokrag_model.loading import weights_fingerprint

    folder = tmp_path / "model"
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"\x00" * 64 + b"AAAA" + b"\x00" * 64)
    first = weights_fingerprint(folder)
    assert (folder / ".tokrag_fingerprint.json").is_file()  # the sidecar that served the stale value
    assert weights_fingerprint(folder) == first

    _edit_keeping_mtime(weights, b"AAAA", b"BBBB")
    second = weights_fingerprint(folder)
    assert second != first
    weights.write_bytes(b"\x00" * 64 + b"AAAA" + b"\x00" * 64)
    assert weights_fingerprint(folder) == first  # content-based: the same bytes give the same value


def test_tasks_readme_states_the_memo_stamp():
    """tasks/README.md ("provenance") said hashes were memoised by path, size and mtime, the rule that kept stale hashes."""
    from tasks import TASK_DIR

    doc = " ".join((TASK_DIR / "README.md").read_text(encoding="utf-8").split())
    assert "memoised by path, size and mtime" not in doc
    assert "File hashes are memoised by path, size, mtime, ctime and inode in `$TOKRAG_CACHE_DIR`" in doc
