"""The per-question page tags passages by the rules of the metrics beside them (tasks.utils.process_results_qa):
"gold" as gold_at_k (only the counterfactual suffix is removed from a docid: bring-your-own ids may hold '#'), and
"has answer" as answer_recall (DPR has_answer), not the answer_match rule of the model's answer."""
import pytest

from leaderboards.page import _passages_html
from tasks.utils import process_results_qa

GOLD = '<span class="tag">gold</span>'
HAS = '<span class="tag">has answer</span>'


def test_gold_tag_follows_gold_at_k_for_ids_with_hash():
    doc = {"answers": ["Paris"], "gold_docids": ["enwiki#Paris#p3"],
           "ctxs": [{"docid": "enwiki#Paris#p3", "title": "Paris", "text": "Paris is the capital of France.",
                     "source": "retrieved"},
                    {"docid": "enwiki#Paris#p4", "title": "Paris", "text": "It lies on the Seine.", "source": "retrieved"}]}
    assert process_results_qa(doc, ["Paris"])["gold_at_k"] == 1.0
    html = _passages_html(doc)
    assert html.count(GOLD) == 1  # the gold id, not its sibling "enwiki#Paris#p4"
    assert f'<li class="gold">{GOLD}{HAS}<code>enwiki#Paris#p3</code>' in html
    # a sibling id alone is not gold for the metric, nor for the page
    sib = dict(doc, ctxs=doc["ctxs"][1:])
    assert process_results_qa(sib, ["Paris"])["gold_at_k"] == 0.0 and GOLD not in _passages_html(sib)


CF = '<span class="tag">counterfactual</span>'


def test_counterfactual_gold_passage_is_tagged_gold_and_counterfactual():
    doc = {"answers": ["Lyon"], "gold_docids": ["d1"],
           "ctxs": [{"docid": "d1#cf", "title": "T", "text": "Lyon is the capital.", "source": "counterfactual"}]}
    assert process_results_qa(doc, ["x"])["gold_at_k"] == 1.0
    html = _passages_html(doc)
    assert f'<li class="counterfactual">{GOLD}{CF}{HAS}<code>d1#cf</code>' in html


def test_only_the_swapped_gold_passage_is_tagged_gold():
    # nq_oracle_bm25_counterfactual_all swaps the gold passage and the other answer-bearing ones: all are
    # "counterfactual", and only the gold one (docid less '#cf' in gold_docids, as gold_at_k) is "gold"
    doc = {"answers": ["Lithium"], "gold_docids": ["g1"], "counterfactual_answer": "Boron",
           "ctxs": [{"docid": "wiki-Lithium#cf", "title": "Boron", "text": "Boron metal.", "source": "counterfactual"},
                    {"docid": "g1#cf", "title": "T", "text": "Boron is light.", "source": "counterfactual"},
                    {"docid": "r7", "title": "U", "text": "Lithium is light.", "source": "retrieved"}]}
    assert process_results_qa(doc, ["x"])["gold_at_k"] == 1.0
    html = _passages_html(doc)
    assert html.count(GOLD) == 1 and html.count(CF) == 2
    assert f'<li class="counterfactual">{CF}<code>wiki-Lithium#cf</code>' in html
    assert f'<li class="counterfactual">{GOLD}{CF}<code>g1#cf</code>' in html
    assert f'<li class="">{HAS}<code>r7</code>' in html


@pytest.mark.parametrize("text,answers,recall", [
    ("The U.S. is large.", ["us"], 0.0),                     # answer_match 1 (SQuAD drops the dots), DPR 0
    ("Destiny’s Child sang.", ["Destiny's Child"], 0.0),     # answer_match 1 (Unicode punctuation dropped), DPR 0
    ("a Kansas City-based firm", ["Kansas City"], 1.0),      # answer_match 0 ("citybased"), DPR 1
    ("the emperor's men", ["emperor"], 1.0),                 # answer_match 0 ("emperors"), DPR 1
    ("Paris is the capital of France.", ["Paris"], 1.0),
])
def test_has_answer_tag_agrees_with_answer_recall(text, answers, recall):
    doc = {"answers": answers, "ctxs": [{"docid": "d1", "title": "T", "text": text, "source": "retrieved"}]}
    assert process_results_qa(doc, ["x"])["answer_recall"] == recall
    assert (HAS in _passages_html(doc)) == bool(recall)
