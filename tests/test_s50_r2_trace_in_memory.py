"""leaderboards.traces read the samples of ``lm_eval.simple_evaluate(..., log_samples=True)`` in memory (s50 r2).

There a request's arguments are the Instance's tuple (``[(question, gen_kwargs, {"tokrag_trace": ...})]``); the
samples file written to disk has lists. ``request_arguments`` took only lists, so ``sample_trace`` and
``sample_gen_kwargs`` returned None and ``trace_columns`` gave {} on an in-memory sample. SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import json

import pytest

from leaderboards.traces import request_arguments, sample_gen_kwargs, sample_trace, trace_columns


def test_tuple_arguments_are_read_as_lists():
    trace = {"method": "rag-replug", "passages": ["a", "b"], "weights": [0.75, 0.25]}
    sample = {"arguments": [("Q: where?", {"until": ["\n"], "max_gen_toks": 2}, {"tokrag_trace": trace})]}
    assert request_arguments(sample) == [["Q: where?", {"until": ["\n"], "max_gen_toks": 2}, {"tokrag_trace": trace}]]
    assert sample_trace(sample) is trace
    assert sample_gen_kwargs(sample) == {"until": ["\n"], "max_gen_toks": 2}
    assert trace_columns([sample])["top1_weight"] == {"mean": 0.75, "n": 1}


def test_a_real_in_memory_sample_reads_as_its_json_form(backbone, monkeypatch):
    import lm_eval
    import lm_eval.tasks

    from tokrag_model.methods import load

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lm = load("rag-replug").with_backbone(backbone, device="cpu")
    out = lm_eval.simple_evaluate(model=lm, tasks=["nq_oracle_bm25"], limit=1, gen_kwargs="max_gen_toks=2",
                                  log_samples=True, bootstrap_iters=0,
                                  task_manager=lm_eval.tasks.TaskManager(include_defaults=False))
    (sample,) = out["samples"]["nq_oracle_bm25"]
    (request,) = sample["arguments"]
    assert isinstance(request, tuple)  # lm-eval 0.4.13 logs Instance.args as they are
    on_disk = json.loads(json.dumps(sample, default=str))  # the samples file's form: lists
    trace = sample_trace(sample)
    assert trace is request[-1]["tokrag_trace"]  # the old code: None
    assert trace == sample_trace(on_disk) and trace["method"] == "rag-replug" and len(trace["passages"]) == 5
    assert sample_gen_kwargs(sample) == sample_gen_kwargs(on_disk) == {
        "until": ["\n\n", "Question:"], "max_gen_toks": 2, "do_sample": False, "temperature": 0.0}
    cols = trace_columns([sample])  # the old code: {}
    assert cols == trace_columns([on_disk])
    assert cols["top1_weight"]["n"] == 1 and cols["top1_weight"]["mean"] == pytest.approx(0.562, abs=2e-3)
    assert cols["weight_entropy"]["mean"] == pytest.approx(1.2539, abs=2e-3)
