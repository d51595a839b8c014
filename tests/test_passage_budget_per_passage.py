"""The per-passage methods (REPLUG, the entropy ensemble) show the passages every other method shows.

The passage budget (``max_length`` minus the generation budget, and ``max_passage_tokens``) used to be checked per
branch against one passage for ``rag-replug`` and ``rag-ensemble-entropy``, but against the whole passages block for
``rag-standard``, ``tokrag``, CAD/AdaCAD and the filter: when truncation triggered, the per-passage methods saw all five
passages of the example below while the others dropped two (``max_length=600``) or three (``max_passage_tokens=400``),
and their traces had no ``dropped``. ``encode_per_passage`` now picks the kept set once per request by the block rule.
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance
from test_model_smollm2 import make_docs

from tokrag_model.methods import load

METHODS = ("rag-standard", "tokrag", "rag-cad", "rag-adacad", "rag-selfrag-filter", "rag-replug", "rag-ensemble-entropy")
# the filter keeps every passage it is shown (its own relevance filter off), so its 'passages' is the budget's kept set
EXTRA = {"rag-selfrag-filter": {"relevance_threshold": 0.0}}
# gold-0 (199 tokens), dpr-0 (149), dpr-1 (138), dpr-2 (167), dpr-3 (130): the block rule keeps the top 3 within 600
# tokens (559 with the question), the top 2 within 400 passage tokens
KEPT = {"max_length": (["gold-0", "dpr-0", "dpr-1"], ["dpr-2", "dpr-3"]),
        "max_passage_tokens": (["gold-0", "dpr-0"], ["dpr-1", "dpr-2", "dpr-3"])}


@pytest.fixture(scope="module")
def doc(data_dir):
    return make_docs(data_dir, n=1, n_distractors=4)[0]


def _trace(lm, doc, **gen):
    ctx = lm.apply_chat_template([{"role": "user", "content": f"Question: {doc['question']}?\nAnswer:"}])
    _, _, budget = lm._gen_settings({"until": ["\n"], "max_gen_toks": 32}, "<|im_end|>")
    rule, trace = lm.make_rule(doc, ctx, budget)
    return rule, trace


@pytest.mark.parametrize("args", [{"max_length": 600}, {"max_passage_tokens": 400}], ids=["max_length", "max_passage_tokens"])
def test_every_method_shows_the_same_kept_and_dropped_passages(backbone, doc, args):
    kept, dropped = KEPT[next(iter(args))]
    seen = {}
    for name in METHODS:
        lm = load(name).with_backbone(backbone, device="cpu", **args, **EXTRA.get(name, {}))
        rule, trace = _trace(lm, doc)
        seen[name] = (trace["passages"], trace.get("dropped"))
        if name in ("rag-replug", "rag-ensemble-entropy"):
            assert len(rule.rows()) == len(kept)  # one branch per kept passage
    assert seen == {name: (kept, dropped) for name in METHODS}, seen


def test_per_passage_branches_are_single_passage_prompts_of_the_kept_set(backbone, doc):
    lm = load("rag-replug").with_backbone(backbone, device="cpu", max_length=600)
    rule, _ = _trace(lm, doc)
    ctx = lm.apply_chat_template([{"role": "user", "content": f"Question: {doc['question']}?\nAnswer:"}])
    assert rule.rows() == [lm.encode_rag(doc, ctx, None, ctxs=[c]).ids for c in doc["ctxs"][:3]]


def test_loglikelihood_traces_record_the_dropped_passages(backbone, doc):
    ctx = backbone.tokenizer.apply_chat_template([{"role": "user", "content": f"Question: {doc['question']}?\nAnswer:"}],
                                                 tokenize=False, add_generation_prompt=True)
    for name in ("rag-replug", "rag-ensemble-entropy"):
        lm = load(name).with_backbone(backbone, device="cpu", max_length=600)
        req = Instance("loglikelihood", doc, (ctx, " " + doc["answers"][0]), 0)
        lm.loglikelihood([req], disable_tqdm=True)
        tr = req.args[-1]["tokrag_trace"]
        assert (tr["passages"], tr["dropped"]) == KEPT["max_length"], (name, tr)


def test_nothing_fits_is_closed_book_with_every_passage_dropped(backbone, doc):
    # no token of the top passage fits (5 tokens: not even its '[Reference]: <title>' line); 100 tokens used to be
    # closed-book too (gold-0 alone is 199): now gold-0 is cut to fit (tests/test_s52_f1_long_top_passage.py)
    lm = load("rag-ensemble-entropy").with_backbone(backbone, device="cpu", max_passage_tokens=5)
    rule, trace = _trace(lm, doc)
    assert trace["passages"] == [] and trace["closed_book"] is True
    assert trace["dropped"] == [c["docid"] for c in doc["ctxs"]]
    assert len(rule.rows()) == 1
    lm = load("rag-ensemble-entropy").with_backbone(backbone, device="cpu", max_passage_tokens=100)
    rule, trace = _trace(lm, doc)
    assert (trace["passages"], trace["dropped"], len(rule.rows())) == (["gold-0"], [c["docid"] for c in doc["ctxs"][1:]], 1)
    assert trace["cut"]["gold-0"][1] == 199 and 80 < trace["cut"]["gold-0"][0] < 100
