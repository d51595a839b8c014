"""batch_invariant=true refused on a bfloat16 CPU model: the one-line error names the dtype as the cause (oneDNN
packing needs float32) and float32 as the fix, not only batch_invariant=false; not OMP_NUM_THREADS=1, which does not help
a non-float32 model."""
import pytest
import torch

from retrieval.errors import ConfigError
from tokrag_model.decoder import MultiContextDecoder


def _tiny_llama(dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128)
    return LlamaForCausalLM(cfg).to(dtype).eval()


def _stats() -> dict[str, int]:
    return {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}


def test_bfloat16_refusal_names_the_dtype():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # MKL's probed row count is trusted at one thread only (decoder.mkl_min_rows)
    try:
        with pytest.raises(ConfigError) as err:
            MultiContextDecoder(_tiny_llama(torch.bfloat16), _stats(), batch_invariant=True)
    finally:
        torch.set_num_threads(threads)
    msg = str(err.value)
    assert "\n" not in msg
    assert "oneDNN packing needs float32 weights, these are bfloat16: dtype=float32, the default, packs" in msg
    # one thread does not help a bfloat16 model (its products are never vouched for: decoder.mkl_min_rows)
    assert msg.endswith("pass batch_invariant=false")
    assert "OMP_NUM_THREADS" not in msg


def test_float32_model_is_not_refused_at_two_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        dec = MultiContextDecoder(_tiny_llama(torch.float32), _stats(), batch_invariant=True)
    finally:
        torch.set_num_threads(threads)
    assert dec.kernels is not None and dec.force_alone
