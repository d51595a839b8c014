"""``--batch_size``: a whole number >= 1, or lm-eval's ``auto`` / ``auto:N``; anything else is refused in one line.

Before the fix ``to_batch_size`` read ``int(float(text))``: ``--batch_size 2.5`` ran with batch size 2 while
lm-eval's results.json recorded ``config.batch_size`` 2.5 (and tokrag_resolved_config.batch_size 2).
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import COMMON_ARGS, parse_args, to_batch_size
from tokrag_model.methods.tokrag import TokRAGLM


def test_whole_numbers_and_auto_forms_are_read():
    assert [to_batch_size(v) for v in ("4", 4, 4.0, "4.0", " 8 ", None)] == [4, 4, 4, 4, 8, 1]
    assert [to_batch_size(v) for v in ("auto", "AUTO", "auto:4", "auto:2.5")] == [1, 1, 1, 1]  # lm-eval's forms


@pytest.mark.parametrize("value", ["2.5", 2.5, "0", 0, "-1", "nan", "inf", True, "autotune", "auto:x", "two", ""])
def test_other_values_are_refused_naming_the_flag(value):
    with pytest.raises(ValueError, match=r"^--batch_size \(batch_size=\) must be a whole number >= 1, 'auto' or "
                                         r"'auto:N', got "):
        to_batch_size(value)


def test_refused_through_lm_evals_flag_before_any_model_is_loaded():
    with pytest.raises(ConfigError, match=r"batch_size='2.5' is invalid: --batch_size .* got '2.5'") as exc:
        TokRAGLM.create_from_arg_string("device=cpu", {"batch_size": "2.5", "max_batch_size": None, "device": "cpu"})
    assert "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match=r"batch_size=2.5 is invalid: --batch_size"):
        parse_args("rag-none", COMMON_ARGS, {"batch_size": 2.5})
