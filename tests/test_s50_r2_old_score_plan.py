"""A method written to the 'Adding a method' contract before ``score_plan`` took the request type (s50 r2).

4384fce passed ``kind`` to every ``score_plan`` (``score_many``, ``score``) and kept only ``make_rule``'s old
three-argument form working: a user's ``score_plan(doc, context, cont, budget)`` failed every ``loglikelihood`` /
``loglikelihood_rolling`` request with "TypeError: MyLM.score_plan() takes 5 positional arguments but 6 were given".
Such a method scores again; a method that takes ``kind`` still gets it. SmolLM2-135M-Instruct.
"""

from __future__ import annotations

from typing import Any

import pytest
from lm_eval.api.instance import Instance

from retrieval.errors import DataError
from tokrag_model.base import RAGMethodLM, ScorePlan, SingleBranch, budget_check
from tokrag_model.methods.standard import RagStandardLM

DOC = {"qid": "q0", "question": "where does the river run?",
       "ctxs": [{"docid": "d0", "text": "The river runs to the sea.", "rank": 1}]}
CTX = "Question: where does the river run?\nAnswer:"


class OldContractLM(RAGMethodLM):
    """rag-standard's prompt, written against the contract's old signatures."""

    METHOD = "rag-standard"

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        enc = self.encode_rag(doc, context, budget)
        return SingleBranch(enc.ids), {"passages": enc.kept}

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int) -> ScorePlan:
        enc = self.encode_rag(doc, context, budget_check(cont, budget, self.METHOD))

        def finish(forced: list) -> tuple[float, bool, dict]:
            ll, greedy = self._sum_ll(forced[0].logprobs, cont)
            return ll, greedy, {"passages": enc.kept}

        return ScorePlan([enc.ids], cont, finish)


def _ll(lm: RAGMethodLM, doc: dict) -> list:
    return lm.loglikelihood([Instance("loglikelihood", doc, (CTX, " the sea"), 0)], disable_tqdm=True)


def test_an_old_score_plan_scores_as_rag_standard(backbone):
    (want, _), = _ll(RagStandardLM.with_backbone(backbone, device="cpu"), DOC)
    lm = OldContractLM.with_backbone(backbone, device="cpu")
    (got, greedy), = _ll(lm, DOC)  # the old code: TypeError (5 positional arguments but 6 were given)
    assert got == pytest.approx(want, rel=1e-6) and want == pytest.approx(-4.1126, rel=1e-3) and greedy is False
    assert lm.score(DOC, CTX, " the sea", lm.max_length)[0] == pytest.approx(want, rel=1e-6)
    assert lm._plan_kind("loglikelihood") == {}
    assert RagStandardLM.with_backbone(backbone, device="cpu")._plan_kind("loglikelihood") == {"kind": "loglikelihood"}


def test_an_old_score_plan_refuses_a_doc_without_passages_in_one_line(backbone):
    lm = OldContractLM.with_backbone(backbone, device="cpu")
    with pytest.raises(DataError, match=r"needs retrieved passages in doc\[.ctxs.\], but this task.s docs have none") as exc:
        _ll(lm, {"qid": "q1", "question": "where?"})
    assert "\n" not in str(exc.value)
