"""Offline, the pre-run model check reads a cached hub snapshot's weights as ``from_pretrained`` does (s54 r1, review of
54f9215; /work/scratch/s54/r1/probe_hub_layouts.py, probe_hub_layouts.txt).

``tokrag_model.loading.missing_model_files`` checked the shards of a weights index whenever one was there, before the
weights file beside it. ``from_pretrained`` reads a folder's ``model.safetensors`` first, then
``model.safetensors.index.json``, then ``pytorch_model.bin``, then ``pytorch_model.bin.index.json``, and ignores the rest.
A repo with one ``model.safetensors`` and sharded ``.bin`` files is cached by the load with ``pytorch_model.bin.index.json``
(every top-level ``*.json`` is fetched, the ``.bin`` shards are not), and that snapshot, which loads, was refused:
"... without the weight shards its pytorch_model.bin.index.json names (pytorch_model-00001-of-00002.bin, ...)".
"""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub.constants
import pytest

from retrieval.errors import OfflineError
from tokrag_model.loading import check_model_available, missing_model_files

SHA = "0123456789abcdef0123456789abcdef01234567"
BIN_INDEX = {"metadata": {}, "weight_map": {"model.embed_tokens.weight": "pytorch_model-00001-of-00002.bin",
                                            "lm_head.weight": "pytorch_model-00002-of-00002.bin"}}
ST_INDEX = {"metadata": {}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                                           "lm_head.weight": "model-00002-of-00002.safetensors"}}


@pytest.fixture(autouse=True)
def _offline_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A real (tiny) Llama saved by save_pretrained: config.json and model.safetensors."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny")
    LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2)).save_pretrained(folder)
    return folder


def _snapshot(tmp_path: Path, model: Path, files: dict[str, dict]) -> Path:
    """The HF cache layout: the snapshot's files are links into blobs/."""
    repo = tmp_path / "hub" / "models--tokrag-test--weights"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(SHA)
    blobs, snap = repo / "blobs", repo / "snapshots" / SHA
    blobs.mkdir()
    snap.mkdir(parents=True)
    texts = {"config.json": (model / "config.json").read_text(), "tokenizer.json": "{}",
             **{name: json.dumps(obj) for name, obj in files.items()}}
    for i, (name, text) in enumerate(texts.items()):
        (blobs / f"b{i}").write_text(text)
        (snap / name).symlink_to(f"../../blobs/b{i}")
    return snap


def _loads(snap: Path) -> bool:
    from transformers import AutoModelForCausalLM

    try:
        AutoModelForCausalLM.from_pretrained(snap)
    except OSError:  # "... does not appear to have a file named pytorch_model-00001-of-00002.bin"
        return False
    return True


def test_one_safetensors_file_beside_a_bin_index_loads_and_passes(tmp_path, tiny_model):
    snap = _snapshot(tmp_path, tiny_model, {"pytorch_model.bin.index.json": BIN_INDEX})
    (snap / "model.safetensors").symlink_to(tiny_model / "model.safetensors")
    assert _loads(snap)  # from_pretrained reads model.safetensors and never the .bin index
    assert missing_model_files(snap) == []
    check_model_available("tokrag-test/weights")  # was: OfflineError "... without the weight shards its
    # pytorch_model.bin.index.json names (pytorch_model-00001-of-00002.bin, pytorch_model-00002-of-00002.bin)"


def test_one_safetensors_file_beside_a_stale_safetensors_index_loads_and_passes(tmp_path, tiny_model):
    snap = _snapshot(tmp_path, tiny_model, {"model.safetensors.index.json": ST_INDEX})
    (snap / "model.safetensors").symlink_to(tiny_model / "model.safetensors")
    assert _loads(snap)
    assert missing_model_files(snap) == []


def test_the_index_from_pretrained_reads_first_is_still_checked(tmp_path, tiny_model):
    # a safetensors index before pytorch_model.bin: from_pretrained reads the index, and its shards are not there
    snap = _snapshot(tmp_path, tiny_model, {"model.safetensors.index.json": ST_INDEX})
    import torch
    from safetensors.torch import load_file

    torch.save(load_file(tiny_model / "model.safetensors"), snap / "pytorch_model.bin")
    assert not _loads(snap)
    assert missing_model_files(snap) == ["the weight shards its model.safetensors.index.json names "
                                         "(model-00001-of-00002.safetensors, model-00002-of-00002.safetensors)"]
    with pytest.raises(OfflineError, match=r"without the weight shards its model\.safetensors\.index\.json names"):
        check_model_available("tokrag-test/weights")
    (snap / "model.safetensors.index.json").unlink()  # now pytorch_model.bin is what it reads
    assert _loads(snap)
    assert missing_model_files(snap) == []
