"""The converted folder of a GGUF alias is keyed by the converter too (tokrag_model.loading.converter_key).

Before the fix the folder was ``<alias>-<sha256 prefix of the GGUF>`` and reused whenever its ``config.json``
existed: after a change of the converting code (``_convert_gguf``) or of the libraries it runs (transformers,
gguf, tokenizers) the run key changed (code fingerprint, library versions) but the OLD conversion was loaded.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tokrag_model import loading

NAME = "smollm2-135m-instruct"  # the alias whose folder is named by its GGUF's bytes (no pinned sha256)


@pytest.fixture
def fake_alias(tmp_path, monkeypatch):
    """The alias's package folder replaced by one with a small stand-in GGUF (no RECORD: keyed by its content);
    ``_convert_gguf`` replaced by a stand-in that writes a config.json and records each call."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    gguf = pkg / loading.ALIASES[NAME]["gguf"]
    gguf.write_bytes(b"GGUF" + b"\x07" * 60)
    monkeypatch.setitem(loading.ALIASES, NAME, dict(loading.ALIASES[NAME], dist="no-such-dist-for-tokrag-tests"))
    monkeypatch.setattr(loading, "_package_dir", lambda package: pkg)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[Path] = []

    def convert(gguf_dir: Path, gguf_name: str, out_dir: Path, source: dict | None = None) -> None:
        calls.append(out_dir)
        out_dir.mkdir()
        (out_dir / "config.json").write_text(json.dumps({"converted_by": len(calls)}), encoding="utf-8")

    monkeypatch.setattr(loading, "_convert_gguf", convert)
    loading.converter_key.cache_clear()
    yield tmp_path / "models", hashlib.sha256(gguf.read_bytes()).hexdigest()[:12], calls
    loading.converter_key.cache_clear()


def test_an_older_conversion_of_the_same_gguf_is_not_loaded(fake_alias, monkeypatch):
    models, gguf_key, calls = fake_alias
    old = models / f"{NAME}-{gguf_key}"  # what the old code named (and reused) for these GGUF bytes
    old.mkdir(parents=True)
    (old / "config.json").write_text('{"converted_by": "an older converter"}', encoding="utf-8")
    first = loading.resolve_alias(NAME, models)
    assert first.path == models / f"{NAME}-{gguf_key}-c{loading.converter_key()}" and calls == [first.path]
    assert (old / "config.json").read_text(encoding="utf-8") == '{"converted_by": "an older converter"}'  # untouched
    assert loading.resolve_alias(NAME, models).path == first.path and len(calls) == 1  # same converter: reused
    # a bumped CONVERTER_VERSION: a new folder, converted once
    monkeypatch.setattr(loading, "CONVERTER_VERSION", loading.CONVERTER_VERSION + 1)
    loading.converter_key.cache_clear()
    second = loading.resolve_alias(NAME, models)
    assert second.path != first.path and second.path.name.startswith(f"{NAME}-{gguf_key}-c") and calls[-1] == second.path
    assert (first.path / "config.json").is_file()  # the older folder stays, unread


def test_the_key_follows_the_converter_source_and_library_versions(fake_alias, monkeypatch):
    models, gguf_key, _ = fake_alias
    base = loading.converter_key()
    assert len(base) == 8 and int(base, 16) >= 0
    assert loading._alias_folder(NAME, models)[1].name == f"{NAME}-{gguf_key}-c{base}"
    libs = loading._converter_libraries()
    assert set(libs) == {"transformers", "gguf", "tokenizers"} and libs["transformers"]
    # another transformers version
    monkeypatch.setattr(loading, "_converter_libraries", lambda: dict(libs, transformers="0.0.1"))
    loading.converter_key.cache_clear()
    other_lib = loading.converter_key()
    assert other_lib != base and loading._alias_folder(NAME, models)[1].name == f"{NAME}-{gguf_key}-c{other_lib}"
    monkeypatch.setattr(loading, "_converter_libraries", lambda: libs)
    loading.converter_key.cache_clear()
    assert loading.converter_key() == base

    # converting code with another body (the same name and signature)
    def _convert_gguf(gguf_dir, gguf_name, out_dir, source=None):  # noqa: ANN001, ANN202
        return None

    monkeypatch.setattr(loading, "_convert_gguf", _convert_gguf)
    loading.converter_key.cache_clear()
    assert loading.converter_key() not in (base, other_lib)


def test_the_conversion_records_its_converter(tmp_path, monkeypatch):
    """``tokrag_source.json`` (not part of the model fingerprint) says which converter wrote the folder."""
    loading.converter_key.cache_clear()
    record = loading._converter_record()
    assert record == {"converter_key": loading.converter_key(), "converter_version": loading.CONVERTER_VERSION,
                      "converter_libraries": loading._converter_libraries()}
    from tokrag_model.base import MODEL_FILES_SKIPPED

    assert "tokrag_source.json" in MODEL_FILES_SKIPPED


GEMMA = "gemma-3-270m"  # assembled from chunk packages; its GGUF is pinned by sha256


@pytest.fixture
def fake_gemma(tmp_path, monkeypatch):
    """The gemma alias with its package folder and cache in tmp_path; ``_convert_assembled`` replaced by a stand-in
    that writes a config.json and a tokenizer_config.json with a chat template, and records each call."""
    monkeypatch.setattr(loading, "_package_dir", lambda package: tmp_path / "pkg")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[Path] = []

    def convert(name: str, spec: dict, root: Path, out: Path) -> None:
        calls.append(out)
        out.mkdir()
        (out / "config.json").write_text("{}", encoding="utf-8")
        (out / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}), encoding="utf-8")

    monkeypatch.setattr(loading, "_convert_assembled", convert)
    loading.converter_key.cache_clear()
    yield tmp_path / "cache" / "models", loading.ALIASES[GEMMA]["sha256"][:12], calls
    loading.converter_key.cache_clear()


def test_the_gemma_folder_is_keyed_by_the_converter(fake_gemma, monkeypatch):
    """Before the fix the pinned alias's folder was ``gemma-3-270m-<sha256[:12]>`` whatever the converter (exempt
    because leaderboards.keys spelled that name itself), so a changed converter loaded the old conversion."""
    models, pinned, calls = fake_gemma
    old = models / f"{GEMMA}-{pinned}"  # what the old code named (and reused)
    old.mkdir(parents=True)
    (old / "config.json").write_text('{"converted_by": "an older converter"}', encoding="utf-8")
    first = loading.resolve_alias(GEMMA)
    assert first.path == loading.converted_folder(GEMMA) == models / f"{GEMMA}-{pinned}-c{loading.converter_key()}"
    assert calls == [first.path] and loading.resolve_alias(GEMMA).path == first.path and len(calls) == 1
    monkeypatch.setattr(loading, "CONVERTER_VERSION", loading.CONVERTER_VERSION + 1)
    loading.converter_key.cache_clear()
    second = loading.resolve_alias(GEMMA)
    assert second.path != first.path and second.path.name.startswith(f"{GEMMA}-{pinned}-c") and calls[-1] == second.path


def test_the_leaderboard_reads_the_loaders_gemma_folder(fake_gemma):
    """leaderboards.keys.chat_template_sha256 reads the folder the loader converts into (converted_folder), not a
    name of its own: 'unresolved' before the conversion, the template's hash after it, the same whatever the
    folder's name (the key of a chat-template cell does not depend on where the folder is)."""
    from leaderboards.keys import _HashMemo, chat_template_sha256

    models, pinned, _ = fake_gemma
    args = {"pretrained": GEMMA}
    stale = models / f"{GEMMA}-{pinned}"  # an older conversion under the old name: not the loader's folder
    stale.mkdir(parents=True)
    (stale / "tokenizer_config.json").write_text(json.dumps({"chat_template": "old"}), encoding="utf-8")
    assert chat_template_sha256(args, _HashMemo()) == "unresolved"
    loading.resolve_alias(GEMMA)
    assert chat_template_sha256(args, _HashMemo()) == hashlib.sha256(b"{{ messages }}").hexdigest()
