"""``retrieval.io.tree_fingerprint`` follows symlinked folders (a ``TOKRAG_DATA_DIR`` made of links).

Before the fix ``os.walk`` did not follow links, so a folder whose subfolders are symlinks was fingerprinted as
(nearly) empty: re-pointing ``nq_open`` at an edited copy kept the data fingerprint, and so the run keys.
"""

from __future__ import annotations

import os
from pathlib import Path

from retrieval.io import HashMemo, fingerprint, sha256_file, tree_fingerprint


def _copy(dst: Path, dev: str) -> Path:
    (dst / "nq_open").mkdir(parents=True)
    (dst / "nq_open" / "NQ-open.dev.jsonl").write_text(dev, encoding="utf-8")
    return dst / "nq_open"


def test_repointed_symlinked_folder_changes_the_fingerprint(tmp_path):
    memo = HashMemo(tmp_path / "memo.json")
    a = _copy(tmp_path / "a", '{"question": "who?", "answer": ["me"]}\n')
    b = _copy(tmp_path / "b", '{"question": "why?", "answer": ["so"]}\n')
    data = tmp_path / "data"
    data.mkdir()
    (data / "README.txt").write_text("data folder\n", encoding="utf-8")
    os.symlink(a, data / "nq_open")
    with_a = tree_fingerprint(data, memo)
    # the files as seen through the link, exactly as a real folder in its place would be fingerprinted
    assert with_a == fingerprint([["README.txt", sha256_file(data / "README.txt")],
                                  ["nq_open/NQ-open.dev.jsonl", sha256_file(a / "NQ-open.dev.jsonl")]])
    (data / "nq_open").unlink()
    os.symlink(b, data / "nq_open")
    with_b = tree_fingerprint(data, memo)
    assert with_b != with_a
    assert with_b == fingerprint([["README.txt", sha256_file(data / "README.txt")],
                                  ["nq_open/NQ-open.dev.jsonl", sha256_file(b / "NQ-open.dev.jsonl")]])


def test_folder_without_links_is_fingerprinted_as_before(tmp_path):
    memo = HashMemo(tmp_path / "memo.json")
    root = tmp_path / "r"
    _copy(root, "x\n")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / "f.py").write_text("y = 1\n", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "g.py").write_text("z\n", encoding="utf-8")
    assert tree_fingerprint(root, memo) == fingerprint([
        ["nq_open/NQ-open.dev.jsonl", sha256_file(root / "nq_open" / "NQ-open.dev.jsonl")],
        ["sub/deeper/f.py", sha256_file(root / "sub" / "deeper" / "f.py")],
    ])


def test_symlink_loop_terminates(tmp_path):
    memo = HashMemo(tmp_path / "memo.json")
    root = tmp_path / "r"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("f\n", encoding="utf-8")
    os.symlink(root, root / "sub" / "back")  # r/sub/back -> r: a loop
    os.symlink(root / "sub", root / "sub" / "self")  # r/sub/self -> r/sub: a loop
    # two links to one folder that is no ancestor: both are read, under their own names
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "s.txt").write_text("s\n", encoding="utf-8")
    os.symlink(tmp_path / "shared", root / "l1")
    os.symlink(tmp_path / "shared", root / "l2")
    s, f = sha256_file(tmp_path / "shared" / "s.txt"), sha256_file(root / "sub" / "f.txt")
    assert tree_fingerprint(root, memo) == fingerprint([["l1/s.txt", s], ["l2/s.txt", s], ["sub/f.txt", f]])
