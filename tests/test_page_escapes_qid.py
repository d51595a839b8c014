"""The per-question pages escape a question's id: a bring-your-own qid is any JSON string (retrieval.io.json_id),
and ``<svg/onload=...>`` was written into the page's HTML as it was."""
from leaderboards.page import _question_page


def test_question_page_escapes_the_qid():
    doc = {"qid": "<svg/onload=alert(document.domain)>", "question": "who wrote hamlet?", "answers": ["Shakespeare"],
           "ctxs": []}
    samples = {"rag-standard": {0: {"doc": doc, "em": 1.0, "resps": [["Shakespeare"]]}},
               "rag-none": {0: {"doc": doc, "em": 0.0, "resps": [["Marlowe"]]}}}
    data = {"primary_metric": "em", "closed_book": "rag-none", "metrics": ["em"], "models": [], "spec": "s",
            "higher_is_better": {}, "specific_settings": {}, "method_args": {}}
    html = _question_page(None, data, None, "t", samples)
    assert "<svg" not in html
    assert "#0 &lt;svg/onload=alert(document.domain)&gt; &mdash; who wrote hamlet? &mdash;" in html
