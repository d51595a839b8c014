"""retrieval.io's atomic writes: the file's permission bits are those of a plain ``open(path, "w")`` (they were
0600, ``tempfile.mkstemp``'s), a replaced file keeps its own, and no temporary file is left behind."""

from __future__ import annotations

import os

import pytest

from retrieval.io import atomic_write_bytes, atomic_write_json, atomic_write_text


@pytest.fixture()
def umask_022():
    old = os.umask(0o022)  # per process: restored after the test
    yield
    os.umask(old)


def test_a_new_file_gets_the_mode_open_gives_under_the_umask(tmp_path, umask_022):
    atomic_write_json(tmp_path / "sub" / "a.json", {"x": 1})
    with open(tmp_path / "plain.txt", "w"):
        pass
    assert (tmp_path / "sub" / "a.json").stat().st_mode & 0o777 == 0o644 == (tmp_path / "plain.txt").stat().st_mode & 0o777
    os.umask(0o077)
    atomic_write_text(tmp_path / "b.txt", "b\n")
    assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "sub" / "a.json").read_text() == '{\n  "x": 1\n}\n'


def test_a_replaced_file_keeps_its_mode_and_no_temporary_file_is_left(tmp_path, umask_022):
    p = tmp_path / "r.bin"
    p.write_bytes(b"old")
    os.chmod(p, 0o640)
    atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"new" and p.stat().st_mode & 0o777 == 0o640
    os.chmod(p, 0o444)  # read-only: replaced all the same (the folder is writable), and stays read-only
    atomic_write_bytes(p, b"newer")
    assert p.read_bytes() == b"newer" and p.stat().st_mode & 0o777 == 0o444
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.bin"]


def test_scratch_dirs_get_the_mode_of_a_plain_mkdir(tmp_path):
    """Index and converted-model folders are built in a scratch folder and renamed into place: ``mkdtemp``'s 0o700
    stayed on them, so another user of a shared cache could not read an index or model folder."""
    import os

    from retrieval.io import scratch_dir

    old = os.umask(0o022)
    try:
        a = scratch_dir(tmp_path, ".idx.", ".tmp")
        os.umask(0o077)
        b = scratch_dir(tmp_path, ".model.")
    finally:
        os.umask(old)
    assert a.parent == tmp_path and a.name.startswith(".idx.") and a.name.endswith(".tmp") and not any(a.iterdir())
    assert (a.stat().st_mode & 0o777, b.stat().st_mode & 0o777) == (0o755, 0o700)


def test_scratch_dir_leaves_the_process_umask_alone(tmp_path, monkeypatch):
    """Reading the umask means setting it (``os.umask(0)`` then back), and the umask is process-wide: a file another
    thread created in between got ``0o666`` (a reviewer's probe: 1 world-writable file in 20,000 calls beside one
    writer thread). The kernel applies it to ``os.mkdir``'s mode instead; nothing calls ``os.umask``."""
    import os

    from retrieval.io import scratch_dir

    def no_umask(mask):
        raise AssertionError(f"os.umask({mask:#o}) called")

    monkeypatch.setattr(os, "umask", no_umask)
    names = {scratch_dir(tmp_path, ".x.").name for _ in range(50)}
    assert len(names) == 50 and all(n.startswith(".x.") and len(n) == 3 + 8 for n in names)
    # an interrupted build's scratch folder is found and removed by the next build of the same target
    from retrieval.io import remove_stale_scratch

    monkeypatch.undo()
    (tmp_path / "idx").mkdir()
    left = scratch_dir(tmp_path, ".idx.", ".tmp")
    (left / "index").mkdir()
    assert remove_stale_scratch(tmp_path / "idx", frozenset({"index"}), suffix=".tmp") == [left] and not left.exists()
