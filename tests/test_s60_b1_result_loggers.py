"""lm-eval's result loggers of a tokrag method's run are checked before lm-eval builds them (s60 b1, breaker):
``--wandb_args`` without wandb was ``UnboundLocalError: cannot access local variable 'wandb'`` (a traceback),
``--trackio_args`` without trackio an ImportError traceback, an unknown ``--hf_hub_log_args`` key a TypeError
traceback, ``push_results_to_hub=True`` without HF_TOKEN lm-eval's ValueError traceback, and with HF_HUB_OFFLINE set
the whole run went by and ended in an ``OfflineModeIsEnabled`` traceback (exit 1, nothing pushed). Each is now
``tokrag_model._lmeval_hook.check_result_loggers``' one line, before the model load. Each CLI case runs ``tokrag
eval``'s entry in-process with ``lm_eval.simple_evaluate`` (where the model is built) replaced by a function that
fails the test if called."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--apply_chat_template", "--tasks", "nq_oracle_bm25", "--limit", "1"]


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    monkeypatch.delenv("HF_TOKEN", raising=False)


def _refused(args: list[str]) -> str:
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*BASE, *args])
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


def _online(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def test_wandb_args_without_wandb(no_model, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # not installed, whatever this machine has
    msg = _refused(["--wandb_args", "project=x"])
    assert msg == ("--wandb_args: the wandb package is not installed, so lm-eval cannot log the run to Weights & "
                   "Biases; pip install 'wandb>=0.13.6' (or lm_eval[wandb]), or drop --wandb_args"), msg


def test_trackio_args_without_trackio(no_model, monkeypatch):
    monkeypatch.setitem(sys.modules, "trackio", None)
    msg = _refused(["--trackio_args", "project=x"])
    assert msg.startswith("--trackio_args: the trackio package is not installed"), msg
    assert msg.endswith("pip install trackio (or lm_eval[trackio]), or drop --trackio_args"), msg


def test_hub_push_without_token(no_model, monkeypatch, tmp_path):
    _online(monkeypatch)
    msg = _refused(["--output_path", str(tmp_path), "--hf_hub_log_args", "hub_results_org=me,push_results_to_hub=True"])
    assert msg.startswith("--hf_hub_log_args push_results_to_hub=True: no Hugging Face token"), msg
    assert msg.endswith("set HF_TOKEN to a token with write access, or drop push_results_to_hub"), msg


def test_hub_push_offline(no_model, monkeypatch, tmp_path):
    """HF_HUB_OFFLINE=1 (the fixture's): lm-eval ran the whole evaluation, wrote the results, then raised
    OfflineModeIsEnabled from the push (exit 1)."""
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    msg = _refused(["--output_path", str(tmp_path), "--hf_hub_log_args", "hub_results_org=me,push_results_to_hub=True"])
    assert msg.startswith("--hf_hub_log_args push_results_to_hub=True: HF_HUB_OFFLINE is set, so the push to the hub "
                          "would fail after the whole run;"), msg
    assert list(tmp_path.iterdir()) == []


def test_hub_push_without_output_path_or_log_samples(no_model, monkeypatch, tmp_path):
    _online(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    msg = _refused(["--hf_hub_log_args", "hub_results_org=me,push_results_to_hub=True"])
    assert msg.endswith("without it writes and pushes nothing; add --output_path DIR"), msg
    msg = _refused(["--output_path", str(tmp_path), "--hf_hub_log_args", "hub_results_org=me,push_samples_to_hub=True"])
    assert msg == ("--hf_hub_log_args push_samples_to_hub=True: lm-eval pushes the samples it logs, and without "
                   "--log_samples logs none; add --log_samples"), msg


def test_hub_log_args_unknown_key(no_model):
    msg = _refused(["--hf_hub_log_args", "hub_results_orgg=me"])
    assert msg.startswith("--hf_hub_log_args: unknown key 'hub_results_orgg' (did you mean 'hub_results_org'?); "
                          "lm-eval's EvaluationTracker takes hub_results_org, "), msg


def test_what_passes(monkeypatch):
    """A push with token, hub reachable, --output_path and --log_samples passes, as do no loggers at all and
    hub arguments that push nothing (details_repo_name alone)."""
    from tokrag_model._lmeval_hook import check_result_loggers

    _online(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    cfg = SimpleNamespace(wandb_args={}, trackio_args={}, output_path="out", log_samples=True,
                          hf_hub_log_args={"hub_results_org": "me", "push_results_to_hub": True,
                                           "push_samples_to_hub": True})
    check_result_loggers(cfg)
    check_result_loggers(SimpleNamespace(wandb_args={}, trackio_args={}, hf_hub_log_args={}))
    monkeypatch.delenv("HF_TOKEN")
    check_result_loggers(SimpleNamespace(hf_hub_log_args={"details_repo_name": "d", "push_results_to_hub": False}))


def test_other_models_keep_lm_eval(monkeypatch):
    """For lm-eval's hf model the check does not run: lm-eval's own behaviour (here its UnboundLocalError)."""
    import lm_eval.config.evaluate_config as ec

    import tokrag_model  # noqa: F401  (the start-up hook's patches)

    monkeypatch.setitem(sys.modules, "wandb", None)
    cfg = ec.EvaluatorConfig(model="hf", tasks=["nq_oracle_bm25"], wandb_args={"project": "x"})
    cfg._validate_arguments()  # no ConfigError
    cfg = ec.EvaluatorConfig(model="rag-standard", tasks=["nq_oracle_bm25"], wandb_args={"project": "x"})
    with pytest.raises(ConfigError, match="^--wandb_args: the wandb package is not installed"):
        cfg._validate_arguments()


def test_wandb_config_args_without_wandb_args(no_model):
    """lm-eval builds its W&B logger only for --wandb_args: --wandb_config_args alone was ignored without a word."""
    msg = _refused(["--wandb_config_args", "lr=0.1"])
    assert msg == ("--wandb_config_args: lm-eval logs to Weights & Biases only with --wandb_args, and without it "
                   "ignores these; add --wandb_args project=NAME, or drop --wandb_config_args"), msg
