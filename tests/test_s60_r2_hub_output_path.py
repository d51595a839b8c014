"""``--hf_hub_log_args output_path=DIR`` of a tokrag method's run reaches the model load (s60 r2, review of b1's
84b548f): lm-eval's ``EvaluationTracker`` takes ``output_path`` (lm-eval's run sets it from ``--output_path``, and
without that flag the tracker writes the results under the one given here), but b1's ``check_result_loggers`` left
it out of the keys it knows, so the run was refused before the load with ``--hf_hub_log_args: unknown key
'output_path'; lm-eval's EvaluationTracker takes hub_results_org, ...``, and a push with it (and no
``--output_path``) was refused as writing nothing."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--tasks", "nq_oracle_bm25",
        "--limit", "1", "--device", "cpu"]


class Reached(Exception):
    pass


@pytest.fixture
def at_load(monkeypatch):
    def reached(*args, **kwargs):
        raise Reached(kwargs.get("model"))

    stop_at_model_load(monkeypatch, reached)


def _main(args: list[str]) -> None:
    from tokrag_model.eval_cli import main

    main([*BASE, *args])


def test_output_path_key_reaches_the_load(at_load, tmp_path):
    with pytest.raises(Reached) as got:
        _main(["--hf_hub_log_args", f"output_path={tmp_path / 'out'}"])
    assert got.value.args == ("rag-standard",)


def test_push_with_the_output_path_key(monkeypatch):
    from tokrag_model._lmeval_hook import check_result_loggers

    monkeypatch.setenv("HF_TOKEN", "hf_x")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

    class Cfg:
        wandb_args = trackio_args = wandb_config_args = None
        output_path = None
        log_samples = False
        hf_hub_log_args = {"output_path": "res", "push_results_to_hub": True, "hub_results_org": "me"}

    assert check_result_loggers(Cfg()) is None  # lm-eval writes under res and pushes it
    Cfg.hf_hub_log_args = {"push_results_to_hub": True, "hub_results_org": "me"}  # neither: still refused
    with pytest.raises(ConfigError) as exc:
        check_result_loggers(Cfg())
    assert str(exc.value) == ("--hf_hub_log_args push_results_to_hub=True: lm-eval pushes the files it writes under "
                              "--output_path, and without it writes and pushes nothing; add --output_path DIR")


def test_unknown_key_still_refused(at_load):
    with pytest.raises(ConfigError) as exc:
        _main(["--hf_hub_log_args", "output_pth=x"])
    assert str(exc.value).startswith("--hf_hub_log_args: unknown key 'output_pth' (did you mean 'output_path'?); "
                                     "lm-eval's EvaluationTracker takes hub_results_org, "), str(exc.value)
    assert str(exc.value).endswith(", gated, output_path"), str(exc.value)
