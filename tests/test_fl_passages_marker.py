"""The passages marker (``PASSAGES_SLOT``, ``⟦tokrag:passages⟧``) in a task's own text (breaker b6 s47).

The model puts the marker at the start of a chat's first user turn (and after a rolling text's prefix token);
:func:`tokrag_model.prompt.fill_slot` takes the first marker of a context for it. A plain-prompt question holding the
marker got the passages inside the question (``tokrag``, ``rag-replug``, ...) and lost that text from the pure
branch; a ``--system_instruction`` holding it got the passages in the system turn while the model's slot stayed in
the user turn as literal text. Such a text is now refused in one line; ordinary prompts are unchanged (their token
ids are pinned by tests/test_prompt_chat.py and tests/test_model_smollm2.py).
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from retrieval.errors import ConfigError
from tokrag_model.prompt import PASSAGES_SLOT

pytestmark = pytest.mark.slow

SYSTEM = "Answer the question with a short answer.\n"
P1 = {"docid": "p1", "title": "Zorblat", "text": "Zorblat is the capital of Quenland.", "rank": 1, "score": 12.0}
P2 = {"docid": "p2", "title": "Quenland", "text": "Quenland is a country.", "rank": 2, "score": 9.0}
DOC = {"qid": "q2", "question": "population of zorblat", "answers": ["12345"], "ctxs": [P1, P2], "scored_by": "bm25"}
MARKED = f"Question: population of zorblat {PASSAGES_SLOT}\nAnswer:"  # a question holding the marker
PLAIN = "Question: population of zorblat\nAnswer:"


def _lm(backbone, method: str, **kw):
    from tokrag_model.methods import MODELS

    return MODELS[method].with_backbone(backbone, **kw)


def _one_line(err: pytest.ExceptionInfo, method: str) -> str:
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"--model {method}: ") and PASSAGES_SLOT in msg
    return msg


@pytest.mark.parametrize("method", ["rag-standard", "tokrag", "rag-replug", "rag-cad", "rag-none"])
def test_plain_question_holding_the_marker_is_refused(backbone, method) -> None:
    """A plain-prompt evaluation (start_evaluation without a chat template, as lm-eval's evaluate starts it): a
    question holding the marker is refused for generation and scoring, naming the doc and the text; the old code put
    the passages inside the question (the pure branch lost ' ⟦tokrag:passages⟧' from it)."""
    lm = _lm(backbone, method)
    lm.start_evaluation(apply_chat_template=False)
    with pytest.raises(ConfigError) as err:
        lm.generate_until([Instance("generate_until", DOC, (MARKED, {"until": ["\n"], "max_gen_toks": 4}), 0)])
    msg = _one_line(err, method)
    assert lm.stats["generated_tokens"] == 0
    with pytest.raises(ConfigError) as err:
        lm.make_rule(DOC, MARKED, 2000)  # the methods' prompts too (the doc named where the method has it)
    _one_line(err, method)
    assert "doc 'q2'" in msg and "population of zorblat " + PASSAGES_SLOT in msg and "remove it" in msg
    with pytest.raises(ConfigError) as err:
        lm.loglikelihood([Instance("loglikelihood", DOC, (MARKED, " 12345"), 0)])
    assert "doc 'q2'" in _one_line(err, method)


def test_plain_ordinary_prompts_unchanged(backbone) -> None:
    """Ordinary plain contexts in a plain-prompt evaluation: the block in front of the context (span from 0), the pure
    prompt the context alone; an empty context (the prefix token, then the model's own slot) and a rolling text
    are still scored."""
    lm = _lm(backbone, "tokrag")
    lm.start_evaluation(apply_chat_template=False)
    rag, pure = lm.encode_rag(DOC, PLAIN, 2000), lm.encode_pure(PLAIN, 2000)
    block = lm.prompts.block([P1, P2])
    assert rag.text == block + PLAIN and rag.span[0] == 0 and rag.ids == lm.prompts.encode(block + PLAIN)
    assert pure.text == PLAIN and pure.ids == lm.prompts.encode(PLAIN)
    (ll, _), = lm.loglikelihood([Instance("loglikelihood", DOC, ("", "Zorblat is a city."), 0)])
    roll, = lm.loglikelihood_rolling([Instance("loglikelihood_rolling", DOC, ("Zorblat is a city in Quenland.",), 0)])
    assert ll < 0 and roll < 0


def test_chat_system_instruction_holding_the_marker_is_refused(backbone) -> None:
    """--apply_chat_template with a --system_instruction holding the marker: refused when the chat is rendered (the
    old code rendered it, and the passages went into the system turn, the model's slot left as text in the user
    turn); a question holding it is refused likewise; an ordinary chat keeps the passages at the user turn's start."""
    lm = _lm(backbone, "rag-standard")
    lm.start_evaluation(apply_chat_template=True)
    system = f"Use the passages ({PASSAGES_SLOT}) if they help.\n\n{SYSTEM}"
    with pytest.raises(ConfigError) as err:
        lm.apply_chat_template([{"role": "system", "content": system}, {"role": "user", "content": PLAIN}])
    msg = _one_line(err, "rag-standard")
    assert "the chat's system turn: --system_instruction" in msg and "(" + PASSAGES_SLOT in msg
    with pytest.raises(ConfigError) as err:
        lm.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": MARKED}])
    assert "the chat's user turn" in _one_line(err, "rag-standard")

    ctx = lm.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": PLAIN}])
    head = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
    assert ctx == head + PASSAGES_SLOT + PLAIN + "<|im_end|>\n<|im_start|>assistant\n"
    assert lm.encode_rag(DOC, ctx, 2000).text == head + lm.prompts.block([P1, P2]) + ctx[len(head) + len(PASSAGES_SLOT):]
    assert lm.encode_pure(ctx, 2000).text == head + ctx[len(head) + len(PASSAGES_SLOT):]


def test_system_instruction_holding_the_marker_refused_through_lm_eval(backbone) -> None:
    """lm-eval's simple_evaluate(apply_chat_template=True, system_instruction=...) stops with the one line before any
    generation."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR

    lm = _lm(backbone, "rag-standard")
    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    with pytest.raises(ConfigError, match="the chat's system turn: --system_instruction"):
        simple_evaluate(model=lm, tasks=["nq_oracle_gold"], task_manager=tm, limit=1, apply_chat_template=True,
                        system_instruction=f"Use the passages ({PASSAGES_SLOT}) if they help.", bootstrap_iters=0,
                        gen_kwargs={"max_gen_toks": 4})
    assert lm.stats["generated_tokens"] == 0


def test_plain_contexts_is_reset_when_evaluate_returns_or_raises():
    """``plain_contexts`` (set by ``start_evaluation``) stayed True after a plain evaluation, so the model object then
    refused a chat context rendered by another model object, which holds that model's marker (reviewer r3, stop 47).
    The wrapped ``evaluate`` puts it back to None when it returns or raises."""
    from types import SimpleNamespace

    from tokrag_model._lmeval_hook import patch_evaluator

    class LM:
        plain_contexts = None

        def start_evaluation(self, apply_chat_template=False, use_cache=False):
            self.plain_contexts = not apply_chat_template

    seen = []

    def evaluate(lm, task_dict=None, apply_chat_template=False):
        seen.append(lm.plain_contexts)
        if task_dict == "boom":
            raise RuntimeError("boom")
        return "results"

    module = SimpleNamespace(simple_evaluate=lambda model=None: None, evaluate=evaluate)
    patch_evaluator(module)
    lm = LM()
    assert module.evaluate(lm, task_dict={}) == "results" and seen == [True] and lm.plain_contexts is None
    with pytest.raises(RuntimeError):
        module.evaluate(lm, task_dict="boom")
    assert seen == [True, True] and lm.plain_contexts is None
