"""lm-eval's own ``--batch_size``, ``--max_batch_size`` and ``--device`` of a tokrag method's run were left out of the
start-up hook's argument check (f996f5a checked ``--model_args`` alone), so ``lm_eval run --model rag-none --tasks
nq_oracle_bm25 --limit 1 --batch_size 0`` was refused by the model only after lm-eval's task set-up (62 s wall here,
s52 b1 probe_modelargs.py), where ``--model_args batch_size=0`` is refused in seconds, before lm-eval builds anything.
They are now checked with ``--model_args``, merged as the model merges them (``--model_args`` wins)."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


def _execute(argv):
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")  # patches lm-eval's CLI action and HarnessCLI.execute
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(argv)
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


BASE = ["run", "--model", "rag-none", "--tasks", "wiki_lm_bm25", "--limit", "1"]


@pytest.mark.parametrize("flags, line", [
    (["--batch_size", "0"], "--model rag-none: model argument batch_size='0' is invalid: --batch_size (batch_size=) must "
                            "be a whole number >= 1, 'auto' or 'auto:N', got '0'"),
    (["--batch_size", "2.5"], "--model rag-none: model argument batch_size='2.5' is invalid"),
    (["--max_batch_size", "0"], "--model rag-none: model argument max_batch_size=0 is invalid: expected an integer >= 1"),
    (["--device", "gpu"], "--model rag-none: model argument device='gpu' is invalid: expected a device torch knows"),
])
def test_lm_evals_own_flags_are_checked_before_lm_eval_builds_anything(flags, line):
    cli, args, ran = _execute([*BASE, *flags])
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert str(err.value).startswith(line) and not ran
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval


def test_good_flags_and_a_model_args_value_that_overrides_them_pass():
    for flags in (["--batch_size", "4", "--device", "cpu"], ["--batch_size", "auto:4"],
                  ["--model_args", "batch_size=2", "--batch_size", "0"]):  # --model_args wins, as in the model
        cli, args, ran = _execute([*BASE, *flags])
        cli.execute(args)
        assert len(ran) == 1, flags


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_output_path_is_refused(value):
    """``--output_path "$OUT"`` with OUT unset: lm-eval saves results only for a non-empty path, so the run's results
    were printed and lost (its own refusal comes only with --log_samples)."""
    cli, args, ran = _execute([*BASE, "--output_path", value])
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert str(err.value) == ("--output_path is empty (an unset shell variable?): lm-eval would save no results; give a "
                              "folder, or leave the option out to print them only") and not ran
