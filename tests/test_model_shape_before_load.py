"""A model argument that does not fit the model (``layer=99``, ``rag_top`` above the vocabulary, ``js_min_layer`` /
``layer_fallback`` outside it, a preset made for another depth) is refused before the weights load: the method's
constructor reads the depth and vocabulary size from the model's config (``RAGMethodLM.check_model_shape``, the
leaderboard pre-run check's ``model_shape`` + ``check_shape``), with the load's own one-line message. It loaded the
weights first (seconds for SmolLM2, minutes for a 7B model) and then refused the argument."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from retrieval.errors import ConfigError
from tokrag_model import base
from tokrag_model.methods.cad import CADLM
from tokrag_model.methods.tokrag import TokRAGLM


class Loaded(Exception):
    """Backbone.load was reached (the arguments passed the checks before it)."""


@pytest.fixture
def no_load(monkeypatch):
    """Backbone.load and transformers' from_pretrained fail loudly: any weights load is seen."""
    import transformers

    def load(*args, **kwargs):
        raise Loaded(args)

    def from_pretrained(*args, **kwargs):
        raise AssertionError("weights loaded")

    monkeypatch.setattr(base.Backbone, "load", classmethod(load))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)


@pytest.fixture
def tiny(tmp_path):
    """A model folder with a config of 4 layers and 100 tokens, and no weights."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 4, "vocab_size": 100}))
    return str(folder)


SMOLLM2 = [  # the load's messages (TokRAGScorer, check_tops, resolve_layer) on SmolLM2's 30 layers, 49152 tokens
    ({"layer": 99}, "layer=99 is outside the model's 30 layers (0..29)"),
    ({"layer": -31}, "layer=-31 is outside the model's 30 layers (0..29)"),
    ({"rag_top": 60000}, "rag_top=60000 exceeds the model's vocabulary of 49152 tokens"),
    ({"pure_top": 50000}, "pure_top=50000 exceeds the model's vocabulary of 49152 tokens"),
    ({"layer": "dynamic", "js_min_layer": 40}, "js_min_layer=40 is outside the model's 30 layers (0..29)"),
    ({"layer": "dynamic", "layer_fallback": 31}, "layer_fallback=31 is outside the model's 30 layers (0..29)"),
]


@pytest.mark.parametrize("args,message", SMOLLM2, ids=[m.partition(" ")[0] for _, m in SMOLLM2])
def test_an_argument_outside_the_model_is_refused_before_the_weights_load(no_load, args, message):
    with pytest.raises(ConfigError, match=rf"^--model tokrag: {re.escape(message)}$"):
        TokRAGLM(pretrained="smollm2-135m-instruct", **args)


def test_lm_evals_constructor_refuses_it_before_the_load(no_load):
    """The ``lm_eval --model tokrag --model_args pretrained=smollm2-135m-instruct,layer=99`` path."""
    with pytest.raises(ConfigError, match=r"^--model tokrag: layer=99 is outside the model's 30 layers \(0\.\.29\)$"):
        TokRAGLM.create_from_arg_string("pretrained=smollm2-135m-instruct,layer=99", {"device": "cpu", "batch_size": "1"})


def test_a_local_folders_config_is_read_and_fitting_arguments_reach_the_load(no_load, tiny):
    with pytest.raises(ConfigError, match=r"^--model tokrag: layer=4 is outside the model's 4 layers \(0\.\.3\)$"):
        TokRAGLM(pretrained=tiny, layer=4)
    with pytest.raises(ConfigError, match=r"^--model tokrag: rag_top=101 exceeds the model's vocabulary of 100 tokens$"):
        TokRAGLM(pretrained=tiny, layer=2, rag_top=101)
    with pytest.raises(Loaded):  # fits: on to the load
        TokRAGLM(pretrained=tiny, layer=3, rag_top=100, pure_top=100)
    with pytest.raises(Loaded):  # the default layer (0.625 of the depth) fits any depth
        TokRAGLM(pretrained=tiny)
    with pytest.raises(Loaded):  # a method without a shape check goes straight to the load, as before
        CADLM(pretrained=tiny)


def test_a_preset_made_for_another_depth_is_refused_before_the_load(no_load, tiny, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                "model": {"pretrained": "m", "fingerprint": "abc", "n_layers": 30},
                                "params": {"layer": 12}, "calibration": {}}))
    with pytest.raises(ConfigError, match=rf"^preset={re.escape(str(path))}: made for 30 layers, this model has 4; "):
        TokRAGLM(pretrained=tiny, preset=str(path))


def test_a_shape_not_known_without_the_weights_is_left_to_the_load(no_load, tmp_path, monkeypatch):
    """A hub id not in the local cache: nothing is downloaded for the check, the load decides."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(Loaded):
        TokRAGLM(pretrained="HuggingFaceTB/SmolLM2-135M-Instruct", layer=99)


def test_with_a_backbone_its_config_is_checked_before_anything_else(monkeypatch):
    """``with_backbone``: the backbone's config gives the shape; the error comes before the decoder, the data-parallel
    set-up or the tokenizer are touched (this backbone has nothing but a config)."""
    config = SimpleNamespace(num_hidden_layers=4, vocab_size=100)
    fake = SimpleNamespace(model=SimpleNamespace(config=config), path="/nowhere/tiny", device="cpu")
    monkeypatch.setattr(base, "DataParallel", lambda *a, **k: (_ for _ in ()).throw(AssertionError("DataParallel")))
    with pytest.raises(ConfigError, match=r"^--model tokrag: layer=9 is outside the model's 4 layers \(0\.\.3\)$"):
        TokRAGLM.with_backbone(fake, layer=9)
    with pytest.raises(ConfigError, match=r"^--model tokrag: pure_top=101 exceeds the model's vocabulary of 100 tokens$"):
        TokRAGLM.with_backbone(fake, pure_top=101)
    with pytest.raises(AssertionError, match="DataParallel"):  # fits: on to the rest of the set-up
        TokRAGLM.with_backbone(fake, layer=3)
