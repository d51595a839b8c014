"""``--device meta`` (or ``device=meta`` in ``--model_args``, or a leaderboard spec's ``device: meta``) is refused
for what it is (s60 r2, review of b1's ef912b5): b1's ``to_device`` asked ``torch.<type>.is_available()`` and, torch
having no ``torch.meta``, said ``torch.meta is not available on this machine (the weights would load and then fail
to move there)``: the meta device exists on every machine; it holds tensors without data, so nothing could be
computed. The refusal stays before the load; only its reason changes."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

WHY = "the meta device holds tensors without data, so the model could not compute anything; use cpu"


def test_to_device_meta():
    from tokrag_model.args import to_device

    for value in ("meta", " meta "):
        with pytest.raises(ValueError) as exc:
            to_device(value)
        assert str(exc.value) == WHY
    assert to_device("cpu") == "cpu"


def test_cli_line(monkeypatch):
    from tokrag_model.eval_cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    with pytest.raises(ConfigError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--tasks",
              "nq_oracle_bm25", "--limit", "1", "--device", "meta"])
    assert str(exc.value).startswith(f"--model rag-standard: model argument device='meta' is invalid: {WHY} ("), \
        str(exc.value)
