"""``retrieval.dense.weights_hash`` (the encoder fingerprint in dense index folders and run keys) sees a same-size
edit of a weight file whose mtime was put back (``touch -r``, ``cp -p``, ``rsync -a``).

Before the fix it was memoised in the process by (name, size, mtime_ns) only, so such an edit kept the old hash:
the old index folder and runs were reused for the new weights.
"""

from __future__ import annotations

import hashlib
import os

from retrieval.dense import weights_hash


def _expected(folder) -> str:
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def test_same_size_edit_with_restored_mtime_gets_a_new_hash(tmp_path):
    enc = tmp_path / "enc"
    enc.mkdir()
    (enc / "config.json").write_text('{"hidden_size": 4}', encoding="utf-8")
    w = enc / "model.safetensors"
    w.write_bytes(b"\x00" * 64)
    first = weights_hash(enc)
    assert first == _expected(enc)
    st = w.stat()
    w.write_bytes(b"\x01" * 64)  # same size
    os.utime(w, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back
    assert w.stat().st_size == st.st_size and w.stat().st_mtime_ns == st.st_mtime_ns
    second = weights_hash(enc)
    assert second == _expected(enc) and second != first
