"""Model arguments: one declared schema per method, type casting, and helpful errors.

lm-eval passes ``--model_args`` values already parsed (``k=3`` -> int, ``true`` -> bool) and
``--batch_size``/``--device`` as strings (``'4'``, ``'auto'``, ``'cuda:0'``). Every value is cast to the
declared type here; an unknown key raises :class:`ConfigError` listing the valid keys with a
close-match suggestion (:func:`retrieval.errors.closest`), so ``layr=12`` says "did you mean 'layer'?".
An explicit None (a YAML ``null`` in a leaderboard spec) means the argument's default.
"""

from __future__ import annotations

import logging
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

from retrieval.errors import ConfigError, closest

from .loading import ALIASES, WEIGHT_LAYOUTS
from .prompt import PASSAGE_FIELDS


@dataclass(frozen=True)
class Arg:
    """One model argument: ``default``, a caster (raises ValueError/TypeError on bad input) and help text.

    ``only_with=(other, value)`` marks an argument that acts only when ``other`` resolves to ``value``
    (e.g. the filter's ``top_m`` only with ``selection=top_m``): giving it explicitly otherwise is a
    :class:`ConfigError` rather than a silent no-op.
    """

    default: Any
    cast: Callable[[Any], Any]
    help: str
    only_with: tuple[str, Any] | None = None


def to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected true/false, got {value!r}")


EMPTY_NUMBER = ("it is empty (lm-eval reads key= as empty text, e.g. from an unset shell variable); give a number, "
                "or none or drop the argument for its default")
"""Why an optional number given as empty text is refused (:func:`to_opt_int`, :func:`to_opt_float`): ``k=`` silently
meant the default (every attached passage), as ``query_field=`` once meant the field ``''`` (:func:`nonempty_str`)."""
EMPTY_REQUIRED_NUMBER = ("it is empty (lm-eval reads key= as empty text, e.g. from an unset shell variable); give a "
                         "number, or drop the argument for its default")
""":data:`EMPTY_NUMBER` for a number that is not optional (:func:`int_at_least` without ``optional``: ``n_anchors=``,
``max_gen_toks=``), where ``none`` is refused too, so the line does not offer it."""


def to_opt_int(value: Any) -> int | None:
    """A caster to an int, or None for ``None``, ``none`` or ``null`` (the default applies).

    Raises:
        ValueError: empty or blank text (:data:`EMPTY_NUMBER`), a bool, a float with a fraction, text that is no integer.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in {"none", "null"}):
        return None
    if isinstance(value, str) and not value.strip():
        raise ValueError(EMPTY_NUMBER)
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"expected an integer, got {value}")
    return int(value)


def to_finite(value: Any) -> float:
    """A caster to a finite float: ``nan``, ``inf`` and bools are refused (a threshold or temperature of NaN compares
    False with everything and silently turns a rule off; YAML ``.inf`` and ``--model_args x=inf`` parse as floats)."""
    if isinstance(value, bool):
        raise ValueError("expected a number")
    num = float(value)
    if not math.isfinite(num):
        raise ValueError(f"expected a finite number, got {value!r}")
    return num


def to_opt_float(value: Any) -> float | None:
    """:func:`to_finite`, with ``None`` (or ``none``/``null``) kept as ``None`` (the default applies); empty text is
    refused (:data:`EMPTY_NUMBER`), not read as the default."""
    if value is None or (isinstance(value, str) and value.strip().lower() in {"none", "null"}):
        return None
    if isinstance(value, str) and not value.strip():
        raise ValueError(EMPTY_NUMBER)
    return to_finite(value)


def nonempty_str(value: Any) -> str:
    """A caster to a string that refuses an empty or blank one (``query_field=``, ``preset=``: lm-eval reads
    ``key=`` as ``''``, e.g. from an unset shell variable, which otherwise silently meant the field ``''`` or no
    preset)."""
    text = text_of(value)
    if not text.strip():
        raise ValueError("it is empty; give a value, or drop the argument for its default")
    return text


def to_opt_str(value: Any) -> str | None:
    """:func:`nonempty_str`, with ``None`` kept as ``None`` (the default applies)."""
    return None if value is None else nonempty_str(value)


def text_of(value: Any, what: str = "text") -> str:
    """``value`` as text, a number (``pretrained=2024``, which lm-eval and YAML read as one) as its text. A list, a
    mapping or a bool is refused (``what``: the text expected, for the message): ``str()`` made ``['x']`` of a YAML
    list, which passed every pre-run check (a ``pretrained`` hub id ``"['x']"`` failed only at the load; a
    ``passage_template`` ``"['{text}']"`` put the brackets around every passage). A path object (``pathlib.Path``, a
    Python caller's ``pretrained=`` or ``preset=``) is its path, as ``str()`` made it before."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        got = "true/false" if isinstance(value, bool) else "a mapping" if isinstance(value, dict) else "a list" \
            if isinstance(value, (list, tuple)) else f"a {type(value).__name__}"
        raise ValueError(f"expected {what}, got {got}")
    return str(value)


def to_pretrained(value: Any) -> str:
    """``pretrained`` as text (:func:`text_of`): a hub id, a folder or an alias."""
    return text_of(value, "text (a hub id, a local folder or an alias)")


def to_dtype(value: Any) -> str:
    """A ``dtype`` that the model load reads (:func:`tokrag_model.loading.dtype_name`: ``float32``, ``bf16``,
    ``torch.float16``, ``auto``, ...), kept as given; an unknown name (``float64``, ``bogus``) was refused only when
    the weights loaded (~40 s into an ``lm_eval`` run, and never by a leaderboard's ``run --estimate``)."""
    from .loading import _DTYPES, dtype_name

    text = nonempty_str(value)
    if dtype_name(text) is None:
        raise ValueError(f"expected one of {sorted(set(_DTYPES))}, got {value!r}")
    return text


def to_batch_size(value: Any) -> int:
    """``--batch_size`` (or ``batch_size=`` in ``--model_args``): a whole number >= 1 (``'4'``, ``4``, ``4.0``), or
    lm-eval's ``auto`` / ``auto:N`` (N a number, as lm-eval's ``--batch_size`` help gives them), which map to 1
    (CPU-friendly, deterministic); None: 1.

    Raises:
        ValueError: anything else, naming ``--batch_size``: a fraction (``2.5`` was cut to 2 while lm-eval's results
            recorded 2.5), a value < 1, a bool, NaN/infinity, or an ``auto`` form lm-eval does not read.
    """
    if value is None:
        return 1
    text = str(value).strip().lower()
    if text == "auto" or re.fullmatch(r"auto:\s*\d+(\.\d*)?", text):
        return 1
    bad = (f"--batch_size (batch_size=) must be a whole number >= 1, 'auto' or 'auto:N', got {value!r}")
    if isinstance(value, bool):
        raise ValueError(bad)
    try:
        num = float(text)
    except ValueError:
        raise ValueError(bad) from None
    if not math.isfinite(num) or not num.is_integer() or num < 1:
        raise ValueError(bad)
    return int(num)


def choice(*options: str) -> Callable[[Any], str]:
    def cast(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in options:
            raise ValueError(f"expected one of {list(options)}, got {value!r}")
        return text

    return cast


def number_at_least(low: float, strict: bool = False) -> Callable[[Any], float]:
    """A caster to float that rejects values below ``low`` (or equal to it when ``strict``), NaN and infinity
    (``alpha=inf`` made CAD's logits inf - inf = NaN; ``rate=inf`` took every RAG token)."""
    def cast(value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError("expected a number")
        num = float(value)
        if num < low or (strict and num == low) or num != num or math.isinf(num):
            finite = "finite " if math.isinf(num) else ""
            raise ValueError(f"expected a {finite}number {'>' if strict else '>='} {low:g}, got {value!r}")
        return num

    return cast


def number_in(low: float, high: float) -> Callable[[Any], float]:
    """A caster to float that rejects values outside the closed interval ``[low, high]`` (and NaN)."""
    def cast(value: Any) -> float:
        if isinstance(value, bool):
            raise ValueError("expected a number")
        num = float(value)
        if not low <= num <= high:  # False for NaN too
            raise ValueError(f"expected a number in [{low:g}, {high:g}], got {value!r}")
        return num

    return cast


def int_at_least(low: int, optional: bool = False) -> Callable[[Any], int | None]:
    """A caster to int (whole numbers only) that rejects values below ``low``; with ``optional``, ``None``
    (or ``none``/``null``) stays ``None`` (the default applies); empty text is refused (:data:`EMPTY_NUMBER`;
    without ``optional``, :data:`EMPTY_REQUIRED_NUMBER`, as ``none`` is refused there too)."""
    def cast(value: Any) -> int | None:
        if not optional and isinstance(value, str) and not value.strip():
            raise ValueError(EMPTY_REQUIRED_NUMBER)
        num = to_opt_int(value)
        if num is None and optional:
            return None
        if num is None or num < low:
            raise ValueError(f"expected an integer >= {low}{' or none' if optional else ''}, got {value!r}")
        return num

    return cast


def to_device(value: Any) -> str:
    """A device string torch accepts (``cpu``, ``cuda``, ``cuda:N``, ``mps``); checked before the weights load.
    Another device type torch knows (``xpu``, ``npu``, ``hpu``, ...) passes only when its backend says it is
    available (``torch.<type>.is_available()``): ``--device xpu`` on a machine without one loaded the weights and
    ended in ``AssertionError: Torch not compiled with XPU enabled`` (a traceback). ``meta`` (tensors without data)
    is refused as such. Whether ``cuda`` / ``mps`` is
    there is :func:`tokrag_model.loading.resolve_device`'s to say (lm-eval's default ``cuda:0`` falls back to CPU).

    Raises:
        ValueError: not a device torch knows, or a device type whose backend is not available here.
    """
    text = str(value).strip()
    import torch  # lazily, as everywhere in this package (loading.py): importing this module loads no torch

    try:
        kind = torch.device(text).type
    except (RuntimeError, ValueError):
        raise ValueError(f"expected a device torch knows (cpu, cuda, cuda:N, mps), got {value!r}") from None
    if kind == "meta":  # torch has no torch.meta backend to ask: the line would say it is not available here
        raise ValueError("the meta device holds tensors without data, so the model could not compute anything; use "
                         "cpu") from None
    if kind not in ("cpu", "cuda", "mps"):
        available = getattr(getattr(torch, kind, None), "is_available", None)
        try:
            there = bool(available()) if callable(available) else False
        except Exception:  # noqa: BLE001 - a backend that cannot tell: not usable here
            there = False
        if not there:
            raise ValueError(f"torch.{kind} is not available on this machine (the weights would load and then fail "
                             f"to move there); use cpu") from None
    return text


def passage_template(value: Any) -> str:
    """A ``passage_template`` that :func:`tokrag_model.prompt.format_passage` can use: it must contain ``{text}`` (a
    template without it put one constant line per passage and no passage text into every prompt, silently), name only
    the fields in :data:`PASSAGE_FIELDS` (an unknown field was a KeyError traceback at the first request, after the
    weights load) and format without error (e.g. an unmatched brace)."""
    import string

    text = text_of(value, "text with {text}")
    allowed = ", ".join("{" + f + "}" for f in PASSAGE_FIELDS)
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ValueError(f"cannot be formatted ({exc}); write a literal brace as {{{{ or }}}}; fields: {allowed}") from None
    names = [name for _, name, _, _ in parsed if name is not None]
    bad = sorted({n for n in names if re.split(r"[.\[]", n, maxsplit=1)[0] not in PASSAGE_FIELDS}, key=names.index)
    if bad:
        shown = ", ".join("{" + n + "}" for n in bad)
        raise ValueError(f"unknown field(s) {shown}; the passage fields are {allowed}")
    access = [n for n in names if n not in PASSAGE_FIELDS]  # {text.upper}, {text[0]}: not a field of its own
    if access:
        shown = ", ".join("{" + n + "}" for n in dict.fromkeys(access))
        raise ValueError(f"attribute or index access {shown} is not supported; use the plain fields {allowed} "
                         "(a format spec such as {text:.200} is fine)")
    if "text" not in names:
        raise ValueError(f"it has no {{text}}, so no passage text would reach the prompt; fields: {allowed}")
    try:
        text.format(title="Title", text="Passage text.", rank=1, docid="doc1")
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"cannot be formatted ({type(exc).__name__}: {exc}); fields: {allowed}") from None
    return text


def refuse_float_one(value: Any, top: str = "-1 for the top layer") -> None:
    """Refuse a layer argument that is 1 written as a float: the float ``1.0``, or text reading as 1 that is no
    integer's (``1.0``, ``1e0``, ``01.0``). A layer caster would read it as layer index 1, near the bottom, where a
    fraction 1.0 means the top of the model. The int 1 and the text ``1``, ``+1``, ``01`` (layer index 1) pass, as
    does anything else (the caster judges it). Used by :func:`layer_spec` (``layer``) and
    :func:`tokrag_model.methods.tokrag.layer_or_fraction` (``js_min_layer``, ``layer_fallback``).

    Args:
        value: the argument as given (a number or text).
        top: how the message tells the user to write the top layer (``layer`` takes ``-1``).
    Raises:
        ValueError: ``1.0 is no fraction of the depth (those lie in (0, 1)) and was read as layer index 1, near the
        bottom; write 1 for layer index 1, <top>, or a fraction below 1``.
    """
    if isinstance(value, bool):
        return
    if isinstance(value, float):
        one = value == 1.0
    elif isinstance(value, int):
        one = False
    else:
        text = str(value).strip().lower()
        try:
            one = float(text) == 1.0 and not re.fullmatch(r"[+]?0*1", text)  # "1.0", "1e0"; "01" is the integer 1
        except ValueError:
            one = False
    if one:
        raise ValueError("1.0 is no fraction of the depth (those lie in (0, 1)) and was read as layer index 1, near the "
                         f"bottom; write 1 for layer index 1, {top}, or a fraction below 1")


def layer_spec(value: Any) -> str | int | float:
    """``dynamic`` | an integer layer index (negative counts from the top) | a fraction of the depth in (0, 1).

    Raises:
        ValueError: a bool, text that is none of these, a fraction outside (0, 1), and ``1.0`` (a float, or text of a
        float: ``1.0``, ``1e0``): it read as layer index 1, near the bottom, where a fraction 1.0 means the top of the
        model; ``1`` (``01`` too) is layer 1, ``-1`` the top layer (:func:`refuse_float_one`).
    """
    if isinstance(value, bool):
        raise ValueError("expected 'dynamic', an integer or a fraction in (0, 1)")
    refuse_float_one(value)
    if isinstance(value, (int, float)):
        num = value
    else:
        text = str(value).strip().lower()
        if text == "dynamic":
            return "dynamic"
        try:
            num = float(text)
        except ValueError:
            raise ValueError(f"expected 'dynamic', an integer or a fraction in (0, 1), got {value!r}") from None
    if float(num).is_integer() and not (isinstance(value, float) and 0 < num < 1):
        return int(num)
    if 0.0 < num < 1.0:
        return float(num)
    raise ValueError(f"a fractional layer must lie in (0, 1), got {value!r}")


MAX_LENGTH_CAP = 8192
"""The most a method's ``max_length`` is without the model argument: the model's own context, capped at this
(:class:`tokrag_model.base.RAGMethodLM`; the pre-load budget check, :func:`tasks.precheck._check_budget_fits`)."""

# Arguments every method accepts.
COMMON_ARGS: dict[str, Arg] = {
    "pretrained": Arg("smollm2-135m-instruct", to_pretrained, f"hub id, local folder, or an offline alias ({', '.join(ALIASES)})"),
    "dtype": Arg("float32", to_dtype, "float32 | bfloat16 | float16 | auto"),
    "max_length": Arg(None, int_at_least(1, optional=True), f"context window in tokens (default: the model's, capped at {MAX_LENGTH_CAP})"),
    "device": Arg("cpu", to_device, "cpu | cuda | cuda:N | mps (lm-eval's default cuda:0 falls back to cpu without CUDA; "
                   "another device this machine lacks is an error)"),
    "weight_layout": Arg("auto", choice(*WEIGHT_LAYOUTS),
                         "Linear weights column-major (col: faster CPU decode steps) or as loaded (row); auto: col on CPU in float32"),
    "batch_size": Arg(1, to_batch_size, "requests decoded together in one forward pass ('auto' -> 1)"),
    "max_batch_size": Arg(None, int_at_least(1, optional=True), "accepted for lm-eval compatibility; unused"),
    "batch_invariant": Arg("auto", lambda v: "auto" if str(v).lower() == "auto" else to_bool(v),
                           "same numbers, outputs and traces at every batch_size (auto: on CPU in float32); tokrag_model.decoder"),
    "k": Arg(None, int_at_least(1, optional=True), "use the top-k passages of doc['ctxs'] (default: all attached)"),
    "max_passage_tokens": Arg(None, int_at_least(1, optional=True), "passage budget: at most this many tokens of passages "
                              "(lowest-ranked dropped first, a top passage longer alone cut token-wise; default: whatever fits in max_length)"),
    "passage_template": Arg("[Reference]: {title}\n{text}\n", passage_template,
                            "format of one passage in the passages block ({title}, {text}, {rank}, {docid})"),
    "add_bos_token": Arg(None, lambda v: None if v is None else to_bool(v),
                         "prepend BOS (default: the tokenizer's own setting, as lm-eval's hf model)"),
    "max_gen_toks": Arg(256, int_at_least(1), "default generation budget when the task gives none"),
    "trace": Arg(True, to_bool, "attach the method's decisions to each request (shows up with --log_samples)"),
    "trace_prompts": Arg(False, to_bool, "generation: add to the trace the exact prompt of every branch the answer is "
                         "decoded from (decoded from its token ids: passages, chat template and question as the model saw them)"),
    "trust_remote_code": Arg(False, to_bool, "passed to from_pretrained"),
    "revision": Arg(None, to_opt_str, "hub revision"),
}


AUTO_ARGS = ("dtype", "weight_layout", "batch_size", "batch_invariant")
"""The :data:`COMMON_ARGS` that accept ``auto`` (``batch_size`` also ``auto:N``), resolved when the model is built;
:func:`requested_auto` records which a run asked so."""


def requested_auto(schema: dict[str, Arg], given: dict[str, Any]) -> dict[str, str]:
    """The arguments of :data:`AUTO_ARGS` in ``schema`` that ``given`` (the model arguments as given) asks to resolve:
    given as ``auto`` / ``auto:N`` (any case), or not given (or None) with the default ``auto``; each mapped to the
    value as given (the default ``'auto'`` where not given). The resolved config records the values they resolved to
    (``batch_invariant: false``, ``batch_size: 1``), the same as an explicit ``false`` or ``1``; results record this
    beside them (``tokrag_resolved_config.requested_auto``,
    :meth:`tokrag_model.base.RAGMethodLM.get_model_info`). Raises nothing."""
    out: dict[str, str] = {}
    for key in AUTO_ARGS:
        if key not in schema:
            continue
        value = schema[key].default if given.get(key) is None else given[key]
        if isinstance(value, str) and re.fullmatch(r"auto(:.*)?", value.strip().lower()):
            out[key] = value
    return out


def model_args_dict(model_args: Any) -> dict[str, Any] | None:
    """lm-eval's ``--model_args`` as a dict, before the model is built (lm-eval keeps the ``key=value,...`` string,
    parsed here by its ``simple_parse_args_string``, or a dict, returned as is); {} for an empty string or any other
    type; None for a string lm-eval cannot parse (lm-eval reports it itself). Used by the pre-load checks
    (:func:`tasks.precheck.check_selected_tasks`, :func:`tokrag_model.base.check_chat_template_before_load`)."""
    if isinstance(model_args, dict):
        return model_args
    if isinstance(model_args, str) and model_args.strip():
        try:
            from lm_eval.utils import simple_parse_args_string

            return simple_parse_args_string(model_args) or {}
        except Exception:  # noqa: BLE001 - lm-eval reports a malformed string itself
            return None
    return {}


LM_EVAL_FLAG_DEFAULTS = {"batch_size": "1", "device": "cuda:0"}
"""lm-eval's own flags that it hands every model next to ``--model_args``, with the value each takes when the
user did not give it (``EvaluatorConfig``), as a string: ``--batch_size 1`` arrives as ``'1'``, not given as ``1``."""


def merge_lm_eval_flags(method: str, model_args: dict[str, Any], flags: dict[str, Any] | None,
                        warn: bool = True) -> dict[str, Any]:
    """``--model_args`` plus lm-eval's ``--device`` / ``--batch_size`` / ``--max_batch_size`` as one dict.

    lm-eval's ``LM.create_from_arg_obj`` passes both to the constructor, so a key in both (e.g. the README's
    ``--model_args ...,device=cuda:0 --device cuda:0``) was a ``TypeError``. Here ``--model_args`` wins (it
    names this model; a None there counts as not given); a flag it overrides is logged (unless not ``warn``)
    when it differs from lm-eval's default (:data:`LM_EVAL_FLAG_DEFAULTS`). The leaderboard runner passes a
    spec's shared ``batch_size``/``device`` the same way.
    """
    out = dict(model_args)
    for key, value in (flags or {}).items():
        if value is None:
            continue
        if out.get(key) is None:
            out[key] = value
        elif warn and str(value) not in (str(out[key]), LM_EVAL_FLAG_DEFAULTS.get(key)):
            logging.getLogger(__name__).warning(
                "--model %s: %s=%s (lm-eval's --%s, or a leaderboard spec's shared %s) is overridden by model_args %s=%s",
                method, key, value, key, key, key, out[key])
    return out


def resolved_args(cls: Any, given: dict[str, Any]) -> dict[str, Any] | None:
    """``given`` (the model arguments as given) parsed by model class ``cls``'s schema (:func:`parse_args`, defaults
    filled in) and resolved by its ``resolve_args`` (a Tok-RAG preset's params applied), as its constructor checks
    them before the weights load; None for a class that declares no schema (only the tokrag models do: ``METHOD`` and
    ``EXTRA_ARGS``). Loads no model. Used by the leaderboard's pre-run checks
    (:func:`leaderboards.runner.resolved_model_args`) and ``lm_eval``'s
    (:func:`tasks.precheck.check_selfrag_lm_questions`).

    Raises:
        ConfigError: from :func:`parse_args` (unknown key, bad value, argument without effect) or the class's
        ``resolve_args`` (an unreadable preset, a dynamic-layer argument with a fixed layer).
    """
    if not (isinstance(getattr(cls, "METHOD", None), str) and isinstance(getattr(cls, "EXTRA_ARGS", None), dict)):
        return None
    parsed = parse_args(cls.METHOD, {**COMMON_ARGS, **cls.EXTRA_ARGS}, given)
    resolve = getattr(cls, "resolve_args", None)
    return resolve(parsed, given) if callable(resolve) else parsed


def parse_args(method: str, schema: dict[str, Arg], given: dict[str, Any]) -> dict[str, Any]:
    """Cast ``given`` against ``schema`` (defaults filled in).

    Returns:
        dict of every argument in ``schema`` (the resolved config).
    Raises:
        ConfigError: an unknown key (listing the valid keys, with a close-match suggestion), a value
        that cannot be cast (naming the key and the expected form), a key given explicitly whose
        :attr:`Arg.only_with` condition does not hold (it would have no effect). A ``max_gen_toks`` that leaves
        no room in ``max_length`` is refused at the first generation request, not here: the model argument is only
        the default of tasks that give none, and a run without generation requests never uses it.
    """
    out: dict[str, Any] = {}
    unknown = [k for k in given if k not in schema]
    if unknown:
        parts = []
        for key in unknown:  # a case variant first: difflib found no 'k' for 'K', no 'alpha' for 'ALPHA'
            close = [k for k in schema if k.lower() == str(key).strip().lower()] or closest(key, schema, n=1)
            parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(
            f"--model {method}: unknown model argument(s) {', '.join(parts)}; valid keys: {', '.join(sorted(schema))}"
        )
    for key, spec in schema.items():
        raw = given.get(key)
        if raw is not None:
            try:
                value = spec.cast(raw)
            except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an integer too large for a float
                raise ConfigError(f"--model {method}: model argument {key}={raw!r} is invalid: {exc} ({spec.help})") from None
        else:  # not given, or an explicit None (YAML null): the default
            value = spec.default
            if value is not None and not isinstance(value, (str, int, float, bool)):
                value = spec.cast(value)
        out[key] = value
    for key, spec in schema.items():
        if (given.get(key) is not None and out[key] is not None and spec.only_with is not None
                and out[spec.only_with[0]] != spec.only_with[1]):
            other, wanted = spec.only_with
            raise ConfigError(
                f"--model {method}: model argument {key}={given[key]!r} has no effect with {other}={out[other]!r}; "
                f"add {other}={wanted} to use it, or drop {key}"
            )
    return out
