"""s60 r3 (k1's leftover): lm-eval's ``--use_cache`` key holds a local ``pretrained`` folder by its files, not by its
spelling.

:attr:`tokrag_model.base.RAGMethodLM._response_cache_model` (the model part of every ``--use_cache`` key) hashed the
resolved configuration with ``pretrained`` as written beside the weights and files fingerprints, so ``pretrained=m``,
``./m/``, ``/abs/m`` and a link to ``m`` read four caches of the same answers (s59 a1's note; k1's 3cfc1fc did the same
fix for the leaderboard's run keys). Now it holds ``local`` there, where the two fingerprints cover the folder's
files; a folder with a file neither hashes (``weights.pth``; ``qwen.tiktoken`` until s60 rt hashed it) keeps its path, so two such folders never share a
response, and an alias keeps its name (tests/test_dp_cache_key_s46f10.py asserts its key is unchanged)."""

from __future__ import annotations

import shutil

import pytest

from leaderboard_helpers import tiny_llama


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_llama(tmp_path_factory.mktemp("r3") / "m")


def _key(pretrained: str) -> str:
    from tokrag_model.methods import MODELS

    lm = MODELS["rag-none"](pretrained=pretrained, device="cpu")
    assert lm.resolved_config["pretrained"] == pretrained  # recorded as written
    return lm._response_cache_model


def test_every_spelling_of_a_local_folder_reads_one_cache(model_dir, tmp_path, monkeypatch):
    root = tmp_path / "w"
    shutil.copytree(model_dir, root / "m")
    (root / "link").symlink_to(root / "m", target_is_directory=True)
    (root / "m" / "README.md").write_text("a model card", encoding="utf-8")  # documentation: not read by the load
    monkeypatch.chdir(root)
    keys = [_key(p) for p in ("m", "./m/", str(root / "m"), "link")]
    assert len(set(keys)) == 1
    shutil.move(root / "m", root / "moved")  # moved: same files, same cache
    assert _key("moved") == keys[0]


def test_a_folder_with_a_file_no_fingerprint_hashes_keeps_its_path(model_dir, tmp_path, monkeypatch):
    from tokrag_model.base import _keyed_by_files

    monkeypatch.chdir(tmp_path)
    for name, data in (("a", b"A"), ("b", b"B")):
        shutil.copytree(model_dir, tmp_path / name)
        (tmp_path / name / "weights.pth").write_bytes(data)  # was qwen.tiktoken: hashed since s60 rt
    assert not _keyed_by_files("a", tmp_path / "a")
    assert _keyed_by_files("m", model_dir) is False  # no such path here: not local
    ka, kb = _key("a"), _key("b")
    assert ka != kb and ka != _key(str(tmp_path / "a"))  # as written, as before


def test_an_alias_and_a_hub_id_are_not_local(model_dir):
    from tokrag_model.base import _keyed_by_files

    assert not _keyed_by_files("smollm2-135m-instruct", model_dir)
    assert not _keyed_by_files("someorg/not-here-model", model_dir)
    assert _keyed_by_files(str(model_dir), model_dir)
