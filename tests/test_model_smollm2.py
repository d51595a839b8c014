"""Golden tests of the five methods with the real SmolLM2-135M-Instruct (loaded once per session).

Docs are built by hand from ``nq_open_oracle`` (the gold passage, rank 1) plus DPR-sample passages as
distractors, the shape the retrieval tasks attach (``{docid, title, text, score, rank}``).
"""

from __future__ import annotations

import gzip
import json

import pytest
import torch

pytestmark = pytest.mark.slow

N_Q = 5
MAX_TOKS = 8


def _docs(data_dir, n=N_Q, n_distractors=2):
    rows = []
    with gzip.open(data_dir / "nq_open_oracle" / "nq-open-oracle.jsonl.gz", "rt") as f:
        for line in f:
            rows.append(json.loads(line))
            if len(rows) == n:
                break
    dpr = []
    with open(data_dir / "dpr_wiki_sample1k" / "sample_data.jsonl") as f:
        for line in f:
            dpr.append(json.loads(line))
            if len(dpr) == 50:
                break
    docs = []
    for qi, r in enumerate(rows):
        g = r["ctxs"][0]
        ctxs = [{"docid": f"gold-{qi}", "title": g.get("title", ""), "text": g["text"], "score": 20.0, "rank": 1}]
        for j in range(n_distractors):
            d = dpr[(qi * n_distractors + j) % len(dpr)]
            title, text = d["contents"].split("\n", 1)
            ctxs.append({"docid": f"dpr-{d['id']}", "title": title.strip('"'), "text": text,
                         "score": 15.0 - j, "rank": j + 2})
        docs.append({"question": r["question"], "answers": r["answers"], "ctxs": ctxs})
    return docs


@pytest.fixture(scope="session")
def backbone():
    from tokrag_model.lm import Backbone

    return Backbone.load("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def docs(data_dir):
    return _docs(data_dir)


def context_of(tok, doc):
    """The task's rendered context: a chat-formatted question (what a chat-template task renders)."""
    return tok.apply_chat_template([{"role": "user", "content": f"Answer briefly. {doc['question']}?"}],
                                   tokenize=False, add_generation_prompt=True)


GEN = {"until": ["\n", "<|im_end|>"], "max_gen_toks": MAX_TOKS, "do_sample": False}


def _gen_requests(tok, docs, with_passages_in_context=None):
    from lm_eval.api.instance import Instance

    reqs = []
    for i, d in enumerate(docs):
        ctx = context_of(tok, d)
        if with_passages_in_context is not None:
            ctx = with_passages_in_context.block(d["ctxs"]) + ctx
        reqs.append(Instance("generate_until", d, (ctx, dict(GEN)), i, metadata=("t", i, 1)))
    return reqs


@pytest.fixture(scope="session")
def outputs(backbone, docs):
    """Generations + traces + stats of every method on the same requests (computed once)."""
    from tokrag_model.lm import MODELS

    res = {}
    for name, cls in MODELS.items():
        lm = cls.with_backbone(backbone)
        reqs = _gen_requests(backbone.tokenizer, docs)
        out = lm.generate_until(reqs, disable_tqdm=True)
        res[name] = {"out": out, "traces": [r.args[-1]["tokrag_trace"] for r in reqs], "stats": dict(lm.stats), "lm": lm}
    return res


def test_none_and_standard_match_lm_eval_hf(backbone, docs, outputs):
    """rag-none/rag-standard give lm-eval's ``hf`` model's exact strings for the same contexts."""
    from lm_eval.models.huggingface import HFLM

    hf = HFLM(pretrained=backbone.model, tokenizer=backbone.tokenizer, batch_size=1, device="cpu",
              max_length=outputs["rag-standard"]["lm"].max_length)
    pure = hf.generate_until(_gen_requests(backbone.tokenizer, docs), disable_tqdm=True)
    rag = hf.generate_until(_gen_requests(backbone.tokenizer, docs, outputs["rag-standard"]["lm"].prompts), disable_tqdm=True)
    assert outputs["rag-none"]["out"] == pure
    assert outputs["rag-standard"]["out"] == rag
    assert outputs["rag-none"]["out"] != outputs["rag-standard"]["out"]  # the passages matter
