"""The converted-model folder of a GGUF alias whose wheel's RECORD has no sha256 is named by the file's content.

Before the fix ``tokrag_model.loading._installed_file_key`` (now ``_installed_file_sha256``) fell back to ``<size>-<int(mtime)>``, so a same-size
edit of the GGUF with its mtime put back (``touch -r``, ``cp -p``, ``rsync -a``) reused the old conversion.
"""

from __future__ import annotations

import hashlib
import os

from tokrag_model import loading

SPEC = {"dist": "no-such-dist-for-tokrag-tests", "package": "none", "gguf": "m.gguf"}


def test_restored_mtime_edit_gets_a_new_conversion_key(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    g = tmp_path / "m.gguf"
    g.write_bytes(b"GGUF" + b"\x00" * 60)
    first = loading._installed_file_sha256(SPEC, g)[:12]
    assert first == hashlib.sha256(g.read_bytes()).hexdigest()[:12]
    st = g.stat()
    g.write_bytes(b"GGUF" + b"\x01" * 60)  # same size
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back
    assert g.stat().st_size == st.st_size and g.stat().st_mtime_ns == st.st_mtime_ns
    second = loading._installed_file_sha256(SPEC, g)[:12]
    assert second == hashlib.sha256(g.read_bytes()).hexdigest()[:12] and second != first
    # the digest is memoised in the cache folder's hash memo, as the leaderboards' file hashes are
    assert (tmp_path / "cache" / "leaderboard-file-hashes.json").is_file()
