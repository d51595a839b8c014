"""Scratch folders of interrupted alias conversions are removed by the next conversion (tokrag_model.loading).

Before the fix a ``kill -9`` during the first-time conversion of ``smollm2-135m-instruct`` (in ``save_pretrained``)
left ``models/.smollm2-135m-instruct-<sha>-c<key>.<8 hex>`` (341 MB) that no later load removed, and the Gemma path
left ``models/.gemma-3-270m-gguf.<8>`` (the 253 MB assembled GGUF), named so that nothing could tell whose it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tokrag_model import loading

NAME = "smollm2-135m-instruct"


@pytest.fixture
def fake_alias(tmp_path, monkeypatch):
    """The alias's package replaced by a folder with a small stand-in GGUF; ``_convert_gguf`` by a stand-in that
    records which scratch folders existed when it ran, then writes a config.json. ``converter_key``'s memo (it hashes
    ``_convert_gguf``'s source) is cleared after the test, so the stand-in's key does not outlive it."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / loading.ALIASES[NAME]["gguf"]).write_bytes(b"GGUF" + b"\x05" * 60)
    monkeypatch.setitem(loading.ALIASES, NAME, dict(loading.ALIASES[NAME], dist="no-such-dist-for-tokrag-tests"))
    monkeypatch.setattr(loading, "_package_dir", lambda package: pkg)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[set[str]] = []

    def convert(gguf_dir: Path, gguf_name: str, out_dir: Path, source: dict | None = None) -> None:
        seen.append({p.name for p in out_dir.parent.iterdir()})
        out_dir.mkdir()
        (out_dir / "config.json").write_text(json.dumps({"converted": True}), encoding="utf-8")

    monkeypatch.setattr(loading, "_convert_gguf", convert)
    yield seen
    loading.converter_key.cache_clear()


def _folder(path: Path, *files: str) -> Path:
    path.mkdir()
    for name in files:
        (path / name).write_bytes(b"x" * 10)
    return path


def test_conversion_removes_the_scratch_folders_interrupted_conversions_left(fake_alias, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    out = loading.converted_folder(NAME, models)
    # what kill -9 left: killed in save_pretrained (weights, configs, an atomic write's temporary file) ...
    killed = _folder(models / f".{out.name}.1a2b3c4d", "model.safetensors", "config.json", "generation_config.json",
                     "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", ".tokrag_source.json.0f1e2d3c.tmp")
    # ... killed while safetensors wrote the weights to its temporary file (as the kill -9 proof left it)
    in_save = _folder(models / f".{out.name}.1d786c32", ".tmphwJj9c", "config.json", "generation_config.json")
    empty = _folder(models / f".{out.name}.99aa88bb")  # ... and killed before save_pretrained wrote anything
    # left alone: another converter key's and another alias's scratch (their own locks), a look-alike holding
    # other files, a look-alike that is a file, other names
    other_key = _folder(models / f".{out.name.rsplit('-c', 1)[0]}-c00000000.1a2b3c4d", "model.safetensors")
    other_alias = _folder(models / ".gemma-3-270m-a5fd3b62230a-ce69eaa28.1a2b3c4d", "model.safetensors")
    foreign = _folder(models / f".{out.name}.cafebabe", "model.safetensors", "notes.md")
    nested = _folder(models / f".{out.name}.0badf00d", "config.json")
    (nested / "sub").mkdir()
    (models / f".{out.name}.deadbeef").mkdir()
    file_like = models / f".{out.name}.12345678x"
    file_like.write_text("x")
    keep = _folder(models / "keep", "model.safetensors")

    resolved = loading.resolve_alias(NAME, models)

    assert resolved.path == out and (out / "config.json").is_file()
    assert not killed.exists() and not empty.exists() and not in_save.exists()
    assert not {killed.name, empty.name, in_save.name} & fake_alias[0]  # removed before converting
    for left in (other_key, other_alias, foreign, nested, file_like, keep):
        assert left.exists(), left.name
    # a converted folder is served as is: nothing is looked at without the conversion's lock
    again = _folder(models / f".{out.name}.5e6f7a8b", "model.safetensors")
    loading.resolve_alias(NAME, models)
    assert again.exists() and len(fake_alias) == 1


def test_gemma_assembly_scratch_is_named_after_the_converted_folder_and_removed(tmp_path, monkeypatch):
    """The assembled GGUF's scratch folder is ``.<converted folder>.<8 hex>.gguf``, under the converted folder's lock,
    so the next conversion removes it after a kill -9 (the old ``.gemma-3-270m-gguf.<8>`` name was shared by every
    converter key: no lock told a live one from a leftover)."""
    name = "gemma-3-270m"
    spec = loading.ALIASES[name]
    out = tmp_path / f"{name}-{spec['sha256'][:12]}-c0123abcd"
    made: list[Path] = []

    class Package:
        @staticmethod
        def assemble(output_path):
            made.append(Path(output_path))
            Path(output_path).write_bytes(b"GGUF")
            raise RuntimeError("killed here")

    import importlib

    monkeypatch.setattr(importlib, "import_module", lambda package: Package)
    with pytest.raises(RuntimeError):
        loading._convert_assembled(name, spec, tmp_path, out)
    assert made and made[0].name == spec["gguf"]
    assert re.fullmatch(re.escape(f".{out.name}.") + r"[0-9a-f]{8}\.gguf", made[0].parent.name), made[0].parent.name

    leftover = _folder(tmp_path / made[0].parent.name, spec["gguf"])  # as kill -9 leaves it (no finally ran)
    extra = _folder(tmp_path / f".{out.name}.a1b2c3d4.gguf", spec["gguf"], "mine.txt")
    other = _folder(tmp_path / f".{name}-{spec['sha256'][:12]}-c99999999.a1b2c3d4.gguf", spec["gguf"])
    model_scratch = _folder(tmp_path / f".{out.name}.0f0f0f0f", "model.safetensors", "config.json")
    removed = loading.remove_stale_conversions(name, out)
    assert sorted(removed) == sorted([leftover, model_scratch])
    assert not leftover.exists() and not model_scratch.exists() and extra.exists() and other.exists()
