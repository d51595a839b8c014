"""s61 rt (read-through of p1's 0da30e1 / r1's 35c81b8 with the runner's difference notes): a cell's key holds a
``preset`` by its content (``model_args.preset`` = ``keys.FILE_CONTENT``, the SHA-256 in ``model_arg_files``), so
``runner._absent_model_arg`` (the words of ``check``'s KeyChanged lines and the report's "other inputs" notes) could no
longer read the preset and named an argument it sets ``(absent: not recorded)``, where before s61 it read ``(absent:
default 14)`` (r1's report; measured on fea74b6's tree with leaderboards/presets/tokrag-smollm2-135m-instruct.json,
which sets layer 14). Now a file of that content, as the hash memo knows it, is read."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRESET = REPO / "leaderboards" / "presets" / "tokrag-smollm2-135m-instruct.json"


@pytest.fixture
def keyed(tmp_path, monkeypatch):
    """A copy of the committed SmolLM2 preset hashed through a hash memo in a fresh cache folder, and a key material's
    config holding it by content; ``(preset copy, config)``."""
    from leaderboards.keys import FILE_CONTENT
    from retrieval.io import HashMemo

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    preset = tmp_path / "p.json"
    shutil.copyfile(PRESET, preset)
    memo = HashMemo()
    sha = memo.sha(preset)
    memo.save()
    assert sha == hashlib.sha256(PRESET.read_bytes()).hexdigest()
    config = {"model": "tokrag", "model_args": {"pretrained": "smollm2-135m-instruct", "k": 3, "preset": FILE_CONTENT},
              "model_arg_files": {"preset": sha}}
    return preset, config


def test_an_argument_a_content_keyed_preset_sets_reads_the_presets_value(keyed):
    from leaderboards.runner import _absent_model_arg, config_differences

    _preset, config = keyed
    assert _absent_model_arg(config, "layer") == "(absent: default 14)"  # the preset's layer
    assert _absent_model_arg(config, "rag_top") == "(absent: default 2)"  # the method's default
    now = {"model": "tokrag", "model_args": {"pretrained": "smollm2-135m-instruct", "k": 3, "layer": 10}}
    assert "model_args[layer] (absent: default 14) -> 10" in config_differences(config, now)


def test_a_preset_edited_since_is_not_read_for_the_old_content(keyed):
    from leaderboards.runner import _absent_model_arg

    preset, config = keyed
    # another size, so its stamp differs whatever the file system's time resolution
    preset.write_text(preset.read_text(encoding="utf-8").replace('"layer": 14', '"layer": 9'), encoding="utf-8")
    assert '"layer": 9' in preset.read_text(encoding="utf-8")
    assert _absent_model_arg(config, "layer") == "(absent: not recorded)"
