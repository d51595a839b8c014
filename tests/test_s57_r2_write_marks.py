"""Review of f2's one-line write errors (s57 r2): what ``retrieval.io.no_room_naming`` marks as a write's.

f2 (b908462) marks the OSError of an in-place write block that names the block's file, comparing
``os.fspath(exc.filename)`` with the path. An OSError of a file-descriptor call names the descriptor's number
(``os.stat(fd)``: ``[Errno 9] Bad file descriptor: 1048576``), and ``os.fspath`` of an int raised TypeError inside
the handler: the real error was replaced by a TypeError traceback. It is another file's error: passed unchanged,
unmarked, as before b908462. Also: the advice of a read-only file system met by a write tokrag did not mark.
"""

from __future__ import annotations

import errno
import os

import pytest

import retrieval.io as rio
from retrieval.errors import print_no_room

BAD_FD = 2 ** 20  # far above any descriptor this process holds: os.stat(BAD_FD) is EBADF, named by the number


def test_an_error_naming_a_file_descriptor_passes_through_unchanged(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    path = tmp_path / "records.jsonl"
    with pytest.raises(OSError) as caught, rio.no_room_naming(path):
        os.stat(BAD_FD)
    exc = caught.value
    assert (type(exc), exc.errno, exc.filename) == (OSError, errno.EBADF, BAD_FD)
    assert not hasattr(exc, "tokrag_write")  # not marked: no write of path raised it
    assert print_no_room(exc, "tokrag analyze") is False  # the caller re-raises it: its traceback
    assert capsys.readouterr().err == ""


def test_the_open_of_the_blocks_own_file_is_still_marked(tmp_path, monkeypatch, capsys):
    """The rule the fix keeps: ``open(path)``'s own error (naming ``path``, as str or bytes) is the write's."""
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    path = tmp_path / "records.jsonl"
    path.mkdir()  # a folder where the file is appended: a real EISDIR naming path
    with pytest.raises(IsADirectoryError) as caught, rio.no_room_naming(path):
        open(path, "ab")
    assert getattr(caught.value, "tokrag_write") == str(path)
    with pytest.raises(IsADirectoryError) as caught, rio.no_room_naming(path):
        open(os.fsencode(path), "ab")  # named by bytes
    assert getattr(caught.value, "tokrag_write") == str(path)
    assert print_no_room(caught.value, "tokrag analyze") is True
    assert capsys.readouterr().err == (
        f"tokrag analyze: error: [Errno 21] Is a directory: {os.fsencode(path)!r} (a write failed: a folder is where the "
        "file is written); move the folder away or choose another --out / TOKRAG_CACHE_DIR and run the same command "
        "again (set TOKRAG_TRACEBACK=1 for the stack trace)\n")


def test_a_read_only_file_system_met_by_a_librarys_write_says_to_move_that_library(tmp_path, monkeypatch, capsys):
    """f2's line is given for EROFS anywhere, marked or not, and its advice named only the command's options: a
    ``datasets`` cache (or a hub cache's lock file) on a read-only disk was told to choose another ``--output_path``,
    which changes nothing. An unmarked EROFS's advice now also says to point that library to a writable folder; a
    tokrag write's (marked) is as f2 wrote it."""
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    lib = "/root/.cache/huggingface/datasets/_root_.cache_x.lock"
    unmarked = OSError(errno.EROFS, os.strerror(errno.EROFS), lib)
    assert print_no_room(unmarked, "tokrag eval") is True
    assert capsys.readouterr().err == (
        f"tokrag eval: error: [Errno 30] Read-only file system: '{lib}' (a write failed); choose another --output_path "
        "/ TOKRAG_CACHE_DIR on a writable disk, or, if that file is none of tokrag's outputs (a library's cache, such "
        "as Hugging Face's: HF_HOME), point that library to a writable folder and run the same command again (set "
        "TOKRAG_TRACEBACK=1 for the stack trace)\n")

    class ReadOnlyFsync:  # retrieval.io's os, on a read-only disk: a tokrag write (marked)
        def __getattr__(self, name):
            return getattr(os, name)

        def fsync(self, fd):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(rio, "os", ReadOnlyFsync())
    with pytest.raises(OSError) as caught:
        rio.atomic_write_bytes(tmp_path / "results.json", b"{}")
    assert print_no_room(caught.value, "tokrag eval") is True
    assert capsys.readouterr().err == (
        f"tokrag eval: error: [Errno 30] Read-only file system: '{tmp_path / 'results.json'}' (a write failed); choose "
        "another --output_path / TOKRAG_CACHE_DIR on a writable disk and run the same command again (set "
        "TOKRAG_TRACEBACK=1 for the stack trace)\n")
