"""Batch invariance end to end on the real SmolLM2-135M-Instruct, bitwise, at one and at two threads.

tests/test_model_batching.py compares batch 8 with batch 1 to 1e-5 (and at the suite's one thread, conftest.py);
``batch_invariant`` (default on CPU, tokrag_model.decoder) promises the same bits. Short ``loglikelihood_rolling``
requests (rag-none: the texts alone) share teacher-forced passes at batch 8 (tens of positions per pass), where
MKL's dense products give a row other bits than alone on an Intel Xeon at two threads (17-128 rows): the old code
failed here at two threads (-36.15979091823101 at batch 8, -36.159771755337715 at batch 1). The decoder now probes
MKL at load and forces such items alone. rag-cad's generation (two rows per request) runs on the packed products.
"""

from __future__ import annotations

import pytest
import torch
from test_model_smollm2 import context_of, make_docs  # (backbone: the session's model, tests/conftest.py)

pytestmark = pytest.mark.slow

TEXTS = ["Paris is the capital of France.", "The river flows north into the sea.", "Water boils at one hundred degrees.",
         "She sold the old house in the spring.", "A prime number has two divisors.", "The train was late again today.",
         "Bees make honey from the nectar of flowers.", "He plays the violin every evening."]


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_8_gives_batch_1_bits_at_one_and_two_threads(backbone, data_dir, threads):
    from lm_eval.api.instance import Instance

    from tokrag_model.methods import MODELS

    docs = make_docs(data_dir, n=4, n_distractors=0)
    gen = {"until": ["<|im_end|>"], "max_gen_toks": 4, "do_sample": False}
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = {}
        for bs in (1, 8):
            rolling = [Instance("loglikelihood_rolling", {}, (t,), i) for i, t in enumerate(TEXTS)]
            gens = [Instance("generate_until", d, (context_of(backbone.tokenizer, d), dict(gen)), i) for i, d in enumerate(docs)]
            none, cad = (MODELS[m].with_backbone(backbone, batch_size=str(bs)) for m in ("rag-none", "rag-cad"))
            got[bs] = (none.loglikelihood_rolling(rolling, disable_tqdm=True), cad.generate_until(gens, disable_tqdm=True))
    finally:
        torch.set_num_threads(before)
    assert got[8][0] == got[1][0]  # bitwise: float equality of every sum
    assert got[8][1] == got[1][1]
    assert len(set(got[1][0])) == len(TEXTS)
