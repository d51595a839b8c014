"""Generation kwargs that lm-eval runs with another meaning than written are refused in one line naming the key
(s57 h2; breaker b1's findings 5): ``--gen_kwargs temperature=nan`` passed the greedy check (``nan > 0`` is false,
so lm-eval's ``normalize_gen_kwargs`` reads it as greedy) and ran with exit 0, the results recording temperature nan;
``until=`` (an empty stop string: lm-eval's ``hf`` stops after the first token on it, a tokrag method ignored it),
``max_gen_toks=0``/``-1`` (no answer tokens) and ``max_gen_toks=1.5`` (truncated to 1) ran too. Checked on
``RAGMethodLM._gen_settings`` (the model's check, before any answer), with the stub of test_gen_kwargs_greedy_s46."""

from __future__ import annotations

import math

import pytest

from retrieval.errors import ConfigError
from tests.test_gen_kwargs_greedy_s46 import GREEDY, _stub

NAN, INF = float("nan"), float("inf")


def _refusal(extra: dict) -> str:
    with pytest.raises(ConfigError) as exc:
        _stub()._gen_settings({**GREEDY, **extra}, "<|im_end|>")
    msg = str(exc.value)
    assert "\n" not in msg, msg
    assert msg.startswith("--model rag-standard: the request's generation kwargs: "), msg
    assert msg.endswith(" (--gen_kwargs or the task's generation_kwargs)"), msg
    return msg


@pytest.mark.parametrize("key, value", [("temperature", NAN), ("temperature", -INF), ("top_p", INF),
                                        ("top_k", NAN), ("max_gen_toks", INF)])
def test_a_non_finite_number_is_refused_naming_the_key(key, value):
    msg = _refusal({key: value})
    assert f"generation kwargs: {key}={value!r} is not a finite number; give a number or drop {key} " in msg, msg


def test_temperature_nan_would_have_run_greedily_in_lm_eval():
    """Why it is refused: lm-eval reads it as greedy, and the results would record temperature nan."""
    from lm_eval.models.utils import normalize_gen_kwargs

    norm = normalize_gen_kwargs({**GREEDY, "do_sample": None, "temperature": NAN})
    assert norm["do_sample"] is False and math.isnan(norm["temperature"])


@pytest.mark.parametrize("until", ["", ["\n\n", ""]])
def test_an_empty_stop_string_is_refused(until):
    msg = _refusal({"until": until})
    assert (f"until={until!r} holds an empty stop string, which lm-eval's hf reads as a stop after the first "
            "token") in msg


@pytest.mark.parametrize("key, value, why", [
    ("max_gen_toks", 0, "leaves no answer tokens"),
    ("max_gen_toks", -1, "leaves no answer tokens"),
    ("max_gen_toks", 1.5, "is not a whole number of tokens"),
    ("max_new_tokens", 0, "leaves no answer tokens"),
])
def test_a_budget_below_one_or_fractional_is_refused(key, value, why):
    gk = {k: v for k, v in GREEDY.items() if k != "max_gen_toks"}
    with pytest.raises(ConfigError) as exc:
        _stub()._gen_settings({**gk, key: value}, "<|im_end|>")
    assert f"generation kwargs: {key}={value!r} {why}; give an integer of 1 or more " in str(exc.value), exc.value


def test_do_sample_that_is_not_true_or_false_is_named_as_such():
    msg = _refusal({"do_sample": "maybe"})
    assert "do_sample='maybe' is not true or false; give do_sample=false" in msg, msg


@pytest.mark.parametrize("extra, budget", [({"max_gen_toks": 32.0}, 32), ({"do_sample": 0}, 32), ({"until": []}, 32),
                                           ({"max_gen_toks": 1}, 1), ({"temperature": 0.0, "top_p": 0.9}, 32)])
def test_values_meant_as_written_still_run(extra, budget):
    until, max_gen, room = _stub()._gen_settings({**GREEDY, **extra}, "<|im_end|>")
    assert (max_gen, room) == (budget, 2048 - budget)
    assert until[-1] == "<|im_end|>"


def test_unhonoured_gen_kwargs_raises_the_value_error():
    """:func:`unhonoured_gen_kwargs` raises the :class:`GenKwargsValueError` (a ValueError) itself; ``tasks.precheck``
    turns it into its one line before the model load (s57 r10: tests/test_s57_r10_gen_kwargs_before_load.py)."""
    from tokrag_model.base import GenKwargsValueError, unhonoured_gen_kwargs

    with pytest.raises(GenKwargsValueError, match=r"^temperature=nan is not a finite number"):
        unhonoured_gen_kwargs({**GREEDY, "temperature": NAN})
    assert issubclass(GenKwargsValueError, ValueError)
