"""``lm_eval --model tokrag --model_args pretrained=`` (empty or blank, alone or among other arguments) was refused only
when lm-eval built the model, after its task set-up (~28 s into the run, exit 1); the leaderboard's pre-run check
(:func:`leaderboards.runner.check_cell_args`) already refused it before its first cell. Now ``lm_eval``'s command-line
check (:func:`tokrag_model._lmeval_hook.check_run_command`) refuses it with the same line, before lm-eval builds
anything (exit 2). /work/scratch/s51/f3/pretrained_proof.sh: 27-29 s before, 8-10 s after (rc 1 -> 2).
"""

from __future__ import annotations

import importlib

import pytest

from retrieval.errors import ConfigError

LINE = ("model argument pretrained= is required: pass a local folder with config.json and weights "
        "(pretrained=/path/to/model), a hub id (org/name), or an offline alias (gemma-3-270m, smollm2-135m-instruct)")


def _run_args(argv):
    """lm-eval's CLI parse of ``argv`` (through the start-up hook's patches), its ``run`` replaced by a recorder."""
    importlib.import_module("tokrag_model._lmeval_hook")  # (patches lm-eval's CLI action and HarnessCLI.execute)
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(argv)
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


@pytest.mark.parametrize("model,margs", [
    ("tokrag", "pretrained="),
    ("tokrag", "pretrained=,k=3"),
    ("rag-standard", "k=2,pretrained= "),
    ("rag-selfrag-filter", "pretrained=   ,k=1"),
])
def test_empty_or_blank_pretrained_is_refused_before_lm_eval_sets_up(model, margs) -> None:
    cli, args, ran = _run_args(["run", "--model", model, "--tasks", "wiki_lm_bm25", "--limit", "1",
                                "--model_args", margs])
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert not ran  # nothing of lm-eval's run started
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval
    assert str(err.value) == LINE


def test_a_missing_folder_is_left_to_the_load(tmp_path, monkeypatch) -> None:
    """Only the empty value is refused here; a path is the load's (tests that prove an earlier check fired use one)."""
    monkeypatch.chdir(tmp_path)
    cli, args, ran = _run_args(["run", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--model_args",
                                "pretrained=./nowhere"])
    cli.execute(args)
    assert ran == [args]


@pytest.mark.parametrize("margs", ["pretrained=smollm2-135m-instruct", "pretrained=tokrag-test/not-cached-anywhere",
                                   "k=2"])
def test_an_alias_a_hub_id_or_the_default_pass(margs, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cli, args, ran = _run_args(["run", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--model_args", margs])
    cli.execute(args)  # a hub id not in the cache is for the load to report
    assert ran == [args]


def test_other_models_keep_lm_eval_handling() -> None:
    cli, args, ran = _run_args(["run", "--model", "hf", "--tasks", "wiki_lm_bm25", "--model_args", "pretrained="])
    cli.execute(args)
    assert ran == [args] and args.model_args == {"pretrained": ""}
