"""A record too large to read is not a full disk (s54 r1, review of fa848a1; /work/scratch/s54/r1/probe_no_room_chain.py
case 9, probe_no_room_chain.txt).

``retrieval.io.read_regular_file`` refused a file over its cap with ``OSError(errno.EFBIG, ...)``, the errno of a
file-size limit stopping a write: ``retrieval.errors.no_room_line`` (which every command entry point now applies to any
exception, 5bd840e) turned it into "[Errno 27] 11 bytes, more than 10: '...' (a full disk, a disk quota or a file-size
limit stopped a write); make room (or raise the limit: ulimit -f) ...", advice that does not fit a read. Its one caller
(the Lucene checksum record) reads such an error as no record; any other that let it through would give that line. The
refusal is now ``EINVAL``, as for a file that is not regular.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from retrieval.errors import no_room_line
from retrieval.io import read_regular_file


@pytest.fixture(autouse=True)
def _no_traceback_env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)


def test_a_file_over_the_cap_is_refused_without_the_no_room_errno(tmp_path):
    f = tmp_path / "record.json"
    f.write_bytes(b"x" * 11)
    assert read_regular_file(f, 11) == b"x" * 11
    with pytest.raises(OSError) as exc:
        read_regular_file(f, 10)
    assert (exc.value.errno, exc.value.strerror, exc.value.filename) == (errno.EINVAL, "11 bytes, more than 10", str(f))
    assert no_room_line(exc.value) is None  # was: "[Errno 27] 11 bytes, more than 10: ... make room (or raise ..."


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_a_regular_file_that_reads_longer_than_its_size_is_refused_likewise():
    # /proc files are regular files of size 0 that read as more: the read's own check, after stat and fstat passed
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(OSError) as exc:
        read_regular_file("/proc/self/status", 10)
    assert (exc.value.errno, exc.value.strerror) == (errno.EINVAL, "more than 10 bytes")
    assert no_room_line(exc.value) is None
