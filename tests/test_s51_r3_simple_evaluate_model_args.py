"""``lm_eval.simple_evaluate(model=<tokrag method>, model_args=...)`` called from Python ran tokrag's pre-load task
checks (``_lmeval_hook._python_run_checks``: lm-eval's task index, the tasks' data checks) before lm-eval built the
model, so a model argument the model refuses (``pretrained=`` empty or blank, ``dtype=float64``) came out only after
them: 25-37 s into the call (/work/scratch/s51/r3/probe_simple.py, probe_simple.txt), or behind a data error of a task.
``lm_eval``'s CLI refuses them before anything is built (``check_run_command``, 88d2acc); now Python's call does too
(:func:`tokrag_model._lmeval_hook.check_model_arguments`, before the task manager is built). ``lm_eval run --config FILE``
without ``--model_args``: the check read no ``model_args`` (lm-eval takes the file's), so they were refused ~35 s in,
exit 1; now the file's are checked (exit 2, 5.5 s).
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


def _run_config(tmp_path, model_args, argv=()):
    """lm-eval's CLI parse of ``run --config FILE`` (model tokrag, the file's ``model_args``), its ``run`` replaced by a
    recorder: -> (the error check_run_command raised, or None; whether lm-eval's run was reached)."""
    import yaml

    importlib.import_module("tokrag_model._lmeval_hook")  # (patches lm-eval's CLI action and HarnessCLI.execute)
    from lm_eval._cli import HarnessCLI

    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"model": "tokrag", "model_args": model_args, "tasks": ["wiki_lm_bm25"],
                                      "limit": 1}), encoding="utf-8")
    cli = HarnessCLI()
    args = cli._parser.parse_args(["run", "--config", str(config), *argv])
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    try:
        cli.execute(args)
    except ConfigError as exc:
        assert getattr(exc, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval
        return str(exc), bool(ran)
    return None, bool(ran)


@pytest.mark.parametrize("model_args,line", [
    ({"pretrained": ""}, LINE),
    ("pretrained=,k=3", LINE),
    ({"dtype": "float64"}, "--model tokrag: model argument dtype='float64' is invalid: expected one of ['auto', 'bf16', "
     "'bfloat16', 'float', 'float16', 'float32', 'fp16', 'fp32', 'half'], got 'float64' (float32 | bfloat16 | float16 | auto)"),
])
def test_the_config_files_model_args_are_checked_before_lm_eval_sets_up(tmp_path, model_args, line):
    """lm_eval run --config FILE: the file's model_args were not checked (the model refused them ~35 s in, exit 1:
    /work/scratch/s51/r3/config_proof.sh, config_old.txt / config_new.txt)."""
    assert _run_config(tmp_path, model_args) == (line, False)


def test_the_command_lines_model_args_replace_the_config_files(tmp_path):
    """lm-eval takes --model_args instead of the file's (not merged): the file's empty pretrained is not used."""
    assert _run_config(tmp_path, {"pretrained": ""}, ["--model_args", "pretrained=smollm2-135m-instruct"]) == (None, True)
    assert _run_config(tmp_path, {"pretrained": "smollm2-135m-instruct", "k": 2}) == (None, True)
