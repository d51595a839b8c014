"""The generation kwargs a tokrag method reads and the checks of them that need no model: :data:`GREEDY_GEN_KWARGS`,
:data:`BUDGET_ALIASES`, :class:`GenKwargsValueError`, :func:`check_gen_kwarg_values`, :func:`unhonoured_gen_kwargs`.
Kept apart from :mod:`tokrag_model.base`, which imports torch and lm-eval's model API (~1.7 CPU-s), so that the
leaderboard spec's checks (``tokrag leaderboard run|report|rescore|check``: :mod:`leaderboards.spec`,
:mod:`tasks.precheck`) read them without importing torch; :mod:`tokrag_model.base` re-exports every name under its
old name.
"""

from __future__ import annotations

import math
from typing import Any

GREEDY_GEN_KWARGS: tuple[str, ...] = ("until", "max_gen_toks", "do_sample", "temperature")
"""The generation kwargs a tokrag method reads, as lm-eval's ``normalize_gen_kwargs`` names them (its budget aliases
``max_new_tokens``, ``max_tokens``, ``max_completion_tokens`` become ``max_gen_toks``); ``do_sample`` and
``temperature`` only where they ask for greedy decoding (:func:`unhonoured_gen_kwargs`)."""

NEUTRAL_GEN_KWARGS: dict[str, Any] = {"num_beams": 1}
"""Other generation kwargs accepted at the value that changes nothing (HF ``generate``'s default: one beam is greedy;
stock lm-eval tasks such as ``noreval``'s set it)."""

SAMPLING_ONLY_GEN_KWARGS: frozenset[str] = frozenset({"top_k", "top_p", "min_p", "top_h", "typical_p", "epsilon_cutoff",
                                                      "eta_cutoff"})
"""Generation kwargs that HF ``generate`` reads only when it samples (its logits warpers, added only with
``do_sample``; transformers ``GenerationConfig.validate`` warns of them under greedy decoding): inert when the kwargs
ask for greedy decoding, as lm-eval's ``hf`` runs them (stock lm-eval's ``mimic_repsum`` sets ``top_p`` so)."""

GEN_KWARGS_READ = ("until and max_gen_toks (or max_new_tokens, max_tokens, max_completion_tokens), with do_sample "
                   "false or temperature 0")


BUDGET_ALIASES: tuple[str, ...] = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")
"""lm-eval 0.4.13's names of the answer budget (tokens), in ``normalize_gen_kwargs``'s order: the first one set wins."""


class GenKwargsValueError(ValueError):
    """A generation kwarg whose value lm-eval would run with another meaning than the one written (its message names
    the key and value and what to give instead: one line; ``key``: that generation kwarg's name, for a caller that
    names where it was written, as the leaderboard spec's check does with its file and line)."""

    def __init__(self, message: str, key: str = "") -> None:  # key optional: a pickled copy is rebuilt from message
        super().__init__(message)
        self.key = key


def check_gen_kwarg_values(gen_kwargs: dict) -> None:
    """Refuse values of ``gen_kwargs`` (one request's generation kwargs) that lm-eval 0.4.13 reads without a word but
    with another meaning than written: a NaN or infinite number in any key (``temperature=nan`` reads as greedy in
    ``normalize_gen_kwargs``, as ``nan > 0`` is false; ``top_p=inf``, ``top_k=nan``); a ``do_sample`` that is not
    true or false (``do_sample=maybe`` would sample in ``hf``); an empty stop string in ``until`` (``until=``: lm-eval's
    ``hf`` stops after the first token on it, its ``MultiTokenEOSCriteria`` finding ``""`` in any text, while a tokrag
    method ignores it); a budget (the first of :data:`BUDGET_ALIASES` set, in tokens) that is not a whole number
    (``normalize_gen_kwargs`` truncates ``1.5`` to 1) or is below 1 (``0``, ``-1``: no answer tokens).

    Raises:
        GenKwargsValueError: one line naming the key and value and what to give instead.
    """
    for k, v in gen_kwargs.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise GenKwargsValueError(f"{k}={v!r} is not a finite number; give a number or drop {k}", k)
    do_sample = gen_kwargs.get("do_sample")
    if do_sample is not None and not isinstance(do_sample, bool) and do_sample not in (0, 1):
        raise GenKwargsValueError(f"do_sample={do_sample!r} is not true or false; give do_sample=false (every tokrag "
                                  "method decodes greedily) or drop it", "do_sample")
    until = gen_kwargs.get("until")
    if until == "" or (isinstance(until, list) and "" in until):
        raise GenKwargsValueError(f"until={until!r} holds an empty stop string, which lm-eval's hf reads as a stop "
                                  "after the first token and a tokrag method would ignore; give a stop string, or "
                                  "drop until to keep the task's own stop strings (a task YAML's until: [] stops only "
                                  "at the end-of-text token)", "until")
    key = next((a for a in BUDGET_ALIASES if gen_kwargs.get(a) is not None), None)
    if key is not None:
        v = gen_kwargs[key]
        if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
            raise GenKwargsValueError(f"{key}={v!r} is not a whole number of tokens; give an integer of 1 or more", key)
        try:
            n = int(v)
        except (TypeError, ValueError):
            return  # normalize_gen_kwargs raises it: "cannot be read"
        if n < 1:
            raise GenKwargsValueError(f"{key}={v!r} leaves no answer tokens; give an integer of 1 or more", key)


def unhonoured_gen_kwargs(gen_kwargs: dict) -> list[str]:
    """The keys of ``gen_kwargs`` (one request's generation kwargs, the task YAML's with ``--gen_kwargs`` over them)
    that a tokrag method would not honour: every method decodes greedily and reads only ``until`` and the budget. As
    lm-eval's ``hf`` reads them (``lm_eval.models.utils.normalize_gen_kwargs``, lm-eval 0.4.13): ``do_sample`` (and
    ``temperature``, if given) when it samples (``do_sample`` true, or ``temperature`` > 0 without ``do_sample``;
    ``do_sample=False`` is greedy whatever the temperature), and any key other than :data:`GREEDY_GEN_KWARGS` and
    the budget aliases, unless at its :data:`NEUTRAL_GEN_KWARGS` value (``num_beams=1``) or, when not sampling, one
    of :data:`SAMPLING_ONLY_GEN_KWARGS` (``top_p``, ...: inert under greedy decoding in ``hf`` too). lm-eval would
    record them in the results while the answers ignore them. Empty: all honoured.

    Raises:
        GenKwargsValueError: a value lm-eval would run with another meaning (:func:`check_gen_kwarg_values`:
            ``temperature=nan``, ``until=``, ``max_gen_toks=0``, ...).
        ValueError, TypeError: a budget or ``temperature`` that ``normalize_gen_kwargs`` cannot read as a number.
    """
    from lm_eval.models.utils import normalize_gen_kwargs  # lm-eval's own reading; no torch import

    check_gen_kwarg_values(gen_kwargs)
    norm = normalize_gen_kwargs(gen_kwargs)
    sampling = bool(norm["do_sample"])
    bad = [k for k in ("do_sample", "temperature") if sampling and gen_kwargs.get(k) is not None]
    for k, v in norm.items():
        if k in GREEDY_GEN_KWARGS or (k in NEUTRAL_GEN_KWARGS and v == NEUTRAL_GEN_KWARGS[k]):
            continue
        if sampling or k not in SAMPLING_ONLY_GEN_KWARGS:
            bad.append(k)
    return bad
