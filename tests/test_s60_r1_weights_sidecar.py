"""The weights-fingerprint sidecar (``<model folder>/.tokrag_fingerprint.json``, :func:`tokrag_model.loading.
weights_fingerprint`) is recomputed when it is not the record tokrag writes (s60 r1, review of j1's 4d88f1d, which
made a sidecar nested too deep "read as malformed"). Before (3e151fb's tree): a sidecar holding ``null``, ``[]`` or
text was an AttributeError traceback, and one whose key matches but whose fingerprint is not a SHA-256 (``""``, a
number) gave that value as the weights' fingerprint (``""``: every such model the same run key) or a TypeError."""

from __future__ import annotations

import json

import pytest

from tokrag_model.loading import weights_fingerprint


@pytest.fixture
def model(tmp_path, monkeypatch):
    """A folder with one weight file and its sidecar written: ``(folder, the fingerprint, the sidecar's record)``."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.safetensors").write_bytes(b"weights")
    want = weights_fingerprint(tmp_path / "m")
    record = json.loads((tmp_path / "m" / ".tokrag_fingerprint.json").read_text(encoding="utf-8"))
    assert len(want) == 16 and record["fingerprint"][:16] == want
    return tmp_path / "m", want, record


@pytest.mark.parametrize("content", ["null", "[]", '"x"', "{"], ids=["null", "list", "text", "malformed"])
def test_a_sidecar_of_another_shape_is_recomputed(model, content):
    folder, want, record = model
    (folder / ".tokrag_fingerprint.json").write_text(content, encoding="utf-8")
    assert weights_fingerprint(folder) == want
    assert json.loads((folder / ".tokrag_fingerprint.json").read_text(encoding="utf-8")) == record  # written again


@pytest.mark.parametrize("fp", ["", 12345, "not a hash"], ids=["empty", "number", "text"])
def test_a_fingerprint_that_is_not_a_sha256_is_recomputed(model, fp):
    folder, want, record = model
    (folder / ".tokrag_fingerprint.json").write_text(json.dumps({**record, "fingerprint": fp}), encoding="utf-8")
    assert weights_fingerprint(folder) == want  # was: '' / TypeError / 'not a hash'
