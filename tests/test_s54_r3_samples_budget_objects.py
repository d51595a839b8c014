"""Review of s54 b3's --samples check (dbb1f05) and generation-budget check (c72b12d) (s54 r3).

* ``--samples '{"task": [0, 1.0]}'`` was refused ("is not a list of document indices ... lm-eval would select no
  document"), while lm-eval keeps document ``i`` when ``i in samples`` (``1.0 == 1``): before dbb1f05 it evaluated
  documents 0 and 1, as ``[0, 1]`` does. ``--samples '{}'`` passed, and lm-eval evaluated every document (toy_qa: 24
  of 24), the defect dbb1f05 refuses for an empty list.
* ``lm_eval.simple_evaluate(model=<tokrag object built with max_length=16384>, gen_kwargs={"max_gen_toks": 9000})`` (as
  the leaderboard runner calls it) was refused: "leaves the prompt no room in max_length (the model's context, at
  most 8192 tokens)". A model object is checked as its ``METHOD`` without ``model_args``, so the check took the
  8192 cap, not the object's own ``max_length``; before c72b12d the run answered. Named models keep the check.
"""

from __future__ import annotations

import lm_eval
import pytest
from lm_eval.tasks import TaskManager

from retrieval.errors import ConfigError
from tests.leaderboard_helpers import FIX


@pytest.fixture(scope="module")
def manager():
    return TaskManager()


def _check(manager, **kw):
    from tasks.precheck import check_run_arguments

    check_run_arguments(manager, ["nq_oracle_gold"], model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                        **kw)


def test_whole_number_floats_are_document_indices_and_fractions_are_not(manager):
    _check(manager, samples={"nq_oracle_gold": [0, 1.0, 7.0]})
    with pytest.raises(ConfigError) as err:
        _check(manager, samples={"nq_oracle_gold": [0, 1.5]})
    assert str(err.value) == ("--samples: task nq_oracle_gold: [0, 1.5] is not a list of document indices (whole "
                              "numbers >= 0, e.g. [0, 1]); lm-eval would select no document or fail after the model load")
    for bad in ([-1.0], [True], [float("nan")], ["1"]):
        with pytest.raises(ConfigError):
            _check(manager, samples={"nq_oracle_gold": bad})


def test_an_empty_samples_object_is_refused(manager):
    with pytest.raises(ConfigError) as err:
        _check(manager, samples={})
    assert str(err.value) == ("--samples {}: names no task, and lm-eval would evaluate every document of the run's tasks "
                              "(nq_oracle_gold); name each task with its document indices, e.g. --samples "
                              "'{\"nq_oracle_gold\": [0, 1]}', or drop --samples")


def test_a_model_object_is_not_held_to_the_8192_cap_but_a_named_model_is(manager):
    from tokrag_model._lmeval_hook import check_loaded_run

    # simple_evaluate(model=lm): the hook checks the object as its METHOD, model_args None, loaded=True
    check_loaded_run(manager, ["nq_oracle_gold"], model="rag-standard", model_args=None,
                     gen_kwargs={"max_gen_toks": 9000}, loaded=True)
    with pytest.raises(ConfigError, match=r"max_gen_toks=9000 \(task nq_oracle_gold\) leaves the prompt no room"):
        check_loaded_run(manager, ["nq_oracle_gold"], model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                         gen_kwargs={"max_gen_toks": 9000})


def test_simple_evaluate_runs_an_object_with_a_long_context_and_float_sample_indices(backbone, monkeypatch):
    """Real runs over SmolLM2-135M-Instruct (CPU) on the fixture task toy_qa (until a newline)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from tokrag_model.methods import MODELS

    def run(lm, **kw):
        tm = TaskManager(include_path=str(FIX / "tasks"), include_defaults=False)
        out = lm_eval.simple_evaluate(model=lm, tasks=["toy_qa"], task_manager=tm, bootstrap_iters=0, log_samples=True,
                                      **kw)
        return out, out["samples"]["toy_qa"]

    lm = MODELS["rag-standard"].with_backbone(backbone, device="cpu", max_length=16384)
    out, samples = run(lm, gen_kwargs={"max_gen_toks": 9000}, limit=1)
    assert lm.max_length == 16384
    assert [s["resps"][0][0] for s in samples] == [" red"]
    assert out["configs"]["toy_qa"]["generation_kwargs"]["max_gen_toks"] == 9000

    lm = MODELS["rag-standard"].with_backbone(backbone, device="cpu")
    out, samples = run(lm, samples={"toy_qa": [0, 1.0]})
    assert out["n-samples"]["toy_qa"] == {"original": 24, "effective": 2}
    assert [s["doc"]["question"] for s in samples] == ["What is the colour of thing 0?", "What is the colour of thing 1?"]
    assert [s["resps"][0][0] for s in samples] == [" red", " red"]


@pytest.mark.parametrize("value, shown", [("{}", "{}"), ("[]", "[]"), ("", '""')])
def test_an_empty_samples_flag_is_refused_before_lm_eval_drops_it(value, shown):
    """lm-eval's CLI parses ``--samples '{}'`` to ``{}`` and ``EvaluatorConfig.from_cli`` drops a falsy value, so the
    run had no --samples: ``lm_eval --model rag-standard --tasks nq_oracle_gold --samples '{}'`` ran all 2,383
    questions (killed after 200, 11 min: /work/scratch/s54/r3/cli_samples_empty.log)."""
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(["run", "--model", "rag-standard", "--tasks", "nq_oracle_gold", "--samples", value])
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert str(err.value) == (f"--samples {shown} is empty, and lm-eval drops it and evaluates every document of the "
                              "run's tasks; name each task with its document indices, e.g. --samples "
                              "'{\"nq_oracle_gold\": [0, 1]}', or drop --samples") and not ran
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval


def test_an_empty_samples_flag_with_a_limit_still_runs_the_limit():
    """lm-eval drops the empty value and evaluates --limit documents (2 here: cli_samples_empty_limit.log): left as is."""
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(["run", "--model", "rag-standard", "--tasks", "nq_oracle_gold", "--samples", "{}",
                                   "--limit", "2"])
    ran = []
    args.func = ran.append
    cli.execute(args)
    assert len(ran) == 1
