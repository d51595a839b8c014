"""What a leaderboard cell records about its generation (u3's F6 and F12): results.json's
``config.tokrag_resolved_config.max_gen_toks`` and provenance.json's ``model_resolved_config.max_gen_toks`` said 256,
the model argument's default, while the task's ``max_gen_toks: 4`` acted; now ``max_gen_toks_default`` (256) and
``config.tokrag_generation`` (the budget, stop strings and sampling each task's generation-kwargs group was decoded
with). lm-eval's ``config.model_args`` was null (the runner passes a built model); now the cell's arguments as
lm-eval's ``k=v`` text. Each sample's trace says why the generation stopped (``stop_reason``)."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboard_helpers import REPO, write_spec


@pytest.mark.slow
def test_a_cell_records_the_budget_it_used_its_model_args_and_each_stop_reason(tmp_path):
    from leaderboards.runner import cell_keys, run_spec
    from leaderboards.spec import load_spec

    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tests" / "fixtures" / "tokrag_model_task", tasks / "mini",
                    ignore=shutil.ignore_patterns("__pycache__"))
    methods = [{"name": "rag-standard", "model": "rag-standard"}]
    spec = load_spec(write_spec(tmp_path, name="f4", include=tasks, tasks=["tokrag_model_mini"], limit=2,
                                methods=methods,
                                extra={"reference": "rag-standard",
                                       "shared": {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 2},
                                                  "limit": 2}}))
    run_spec(spec, tmp_path / "runs", progress=False)
    [(_, key, _)] = cell_keys(spec)
    cell = tmp_path / "runs" / key
    config = json.loads((cell / "results.json").read_text())["config"]
    rc = config["tokrag_resolved_config"]
    assert rc["max_gen_toks_default"] == 256 and "max_gen_toks" not in rc  # was max_gen_toks: 256
    assert config["tokrag_generation"] == [{  # the task's generation_kwargs: until "\n", max_gen_toks 4
        "task": "tokrag_model_mini", "gen_kwargs": {"until": ["\n"], "max_gen_toks": 4, "do_sample": False},
        "until": ["\n", "<|im_end|>"], "max_gen_toks": 4, "do_sample": False}]
    assert config["model_args"] == "k=2,pretrained=smollm2-135m-instruct"  # was None
    prov = json.loads((cell / "provenance.json").read_text())["model_resolved_config"]
    assert prov["max_gen_toks_default"] == 256 and "max_gen_toks" not in prov
    assert {k: v for k, v in prov.items() if k != "max_gen_toks_default"} == {
        k: v for k, v in rc.items() if k in prov and k != "max_gen_toks_default"}
    samples = [json.loads(line) for line in (cell / "samples_tokrag_model_mini.jsonl").read_text().splitlines()]
    reasons = [s["arguments"][0][2]["tokrag_trace"]["stop_reason"] for s in samples]
    assert reasons == ["budget", "budget"]  # ' The first Nobel Prize', ' 202': cut at 4 tokens, no "\n" yet
    assert json.loads((cell / "cost.json").read_text())["generated_tokens"] == 2 * 4  # both ran the whole budget
