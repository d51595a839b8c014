"""An explicit ``--device cuda:0`` (or ``device=cuda:0`` in ``--model_args``, or ``device: cuda:0`` in the
``--config`` file) of a tokrag method's run on a machine without CUDA is refused before the load (s60 b1, breaker):
the model takes ``cuda:0`` for lm-eval's default (handed to every model when ``--device`` is not given) and fell back
to CPU without a word, while ``--device cuda`` and ``cuda:1`` were refused; lm-eval's CLI leaves ``args.device`` None
when the flag is not typed, so the command-line check tells the two apart. The default still runs on CPU."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

LINE = ("--device cuda:0 (or device=cuda:0 in --model_args): torch.cuda.is_available() is False on this machine (CPU "
        "build of torch?); use --device cpu, or leave --device out to run on CPU")


class Reached(Exception):
    pass


@pytest.fixture
def no_cuda(monkeypatch):
    import torch

    def reached(*args, **kwargs):
        raise Reached(kwargs.get("device"))

    stop_at_model_load(monkeypatch, reached)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _run(args: list[str]) -> None:
    from tokrag_model.eval_cli import main

    main(["--model", "rag-standard", "--tasks", "nq_oracle_bm25", "--limit", "1", *args])


@pytest.mark.parametrize("args", [
    ["--model_args", "pretrained=smollm2-135m-instruct", "--device", "cuda:0"],
    ["--model_args", "pretrained=smollm2-135m-instruct,device=cuda:0"],
    ["--model_args", "pretrained=smollm2-135m-instruct,device=cuda:0", "--device", "cpu"],  # model_args wins
])
def test_explicit_cuda0_refused(no_cuda, args):
    with pytest.raises(ConfigError) as exc:
        _run(args)
    assert str(exc.value) == LINE


def test_config_file_device(no_cuda, tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("device: cuda:0\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        _run(["--config", str(config), "--model_args", "pretrained=smollm2-135m-instruct"])
    assert str(exc.value) == LINE


@pytest.mark.parametrize("args", [
    ["--model_args", "pretrained=smollm2-135m-instruct"],  # no --device: lm-eval's default cuda:0, on CPU
    ["--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu"],
    ["--model_args", "pretrained=smollm2-135m-instruct,device=cpu", "--device", "cuda:0"],  # model_args' cpu wins
])
def test_default_and_cpu_reach_the_load(no_cuda, args):
    with pytest.raises(Reached):
        _run(args)
