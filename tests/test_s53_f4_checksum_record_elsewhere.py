"""An index folder that cannot be written (a read-only shared copy of the 9 GB prebuilt index) gets its record of verified
Lucene checksums in tokrag's cache folder, so only the first process verifies it (s53 f4; s52 r4's note).

``lucene_checksum_damage`` recorded the verified CRC-32s only in the folder's own ``.tokrag_checksums.json``; where that
could not be written, every process read every file again (20-35 s for the prebuilt index). With a real read-only bind
mount (/work/scratch/s53/f4/repro3.sh, repro3.old.txt / repro3.new.txt) three processes verified 14, 14 and 14 files;
now 14, 0 and the 1 file whose stamp changed. Here the read-only folder is simulated (the write into it raises EROFS,
as on a read-only mount; root ignores permission bits); the files are synthetic Lucene files, no Java."""

from __future__ import annotations

import errno
import json
import logging
import os
import zlib
from pathlib import Path

import pytest


def _lucene_file(path: Path, payload: bytes) -> None:
    from retrieval.bm25 import LUCENE_FOOTER, LUCENE_HEADER

    data = LUCENE_HEADER + payload + LUCENE_FOOTER
    path.write_bytes(data + zlib.crc32(data).to_bytes(8, "big"))


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A record-less index folder whose writes fail as on a read-only mount, a fresh cache folder, and the list of
    files whose CRC-32 is read."""
    import retrieval.bm25 as bm25
    from retrieval.io import atomic_write_json

    d = tmp_path / "idx"
    d.mkdir()
    (d / "tokrag_index.json").write_text('{"kind": "bm25"}\n', encoding="utf-8")
    _lucene_file(d / "_0.si", b"segment info " * 20)
    _lucene_file(d / "_0.doc", b"postings " * 50)
    _lucene_file(d / "segments_1", b"commit point")
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(cache))

    def write(path, obj, indent=2):
        if Path(path).parent == d:
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        atomic_write_json(path, obj, indent)

    monkeypatch.setattr(bm25, "atomic_write_json", write)
    read: list[str] = []
    monkeypatch.setattr(bm25, "lucene_crc", lambda p, bar=None, _f=bm25.lucene_crc: read.append(Path(p).name) or _f(p, bar))
    return d, cache, read


def test_a_read_only_folder_is_verified_once_and_a_changed_file_again(setup, caplog):
    import retrieval.bm25 as bm25
    from retrieval.io import LUCENE_CHECKSUMS

    d, cache, read = setup
    with caplog.at_level(logging.INFO, logger="retrieval.bm25"):
        assert bm25.lucene_checksum_damage(d) is None
    side = bm25.checksum_record_elsewhere(d.resolve())
    assert side.parent == cache.resolve() / "lucene-checksums" and len(side.stem) == 16
    assert sorted(read) == ["_0.doc", "_0.si", "segments_1"] and not (d / LUCENE_CHECKSUMS).exists()
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot write the Lucene checksum record into {d} (Read-only file system): recorded in {side} instead"]
    record = json.loads(side.read_text())
    assert record["folder"] == str(d.resolve()) and sorted(record["files"]) == ["_0.doc", "_0.si", "segments_1"]
    read.clear()
    assert bm25.lucene_checksum_damage(d) is None  # the next process: nothing read
    assert read == []
    os.utime(d / "_0.doc", ns=(1, 1))  # a changed stamp: that file only is verified again
    assert bm25.lucene_checksum_damage(d) is None
    assert read == ["_0.doc"]


def test_damage_in_a_read_only_folder_is_told_again_from_the_record(setup):
    import retrieval.bm25 as bm25

    d, _, read = setup
    data = bytearray((d / "_0.doc").read_bytes())
    data[20] ^= 0x01
    (d / "_0.doc").write_bytes(bytes(data))
    told = (f"{d / '_0.doc'} fails its Lucene checksum (CRC-32 {zlib.crc32(bytes(data[:-8])):08x}, its footer records "
            f"{int.from_bytes(data[-8:], 'big'):08x}: changed after Lucene wrote it)")
    assert bm25.lucene_checksum_damage(d) == told
    read.clear()
    assert bm25.lucene_checksum_damage(d) == told and read == []


def test_another_folder_at_another_path_is_not_covered(setup, tmp_path):
    """The record is keyed by the folder's absolute path and names it: a copy elsewhere (same names and contents) is
    verified on its own."""
    import shutil

    import retrieval.bm25 as bm25

    d, _, read = setup
    assert bm25.lucene_checksum_damage(d) is None
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    read.clear()
    assert bm25.lucene_checksum_damage(copy) is None
    assert sorted(read) == ["_0.doc", "_0.si", "segments_1"]
    assert bm25.checksum_record_elsewhere(copy.resolve()) != bm25.checksum_record_elsewhere(d.resolve())


def test_a_writable_folder_keeps_its_own_record_and_nothing_goes_to_the_cache(tmp_path, monkeypatch):
    import retrieval.bm25 as bm25
    from retrieval.io import LUCENE_CHECKSUMS

    d = tmp_path / "idx"
    d.mkdir()
    _lucene_file(d / "_0.si", b"segment info")
    _lucene_file(d / "segments_1", b"commit point")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    assert bm25.lucene_checksum_damage(d) is None
    assert sorted(json.loads((d / LUCENE_CHECKSUMS).read_text())["files"]) == ["_0.si", "segments_1"]
    assert not (tmp_path / "cache" / "lucene-checksums").exists()
