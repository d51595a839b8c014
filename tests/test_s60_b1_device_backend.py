"""A ``--device`` of a type torch knows but this machine lacks, other than cuda/mps (``xpu``, ``npu``, ``hpu``,
``meta``), is refused before the load (s60 b1, breaker): ``lm_eval --model rag-standard ... --device xpu`` passed the
argument check (``torch.device('xpu')`` parses), loaded the weights and ended in ``AssertionError: Torch not compiled
with XPU enabled`` (a traceback, exit 1, 12 s). ``tokrag_model.args.to_device`` now asks the backend
(``torch.<type>.is_available()``); the model's own argument check runs before the load
(``tokrag_model._lmeval_hook.check_model_arguments``)."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load


def _no_xpu(monkeypatch, there: bool = False):
    import torch

    monkeypatch.setattr(torch.xpu, "is_available", lambda: there)


def test_to_device_refuses_an_unavailable_backend(monkeypatch):
    from tokrag_model.args import to_device

    _no_xpu(monkeypatch)
    with pytest.raises(ValueError) as exc:
        to_device("xpu")
    assert str(exc.value) == ("torch.xpu is not available on this machine (the weights would load and then fail to "
                              "move there); use cpu")
    with pytest.raises(ValueError) as exc:  # no torch.meta to ask: never a device to compute on (s60 r2's wording)
        to_device("meta")
    assert str(exc.value) == ("the meta device holds tensors without data, so the model could not compute anything; "
                              "use cpu")


def test_available_backends_and_the_usual_devices_pass(monkeypatch):
    from tokrag_model.args import to_device

    _no_xpu(monkeypatch, there=True)
    assert to_device(" xpu:0 ") == "xpu:0"
    assert [to_device(d) for d in ("cpu", "cpu:0", "cuda", "cuda:1", "mps")] == ["cpu", "cpu:0", "cuda", "cuda:1", "mps"]


def test_cli_refuses_before_the_load(monkeypatch):
    from tokrag_model.eval_cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    _no_xpu(monkeypatch)
    with pytest.raises(ConfigError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--tasks",
              "nq_oracle_bm25", "--limit", "1", "--device", "xpu"])
    assert str(exc.value).startswith("--model rag-standard: model argument device='xpu' is invalid: torch.xpu is not "
                                     "available on this machine"), str(exc.value)
