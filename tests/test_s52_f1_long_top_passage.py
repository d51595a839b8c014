"""A top-ranked passage longer than the prompt budget is cut token-wise, the same for every method (s51 LOW-1).

The budget rule dropped the lowest-ranked passages until the block fit, so a top passage that alone did not fit dropped
every passage and every method answered closed-book: below (``max_length=400``, 32 generation tokens, passage lengths
[796, 149, 138, 167, 130] tokens), all seven RAG methods showed no passage, their prompts the 45-token closed-book one.
Now the top passage is cut from its end to the longest head that fits (as the Tok-RAG authors' WikiText script cuts the
passages from their end), the others are dropped, and every method shows that cut passage: traces ``passages``
``["gold-0"]``, ``dropped`` the four others, ``cut`` ``{"gold-0": [tokens kept, tokens]}``. Real SmolLM2 tokens.
"""

from __future__ import annotations

import copy
import logging

import pytest
from lm_eval.api.instance import Instance
from test_model_smollm2 import make_docs

from tokrag_model.base import WindowContext
from tokrag_model.methods import load
from tokrag_model.prompt import CUT_KEY, PromptBuilder

METHODS = ("rag-standard", "tokrag", "rag-cad", "rag-adacad", "rag-selfrag-filter", "rag-replug", "rag-ensemble-entropy")
EXTRA = {"rag-selfrag-filter": {"relevance_threshold": 0.0}}  # the filter keeps every passage the budget leaves it
DROPPED = ["dpr-0", "dpr-1", "dpr-2", "dpr-3"]
TEMPLATE = "[Reference]: {title}\n{text}\n"  # the default passage_template


@pytest.fixture(scope="module")
def doc(data_dir):
    d = make_docs(data_dir, n=1, n_distractors=4)[0]
    d["ctxs"][0]["text"] = " ".join([d["ctxs"][0]["text"]] * 4)  # 796 tokens: longer alone than the budget
    return d


def _chat(lm, doc):
    return lm.apply_chat_template([{"role": "user", "content": f"Question: {doc['question']}?\nAnswer:"}])


def _rule(lm, doc):
    _, _, budget = lm._gen_settings({"until": ["\n"], "max_gen_toks": 32}, "<|im_end|>")
    return lm.make_rule(doc, _chat(lm, doc), budget) + (budget,)


def test_every_method_shows_the_top_passage_cut_to_the_budget(backbone, doc):
    tok = backbone.tokenizer
    assert [len(tok.encode(c["text"])) for c in doc["ctxs"]] == [796, 149, 138, 167, 130]
    rows = {}
    for name in METHODS:
        lm = load(name).with_backbone(backbone, device="cpu", max_length=400, **EXTRA.get(name, {}))
        rule, trace, budget = _rule(lm, doc)
        assert budget == 368
        assert (trace["passages"], trace["dropped"], trace["cut"]) == (["gold-0"], DROPPED, {"gold-0": [311, 796]}), name
        assert trace.get("closed_book") in (None, False), name
        rows[name] = rule.rows()
    std = rows["rag-standard"][0]
    assert len(std) == 368  # the cut fills the budget
    for name in METHODS:  # every method's RAG branch is rag-standard's prompt; the two-branch ones add the pure one (45)
        assert rows[name][0] == std, name
        assert [len(r) for r in rows[name][1:]] == ([45] if name in ("tokrag", "rag-cad", "rag-adacad") else []), name
    # the prompt is the passage's first 311 tokens (its text tokenised alone), and 312 would not fit
    lm = load("rag-standard").with_backbone(backbone, device="cpu", max_length=400)
    ctx, top = _chat(lm, doc), doc["ctxs"][0]
    ends = [e for _, e in tok(top["text"], add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]
    pb = PromptBuilder(tok, TEMPLATE)
    head = pb.rag([dict(top, text=top["text"][:ends[310]])], ctx, None)
    assert head.ids == std and head.kept == ["gold-0"]
    assert len(pb.rag([dict(top, text=top["text"][:ends[311]])], ctx, None).ids) > 368
    assert tok.decode(std[head.span[0]:head.span[1]]) == pb.block([dict(top, text=top["text"][:ends[310]])])
    enc = lm.encode_rag(doc, ctx, 368)
    assert enc.span == head.span and enc.shown[0][CUT_KEY] == [311, 796] and enc.shown[0]["docid"] == "gold-0"
    assert doc["ctxs"][0]["text"].count(" ") > enc.shown[0]["text"].count(" ")  # the doc's passage is left whole


def test_a_top_passage_that_fits_whole_is_kept_as_before(backbone, doc):
    """The cut only where no whole passage fits: with room for the 796 tokens, the whole-passage rule is unchanged."""
    lm = load("rag-standard").with_backbone(backbone, device="cpu", max_length=1000)
    _, trace, _ = _rule(lm, doc)
    assert (trace["passages"], trace["dropped"], "cut" in trace) == (["gold-0"], DROPPED, False)


def test_the_warning_names_the_cut_and_the_dropped_ranks(backbone, doc, caplog):
    lm = load("rag-standard").with_backbone(backbone, device="cpu", max_length=400)
    ctx = _chat(lm, doc)
    reqs = [Instance("generate_until", doc, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
            for _ in range(2)]
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.generate_until(reqs, disable_tqdm=True)
    kept = reqs[0].args[-1]["tokrag_trace"]["cut"]["gold-0"]
    assert kept == [342, 796]  # a budget of 399 tokens (one generated): 31 more than at 368
    assert [r.getMessage() for r in caplog.records] == [
        "rag-standard: 8 passage(s) dropped and 2 cut from 2 prompt(s) to fit max_length=400 (dropped whole, "
        "lowest-ranked first, where the passages ranked above left no room; ranks dropped (prompts): 2 (2), 3 (2), "
        "4 (2), 5 (2); cut token-wise from its end where the top passage alone was longer than the room the question "
        "left: rank 1 (2), 342 of its 796 tokens kept; the trace's 'passages' lists those shown and 'cut' [tokens "
        "kept, tokens] of a cut one; answer_recall/gold_at_k still count them): raise max_length"]


def test_no_room_for_a_token_of_the_top_passage_is_closed_book_and_says_so(backbone, doc, caplog):
    lm = load("rag-replug").with_backbone(backbone, device="cpu", max_passage_tokens=5)  # not even '[Reference]: ...'
    rule, trace, _ = _rule(lm, doc)
    assert (trace["passages"], trace["dropped"], trace["closed_book"]) == ([], ["gold-0"] + DROPPED, True)
    assert "cut" not in trace and len(rule.rows()) == 1
    std = load("rag-standard").with_backbone(backbone, device="cpu", max_passage_tokens=5)
    req = Instance("generate_until", doc, (_chat(std, doc), {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        std.generate_until([req], disable_tqdm=True)
    assert [r.getMessage() for r in caplog.records] == [
        "rag-standard: 5 passage(s) dropped from 1 prompt(s) to fit max_length=8192 and max_passage_tokens=5 (dropped "
        "whole, lowest-ranked first, where the passages ranked above left no room, and every passage of 1 prompt(s) "
        "with no room for even the first token of the top passage (answered closed-book); ranks dropped (prompts): "
        "1 (1), 2 (1), 3 (1), 4 (1), 5 (1); the trace's 'passages' lists those shown; answer_recall/gold_at_k still "
        "count them): raise max_passage_tokens or max_length"]


def test_a_later_rolling_window_cuts_the_top_passage_by_the_same_rule(backbone, doc):
    lm = load("rag-standard").with_backbone(backbone, device="cpu")
    ids = backbone.tokenizer.encode(" and the rest of the text that the window scores", add_special_tokens=False)
    window = WindowContext(backbone.tokenizer.decode(ids), ids)
    budget = len(ids) + 300
    enc = lm.encode_rag(copy.deepcopy(doc), window, budget)
    (kept,) = enc.cut.values()
    assert (enc.kept, enc.dropped, enc.dropped_ranks, enc.cut_here) == (["gold-0"], DROPPED, [2, 3, 4, 5], True)
    assert len(enc.ids) <= budget and enc.ids[enc.span[1]:] == ids and enc.span[0] == 0
    assert 250 < kept[0] < 300 and kept[1] == 796
    assert enc.ids[:enc.span[1]] == lm.prompts.encode_bare(lm.prompts.block(enc.shown))
    top = doc["ctxs"][0]
    ends = [e for _, e in backbone.tokenizer(top["text"], add_special_tokens=False,
                                             return_offsets_mapping=True)["offset_mapping"]]
    assert enc.shown[0]["text"] == top["text"][:ends[kept[0] - 1]]  # the first kept[0] tokens, and one more won't fit
    assert len(lm.prompts.encode_bare(lm.prompts.block([dict(top, text=top["text"][:ends[kept[0]]])]))) + len(ids) > budget
