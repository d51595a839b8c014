"""Offline, a hub id whose local Hugging Face cache snapshot lacks what the load needs is refused by the pre-run model
check (s54 f1; /work/scratch/s54/f1/repro_hub_config_only.py, .old.txt / .new.txt).

``tokrag_model.loading.check_model_available`` (run by ``leaderboard run`` before its first cell and by ``run
--estimate``) looked the hub id up as the load does (``snapshot_download(local_files_only=True)``), which finds a
snapshot holding ``config.json`` alone (an ``hf_hub_download`` of the config, an interrupted download): ``--estimate``
passed (rc 0) and ``run`` failed at that model's cell, after the cells before it ("folder ... has no tokenizer files").
The check now requires weights (a weights file, or every shard its index names) and tokenizer files, and names what is
missing, the snapshot and what to do, in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub.constants
import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.runner
from leaderboards.cli import main
from retrieval.errors import OfflineError
from tokrag_model.loading import check_model_available

SHA = "0123456789abcdef0123456789abcdef01234567"
WEIGHTS = "weights (model.safetensors, its shards and index, or pytorch_model.bin)"
TOKENIZER = "tokenizer files (tokenizer.json, or a vocabulary such as tokenizer.model or vocab.json)"


@pytest.fixture(autouse=True)
def _offline_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    def no_load(cell):
        raise AssertionError(f"the model of {cell.cell_id} was loaded")

    monkeypatch.setattr(leaderboards.runner, "make_model", no_load)


def _snapshot(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "hub" / "models--tokrag-test--partial"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(SHA)
    snap = repo / "snapshots" / SHA
    snap.mkdir(parents=True)
    for name, text in {"config.json": json.dumps({"model_type": "llama", "num_hidden_layers": 2}), **files}.items():
        (snap / name).write_text(text)
    return snap


def test_a_cached_config_alone_is_refused_by_the_estimate_and_before_the_first_cell(tmp_path):
    snap = _snapshot(tmp_path, {})
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=2, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},  # its cell would run first
        {"name": "rag-standard", "model": "rag-standard", "specific": {"pretrained": "tokrag-test/partial"}}])
    lines = []
    for extra in (["--estimate"], ["--no-progress"]):
        with pytest.raises(OfflineError) as exc:
            main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), *extra])
        lines.append(str(exc.value))
    assert lines[0] == lines[1] == (
        f"leaderboard spec {spec}: method rag-standard: pretrained='tokrag-test/partial': the local Hugging Face cache "
        f"holds the hub id without {WEIGHTS} and without {TOKENIZER} ({snap}), and HF_HUB_OFFLINE=1 is set, so the load "
        "cannot download them: unset HF_HUB_OFFLINE to download them, or pass a local folder with config.json and "
        "weights (pretrained=/path/to/model), a hub id (org/name), or an offline alias (gemma-3-270m, "
        "smollm2-135m-instruct)")
    runs = tmp_path / "runs"
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")]  # no cell ran


def test_each_missing_part_is_named_and_a_complete_snapshot_passes(tmp_path):
    from tokrag_model.loading import missing_model_files

    snap = _snapshot(tmp_path, {"tokenizer.json": "{}", "model.safetensors.index.json": json.dumps(
        {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}),
        "model-00001-of-00002.safetensors": ""})
    assert missing_model_files(snap) == ["the weight shards its model.safetensors.index.json names "
                                         "(model-00002-of-00002.safetensors)"]
    with pytest.raises(OfflineError, match=r"at revision='main' without the weight shards its "
                                           r"model\.safetensors\.index\.json names \(model-00002-of-00002"):
        check_model_available("tokrag-test/partial", "main")
    (snap / "model-00002-of-00002.safetensors").write_text("")
    check_model_available("tokrag-test/partial")  # complete: passes
    (snap / "tokenizer.json").unlink()
    assert missing_model_files(snap) == [TOKENIZER]
    (snap / "tokenizer.json").symlink_to(snap / "gone.json")  # the cache's link to a blob that is not there
    assert missing_model_files(snap) == [TOKENIZER]
    (snap / "tokenizer.json").unlink()
    (snap / "vocab.json").write_text("{}")
    for name in ("model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        (snap / name).unlink()
    (snap / "pytorch_model.bin").write_text("")
    assert missing_model_files(snap) == []


def test_remote_tokenizer_code_is_left_to_the_load(tmp_path):
    from tokrag_model.loading import missing_model_files

    snap = _snapshot(tmp_path, {"model.safetensors": "", "tokenizer_config.json": json.dumps(
        {"auto_map": {"AutoTokenizer": ["tok.MyTokenizer", None]}})})
    assert missing_model_files(snap) == []  # its class may read other files: not told before the load


def test_online_the_snapshot_is_left_to_the_load(tmp_path, monkeypatch):
    _snapshot(tmp_path, {})
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    check_model_available("tokrag-test/partial")  # it downloads what is missing; no request made here
