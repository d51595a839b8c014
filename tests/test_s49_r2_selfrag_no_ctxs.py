"""rag-selfrag-filter on a language-modelling task whose docs carry no passages (s49 r2, review of a80a23c).

lm-eval's own ``wikitext`` (``loglikelihood_rolling``, docs ``{page}``) has no ``ctxs``: the filter refused it with
get_ctxs's DataError ("needs retrieved passages in doc['ctxs'] ... use a retrieval task ..., or --model rag-none").
Since a80a23c's question check ran first, it was told instead that the doc "has no 'question' field ... record in each
doc the query its passages were retrieved with": a fix that leads to the passages refusal next. The passages refusal
comes first again, still before any forward pass. SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import re

import pytest
from lm_eval.api.instance import Instance

from retrieval.errors import ConfigError, DataError
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

TEXT = "The river runs to the sea. Mountains rise above the clouds in the north. A small town sits beside the lake."
P0 = {"docid": "d0", "title": "River", "text": "The river runs to the sea.", "rank": 1}


# the example task fits the request type (s49 f6): a language-modelling one for a rolling request, both kinds for a
# loglikelihood one (a multiple-choice QA task sends those too; s49 m2)
LM = ("a language-modelling retrieval task (for instance wiki_lm_bm25, or wikitext103_bm25_wiki for WikiText-103, from "
      "tasks/)")
BOTH = "a retrieval task from tasks/ (a QA one such as nq_open_bm25, or a language-modelling one such as wiki_lm_bm25)"


def no_passages(keys: str, use: str) -> str:
    return (f"--model rag-selfrag-filter needs retrieved passages in doc['ctxs'], but this task's docs have none (doc "
            f"keys: {keys}); use {use}, or --model rag-none for closed-book")


@pytest.mark.parametrize("kind, doc, args, keys, use", [
    ("loglikelihood_rolling", {"page": TEXT}, (TEXT,), "['page']", LM),  # lm-eval's wikitext
    ("loglikelihood", {"qid": "p0"}, ("", TEXT), "['qid']", BOTH),  # an empty context
])
def test_a_doc_without_passages_is_refused_for_its_passages_not_its_question(backbone, kind, doc, args, keys, use):
    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu")
    req = Instance(kind, doc, args, 0, metadata=("wikitext", 0, 1))
    with pytest.raises(DataError, match=f"^{re.escape(no_passages(keys, use))}$"):
        getattr(lm, kind)([req], disable_tqdm=True)
    assert lm.stats["forward_passes"] == 0
    # with passages and no question: still a80a23c's refusal, naming query_field
    req = Instance(kind, {**doc, "ctxs": [P0]}, args, 0, metadata=("wikitext", 0, 1))
    with pytest.raises(ConfigError, match=r"the critic needs a question, but a language-modelling doc \(task "
                                          r"'wikitext', doc_id 0.*has no 'question' field"):
        getattr(lm, kind)([req], disable_tqdm=True)
    assert lm.stats["forward_passes"] == 0
