"""What a tokrag model records about the chat template, and the Self-RAG critic's question of a rolling window.

* A ``loglikelihood_rolling`` task run with ``apply_chat_template``: lm-eval renders the task's chat (it calls the
  model's ``apply_chat_template``) and builds the request from the document text alone (lm-eval 0.4.13
  ``ConfigurableTask.construct_requests``: ``arguments = (doc_to_target(doc),)``), so the chat never reaches the model.
  The model recorded ``tokrag_chat_template_applied: true`` (and, for named templates, the selected template's hash as
  the one applied) all the same. It now records what ran: false when every task is rolling, and per task
  ``tokrag_chat_template_tasks``.
* ``rag-selfrag-filter``'s critic question of a later rolling window (a doc without a question field: the critic
  fell back to the context) lost the first passages marker of the window's own text (``without_slot``), while the
  window's ids kept it. Such a doc is now refused (the context of a rolling window is no question:
  ``tests/test_s49_f3_selfrag_lm_question.py``); a text holding the marker is judged against its doc's question.
* Outside lm-eval's ``evaluate`` a context's one marker is where the passages go (documented, kept: the context may
  be a chat another model object rendered).

SmolLM2-135M-Instruct; the toy tasks of ``tests/leaderboard_fixtures/tasks`` (``toy_lm`` is rolling, ``toy_qa``
generates).
"""

from __future__ import annotations

import copy
import hashlib

import pytest
from lm_eval.api.instance import Instance

from tests.leaderboard_helpers import FIX
from tokrag_model.prompt import PASSAGES_SLOT

pytestmark = pytest.mark.slow

P1 = {"docid": "p1", "title": "Zorblat", "text": "Zorblat is the capital of Quenland.", "rank": 1, "score": 12.0}


def _lm(backbone, method: str = "rag-standard", **kw):
    from tokrag_model.methods import MODELS

    return MODELS[method].with_backbone(backbone, **kw)


def _evaluate(lm, tasks: list[str], chat) -> dict:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(FIX / "tasks"), include_defaults=False)
    return simple_evaluate(model=lm, tasks=tasks, task_manager=tm, limit=1, apply_chat_template=chat,
                           bootstrap_iters=0, log_samples=True)


def test_a_rolling_task_under_the_chat_template_records_that_no_chat_reached_the_model(backbone) -> None:
    lm = _lm(backbone)
    rendered = []
    hook = lm.apply_chat_template

    def spy(history, add_generation_prompt=True):
        rendered.append(history)
        return hook(history, add_generation_prompt)

    lm.apply_chat_template = spy
    res = _evaluate(lm, ["toy_lm"], True)
    (sample,) = res["samples"]["toy_lm"]
    assert rendered and sample["arguments"][0][0] == "The river runs to the sea."  # rendered, then dropped
    assert res["config"]["tokrag_chat_template_applied"] is False  # was True
    assert res["config"]["tokrag_chat_template_tasks"] == {"toy_lm": False}

    res = _evaluate(lm, ["toy_lm", "toy_qa"], True)  # one evaluation, both tasks
    assert res["config"]["tokrag_chat_template_applied"] is True
    assert res["config"]["tokrag_chat_template_tasks"] == {"toy_lm": False, "toy_qa": True}
    (qa,) = res["samples"]["toy_qa"]
    assert qa["arguments"][0][0].startswith("<|im_start|>system\n")  # the chat did reach toy_qa

    res = _evaluate(lm, ["toy_lm"], False)
    assert res["config"]["tokrag_chat_template_applied"] is False
    assert res["config"]["tokrag_chat_template_tasks"] is None


def test_the_named_template_hash_is_recorded_only_where_it_reached_a_task(backbone) -> None:
    """``--apply_chat_template rag`` over a tokenizer with named templates: the resolved config's
    ``chat_template_sha256`` was the ``rag`` template's for an evaluation of rolling tasks only, which applied none;
    it is now the tokenizer's (its default template's, as without the flag), and the ``rag`` one's once a task got
    the chat."""
    lm = _lm(backbone)
    default = backbone.tokenizer.chat_template
    rag = default.replace("You are a helpful AI assistant named SmolLM", "RAG-TEMPLATE-SYSTEM")
    lm.tokenizer = copy.copy(backbone.tokenizer)
    lm.tokenizer.chat_template = {"default": default, "rag": rag}

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    res = _evaluate(lm, ["toy_lm"], "rag")
    assert res["config"]["tokrag_chat_template_applied"] is False
    assert res["config"]["tokrag_resolved_config"]["chat_template_sha256"] == sha(default)  # was sha(rag)
    res = _evaluate(lm, ["toy_lm", "toy_qa"], "rag")
    assert res["config"]["tokrag_chat_template_tasks"] == {"toy_lm": False, "toy_qa": True}
    assert res["config"]["tokrag_resolved_config"]["chat_template_sha256"] == sha(rag)
    assert "RAG-TEMPLATE-SYSTEM" in res["samples"]["toy_qa"][0]["arguments"][0][0]  # the rag template rendered it


def test_the_named_template_the_selfrag_critic_rendered_is_recorded_on_rolling_tasks(backbone) -> None:
    """``rag-selfrag-filter`` renders its critic prompts with the evaluation's template whatever the task, so under
    ``--apply_chat_template rag`` the ``rag`` template reaches the model on a rolling task too (through the critic;
    the task's own chat is dropped): the resolved config's ``chat_template_sha256`` is the ``rag`` one's (863a5a5
    recorded the default's, as without the flag), while ``tokrag_chat_template_applied`` (the tasks' contexts) stays
    false. With ``critic_chat_template=false`` no template reaches the model: the default's hash, as before."""
    default = backbone.tokenizer.chat_template
    rag = default.replace("You are a helpful AI assistant named SmolLM", "RAG-TEMPLATE-SYSTEM")

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    for critic_chat, want in ((True, sha(rag)), (False, sha(default))):
        # toy_lm records no retrieval query: its one passage is the doc's own text, so that is the critic's question
        lm = _lm(backbone, "rag-selfrag-filter", critic_chat_template=critic_chat, query_field="text")
        lm.tokenizer = copy.copy(backbone.tokenizer)
        lm.tokenizer.chat_template = {"default": default, "rag": rag}
        critic = []
        prompts = lm._yes_no_prompts

        def spy(texts):
            prefix, suffixes = prompts(texts)
            critic.append(lm.tokenizer.decode(prefix + suffixes[0]))
            return prefix, suffixes

        lm._yes_no_prompts = spy
        res = _evaluate(lm, ["toy_lm"], "rag")
        assert len(critic) == 1 and ("RAG-TEMPLATE-SYSTEM" in critic[0]) is critic_chat  # the critic's prompt
        assert res["config"]["tokrag_chat_template_applied"] is False
        assert res["config"]["tokrag_chat_template_tasks"] == {"toy_lm": False}
        assert res["config"]["tokrag_resolved_config"]["chat_template_sha256"] == want  # was sha(default) for both
        assert lm.renders_own_chat() is critic_chat


def test_selfrag_critic_question_of_a_text_holding_the_marker_is_its_docs_question(backbone) -> None:
    """A scored text holding the marker inside its last window's context: every window is judged against the doc's
    question and the text is scored (the critic judged a doc without a question field against the window's context,
    which lost the marker; such a doc is now refused: ``tests/test_s49_f3_selfrag_lm_question.py``)."""
    from lm_eval import utils

    lm = _lm(backbone, "rag-selfrag-filter", max_length=64)
    text = "Zorblat is a city in Quenland. " * 12 + f"The marker {PASSAGES_SLOT} sits here. The end."
    questions = []
    critic = lm.critic_prompts

    def spy(ctxs, question):
        questions.append(question)
        return critic(ctxs, question)

    lm.critic_prompts = spy
    lm.start_evaluation(apply_chat_template=False)
    doc = {"qid": "w1", "question": "Where is Zorblat?", "ctxs": [P1]}
    (ll,) = lm.loglikelihood_rolling([Instance("loglikelihood_rolling", doc, (text,), 0)], disable_tqdm=True)
    windows = list(map(utils.make_disjoint_window, utils.get_rolling_token_windows(
        token_list=lm.prompts.encode(text), prefix_token=lm.rolling_prefix_token_id, max_seq_len=32, context_len=1)))
    assert PASSAGES_SLOT in lm.tokenizer.decode(windows[-1][0], skip_special_tokens=False) and ll < 0
    assert set(questions) == {"Where is Zorblat?"}


def test_outside_an_evaluation_a_contexts_one_marker_is_where_the_passages_go(backbone) -> None:
    """Documented behaviour, kept: a method called directly (no ``evaluate``) takes one marker as the slot (a chat
    another model object rendered holds it); after ``start_evaluation(apply_chat_template=False)`` it is refused."""
    from retrieval.errors import ConfigError

    lm = _lm(backbone)
    doc = {"qid": "q1", "ctxs": [P1]}
    ctx = f"Question: where {PASSAGES_SLOT}\nAnswer:"
    block = lm.prompts.block([P1])
    assert lm.plain_contexts is None
    assert lm.encode_rag(doc, ctx, 2000).text == f"Question: where {block}\nAnswer:"
    lm.start_evaluation(apply_chat_template=False)
    with pytest.raises(ConfigError, match="holds the passages marker"):
        lm.encode_rag(doc, ctx, 2000)
