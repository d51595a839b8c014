"""``lm_eval --model rag-standard --tasks nq_oracle_gold --device cuda`` on a machine without CUDA was refused by the
model at its build, in lm-eval's run: one line but exit status 1 (s54 b3 logs/devcuda.log), where ``--device gpu`` and
the other argument errors of a tokrag method's run are refused before lm-eval builds anything, exit 2. The start-up
hook's model-argument check now asks :func:`tokrag_model.loading.resolve_device` too (lm-eval's default ``cuda:0``
still falls back to CPU)."""

from __future__ import annotations

import pytest
import torch

from retrieval.errors import ConfigError


def _execute(argv):
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(["run", "--model", "rag-standard", "--tasks", "nq_oracle_gold", "--limit", "1", *argv])
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has CUDA")
@pytest.mark.parametrize("flags, dev", [(["--device", "cuda"], "cuda"), (["--model_args", "device=cuda:1"], "cuda:1")])
def test_a_cuda_device_this_machine_lacks_is_refused_before_lm_eval_builds_anything(flags, dev):
    cli, args, ran = _execute(flags)
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert str(err.value) == (f"--device {dev} (or device={dev} in --model_args): torch.cuda.is_available() is False on "
                              "this machine (CPU build of torch?); use --device cpu") and not ran
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval


def test_lm_evals_default_device_and_cpu_pass():
    for flags in ([], ["--device", "cpu"]):  # no --device: lm-eval's default cuda:0 falls back to CPU
        cli, args, ran = _execute(flags)
        cli.execute(args)
        assert len(ran) == 1, flags


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has CUDA")
def test_a_typed_cuda0_this_machine_lacks_is_refused():
    # s60 b1 (22413ae): lm-eval's CLI gives None for a --device not typed, so a typed cuda:0 is told apart from the
    # default and refused as cuda and cuda:1 are (it ran on CPU without a word); until then this test let it pass
    cli, args, ran = _execute(["--device", "cuda:0"])
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert str(err.value) == ("--device cuda:0 (or device=cuda:0 in --model_args): torch.cuda.is_available() is False "
                              "on this machine (CPU build of torch?); use --device cpu, or leave --device out to run on "
                              "CPU") and not ran
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval
