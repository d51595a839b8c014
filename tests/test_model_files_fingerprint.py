"""The results JSON's ``tokrag_model_fingerprint`` hashes the weight files only: two folders with the same weights
and a different ``generation_config.json`` (``eos_token_id`` 2 vs [2, 314]) recorded the same fingerprint and config
though F1 moved (0.0667 vs 0.0; found by a provenance review). ``tokrag_model_files_fingerprint`` now records the
folder's config, generation config, tokenizer, chat template and remote-code files
(:func:`tokrag_model.base.model_files_fingerprint`)."""

from __future__ import annotations

import dataclasses
import json

import pytest


def _copy(src, dst, eos):
    """A model folder of symlinks to ``src``'s files, with its own ``generation_config.json``."""
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file() and not f.name.startswith(".") and f.name != "generation_config.json":
            (dst / f.name).symlink_to(f)
    gen = json.loads((src / "generation_config.json").read_text(encoding="utf-8")) \
        if (src / "generation_config.json").is_file() else {}
    gen["eos_token_id"] = eos
    (dst / "generation_config.json").write_text(json.dumps(gen), encoding="utf-8")
    return dst


@pytest.fixture
def memo_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def test_the_generation_config_changes_the_files_fingerprint(backbone, tmp_path, memo_dir):
    from tokrag_model.methods import MODELS

    orig = _copy(backbone.path, tmp_path / "orig", 2)
    edited = _copy(backbone.path, tmp_path / "edited", [2, 314])
    a = MODELS["rag-none"].with_backbone(dataclasses.replace(backbone, path=orig)).get_model_info()
    b = MODELS["rag-none"].with_backbone(dataclasses.replace(backbone, path=edited)).get_model_info()
    assert a["tokrag_model_fingerprint"] == b["tokrag_model_fingerprint"]  # the same weights
    fa, fb = a["tokrag_model_files_fingerprint"], b["tokrag_model_files_fingerprint"]
    assert isinstance(fa, str) and len(fa) == 16 and isinstance(fb, str) and len(fb) == 16
    assert fa != fb
    from tokrag_model.base import model_files_fingerprint

    # the same folder (and a copy with the same files elsewhere) gives the same value
    assert model_files_fingerprint(orig) == fa
    assert model_files_fingerprint(_copy(backbone.path, tmp_path / "again", 2)) == fa


def test_weights_and_tokrag_notes_are_left_out(tmp_path, memo_dir):
    from tokrag_model.base import model_files_fingerprint

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"a": 1}', encoding="utf-8")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"w1")
    first = model_files_fingerprint(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"w2")
    (tmp_path / "m" / "tokrag_source.json").write_text('{"gguf": "/somewhere/else"}', encoding="utf-8")
    assert model_files_fingerprint(tmp_path / "m") == first
    (tmp_path / "m" / "modeling_custom.py").write_text("x = 1\n", encoding="utf-8")
    assert model_files_fingerprint(tmp_path / "m") != first
    assert model_files_fingerprint(tmp_path / "m" / "config.json") is None
