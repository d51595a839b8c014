"""``lm_eval --model <tokrag method> --model_args pretrained=<offline alias>,revision=x`` was refused only at the load
(:func:`tokrag_model.loading.check_revision`, from ``resolve_pretrained``), after lm-eval's task set-up (~30 s, s53 f5's
note). ``lm_eval``'s command-line check (:func:`tokrag_model._lmeval_hook.check_run_command`, through
``check_model_arguments``, also run for ``lm_eval.simple_evaluate`` from Python) now refuses it with the load's line,
before lm-eval builds anything (exit 2)."""

from __future__ import annotations

import importlib

import pytest

from retrieval.errors import ConfigError


def _line(alias: str, hub: str, revision: str) -> str:
    return (f"pretrained={alias!r} is an offline alias, whose package pins its weights: revision={revision!r} has no "
            f"effect (it selects a version of a hub id); drop revision, or pass pretrained={hub} with "
            f"revision={revision!r} for that version of the hub model")


def _run_args(argv):
    """lm-eval's CLI parse of ``argv`` (through the start-up hook's patches), its ``run`` replaced by a recorder."""
    importlib.import_module("tokrag_model._lmeval_hook")
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(argv)
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


@pytest.mark.parametrize("model,margs,alias", [
    ("tokrag", "pretrained=smollm2-135m-instruct,revision=v0.2", "smollm2-135m-instruct"),
    ("rag-standard", "revision=main,k=2,pretrained=gemma-3-270m", "gemma-3-270m"),
    ("rag-cad", "revision=main", "smollm2-135m-instruct"),  # the default pretrained is the SmolLM2 alias
])
def test_a_revision_with_an_alias_is_refused_before_lm_eval_sets_up(model, margs, alias) -> None:
    from tokrag_model.loading import ALIASES

    cli, args, ran = _run_args(["run", "--model", model, "--tasks", "wiki_lm_bm25", "--limit", "1",
                                "--model_args", margs])
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert not ran  # was: lm-eval's run started (task set-up), the load refused it ~30 s later
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval
    revision = "v0.2" if "v0.2" in margs else "main"
    assert str(err.value) == _line(alias, ALIASES[alias]["hub_id"], revision)


@pytest.mark.parametrize("margs", ["pretrained=smollm2-135m-instruct", "pretrained=HuggingFaceTB/SmolLM2-135M-Instruct,"
                                   "revision=v0.2"])
def test_an_alias_without_revision_and_a_hub_id_with_one_pass(margs, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cli, args, ran = _run_args(["run", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--model_args", margs])
    cli.execute(args)
    assert ran == [args]


def test_python_callers_are_refused_before_the_task_manager(monkeypatch) -> None:
    """``lm_eval.simple_evaluate(model="tokrag", model_args=...)``: the same line, before any task is indexed."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from tokrag_model.loading import ALIASES

    built = []
    monkeypatch.setattr(TaskManager, "__init__", lambda self, *a, **k: built.append(1))
    with pytest.raises(ConfigError) as err:
        lm_eval.simple_evaluate(model="tokrag", model_args="pretrained=gemma-3-270m,revision=v1", tasks=["wiki_lm_bm25"])
    assert str(err.value) == _line("gemma-3-270m", ALIASES["gemma-3-270m"]["hub_id"], "v1")
    assert built == []
