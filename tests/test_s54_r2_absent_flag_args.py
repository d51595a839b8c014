"""``config_differences`` (check's run-key NOTE, check's and report's missing-cell lines, run's other-inputs summary)
names a model argument one side does not give with the value it took (s54 f2, 92fd925). For ``batch_size`` and
``device`` that is not the method's default: the runner hands the model the config's own ``batch_size`` / ``device``
(the spec's shared ones) as lm-eval's ``--batch_size`` / ``--device`` (``_lm_eval_flags``), which the model takes for a
model argument not given. A spec that moved ``batch_size: 4`` from a method's ``model_args`` to its shared
``batch_size`` (both runs at 4) read ``model_args[batch_size] 4 -> (absent: default 1)``, and ``device: cuda`` so moved
``model_args[device] cuda -> (absent: default cpu)`` (/work/scratch/s54/r2/probe_defaults.py, probe_defaults.txt)."""

from __future__ import annotations

from leaderboards.runner import config_differences
from tokrag_model.args import merge_lm_eval_flags

SMOL = {"pretrained": "smollm2-135m-instruct"}


def test_an_absent_batch_size_or_device_is_the_configs_own():
    old = {"model": "rag-standard", "batch_size": 4, "device": "cuda", "model_args": {**SMOL, "batch_size": 4, "device": "cuda"}}
    new = {"model": "rag-standard", "batch_size": 4, "device": "cuda", "model_args": SMOL}
    # what the run gives the model for them: the config's batch_size / device (lm-eval's flags), not 1 / cpu
    given = merge_lm_eval_flags("rag-standard", dict(new["model_args"]), {"batch_size": 4, "device": "cuda"}, warn=False)
    assert (given["batch_size"], given["device"]) == (4, "cuda")
    assert config_differences(old, new) == ["model_args[batch_size] 4 -> (absent: default 4)",  # was default 1
                                            "model_args[device] cuda -> (absent: default cuda)"]  # was default cpu
    assert config_differences(new, old) == ["model_args[batch_size] (absent: default 4) -> 4",
                                            "model_args[device] (absent: default cuda) -> cuda"]
    # a config without its own device (null: no --device) leaves the method's default; other arguments are the method's
    bare = {"model": "rag-cad", "batch_size": 2, "device": None, "model_args": SMOL}
    assert config_differences(bare, {**bare, "model_args": {**SMOL, "device": "cpu", "batch_size": 2, "alpha": 2.0}}) == [
        "model_args[alpha] (absent: default 1.0) -> 2.0", "model_args[batch_size] (absent: default 2) -> 2",
        "model_args[device] (absent: default cpu) -> cpu"]
