"""``rag-replug replug_mode=answer_vote`` and ``rag-selfrag-filter selection=rank`` judge each generation by its first
non-empty line, the answer the short-answer tasks score; ``eli5_bm25_wiki`` scores the whole generation, where
three different answers opening with "Good question!" were one vote. Both modes are refused on such a task at the
first ``generate_until``, before any decoding (the model load is not checked here: :mod:`tasks.precheck`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from lm_eval.api.instance import Instance

from retrieval.errors import ConfigError
from tasks.longform import scores_whole_generation
from tokrag_model.methods.replug import ReplugLM
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM


@pytest.fixture(scope="module")
def manager():
    import tasks
    from lm_eval.tasks import TaskManager

    tasks.register_task_path()
    return TaskManager()  # kept alive: scores_whole_generation reads the last manager's index


def _req(task: str) -> Instance:
    doc = {"qid": "q", "question": "Why is the sky blue?", "answers": ["Scattering."], "ctxs": []}
    return Instance("generate_until", doc, ("Question: Why is the sky blue?\nAnswer:", {"until": ["Question:"]}), 0,
                    metadata=(task, 0, 1))


def test_the_long_form_tasks_are_known(manager):
    assert scores_whole_generation("eli5_bm25_wiki") is True
    assert not scores_whole_generation("wow_bm25_wiki")  # one reply: its first non-empty line is scored
    assert not scores_whole_generation("nq_oracle_bm25") and not scores_whole_generation("no_such_task")
    assert not scores_whole_generation(None)


@pytest.mark.parametrize("cls, cfg, setting", [
    (ReplugLM, {"replug_mode": "answer_vote"}, "replug_mode=answer_vote"),
    (SelfRAGFilterLM, {"selection": "rank"}, "selection=rank"),
])
def test_first_line_votes_are_refused_on_long_form_tasks(manager, cls, cfg, setting):
    lm = SimpleNamespace(resolved_config=cfg, METHOD=cls.METHOD)  # refused before the model is used
    with pytest.raises(ConfigError, match=rf"^--model {cls.METHOD}: {setting} judges each generation by its first "
                                          rf"non-empty line, but task 'eli5_bm25_wiki' scores the whole generation "
                                          rf"\(long-form, tasks/longform.py\); run that task without {setting}$"):
        cls.generate_until(lm, [_req("nq_oracle_bm25"), _req("eli5_bm25_wiki")])
