"""rag-selfrag-filter made readable: top-m selection, kept rate and the critic's AUC against gold passages,
by hand on toy ratios, then with the real SmolLM2 critic (tests/test_model_smollm2.py's docs and goldens)."""

from __future__ import annotations

import pytest
from test_model_smollm2 import GOLDEN_CRITIC, docs, gen_requests  # noqa: F401  (docs: a fixture; backbone: tests/conftest.py)

from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM, critic_auc, filter_by_relevance, top_m_by_relevance


def test_top_m_keeps_the_m_largest_ratios_in_rank_order():
    r = [0.30, 0.50, 0.20, 0.45, 0.10]
    assert top_m_by_relevance(r, 2) == [1, 3]  # .50 and .45, listed in rank order
    assert top_m_by_relevance(r, 1) == [1]
    assert top_m_by_relevance(r, 9) == [0, 1, 2, 3, 4]  # fewer passages than m: all
    assert top_m_by_relevance([0.4, 0.4, 0.4], 2) == [0, 1]  # ties: the better-ranked passage
    assert top_m_by_relevance([], 2) == []
    # the threshold rule keeps none of these (all r < .5 except one): top-m never answers closed-book
    assert filter_by_relevance(r, 0.5) == [1]


def test_critic_auc_by_hand():
    # gold r = {.30, .50}, other r = {.50, .20}: pairs (.30>.50: 0) (.30>.20: 1) (.50=.50: ½) (.50>.20: 1) -> 2.5/4
    assert critic_auc([0.30, 0.50, 0.20, 0.50], [True, False, False, True]) == pytest.approx(0.625)
    assert critic_auc([0.9, 0.1, 0.2], [True, False, False]) == 1.0  # the gold passage ranked first
    assert critic_auc([0.1, 0.9, 0.2], [True, False, False]) == 0.0  # ranked last
    assert critic_auc([0.1, 0.9], [False, False]) is None  # one class only
    assert critic_auc([0.1, 0.9], [True, True]) is None


def test_selection_arguments_are_validated_before_any_model_is_loaded():
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"top_m=0 is invalid: expected an integer >= 1"):
        SelfRAGFilterLM(top_m=0)
    with pytest.raises(ConfigError, match=r"selection='top2' is invalid: expected one of \['threshold', 'top_m', 'rank'\]"):
        SelfRAGFilterLM(selection="top2")


def test_an_argument_of_the_other_selection_is_refused_not_ignored():
    """``top_m=2`` alone used to run the threshold filter unchanged (the v2 spec's top-2 row was the filter row)."""
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^--model rag-selfrag-filter: model argument top_m=2 has no effect with "
                                          r"selection='threshold'; add selection=top_m to use it, or drop top_m$"):
        SelfRAGFilterLM(top_m=2)
    with pytest.raises(ConfigError, match=r"relevance_threshold=0.3 has no effect with selection='top_m'; "
                                          r"add selection=threshold to use it, or drop relevance_threshold$"):
        SelfRAGFilterLM(selection="top_m", relevance_threshold=0.3)


@pytest.mark.slow
def test_kept_rate_critic_auc_and_top_m_with_the_real_critic(backbone, docs, smollm2_standard):  # noqa: F811
    gold_docs = [{**d, "gold_docids": [f"gold-{i}"]} for i, d in enumerate(docs)]
    lm = SelfRAGFilterLM.with_backbone(backbone)
    reqs = gen_requests(backbone.tokenizer, gold_docs)
    lm.generate_until(reqs, disable_tqdm=True)
    traces = [r.args[-1]["tokrag_trace"] for r in reqs]
    # the 135M critic gives every passage r < .5 (GOLDEN_CRITIC): nothing kept (the audit's finding)
    assert all(max(c.values()) < 0.5 for c in GOLDEN_CRITIC)
    assert [(t["selection"], t["kept_rate"], t["closed_book"]) for t in traces] == [("threshold", 0.0, True)] * 5
    # AUC 1 where the gold passage out-scores the distractor (questions 0, 3, 4), 0 where it does not
    assert [t["critic_auc"] for t in traces] == [1.0, 0.0, 0.0, 1.0, 1.0]
    # without gold ids (the docs of test_model_smollm2) the AUC is null
    plain = gen_requests(backbone.tokenizer, docs[:1])
    lm.generate_until(plain, disable_tqdm=True)
    assert plain[0].args[-1]["tokrag_trace"]["critic_auc"] is None

    # top-2 of 2 passages keeps both, in rank order: exactly rag-standard's prompt and output
    top2 = SelfRAGFilterLM.with_backbone(backbone, selection="top_m", top_m=2)
    reqs2 = gen_requests(backbone.tokenizer, gold_docs)
    out2 = top2.generate_until(reqs2, disable_tqdm=True)
    assert out2 == smollm2_standard["out"]  # rag-standard's generate_until on the same requests (tests/conftest.py)
    assert all(r.args[-1]["tokrag_trace"]["kept_rate"] == 1.0 for r in reqs2)
    # top-1 keeps the passage the critic prefers: the distractor for questions 1 and 2
    top1 = SelfRAGFilterLM.with_backbone(backbone, selection="top_m", top_m=1)
    reqs1 = gen_requests(backbone.tokenizer, gold_docs)
    top1.generate_until(reqs1, disable_tqdm=True)
    kept = [r.args[-1]["tokrag_trace"]["passages"] for r in reqs1]
    assert [k[0].split("-")[0] for k in kept] == ["gold", "dpr", "dpr", "gold", "gold"]
    assert all(r.args[-1]["tokrag_trace"]["kept_rate"] == 0.5 for r in reqs1)


@pytest.mark.slow
def test_a_docs_critic_ratios_do_not_depend_on_what_the_process_judged_before(backbone, docs):  # noqa: F811
    """A doc's ratios are the same in a fresh model and after another doc with one of its passages was judged: the
    critic cache is keyed on the whole passage list. Keyed per passage, the shared passage kept the ratio of the
    other doc's batch, whose prompts share a shorter prefix (the two passages here share their title), and differed
    in its last bits, which the trace records and a threshold can flip."""
    d = docs[0]
    shared = {"docid": "p-shared", "title": "Paris", "text": "Paris is the capital and largest city of France."}
    same_title = {"docid": "p-title", "title": "Paris", "text": "Paris hosted the Summer Olympics in 1900 and 1924."}
    other = {"docid": "p-other", "title": "Berlin", "text": "Berlin is the capital of Germany."}
    before = {**d, "ctxs": [other, shared]}  # judged together, the prompts' shared prefix ends before the title
    doc = {**d, "ctxs": [shared, same_title]}  # ... here it runs into "Paris"
    fresh = SelfRAGFilterLM.with_backbone(backbone)
    _, alone = fresh.relevance(doc, "")
    warm = SelfRAGFilterLM.with_backbone(backbone)
    _, r_before = warm.relevance(before, "")
    _, after = warm.relevance(doc, "")
    assert after == alone  # exact floats
    assert len(alone) == 2 and all(0.0 <= r <= 1.0 for r in alone)
    assert warm.relevance(doc, "")[1] == alone and warm.relevance(before, "")[1] == r_before  # cache hits, same values
