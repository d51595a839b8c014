"""lm-eval's ``--samples`` with a tokrag run was not checked before the model load (s54 b3). lm-eval 0.4.13 picks
documents only of the tasks ``--samples`` names (``samples.get(task_name)``) and only for a non-empty list
(``if samples:``), so ``lm_eval --model rag-standard --tasks nq_oracle_gold --samples '{"nq_oracle_bm25": [0, 1]}'``
(a task name off by one word) or ``'{"nq_oracle_gold": []}'`` evaluated all 2,383 questions of nq_oracle_gold (10 s a
question here, hours) where two were meant; a negative, fractional or text index, a value that is no list and text
that is neither JSON nor a file failed only after the model load, with a traceback. The start-up hook's pre-load check
(``check_loaded_run``, run by lm-eval's CLI and by ``lm_eval.simple_evaluate``) now refuses each in one line."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _check(manager, samples, tasks=("nq_oracle_gold",)):
    from tokrag_model._lmeval_hook import check_loaded_run

    check_loaded_run(manager, list(tasks), model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                     samples=samples)


ALL = ("lm-eval picks documents only of the tasks --samples names and would evaluate every document of the others: "
       "name the task as --tasks selects it")


@pytest.mark.parametrize("samples, line", [
    ({"nq_oracle_bm25": [0, 1]}, "--samples: 'nq_oracle_bm25' is not a task of this run (did you mean "
                                 f"'nq_oracle_gold'? its tasks: nq_oracle_gold); {ALL}"),
    ({"rag_qa": [0]}, f"--samples: 'rag_qa' is not a task of this run (its tasks: nq_oracle_gold); {ALL}"),
    ({"nq_oracle_gold": []}, "--samples: task nq_oracle_gold has an empty list, and lm-eval would evaluate every "
                             "document of it; list the document indices to evaluate (e.g. [0, 1]), or leave the task "
                             "out of --samples"),
    ("nq_oracle_gold:0,1", "--samples 'nq_oracle_gold:0,1': neither a JSON object of task names to document indices "
                           "nor a file holding one (lm-eval would fail after the model load); e.g. --samples "
                           "'{\"nq_oracle_gold\": [0, 1]}'"),
])
def test_samples_that_would_evaluate_every_document_or_fail_after_the_load_are_refused(manager, samples, line):
    with pytest.raises(ConfigError) as err:
        _check(manager, samples)
    assert str(err.value) == line


@pytest.mark.parametrize("value", [[-1], [0, 1.5], ["0"], [True], 3, {"0": 1}])
def test_indices_that_are_not_whole_numbers_from_zero_are_refused(manager, value):
    with pytest.raises(ConfigError) as err:
        _check(manager, {"nq_oracle_gold": value})
    assert str(err.value) == (f"--samples: task nq_oracle_gold: {value!r} is not a list of document indices (whole "
                              "numbers >= 0, e.g. [0, 1]); lm-eval would select no document or fail after the model load")


def test_indices_of_the_runs_tasks_pass(manager):
    _check(manager, {"nq_oracle_gold": [0, 5]})
    _check(manager, {"nq_open_bm25": [3], "webq_dense": [0]}, tasks=("rag_qa",))  # members of a group the run selects
    _check(manager, {"nq_oracle_gold": [1], "arc_easy": [0]}, tasks=("nq_oracle_gold", "arc_easy"))  # lm-eval's own
    _check(manager, None)


def test_simple_evaluate_refuses_it_before_the_model_is_built(monkeypatch):
    """From Python too: ``lm_eval.simple_evaluate`` runs the same check before it builds the model."""
    import lm_eval
    from lm_eval.api.registry import get_model

    built = []
    cls = get_model("rag-standard")
    monkeypatch.setattr(cls, "create_from_arg_obj", classmethod(lambda c, *a, **k: built.append(a) or 1 / 0))
    monkeypatch.setattr(cls, "create_from_arg_string", classmethod(lambda c, *a, **k: built.append(a) or 1 / 0))
    with pytest.raises(ConfigError, match=r"^--samples: 'nq_oracle_bm25' is not a task of this run"):
        lm_eval.simple_evaluate(model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                                tasks=["nq_oracle_gold"], samples={"nq_oracle_bm25": [0, 1]})
    assert built == []
