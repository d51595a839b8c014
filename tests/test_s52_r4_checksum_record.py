"""The record of verified Lucene checksums (``.tokrag_checksums.json``, s52 f4's 31388bf) under crashes, torn writes
and folders that cannot be written (s52 r4's review).

The record is written into the index folder itself at its first use (``atomic_write_json``: a temporary file
``..tokrag_checksums.json.<8 hex>.tmp`` renamed over it). Killed between the write and the rename (``kill -9``, a power
loss), that temporary file stayed, and ``check_index_folder`` then refused to rebuild the user's ``--index`` folder
("holds entries a tokrag bm25 index build does not write"). The files here are synthetic Lucene files (codec header,
payload, codec footer, CRC-32 as Lucene's ``CodecUtil.writeFooter`` writes it): no Java is needed."""

from __future__ import annotations

import errno
import json
import logging
import zlib
from pathlib import Path

import pytest


def _lucene_file(path: Path, payload: bytes) -> None:
    """A file ending as Lucene ends every file: footer magic, algorithm id 0, the CRC-32 of all bytes before it."""
    from retrieval.bm25 import LUCENE_FOOTER, LUCENE_HEADER

    data = LUCENE_HEADER + payload + LUCENE_FOOTER
    path.write_bytes(data + zlib.crc32(data).to_bytes(8, "big"))


@pytest.fixture
def folder(tmp_path):
    """An index folder as tokrag builds it: tokrag_index.json, two Lucene files, write.lock."""
    d = tmp_path / "idx"
    d.mkdir()
    (d / "tokrag_index.json").write_text('{"kind": "bm25"}\n', encoding="utf-8")
    _lucene_file(d / "_0.si", b"segment info " * 20)
    _lucene_file(d / "segments_1", b"commit point")
    (d / "write.lock").write_bytes(b"")
    return d


def test_a_record_write_killed_before_its_rename_leaves_the_folder_rebuildable(folder):
    from retrieval.errors import ConfigError
    from retrieval.io import LUCENE_CHECKSUMS, check_index_folder, write_beside

    tmp = write_beside(folder / LUCENE_CHECKSUMS, b'{"version": 1, "fi')  # what a kill before os.replace leaves
    assert tmp.parent == folder and tmp.name.startswith(f".{LUCENE_CHECKSUMS}.") and tmp.name.endswith(".tmp")
    assert check_index_folder(folder) == folder.resolve()  # was: ConfigError naming ..tokrag_checksums.json.<hex>.tmp
    (folder / ".notes.txt.0a1b2c3d.tmp").write_text("mine")  # another hidden file is still the user's: refused
    with pytest.raises(ConfigError, match=r"holds entries a tokrag bm25 index build does not write "
                                          r"\(\.notes\.txt\.0a1b2c3d\.tmp\)"):
        check_index_folder(folder)


@pytest.mark.parametrize("record", [b'{"version": 1, "files": {"_0.si": {"stamp": [', b"\xff\xfe not utf-8",
                                    b"[]", b'{"version": 2, "files": {}}', b'{"version": 1, "files": []}'])
def test_a_torn_or_foreign_record_is_read_as_unverified(folder, record, monkeypatch):
    import retrieval.bm25 as bm25
    from retrieval.io import LUCENE_CHECKSUMS, file_stamp

    (folder / LUCENE_CHECKSUMS).write_bytes(record)
    read = []
    monkeypatch.setattr(bm25, "lucene_crc", lambda p, bar=None, _f=bm25.lucene_crc: read.append(Path(p).name) or _f(p, bar))
    assert bm25.lucene_checksum_damage(folder) is None
    assert sorted(read) == ["_0.si", "segments_1"]  # both verified again, no error
    written = json.loads((folder / LUCENE_CHECKSUMS).read_text(encoding="utf-8"))
    assert written["version"] == 1 and sorted(written["files"]) == ["_0.si", "segments_1"]
    assert written["files"]["_0.si"]["stamp"] == file_stamp(folder / "_0.si") and written["files"]["_0.si"]["ok"]


def test_a_folder_that_cannot_be_written_is_verified_at_each_use_never_refused(folder, monkeypatch, caplog):
    import retrieval.bm25 as bm25
    from retrieval.io import LUCENE_CHECKSUMS

    def read_only(path, obj, indent=2):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(bm25, "atomic_write_json", read_only)
    read = []
    monkeypatch.setattr(bm25, "lucene_crc", lambda p, bar=None, _f=bm25.lucene_crc: read.append(Path(p).name) or _f(p, bar))
    with caplog.at_level(logging.WARNING, logger="retrieval.bm25"):
        assert bm25.lucene_checksum_damage(folder) is None
        assert bm25.lucene_checksum_damage(folder) is None
    assert sorted(read) == ["_0.si", "_0.si", "segments_1", "segments_1"]  # each use reads again
    assert not (folder / LUCENE_CHECKSUMS).exists()
    side = bm25.checksum_record_elsewhere(folder.resolve())  # the cache folder's record (s53 f4): here not writable either
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot record the verified Lucene checksums in {folder / LUCENE_CHECKSUMS} (Read-only file system) nor in "
        f"{side} (Read-only file system): they are verified again at the next use"] * 2
    data = bytearray((folder / "_0.si").read_bytes())
    data[10] ^= 0x01
    (folder / "_0.si").write_bytes(bytes(data))
    assert bm25.lucene_checksum_damage(folder) == (
        f"{folder / '_0.si'} fails its Lucene checksum (CRC-32 {zlib.crc32(bytes(data[:-8])):08x}, its footer records "
        f"{int.from_bytes(data[-8:], 'big'):08x}: changed after Lucene wrote it)")
