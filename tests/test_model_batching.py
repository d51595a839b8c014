"""``--batch_size`` for every method with the real SmolLM2-135M-Instruct: batched ``loglikelihood``,
``loglikelihood_rolling`` and ``generate_until`` give batch 1's numbers, outputs and traces (issue 13.1-2,
issue 12.5), and rag-standard gives lm-eval's ``hf`` model's strings on the benchmark's prompt shape.

The 20-question generation check is in the reliability group (``pytest -m reliability``). Batch
invariance (``tokrag_model.decoder``) makes the traces byte-identical: every number a method logs
(Tok-RAG's S_R/S_L and layers, the critic's ratios, REPLUG's weights) is computed for a row exactly as
at batch 1. Requests are given in an order that is not the length order, so the Collator's sorting and
the return to the original order are exercised.
"""

from __future__ import annotations

import json

import pytest
from test_model_smollm2 import context_of, make_docs  # (backbone: the session's model, tests/conftest.py)

from tokrag_model.methods import METHODS

pytestmark = pytest.mark.slow
METHOD_NAMES = list(METHODS)  # every registered method, new ones included

GEN = {"until": ["<|im_end|>"], "max_gen_toks": 6, "do_sample": False}
METHOD_ARGS = {"tokrag": {"always_score": True}}  # S_R/S_L at every token: every decision quantity in the trace


def _cut(docs: list[dict], words: tuple[int | None, ...]) -> list[dict]:
    """``docs`` with every passage of doc ``i`` cut to its first ``words[i % len(words)]`` words (None: whole). A mix
    of whole NQ-oracle passages (up to ~240 words) and cut ones keeps long prompts and a wide length spread in a batch
    (padding), at about 60% of the prefill cost of whole passages everywhere."""
    for i, d in enumerate(docs):
        n = words[i % len(words)]
        if n is not None:
            for c in d["ctxs"]:
                c["text"] = " ".join(c["text"].split()[:n])
    return docs


@pytest.fixture(scope="module")
def docs20(data_dir):
    """20 NQ-oracle questions with the gold passage only: every 4th whole, the others cut to 45 words."""
    return _cut(make_docs(data_dir, n=20, n_distractors=0), (None, 45, 45, 45))


def _lm(backbone, name, batch_size):
    from tokrag_model.methods import MODELS

    return MODELS[name].with_backbone(backbone, batch_size=str(batch_size), **METHOD_ARGS.get(name, {}))


def _trace(req) -> str:
    return json.dumps(req.args[-1]["tokrag_trace"], sort_keys=True)


@pytest.mark.reliability  # determinism across batch sizes; ~4 min on two idle cores (the default run keeps the cheaper tests below)
@pytest.mark.parametrize("name", METHOD_NAMES)
def test_generation_outputs_and_traces_are_identical_at_batch_1_and_4(backbone, docs20, name):
    """Issue 12.5: 20 questions, byte-identical traces and identical strings at batch 1 and batch 4."""
    from lm_eval.api.instance import Instance

    order = [7, 0, 13, 2, 19, 5, 11, 1, 16, 8, 3, 18, 9, 14, 4, 12, 6, 17, 10, 15]  # not sorted by length
    got = {}
    for bs in (1, 4):
        reqs = [Instance("generate_until", docs20[i], (context_of(backbone.tokenizer, docs20[i]), dict(GEN)), j)
                for j, i in enumerate(order)]
        got[bs] = (_lm(backbone, name, bs).generate_until(reqs, disable_tqdm=True), [_trace(r) for r in reqs])
    assert got[4][0] == got[1][0]
    assert got[4][1] == got[1][1]
    assert len(set(got[1][0])) > 5  # real, question-specific answers
    if name == "tokrag":
        assert all(t[1] is not None for tr in got[1][1] for t in json.loads(tr)["tokens"])  # every S_R logged


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_loglikelihood_and_rolling_at_batch_8_equal_batch_1(backbone, data_dir, name):
    """Issue 13.1: batch 8 gives batch 1's log-likelihoods (1e-5 relative, float32), greedy flags and
    traces, in the original request order; windows of all rolling requests are batched together."""
    from lm_eval.api.instance import Instance

    docs = _cut(make_docs(data_dir, n=3, n_distractors=1), (None, 45, 20))  # two passages per prompt
    reqs = lambda: [Instance("loglikelihood", d, (context_of(backbone.tokenizer, d), cont), i)  # noqa: E731
                    for i, (d, cont) in enumerate((d, c) for d in docs[::-1] for c in (" " + d["answers"][0], " Paris, France"))]
    rolling = lambda: [Instance("loglikelihood_rolling", d, (d["ctxs"][1]["text"][:n],), i)  # noqa: E731
                       for i, (d, n) in enumerate(zip(docs, (120, 240, 60)))]
    got = {}
    for bs in (1, 8):
        lm = _lm(backbone, name, bs)
        r1, r2 = reqs(), rolling()
        got[bs] = (lm.loglikelihood(r1, disable_tqdm=True), [_trace(r) for r in r1],
                   lm.loglikelihood_rolling(r2, disable_tqdm=True), [_trace(r) for r in r2])
    (ll1, tr1, roll1, rtr1), (ll8, tr8, roll8, rtr8) = got[1], got[8]
    assert [g for _, g in ll8] == [g for _, g in ll1]
    assert [x for x, _ in ll8] == pytest.approx([x for x, _ in ll1], rel=1e-5)
    assert roll8 == pytest.approx(roll1, rel=1e-5)
    assert tr8 == tr1 and rtr8 == rtr1
    assert ll1[0][0] != ll1[1][0] and ll1[0][0] != ll1[2][0]  # each request its own number, in order


def test_standard_equals_lm_eval_hf_strings_on_k5_prompts(backbone, data_dir):
    """rag-standard and lm-eval's ``hf`` model (loaded as it loads itself, row-major weights, its own
    attention) generate the same strings from the same prompt strings (passages block + question, five
    passages as in benchmarks/decoding.py), 16 greedy tokens, at batch 1 and at batch 4 for rag-standard."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    docs = make_docs(data_dir, n=6, n_distractors=4)
    gen = {"until": ["\n\n"], "max_gen_toks": 16, "do_sample": False}
    std = _lm(backbone, "rag-standard", 1)
    hf = HFLM(pretrained=str(backbone.path), tokenizer=str(backbone.path), batch_size=1, device="cpu", dtype="float32",
              max_length=std.max_length)
    assert hf.model is not backbone.model
    ctxs = [context_of(backbone.tokenizer, d) for d in docs]
    prompts = [std.encode_rag(d, c, std.max_length - 16).text for d, c in zip(docs, ctxs)]
    ours = std.generate_until([Instance("generate_until", d, (c, dict(gen)), i) for i, (d, c) in enumerate(zip(docs, ctxs))],
                              disable_tqdm=True)
    ref = hf.generate_until([Instance("generate_until", d, (p, dict(gen)), i) for i, (d, p) in enumerate(zip(docs, prompts))],
                            disable_tqdm=True)
    assert ours == ref
    batched = _lm(backbone, "rag-standard", 4).generate_until(
        [Instance("generate_until", d, (c, dict(gen)), i) for i, (d, c) in enumerate(zip(docs, ctxs))], disable_tqdm=True)
    assert batched == ours
