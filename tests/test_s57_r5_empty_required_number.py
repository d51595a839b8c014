"""An empty required integer model argument is not told to write ``none`` (s57 r5, review of b1's 718d8b8).

718d8b8 refuses ``key=`` (lm-eval's empty text, e.g. from an unset shell variable) for the optional numbers with
"give a number, or none or drop the argument for its default", and the same line reached the integers that are not
optional (``n_anchors``, ``window_left``, ``max_gen_toks``, ``top_m``), where ``none`` is refused in turn ("expected
an integer >= 1, got 'none'"). There the line now offers a number or dropping the argument; the optional ones keep
``none``.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import COMMON_ARGS, parse_args
from tokrag_model.methods.tokrag import TokRAGLM

SCHEMA = {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}
WHY = "it is empty (lm-eval reads key= as empty text, e.g. from an unset shell variable); give a number, "


@pytest.mark.parametrize("key", ["n_anchors", "window_left", "max_gen_toks"])
@pytest.mark.parametrize("value", ["", "  "])
def test_required_integer_empty_offers_no_none(key, value):
    with pytest.raises(ConfigError) as exc:
        parse_args("tokrag", SCHEMA, {key: value})
    assert str(exc.value) == (f"--model tokrag: model argument {key}={value!r} is invalid: {WHY}or drop the argument "
                              f"for its default ({SCHEMA[key].help})")


@pytest.mark.parametrize("key", ["k", "max_length", "max_passage_tokens"])
def test_optional_integer_empty_still_offers_none(key):
    with pytest.raises(ConfigError) as exc:
        parse_args("tokrag", SCHEMA, {key: ""})
    assert str(exc.value) == (f"--model tokrag: model argument {key}='' is invalid: {WHY}or none or drop the argument "
                              f"for its default ({SCHEMA[key].help})")
    assert parse_args("tokrag", SCHEMA, {key: "none"})[key] is None


def test_required_integers_still_read_numbers_and_refuse_none():
    assert parse_args("tokrag", SCHEMA, {"n_anchors": "4", "window_left": 0})["n_anchors"] == 4
    with pytest.raises(ConfigError, match=r"n_anchors='none' is invalid: expected an integer >= 1, got 'none'"):
        parse_args("tokrag", SCHEMA, {"n_anchors": "none"})
