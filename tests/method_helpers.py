"""Shared helpers of the per-method tests (tests/test_method_*.py): the two scores every method reports on
the real model, and its rule under a chat template."""

from __future__ import annotations

from typing import Any

ROLLING_TEXT = "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen."


def scores(lm: Any, doc: dict) -> tuple[float, float, Any]:
    """``(loglikelihood of the doc's first answer after its chat context, loglikelihood_rolling of
    ROLLING_TEXT, the rolling request)`` — the request carries the method's trace."""
    from lm_eval.api.instance import Instance
    from test_model_smollm2 import context_of

    (ll, _), = lm.loglikelihood([Instance("loglikelihood", doc, (context_of(lm.tokenizer, doc), " " + doc["answers"][0]), 0)],
                                disable_tqdm=True)
    roll = Instance("loglikelihood_rolling", doc, (ROLLING_TEXT,), 0)
    (rolling,) = lm.loglikelihood_rolling([roll], disable_tqdm=True)
    return ll, rolling, roll


def chat_rule(lm: Any) -> tuple[Any, dict]:
    """The method's ``(rule, trace)`` for tests/test_prompt_chat.py's doc under the chat template (system
    instruction + question, passages slot in the first user turn)."""
    from test_prompt_chat import DOC, QUESTION, SYSTEM

    ctx = lm.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}])
    return lm.make_rule(DOC, ctx, 2000)
