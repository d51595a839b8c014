"""loglikelihood_rolling's first window: lm-eval's prefix token, then (RAG prompts) the passages block, then the text.

The first window's context used to be the prefix token decoded to text with the passages block put in front of
it: SmolLM2's RAG prompt was ``passages, <|im_start|>, text`` (a stray special token between passages and text)
and Gemma's ``<bos> passages <bos> text`` (two BOS), while the closed-book prompt was the prefix token alone."""

from __future__ import annotations

import pytest

from tokrag_model.methods import load

DOC = {"question": "Where is the Eiffel Tower?", "answers": ["Paris"],
       "ctxs": [{"docid": "d1", "title": "Paris", "text": "Paris is the capital of France.", "rank": 1,
                 "score": 2.0},
                {"docid": "d2", "title": "Rome", "text": "Rome is in Italy.", "rank": 2, "score": 1.0}]}
TEXT = "The Eiffel Tower is in Paris."

# SmolLM2-135M-Instruct: <|im_start|> (1, its tokenizer's BOS and lm-eval's prefix token), then
# "[Reference]: Paris\nParis is the capital of France.\n[Reference]: Rome\nRome is in Italy.\n"
GOLDEN_SMOLLM2_RAG = [1, 75, 23682, 7036, 7042, 198, 38634, 314, 260, 3575, 282, 4649, 30, 198, 75, 23682, 7036,
                      7268, 198, 46292, 314, 281, 7158, 30, 198]
GOLDEN_SMOLLM2_CONT = [504, 414, 46682, 18669, 314, 281, 7042, 30]  # "The Eiffel Tower is in Paris."


def first_window_prompts(lm, doc=DOC, text=TEXT) -> tuple[list[list[int]], list[int]]:
    """``(branch prompts, continuation ids)`` of the first window of ``text`` as ``lm`` scores it (its score_plan
    spied on inside loglikelihood_rolling)."""
    from lm_eval.api.instance import Instance

    plans = []
    real = lm.score_plan

    def spy(*a, **kw):
        plans.append(real(*a, **kw))
        return plans[-1]

    lm.score_plan = spy
    try:
        lm.loglikelihood_rolling([Instance("loglikelihood_rolling", doc, (text,), 0)], disable_tqdm=True)
    finally:
        del lm.score_plan
    return plans[0].prompts, plans[0].cont


@pytest.fixture(scope="module")
def methods(backbone):
    # keep every passage (the kept passages' prompt); REPLUG needs a temperature for a doc without scored_by
    args = {"rag-selfrag-filter": {"relevance_threshold": 0.0}, "rag-replug": {"replug_temperature": 1.0}}
    return {name: load(name).with_backbone(backbone, device="cpu", **args.get(name, {})) for name in
            ("rag-none", "rag-standard", "tokrag", "rag-replug", "rag-selfrag-filter", "rag-cad", "rag-adacad",
             "rag-ensemble-entropy")}


def test_smollm2_first_window_golden_ids(methods):
    prompts, cont = first_window_prompts(methods["rag-standard"])
    assert cont == GOLDEN_SMOLLM2_CONT
    assert prompts == [GOLDEN_SMOLLM2_RAG]
    (pure,), _ = first_window_prompts(methods["rag-none"])
    assert pure == [1]  # closed book: lm-eval's hf prefix token alone, unchanged


@pytest.mark.parametrize("name", ["tokrag", "rag-replug", "rag-selfrag-filter", "rag-cad", "rag-adacad",
                                  "rag-ensemble-entropy"])
def test_every_method_reading_passages_puts_the_prefix_token_first_once(methods, name):
    tok = methods[name].tokenizer
    block = [tok.encode("[Reference]: Paris\nParis is the capital of France.\n"),
             tok.encode("[Reference]: Rome\nRome is in Italy.\n")]
    both = GOLDEN_SMOLLM2_RAG
    prompts, cont = first_window_prompts(methods[name])
    assert cont == GOLDEN_SMOLLM2_CONT
    for p in prompts:
        assert p[0] == 1 and p.count(1) == 1, (name, p)  # one prefix token, at the start
    expected = {"tokrag": [both, [1]], "rag-cad": [both, [1]], "rag-adacad": [both, [1]], "rag-selfrag-filter": [both],
                "rag-replug": [[1] + block[0], [1] + block[1]], "rag-ensemble-entropy": [[1] + block[0], [1] + block[1]]}
    assert prompts == expected[name]


def test_tokrag_first_window_span_includes_the_prefix_token(methods):
    lm = methods["tokrag"]
    enc = lm.encode_rag(DOC, lm.first_window_context(), 4000)
    assert enc.ids == GOLDEN_SMOLLM2_RAG and enc.span == (0, len(GOLDEN_SMOLLM2_RAG))  # as a plain prompt's [0, n_R)


def test_later_windows_are_unchanged(methods):
    """Only the first window's context changed: a later window's context is the preceding text (no prefix token)."""
    lm = methods["rag-standard"]
    from lm_eval.api.instance import Instance

    contexts = []
    real = lm.score_plan

    def spy(doc, context, cont, budget):
        contexts.append(context)
        return real(doc, context, cont, budget)

    lm.score_plan = spy
    old = lm.max_length
    try:
        lm.max_length = 32  # 16-token windows
        lm.loglikelihood_rolling([Instance("loglikelihood_rolling", DOC, (TEXT * 4,), 0)], disable_tqdm=True)
    finally:
        del lm.score_plan
        lm.max_length = old
    assert len(contexts) > 1 and contexts[0] == lm.first_window_context()
    assert all(not c.startswith("<|im_start|>") for c in contexts[1:])


# Gemma 3 270M: <bos> (2) then the block; its tokenizer adds BOS to the scored text too, and lm-eval's hf scores that
# BOS after the prefix BOS (token_list = tok_encode(text) = [2, ...]): the continuation keeps it in every method, so
# all methods score the same tokens; the context has one BOS, at the start.
GOLDEN_GEMMA_RAG = [2, 236840, 9313, 9414, 9079, 107, 50429, 563, 506, 5279, 529, 7001, 236761, 107, 236840, 9313,
                    9414, 13706, 107, 97375, 563, 528, 11702, 236761, 107]
GOLDEN_GEMMA_CONT = [2, 818, 94648, 25822, 563, 528, 9079, 236761]


@pytest.mark.slow
def test_gemma_first_window_golden_ids(gemma):
    prompts, cont = first_window_prompts(load("rag-standard").with_backbone(gemma, device="cpu"))
    assert (prompts, cont) == ([GOLDEN_GEMMA_RAG], GOLDEN_GEMMA_CONT)
    assert first_window_prompts(load("rag-none").with_backbone(gemma, device="cpu")) == ([[2]], GOLDEN_GEMMA_CONT)
