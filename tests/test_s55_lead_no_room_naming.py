"""Writes done in place with ``open`` that meet a full disk name their file (s55 r6's finding: a first BM25 build's
collection file ``docs.jsonl`` and analyze's records appends raised ``[Errno 28] No space left on device`` without a
path, as a buffered write's flush does, so the commands' one line named no file and no disk). The full disk is a fake
file object; no device is written or changed."""
from __future__ import annotations

import errno
import io
import json

import pytest

import retrieval.bm25 as bm25
from retrieval.corpus import load_corpus
from retrieval.errors import no_room_line
from retrieval.io import no_room_naming


class _FullDisk(io.StringIO):
    """A text file whose write raises ENOSPC without a path once more than ``room`` characters are written."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, s: str) -> int:
        if self.tell() + len(s) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(s)


def test_no_room_naming_names_a_pathless_no_room_error(tmp_path) -> None:
    target = tmp_path / "records.jsonl"
    with pytest.raises(OSError) as exc, no_room_naming(target):
        raise OSError(errno.EFBIG, "File too large")
    assert (exc.value.errno, exc.value.filename) == (errno.EFBIG, str(target))
    assert no_room_line(exc.value).startswith(f"[Errno 27] File too large: '{target}' (a full disk")


@pytest.mark.parametrize("err", [OSError(errno.ENOSPC, "No space left on device", "/other/file"),
                                 OSError(errno.EIO, "Input/output error", "/other/file"),  # s56 f5: a pathless EIO is named
                                 ValueError("not an OSError")])
def test_no_room_naming_passes_other_errors_unchanged(tmp_path, err) -> None:
    with pytest.raises(type(err)) as exc, no_room_naming(tmp_path / "x"):
        raise err
    assert exc.value is err


def test_a_bm25_builds_collection_file_on_a_full_disk_names_it(tmp_path, monkeypatch) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": "some words " * 20}) + "\n"
                           for i in range(20)), encoding="utf-8")
    corpus = load_corpus(src)
    opened = []

    def fake_open(path, mode="r", *args, **kwargs):
        opened.append(str(path))
        return _FullDisk(room=500)

    monkeypatch.setattr(bm25, "start_jvm", lambda: None)  # the JVM is not needed: the write fails first
    monkeypatch.setattr(bm25, "open", fake_open, raising=False)
    with pytest.raises(OSError) as exc:
        bm25.build_bm25_index(corpus, tmp_path / "index")
    assert exc.value.errno == errno.ENOSPC
    assert exc.value.filename == opened[-1] and opened[-1].endswith("/collection/docs.jsonl")
    assert f"No space left on device: '{opened[-1]}'" in no_room_line(exc.value)
    assert not (tmp_path / "index").exists()  # the scratch folder is removed, no index left
