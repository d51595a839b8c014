"""Inputs that change a leaderboard cell's numbers change its key (a review found some that did not: a
``trust_remote_code`` model's own ``*.py`` files, the dense encoder a task's ``retriever_params`` names, the
torch / transformers / retrieval-engine versions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboards.keys import _HashMemo, weights_fingerprint


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """A fresh hash memo per test (``<cache_dir>/leaderboard-file-hashes.json``)."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "custom", "auto_map": {"AutoModel": "modeling_custom.M"}}')
    (folder / "model.safetensors").write_bytes(b"weights")
    return folder


@pytest.mark.parametrize("trust", [True, "true", "1"])
def test_remote_code_files_are_keyed_when_trusted(tmp_path, trust):
    d = _model(tmp_path / "m")
    py = d / "modeling_custom.py"
    keys = []
    for body in ("SCALE = 1.0\n", "SCALE = 2.0\n"):
        py.write_text(body)
        keys.append(weights_fingerprint({"pretrained": str(d), "trust_remote_code": trust}, _HashMemo()))
    assert keys[0] != keys[1]


def test_remote_code_files_are_not_keyed_when_not_run(tmp_path):
    """Without trust_remote_code the folder's code never runs: its key is that of the folder without it."""
    d = _model(tmp_path / "m")
    before = weights_fingerprint({"pretrained": str(d)}, _HashMemo())
    (d / "modeling_custom.py").write_text("SCALE = 2.0\n")
    assert weights_fingerprint({"pretrained": str(d)}, _HashMemo()) == before
    assert weights_fingerprint({"pretrained": str(d), "trust_remote_code": False}, _HashMemo()) == before
    (d / "modeling_custom.py").unlink()  # a trusted folder without code keys as it did before
    assert weights_fingerprint({"pretrained": str(d), "trust_remote_code": True}, _HashMemo()) == before
