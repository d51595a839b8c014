"""The one-line error for a ``--model_args`` / ``--metadata`` / ``--gen_kwargs`` value that is not valid JSON gives an
example that works for that flag: it gave ``'{"hits": 3}'`` for every flag, and ``--model_args '{"hits": 3}'`` then
failed with "unknown model argument(s) 'hits'" (``hits`` is task metadata)."""

from __future__ import annotations

import argparse
import json
import re

import pytest


def _error_line(flags: list[str], dest: str, argv: list[str], capsys) -> str:
    import tokrag_model._lmeval_hook  # noqa: F401  (the start-up hook patches lm-eval's CLI action)
    from lm_eval._cli.utils import MergeDictAction

    parser = argparse.ArgumentParser(prog="lm_eval")
    parser.add_argument(*flags, dest=dest, default=None, nargs="+", action=MergeDictAction)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _example(err: str, flag: str) -> dict:
    found = re.search(rf"e\.g\. {re.escape(flag)} '(\{{.*?\}})'", err)
    assert found, err
    return json.loads(found.group(1))


@pytest.mark.parametrize("flag", ["--model_args", "-a"])
def test_model_args_example_is_valid_model_arguments(flag, capsys) -> None:
    from tokrag_model.args import COMMON_ARGS

    err = _error_line(["--model_args", "-a"], "model_args", [flag, "{pretrained: x}"], capsys)
    assert err.startswith(f"lm_eval: error: {flag}: not valid JSON ("), err
    example = _example(err, flag)
    assert example and set(example) <= set(COMMON_ARGS), example  # accepted by every tokrag method


def test_metadata_example_is_task_metadata(capsys) -> None:
    from tasks.utils import QA_TASK_KEYS

    err = _error_line(["--metadata"], "metadata", ["--metadata", "{hits: 3"], capsys)
    example = _example(err, "--metadata")
    assert example == {"hits": 3} and set(example) <= QA_TASK_KEYS


def test_gen_kwargs_example_is_a_generation_kwarg(capsys) -> None:
    from tasks.utils import QA_TASK_KEYS
    from tokrag_model.args import COMMON_ARGS

    err = _error_line(["--gen_kwargs"], "gen_kwargs", ["--gen_kwargs", "{max_gen_toks: 3}"], capsys)
    example = _example(err, "--gen_kwargs")
    assert example == {"max_gen_toks": 32}
    assert not set(example) & QA_TASK_KEYS and set(example) <= set(COMMON_ARGS) | {"until", "do_sample", "temperature"}
