"""s61 rt (read-through of e1's ea77ed4 and d1's 5b9ae7b together): a method's ``specific: {batch_size: 2}`` under the
spec's ``batch_size: 4`` is its printed deviation (d1), the one way a spec gives a method its own batch size or device
(``model_args`` refuses both). Yet building its model logged ``tokrag_model.args.merge_lm_eval_flags``'s WARNING
``--model ...ToyLM: batch_size=4 (lm-eval's --batch_size, or a leaderboard spec's shared batch_size) is overridden by
model_args batch_size=2`` (measured on fea74b6's tree, ToyLM spec), naming ``model_args``, where the spec's load refuses
it. Now one INFO line names the method's ``specific``."""

from __future__ import annotations

import json
import logging

from leaderboard_helpers import FIX, TOY, run_toy_spec


def test_a_specific_batch_size_is_logged_as_the_methods_deviation(tmp_path, caplog):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": {"batch_size": 2}}]
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 2, "batch_size": 4}
    with caplog.at_level(logging.INFO):
        spec, runs = run_toy_spec(tmp_path, tasks=["toy_qa"], limit=2, methods=methods, extra={"shared": shared})
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "overridden by model_args" in m]
    assert [m for m in messages if "specific" in m] == [
        "cell none/toy_qa/seed1: method none's specific batch_size=2 over the contract's batch_size=4 (its printed deviation)"]
    sizes = sorted(json.loads((d.parent / "results.json").read_text(encoding="utf-8"))["config"]["batch_size"]
                   for d in runs.glob("*/DONE"))
    assert sizes == [2, 4]  # the method's own, the contract's: the model still got its specific value
