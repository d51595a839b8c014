"""s58 r6 (review of f2's 18e5813): ``tokrag analyze`` / ``calibrate`` refuse a ``--model-args`` key given twice with
two values also when a value holds a quote or an open bracket.

18e5813 checked the repeat as ``lm_eval`` splits ``--model_args`` (``split_top_level``: a quoted or bracketed stretch
is one item), but ``load_lm`` reads the option with lm-eval's ``simple_parse_args_string``, which cuts at every comma.
So ``pretrained=/m/o'brien/x,k=3,k=5`` (an apostrophe in a model folder) passed the check as one item, and the model
was built with k=5 without a word. No model is loaded here: ``load_lm`` is replaced by one that fails the test.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

LINE = ("--model-args: key 'k' is given twice: k=3, then k=5; lm-eval would keep the last one silently: "
        "give it once")


def _args(tmp_path, model_args):
    from tasks.analyze import build_parser

    # --data wiki: the guards pass without the NQ corpus files (checked after --model-args anyway)
    return build_parser().parse_args(["--data", "wiki", "--out", str(tmp_path / "out"), "--model-args", model_args])


@pytest.mark.parametrize("model_args", ["pretrained=/m/o'brien/x,k=3,k=5", "pretrained=/m/run(1,k=3,k=5",
                                        'pretrained="/m/x,k=3,k=5'])
def test_repeat_after_a_quote_or_open_bracket_is_refused(model_args, tmp_path) -> None:
    from lm_eval.utils import simple_parse_args_string

    from tasks.analyze import check_common_args

    assert simple_parse_args_string(model_args)["k"] == 5  # what load_lm would have built: the k=3 lost
    with pytest.raises(ConfigError) as exc:
        check_common_args(_args(tmp_path, model_args))
    assert str(exc.value) == LINE


@pytest.mark.parametrize("command", ["analyze", "calibrate"])
def test_the_command_exits_2_before_the_model_loads(command, monkeypatch, tmp_path, capsys) -> None:
    from tasks import analyze, calibrate
    from tokrag_model import cli

    def no_model(_args):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    split = ["--split", "dev"] if command == "calibrate" else []
    rc = cli.main([command, *split, "--out", str(tmp_path / "out"), "--model-args", "pretrained=/m/o'brien/x,k=3,k=5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].endswith(LINE)


@pytest.mark.parametrize("model_args", ["pretrained=/m/o'brien/x,k=3", "pretrained=/m/o'brien/x,k=3,k=3",
                                        "pretrained=/r/a=b/m,preset=/r/a=b.json", " pretrained=/a b/m,k=3 "])
def test_paths_with_quotes_equals_and_spaces_still_pass(model_args, tmp_path) -> None:
    from tasks.analyze import check_common_args

    assert check_common_args(_args(tmp_path, model_args)) is None


def test_a_bracketed_repeat_is_still_refused_as_lm_eval_splits_it(tmp_path) -> None:
    """18e5813's check is kept: ``k=[1,2],k=[1,3]`` cut at every comma reads ``k=[1`` twice, as lm_eval it differs."""
    from tasks.analyze import check_common_args

    with pytest.raises(ConfigError) as exc:
        check_common_args(_args(tmp_path, "pretrained=M,k=[1,2],k=[1,3]"))
    assert str(exc.value).startswith("--model-args: key 'k' is given twice: k=[1,2], then k=[1,3]")
