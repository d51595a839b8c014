"""``lm_eval.simple_evaluate(model=<rag-selfrag-filter object>)`` is judged by the object's own ``query_field``
(s49 r3, after e5e8acb).

e5e8acb refuses ``--model rag-selfrag-filter`` on a rolling task whose docs lack ``query_field`` before the load, from
the model *name* and ``model_args``. ``simple_evaluate`` called from Python with a built model object ran that check
too, as the object's ``METHOD`` with ``model_args`` None: an object built with ``query_field='text'`` was refused on
toy_lm (docs ``{qid, text, ctxs}``) for "no 'question' field (model argument query_field='question'; ...)" although
the object reads ``text`` and ran before e5e8acb. An object is already loaded and refuses such a doc itself, before
any forward pass, so the pre-load check is left to named models.
"""

from __future__ import annotations

import re

import lm_eval
import pytest
from lm_eval.tasks import TaskManager

from retrieval.errors import ConfigError
from tests.leaderboard_helpers import FIX
from tests.test_s49_f4_selfrag_lm_precheck import REFUSAL
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

PPL = 628.4428  # word_perplexity of toy_lm's doc 0 (limit 1) with the critic asked its text, SmolLM2-135M-Instruct


def _run(lm):
    tm = TaskManager(include_path=str(FIX / "tasks"), include_defaults=False)
    return lm_eval.simple_evaluate(model=lm, tasks=["toy_lm"], limit=1, task_manager=tm)


def test_an_object_reading_text_runs_toy_lm(backbone, monkeypatch):
    """The critic is asked doc 0's ``text`` (toy_lm's first paragraph) and the word perplexity is that run's
    (SmolLM2-135M-Instruct, CPU, float32: 628.4428, rel 1e-3 across CPUs); any finite perplexity passed before (s49 m2,
    reviewer r4)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu", query_field="text", k=1)
    asked, question_of = [], lm.question_of

    def ask(*a, **k):
        asked.append(question_of(*a, **k))
        return asked[-1]

    lm.question_of = ask
    out = _run(lm)  # the old code: ConfigError "... has no 'question' field (model argument query_field='question'"
    assert asked == ["The river runs to the sea."] * 2  # toy_lm doc 0's text: the up-front check, then the critic
    assert out["results"]["toy_lm"]["word_perplexity,none"] == pytest.approx(PPL, rel=1e-3)
    assert lm.stats["forward_passes"] > 0


def test_an_object_without_a_query_field_is_still_refused_by_itself(backbone, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu", k=1)  # query_field='question': toy_lm has none
    with pytest.raises(ConfigError, match=f"^{re.escape(REFUSAL)}$"):
        _run(lm)
    assert lm.stats["forward_passes"] == 0
