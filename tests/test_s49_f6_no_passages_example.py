"""A doc without passages is refused with an example task that fits the request type (s49 f6). On a
language-modelling request (lm-eval's own ``wikitext``: ``loglikelihood_rolling``, docs ``{page}``) every method said
"use a retrieval task (for instance nq_open_bm25 from tasks/)", a QA task; it names wiki_lm_bm25 (and
wikitext103_bm25_wiki) there now, nq_open_bm25 still for ``generate_until``. A ``loglikelihood`` request comes from a
multiple-choice QA task (lm-eval's ``arc_easy``, ``mmlu``: one per choice) as often as from a language-modelling one
(``wiki_lm_bm25``), so its line names both (s49 m2: it named only the language-modelling task). One message
(:func:`tokrag_model.prompt.no_passages_message`) for every caller. SmolLM2-135M-Instruct."""

from __future__ import annotations

import re

import pytest
from lm_eval.api.instance import Instance

from retrieval.errors import DataError
from tokrag_model.methods.replug import ReplugLM
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM
from tokrag_model.methods.standard import RagStandardLM
from tokrag_model.methods.tokrag import TokRAGLM
from tokrag_model.prompt import get_ctxs

TEXT = "The river runs to the sea. Mountains rise above the clouds in the north."
LM = ("use a language-modelling retrieval task (for instance wiki_lm_bm25, or wikitext103_bm25_wiki for WikiText-103, "
      "from tasks/), or --model rag-none for closed-book")
QA = "use a retrieval task (for instance nq_open_bm25 from tasks/), or --model rag-none for closed-book"
BOTH = ("use a retrieval task from tasks/ (a QA one such as nq_open_bm25, or a language-modelling one such as "
        "wiki_lm_bm25), or --model rag-none for closed-book")
PAGE = "['page']"
CASES = [("loglikelihood_rolling", {"page": TEXT}, (TEXT,), PAGE, LM),  # lm-eval's wikitext
         ("loglikelihood", {"qid": "p0"}, ("The river", " runs to the sea."), "['qid']", BOTH),
         ("generate_until", {"question": "who?"}, ("Q: who?\nA:", {"until": ["\n"], "max_gen_toks": 4}), "['question']", QA)]


def refusal(method: str, keys: str, use: str) -> str:
    return (f"--model {method} needs retrieved passages in doc['ctxs'], but this task's docs have none (doc keys: "
            f"{keys}); {use}")


@pytest.mark.parametrize("cls, kw", [(RagStandardLM, {}), (TokRAGLM, {}), (ReplugLM, {}), (SelfRAGFilterLM, {})],
                         ids=["rag-standard", "tokrag", "rag-replug", "rag-selfrag-filter"])
def test_each_request_type_names_a_task_of_its_kind(backbone, cls, kw):
    lm = cls.with_backbone(backbone, device="cpu", **kw)
    for kind, doc, args, keys, use in CASES:  # in this order: a rolling call's kind does not leak into the next
        req = Instance(kind, doc, args, 0, metadata=("wikitext", 0, 1))
        with pytest.raises(DataError, match=f"^{re.escape(refusal(cls.METHOD, keys, use))}$"):
            getattr(lm, kind)([req], disable_tqdm=True)
    assert lm.stats["forward_passes"] == 0


def test_replug_answer_vote_and_get_ctxs_outside_a_call(backbone):
    lm = ReplugLM.with_backbone(backbone, device="cpu", replug_mode="answer_vote")
    kind, doc, args, keys, use = CASES[2]
    with pytest.raises(DataError, match=f"^{re.escape(refusal('rag-replug', keys, use))}$"):
        lm.generate_until([Instance(kind, doc, args, 0, metadata=("nq", 0, 1))], disable_tqdm=True)
    # get_ctxs called directly: the QA example without a kind (as before), the LM one for a rolling request
    with pytest.raises(DataError, match=f"^{re.escape(refusal('x', PAGE, QA))}$"):
        get_ctxs({"page": TEXT}, "x", None)
    with pytest.raises(DataError, match=f"^{re.escape(refusal('x', PAGE, LM))}$"):
        get_ctxs({"page": TEXT}, "x", None, "loglikelihood_rolling")


def test_a_multiple_choice_doc_without_passages_is_not_sent_to_a_language_modelling_task():
    """lm-eval's arc_easy (a ``loglikelihood`` request per choice) without passages: the line named only wiki_lm_bm25
    (reviewer r4); it names a QA retrieval task as well."""
    doc = {"question": "Which gas do plants absorb?", "choices": {"text": ["O2", "CO2"]}, "answerKey": "B"}
    keys = "['answerKey', 'choices', 'question']"
    with pytest.raises(DataError, match=f"^{re.escape(refusal('rag-standard', keys, BOTH))}$"):
        get_ctxs(doc, "rag-standard", None, "loglikelihood")
