"""Follow-ups of 6afac03 (``batch_invariant=auto`` false for non-float32 CPU weights).

``leaderboards.runner.backbone_key`` resolved auto as "the device is CPU" while the model resolves it by
``decoder.auto_batch_invariant`` (CPU and float32 linears), so a bfloat16 CPU cell's backbone was never reused
(``tests/test_leaderboard_backbone_reuse.py`` counts the loads); with ``dtype=auto`` the key cannot know the
weights' dtype and leaves ``batch_invariant`` None for :func:`leaderboards.runner._built_as_keyed` to check after
the load. ``decoder.packing_unavailable_reason`` looked at the first parameter only (the embedding): float32
embeddings before bfloat16 linears packed nothing and ``batch_invariant=true`` was not refused. Each test but the
rule's own fails on the old code.
"""
from types import SimpleNamespace

import pytest
import torch
from leaderboard_helpers import write_spec

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError


def _tiny_llama(linear_dtype: torch.dtype):
    """A one-layer Llama whose embedding (its first parameter) is float32 and whose ``nn.Linear`` weights are
    ``linear_dtype``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=64)).eval()
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.to(linear_dtype)
    return model


def test_auto_batch_invariant_is_cpu_and_float32_only():
    from tokrag_model.decoder import auto_batch_invariant

    assert auto_batch_invariant("cpu", None) is True
    assert auto_batch_invariant("cpu", "float32") is True
    assert auto_batch_invariant("cpu", "bfloat16") is False
    assert auto_batch_invariant("cpu", "float16") is False
    assert auto_batch_invariant("cuda:0", None) is False


def test_bfloat16_linears_after_a_float32_embedding_are_refused_batch_invariance(one_thread):
    from tokrag_model.decoder import MultiContextDecoder, packing_unavailable_reason

    model = _tiny_llama(torch.bfloat16)
    assert next(model.parameters()).dtype == torch.float32
    assert packing_unavailable_reason(model) == ("oneDNN packing needs float32 weights, these are bfloat16: "
                                                 "dtype=float32, the default, packs")  # old: None
    with pytest.raises(ConfigError) as err:
        MultiContextDecoder(model, {"forward_passes": 0, "prompt_tokens": 0}, batch_invariant=True)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("batch_invariant=true: ")
    assert msg.endswith("(oneDNN packing needs float32 weights, these are bfloat16: dtype=float32, the default, "
                        "packs); pass batch_invariant=false")


def _cells(tmp_path, dtype: str):
    spec = load_spec(write_spec(tmp_path, name="dt", tasks=["toy_qa"], limit=1, methods=[
        {"name": "standard", "model": "rag-standard", "model_args": {"dtype": dtype}}],
        extra={"shared": {"model_args": {"pretrained": "smollm2-135m-instruct"}, "limit": 1}}))
    return spec.cells()


@pytest.mark.parametrize("dtype, expected", [("bfloat16", False), ("float16", False), ("float32", True), ("auto", None)])
def test_backbone_key_resolves_auto_by_the_models_rule(tmp_path, dtype, expected):
    from leaderboards.runner import backbone_key

    (cell,) = _cells(tmp_path, dtype)
    assert backbone_key(cell)["batch_invariant"] is expected  # old: True for every dtype on CPU


def test_a_dtype_auto_key_is_checked_against_the_loaded_weights(tmp_path):
    """dtype=auto: the checkpoint's dtype decides; the backbone is kept where the model resolved auto by the rule
    over the weights it loaded."""
    from leaderboards.runner import _built_as_keyed, backbone_key

    (cell,) = _cells(tmp_path, "auto")
    key = backbone_key(cell)

    def lm(linear_dtype, recorded):
        cfg = {**{k: key[k] for k in ("pretrained", "dtype", "revision", "trust_remote_code")},
               "batch_invariant": recorded}
        return SimpleNamespace(resolved_config=cfg, backbone=SimpleNamespace(device="cpu"),
                               model=_tiny_llama(linear_dtype))

    assert _built_as_keyed(lm(torch.bfloat16, False), key) is True
    assert _built_as_keyed(lm(torch.bfloat16, True), key) is False
    assert _built_as_keyed(lm(torch.float32, True), key) is True
    assert _built_as_keyed(lm(torch.float32, False), key) is False
