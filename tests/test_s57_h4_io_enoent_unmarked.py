"""``retrieval.io``'s writes leave an ``ENOENT`` unmarked (s57 h4, as r7's 50b19ac did in
``leaderboards.runner.leaderboard_write``): every write there creates its folders first, so a FileNotFoundError means
a folder or temporary file the write made is gone (a bug, or a removal by hand meanwhile). It was marked as a failed
write and printed as '[Errno 2] No such file or directory: ... (a write failed); check the folder and the disk ...
and run the same command again', exit 2; it now keeps its traceback. Other errnos are marked as before (f2's rule)."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

import retrieval.io as rio
from retrieval.errors import WRITE_MARK, no_room_line, write_error


def _unmarked(exc: BaseException) -> None:
    assert isinstance(exc, FileNotFoundError) and exc.errno == errno.ENOENT
    assert not hasattr(exc, WRITE_MARK)
    assert write_error(exc) is None and no_room_line(exc) is None


def test_a_folder_removed_before_the_rename_keeps_its_traceback(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    real = rio.write_beside

    def beside_then_gone(path, data):
        tmp = real(path, data)
        shutil.rmtree(folder)  # removed by hand between the temporary file's write and its rename
        return tmp

    monkeypatch.setattr(rio, "write_beside", beside_then_gone)
    with pytest.raises(OSError) as caught:
        rio.atomic_write_text(folder / "report.json", "{}\n")
    _unmarked(caught.value)
    assert not folder.exists()


def test_no_room_naming_leaves_an_open_of_a_gone_folder_unmarked(tmp_path):
    path = tmp_path / "gone" / "journal.jsonl"
    with pytest.raises(OSError) as caught:
        with rio.no_room_naming(path), open(path, "ab"):
            pass
    _unmarked(caught.value)
    assert os.fsdecode(caught.value.filename) == str(path)


def test_no_room_naming_names_a_pathless_enoent_unmarked_and_marks_eio(tmp_path):
    path = tmp_path / "records.jsonl"
    with pytest.raises(OSError) as caught:
        with rio.no_room_naming(path):
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
    _unmarked(caught.value)
    assert caught.value.filename == str(path)
    with pytest.raises(OSError) as caught:  # any other errno: marked, the commands' one line (s57 f2)
        with rio.no_room_naming(path):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
    assert getattr(caught.value, WRITE_MARK) == str(path) and write_error(caught.value)[1] == errno.EIO


def test_scratch_dir_and_replace_folder_of_a_gone_folder(tmp_path):
    with pytest.raises(OSError) as caught:
        rio.scratch_dir(tmp_path / "gone", ".index.")
    _unmarked(caught.value)
    with pytest.raises(OSError) as caught:
        rio.replace_folder(tmp_path / "never-built", tmp_path / "index", tmp_path / "scratch" / "old")
    _unmarked(caught.value)
    assert not (tmp_path / "index").exists()
