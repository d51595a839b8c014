"""``lm_eval.simple_evaluate(model=<tokrag method>, model_args=...)`` called from Python ran tokrag's pre-load task
checks (``_lmeval_hook._python_run_checks``: lm-eval's task index, the tasks' data checks) before lm-eval built the
model, so a model argument the model refuses (``pretrained=`` empty or blank, ``dtype=float64``) came out only after
them: 25-37 s into the call (/work/scratch/s51/r3/probe_simple.py, probe_simple.txt), or behind a data error of a task.
``lm_eval``'s CLI refuses them before anything is built (``check_run_command``, 88d2acc); now Python's call does too
(:func:`tokrag_model._lmeval_hook.check_model_arguments`, before the task manager is built).
"""

from __future__ import annotations

import importlib

import pytest

from retrieval.errors import ConfigError

LINE = ("model argument pretrained= is required: pass a local folder with config.json and weights "
        "(pretrained=/path/to/model), a hub id (org/name), or an offline alias (gemma-3-270m, smollm2-135m-instruct)")


importlib.import_module("tokrag_model")  # registers the models; the start-up hook wraps simple_evaluate


class TasksSetUp(BaseException):
    """lm-eval's task manager was built: the task set-up began (a BaseException: no check may swallow it)."""


@pytest.fixture
def no_task_set_up(monkeypatch):
    import lm_eval.tasks

    def built(*args, **kwargs):
        raise TasksSetUp

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", built)


@pytest.mark.parametrize("model,margs,line", [
    ("tokrag", "pretrained=", LINE),
    ("rag-standard", "k=2,pretrained= ", LINE),
    ("tokrag", {"pretrained": "  "}, LINE),
    ("rag-cad", "dtype=float64", "--model rag-cad: model argument dtype='float64' is invalid: expected one of ['auto', "
     "'bf16', 'bfloat16', 'float', 'float16', 'float32', 'fp16', 'fp32', 'half'], got 'float64' "
     "(float32 | bfloat16 | float16 | auto)"),
])
def test_a_refused_model_argument_stops_simple_evaluate_before_the_tasks(no_task_set_up, model, margs, line):
    import lm_eval

    with pytest.raises(ConfigError) as err:  # was: TasksSetUp (the task checks first, the model's refusal after them)
        lm_eval.simple_evaluate(model=model, model_args=margs, tasks=["wiki_lm_bm25"], limit=1)
    assert str(err.value) == line


@pytest.mark.parametrize("margs", ["pretrained=smollm2-135m-instruct", "pretrained=./no-such-folder", "k=2", "", None])
def test_other_model_arguments_go_on_to_the_tasks(no_task_set_up, margs):
    """A model, a path (the load's to report), the default: the task set-up begins as before."""
    import lm_eval

    with pytest.raises(TasksSetUp):
        lm_eval.simple_evaluate(model="tokrag", model_args=margs, tasks=["wiki_lm_bm25"], limit=1)
