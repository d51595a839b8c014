"""s60 rt (read-through of r3's 9b3d332 with s59 rt's 789342f): a model folder's ``.tiktoken`` tokenizer file is in
the ``--use_cache`` key, as it is in the leaderboard's run key.

``tokrag_model.base.MODEL_FILE_SUFFIXES`` (the files of :func:`model_files_fingerprint`: the ``--use_cache`` key, the
analyze records key, a preset's ``files_fingerprint``) held ``.json .jinja .model .txt .py`` and not ``.tiktoken``,
which the leaderboard's key (``leaderboards.keys.WEIGHT_FILE_SUFFIXES``, since s59) and ``loading.HUB_FILES`` hold. So
a ``qwen.tiktoken`` (Qwen-1's remote tokenizer file) replaced in place kept the ``--use_cache`` key, and lm-eval served
the answers of the old tokenizer; r3's 9b3d332 kept such a folder's path in the key (the file was hashed by neither
fingerprint), which does not change when the file is replaced. Now the file is hashed, and a folder holding one is
keyed by its files (``local``) like the leaderboard keys it (``local:<fingerprint>``). The tiny random Llama of
tests/leaderboard_helpers.py stands in for the model (the subject is the key, not the answers)."""

from __future__ import annotations

import shutil

import pytest

from leaderboard_helpers import tiny_llama


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_llama(tmp_path_factory.mktemp("rt") / "m")


def _key(pretrained: str) -> str:
    from tokrag_model.methods import MODELS

    return MODELS["rag-none"](pretrained=pretrained, device="cpu")._response_cache_model


def test_a_tiktoken_file_replaced_in_place_is_another_use_cache_key(model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(model_dir, tmp_path / "q")
    tok = tmp_path / "q" / "qwen.tiktoken"
    tok.write_bytes(b"IQ== 0\n")
    before = _key("q")
    tok.write_bytes(b"IQ== 0\nIg== 1\n")  # another vocabulary at the same path
    assert _key("q") != before


def test_model_files_fingerprint_hashes_a_tiktoken_file(model_dir, tmp_path):
    from tokrag_model.base import MODEL_FILE_SUFFIXES, model_files_fingerprint

    from leaderboards.keys import WEIGHT_FILE_SUFFIXES

    shutil.copytree(model_dir, tmp_path / "q")
    plain = model_files_fingerprint(tmp_path / "q")
    (tmp_path / "q" / "qwen.tiktoken").write_bytes(b"IQ== 0\n")
    with_tok = model_files_fingerprint(tmp_path / "q")
    (tmp_path / "q" / "qwen.tiktoken").write_bytes(b"Ig== 0\n")
    assert len({plain, with_tok, model_files_fingerprint(tmp_path / "q")}) == 3
    # the two keys' rules agree on the non-weight files: the leaderboard's, less its weight formats
    assert set(WEIGHT_FILE_SUFFIXES) - {".gguf", ".safetensors", ".bin", ".pt"} <= set(MODEL_FILE_SUFFIXES)


def test_a_folder_with_a_tiktoken_file_is_keyed_by_its_files_in_both_keys(model_dir, tmp_path, monkeypatch):
    from tokrag_model.base import _keyed_by_files

    from leaderboards.keys import keyed_model_args, unhashed_model_file

    monkeypatch.chdir(tmp_path)
    shutil.copytree(model_dir, tmp_path / "q")
    (tmp_path / "q" / "qwen.tiktoken").write_bytes(b"IQ== 0\n")
    assert unhashed_model_file(tmp_path / "q", {"pretrained": "q"}) is None
    assert keyed_model_args({"pretrained": "q"}, "f" * 16) == {"pretrained": "local:" + "f" * 16}
    assert _keyed_by_files("q", tmp_path / "q") is True
    assert _key("q") == _key(f"{tmp_path / 'q'}/")  # one cache for every spelling, as for a folder without it
