"""A BM25 index folder whose checksum record ``.tokrag_checksums.json`` is a named pipe no longer blocks its reader
(s54 f1; s53 r1's report; /work/scratch/s54/f1/repro_checksum_fifo.py, .old.txt / .new.txt).

``retrieval.bm25.lucene_checksum_damage`` runs before every search of a tokrag-built BM25 index and read the record with
``Path.read_text``: on a named pipe, ``open`` waits for a writer, for ever (the old code's child was still waiting
after 20 s). The record is now read only when it is a regular file of at most ``CHECKSUM_RECORD_MAX_BYTES``
(``retrieval.io.read_regular_file``, checked before the open and on the file opened with ``O_NONBLOCK``); anything else
is no record, and the verified checksums go to the cache folder's record, as for a read-only index folder.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[1]


def test_a_named_pipe_as_the_checksum_record_is_no_record_and_does_not_block(tmp_path):
    child = textwrap.dedent(f"""
        import json, os, zlib
        from pathlib import Path
        import retrieval.bm25 as bm25
        from retrieval.io import LUCENE_CHECKSUMS
        d = Path({str(tmp_path)!r}) / "idx"
        d.mkdir()
        for name, payload in (("_0.si", b"segment info " * 20), ("segments_1", b"commit point")):
            data = bm25.LUCENE_HEADER + payload + bm25.LUCENE_FOOTER
            (d / name).write_bytes(data + zlib.crc32(data).to_bytes(8, "big"))
        os.mkfifo(d / LUCENE_CHECKSUMS)
        read = []
        real = bm25.lucene_crc
        bm25.lucene_crc = lambda p, bar=None: read.append(Path(p).name) or real(p, bar)
        out = [bm25.lucene_checksum_damage(d), bm25.lucene_checksum_damage(d), read]
        side = json.loads(bm25.checksum_record_elsewhere(d.resolve()).read_text(encoding="utf-8"))
        print(json.dumps(out + [sorted(side["files"]), (d / LUCENE_CHECKSUMS).is_fifo()]))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO), TOKRAG_CACHE_DIR=str(tmp_path / "cache"))
    try:
        proc = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("lucene_checksum_damage waited on the named pipe (no answer in 120 s)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # no damage, twice; verified once (the second use read the cache folder's record); the pipe left as it is
    assert json.loads(proc.stdout) == [None, None, ["_0.si", "segments_1"], ["_0.si", "segments_1"], True]


def test_read_regular_file_reads_a_regular_file_and_refuses_the_rest(tmp_path):
    from retrieval.io import read_regular_file

    f = tmp_path / "r.json"
    f.write_bytes(b'{"version": 1}')
    assert read_regular_file(f, 14) == b'{"version": 1}'
    with pytest.raises(OSError, match=r"15 bytes, more than 14"):
        f.write_bytes(b'{"version": 12}')
        read_regular_file(f, 14)
    os.mkfifo(tmp_path / "p")
    (tmp_path / "link").symlink_to(tmp_path / "p")
    for p in (tmp_path / "p", tmp_path / "link", tmp_path):
        with pytest.raises(OSError, match=r"not a regular file \(mode [pd]") as exc:
            read_regular_file(p, 1 << 20)
        assert exc.value.filename == str(p)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "p").st_mode)
