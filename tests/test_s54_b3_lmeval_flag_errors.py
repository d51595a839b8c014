"""lm-eval's own cross-checks of its run flags ended a tokrag method's run with a 20-line traceback (s54 b3):
``lm_eval --model rag-standard --tasks nq_oracle_gold --fewshot_as_multiturn`` (without ``--apply_chat_template``),
``... --limit 2 --samples '{"nq_oracle_gold": [0]}'`` and ``... --log_samples`` (without ``--output_path``) raised
``ValueError`` from ``EvaluatorConfig._validate_arguments``, exit 1, where tokrag's own refusals of lm-eval's flags are
one ``lm_eval: error:`` line, exit 2. For a tokrag method they are now that line (lm-eval's message); other models
keep lm-eval's traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from retrieval.errors import ConfigError

CASES = [
    (["--fewshot_as_multiturn"], "When `fewshot_as_multiturn` is True, `apply_chat_template` must be set."),
    (["--limit", "2", "--samples", '{"nq_oracle_gold": [0]}'], "If --samples is not None, then --limit must be None."),
    (["--log_samples"], "Specify --output_path if providing --log_samples or --predict_only"),
]


def _config(argv):
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")
    importlib.import_module("lm_eval.api.registry")  # as lm-eval's CLI imports it: the hook patches EvaluatorConfig then
    from lm_eval._cli import HarnessCLI
    from lm_eval.config.evaluate_config import EvaluatorConfig

    args = HarnessCLI()._parser.parse_args(["run", "--tasks", "nq_oracle_gold", *argv])
    return EvaluatorConfig.from_cli(args)


@pytest.mark.parametrize("flags, message", CASES)
def test_lm_evals_flag_errors_are_a_marked_config_error_for_a_tokrag_method(flags, message):
    with pytest.raises(ConfigError) as err:
        _config(["--model", "rag-standard", *flags])
    assert str(err.value) == message
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval (_patch_harness)


@pytest.mark.parametrize("flags, message", CASES)
def test_other_models_keep_lm_evals_value_error(flags, message):
    with pytest.raises(ValueError) as err:
        _config(["--model", "hf", *flags])
    assert str(err.value) == message and not isinstance(err.value, ConfigError)


def test_plain_lm_eval_prints_one_line_and_exits_2(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([sys.executable, "-m", "lm_eval", "run", "--model", "tokrag", "--tasks", "nq_oracle_gold",
                           "--fewshot_as_multiturn"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and " WARNING " not in ln and " INFO " not in ln]
    assert lines == ["python -m lm_eval: error: When `fewshot_as_multiturn` is True, `apply_chat_template` must be set.",
                     "(set TOKRAG_TRACEBACK=1 for the stack trace)"]
