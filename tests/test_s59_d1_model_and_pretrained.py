"""s59 d1: ``tokrag analyze`` / ``tokrag calibrate`` with ``--model M`` and a ``pretrained=`` in ``--model-args``.

``--model`` replaced ``pretrained=`` without a word: ``--model a --model-args pretrained=b`` loaded ``a`` and dropped
``b`` (one of the two is a mistake), while ``pretrained=a,pretrained=b`` was refused. Now both commands refuse two
different names in one line naming both, before the model loads; the same name twice passes, and so do
``--model-args`` left at its default and ``--model-args`` without ``pretrained=``. No model is loaded here:
``load_lm`` is replaced by one that records what it would load.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

LINE = ("--model a and --model-args pretrained=b name two models (a would load, b be dropped without a word): give "
        "the model once, by --model or by pretrained= in --model-args")


class _Loaded(Exception):
    """Raised by the fake ``load_lm``: the options were accepted; ``pretrained`` is what it would load."""


def _run(command: str, argv: list[str], monkeypatch, tmp_path) -> int:
    from lm_eval.utils import simple_parse_args_string

    from tasks import analyze, calibrate
    from tokrag_model import cli

    def fake_load(args):
        model_args = simple_parse_args_string(args.model_args)
        if args.model:
            model_args["pretrained"] = args.model
        raise _Loaded(model_args["pretrained"])

    monkeypatch.setattr(analyze, "load_lm", fake_load)
    monkeypatch.setattr(calibrate, "load_lm", fake_load)
    split = ["--split", "dev"] if command == "calibrate" else []
    # --data wiki: the checks pass without the NQ corpus files
    return cli.main([command, *split, "--data", "wiki", "--out", str(tmp_path / "out"), *argv])


@pytest.mark.parametrize("command", ["analyze", "calibrate"])
@pytest.mark.parametrize("model_args", ["pretrained=b", "pretrained=b,k=3", "k=3,pretrained=b",
                                        "pretrained=b,pretrained=b"])
def test_model_and_another_pretrained_are_refused_in_one_line(command, model_args, monkeypatch, tmp_path,
                                                              capsys) -> None:
    rc = _run(command, ["--model", "a", "--model-args", model_args], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].endswith(LINE)


@pytest.mark.parametrize("command", ["analyze", "calibrate"])
@pytest.mark.parametrize("argv", [
    ["--model", "a", "--model-args", "pretrained=a"],  # the same name twice
    ["--model", "a", "--model-args", "pretrained=a,pretrained=a,k=3"],
    ["--model", "a", "--model-args", "k=3"],  # no pretrained= in --model-args
    ["--model", "a"],  # --model-args left at its default (pretrained=smollm2-135m-instruct): --model replaces it
    ["--model-args", "pretrained=a"],
])
def test_one_model_named_once_or_twice_passes_and_is_loaded(command, argv, monkeypatch, tmp_path) -> None:
    with pytest.raises(_Loaded) as exc:
        _run(command, argv, monkeypatch, tmp_path)
    assert exc.value.args == ("a",)


def test_the_check_reads_the_values_as_load_lm_does(tmp_path) -> None:
    from tasks.analyze import MODEL_ARGS_DEFAULT, build_parser, check_model_pretrained

    def args(*argv):
        return build_parser().parse_args(["--out", str(tmp_path / "out"), *argv])

    assert build_parser().parse_args([]).model_args == MODEL_ARGS_DEFAULT == "pretrained=smollm2-135m-instruct"
    check_model_pretrained(args("--model", "/m/x", "--model-args", "pretrained=/m/x,dtype=float32"))
    with pytest.raises(ConfigError) as exc:  # two texts are two names, even for one folder
        check_model_pretrained(args("--model", "/m/x", "--model-args", "pretrained=/m/x/"))
    assert str(exc.value).startswith("--model /m/x and --model-args pretrained=/m/x/ name two models")
    check_model_pretrained(args("--model-args", "pretrained=b"))  # no --model: nothing to compare
