"""s60 r3 (review of k1's 3cfc1fc): a local model folder is keyed by its fingerprint only where that covers its files.

3cfc1fc put ``local:<model_fingerprint>`` in a cell's key in place of a local ``pretrained`` path. The fingerprint
hashes only a folder's files of :data:`leaderboards.keys.WEIGHT_FILE_SUFFIXES` (``.safetensors``, ``.bin``,
``.json``, ...), so two folders whose weights are ``weights.pth`` (or ``.onnx``, ``.npz``: a custom model class
reads them) with other bytes got one run key, and the second was served the first's numbers. Before 3cfc1fc the path
as written kept them apart; now such a folder is keyed as written again, and a folder of hashed files (plus a model
card and licence) keeps 3cfc1fc's one key for every spelling."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from leaderboard_helpers import FIX, TOY, write_spec
from leaderboards import keys
from leaderboards.spec import load_spec

METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _key(root: Path, pretrained: str) -> tuple[str, dict]:
    spec = load_spec(write_spec(root / "s", name="toy", weights=pretrained, tasks=["toy_qa"], limit=3, methods=METHODS))
    (_cell, key, mat), = keys.cell_keys(spec)
    return key, mat


def _folder(root: Path, name: str, files: dict[str, bytes]) -> Path:
    d = root / name
    d.mkdir()
    for rel, data in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    return d


@pytest.mark.parametrize("weights", ["weights.pth", "model.onnx", "sub/params.npz"])
def test_folders_that_differ_in_a_file_the_fingerprint_skips_get_two_keys(root, weights):
    _folder(root, "a", {"config.json": b'{"x": 1}', weights: b"A"})
    _folder(root, "b", {"config.json": b'{"x": 1}', weights: b"B"})
    (ka, ma), (kb, mb) = _key(root, "a"), _key(root, "b")
    assert ma["model_fingerprint"] == mb["model_fingerprint"]  # the fingerprint does not see the weights
    assert ka != kb
    assert (ma["model_args"]["pretrained"], mb["model_args"]["pretrained"]) == ("a", "b")  # as written, as before s60
    assert keys.unhashed_model_file(root / "a", {}) == root / "a" / weights


def test_a_folder_of_hashed_files_and_docs_keeps_one_key_for_every_spelling(root):
    d = _folder(root, "m", {"config.json": b'{"x": 1}', "model.safetensors": b"W", "README.md": b"card",
                            "LICENSE": b"apache", "tokenizer.json": b"{}", ".gitattributes": b"*"})
    (root / "link").symlink_to(d, target_is_directory=True)
    got = [_key(root, s) for s in ("m", "./m/", str(d), "link")]
    fp = got[0][1]["model_fingerprint"]
    assert {k for k, _ in got} == {got[0][0]}
    assert [m["model_args"]["pretrained"] for _, m in got] == [f"local:{fp}"] * 4
    assert keys.unhashed_model_file(d, {}) is None


def test_a_file_is_hashed_whole_whatever_its_suffix(root):
    _folder(root, "a", {"w.pth": b"A"})
    shutil.copy(FIX / "toy_weights.bin", root / "a" / "toy.bin")
    (k1, m1), (k2, _) = _key(root, "a/w.pth"), _key(root, "./a/w.pth")
    assert k1 == k2 and m1["model_args"]["pretrained"].startswith("local:")
    (root / "a" / "w2.pth").write_bytes(b"B")
    assert _key(root, "a/w2.pth")[0] != k1


def test_remote_code_py_is_hashed_only_with_trust_remote_code(root):
    d = _folder(root, "m", {"config.json": b"{}", "model.safetensors": b"W", "modeling_x.py": b"X = 1\n"})
    assert keys.unhashed_model_file(d, {}) == d / "modeling_x.py"
    assert keys.unhashed_model_file(d, {"trust_remote_code": True}) is None
