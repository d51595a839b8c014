"""s58 f2: the comma-list options of ``tokrag calibrate`` / ``tokrag analyze`` refuse an empty, repeated or bad item.

``--quantiles 0.5,0.5`` and ``--quantiles 0.5,,0.7`` were accepted (the repeat merged into one key of the dev AUCs by
quantile, the empty item dropped), as were ``--data wiki,wiki`` (one set collected twice into one entry) and
``--data wiki,,nq``. Each is now one line naming the option, the item and what to give, before the model loads.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

GIVE_Q = "give a comma list of distinct numbers strictly between 0 and 1, e.g. --quantiles 0.5,0.7,0.9"


@pytest.mark.parametrize("spec, line", [
    ("0.5,0.5", f"--quantiles '0.5,0.5': item 2 '0.5' repeats item 1 ('0.5'); give each once: a comma list of "
                "distinct numbers strictly between 0 and 1, e.g. --quantiles 0.5,0.7,0.9"),
    ("0.5,0.50", "--quantiles '0.5,0.50': item 2 '0.50' repeats item 1 ('0.5'); give each once: a comma list of "
                 "distinct numbers strictly between 0 and 1, e.g. --quantiles 0.5,0.7,0.9"),
    ("0.5,,0.7", f"--quantiles '0.5,,0.7': item 2 of 3 is empty; {GIVE_Q}"),
    ("0.5,0.7,", f"--quantiles '0.5,0.7,': item 3 of 3 is empty; {GIVE_Q}"),
    ("0.5,nan", f"--quantiles '0.5,nan': item 2 'nan' is not a finite number; {GIVE_Q}"),
    ("inf", f"--quantiles 'inf': item 1 'inf' is not a finite number; {GIVE_Q}"),
])
def test_quantiles_refused_items(spec, line) -> None:
    from tasks.calibrate import _quantiles

    with pytest.raises(ConfigError) as exc:
        _quantiles(spec)
    assert str(exc.value) == line


@pytest.mark.parametrize("spec, item, why", [
    ("0.5,x", "item 2 'x'", "is not a number"),
    ("0,0.5", "item 1 '0'", "is not strictly between 0 and 1"),
    ("0.5,1", "item 2 '1'", "is not strictly between 0 and 1"),
    ("1.5", "item 1 '1.5'", "is not strictly between 0 and 1"),
])
def test_quantiles_name_the_bad_item(spec, item, why) -> None:
    from tasks.calibrate import _quantiles

    with pytest.raises(ConfigError) as exc:
        _quantiles(spec)
    assert str(exc.value) == f"--quantiles {spec!r}: {item} {why}; {GIVE_Q}"


def test_good_quantiles_keep_their_values_and_order() -> None:
    from tasks.calibrate import QUANTILES, _quantiles

    assert _quantiles("0.9, 0.5,0.7") == [0.9, 0.5, 0.7]
    assert _quantiles(",".join(str(q) for q in QUANTILES)) == list(QUANTILES)  # the default


@pytest.mark.parametrize("spec, line", [
    ("wiki,wiki", "--data 'wiki,wiki': item 2 'wiki' repeats item 1 ('wiki'); give each once: a comma list of "
                  "wiki, nq, e.g. --data wiki,nq"),
    ("wiki,,nq", "--data 'wiki,,nq': item 2 of 3 is empty; give a comma list of wiki, nq, e.g. --data wiki,nq"),
    ("nq, nq", "--data 'nq, nq': item 2 'nq' repeats item 1 ('nq'); give each once: a comma list of "
               "wiki, nq, e.g. --data wiki,nq"),
])
def test_data_refuses_an_empty_or_repeated_set(spec, line) -> None:
    from tasks.analyze import parse_data

    with pytest.raises(ConfigError) as exc:
        parse_data(spec, 5)
    assert str(exc.value) == line


def test_data_unknown_names_keep_their_line_and_good_lists_pass() -> None:
    from tasks.analyze import parse_data

    with pytest.raises(ConfigError) as exc:
        parse_data("q.jsonl", 5)
    assert str(exc.value) == "--data 'q.jsonl': use a comma list of wiki, nq"  # as tasks/README.md quotes it
    assert parse_data("nq, wiki", 5) == ["nq", "wiki"]


@pytest.mark.parametrize("bad, expected", [
    (["--quantiles", "0.5,0.5"], "--quantiles '0.5,0.5': item 2 '0.5' repeats item 1"),
    (["--quantiles", "0.5,,0.7"], "--quantiles '0.5,,0.7': item 2 of 3 is empty"),
    (["--data", "wiki,wiki"], "--data 'wiki,wiki': item 2 'wiki' repeats item 1"),
])
def test_the_command_exits_2_with_one_line_before_the_model_loads(bad, expected, monkeypatch, tmp_path, capsys) -> None:
    from tasks import analyze, calibrate
    from tokrag_model import cli

    def no_model(_args):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    rc = cli.main(["calibrate", "--split", "dev", "--out", str(tmp_path / "out"), *bad])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and expected in err[0]


@pytest.mark.parametrize("command", ["analyze", "calibrate"])
def test_a_model_argument_given_twice_is_refused_before_the_model_loads(command, monkeypatch, tmp_path, capsys) -> None:
    """``--model-args pretrained=...,k=3,k=5`` ran k=5 (lm-eval's parser keeps the last key), as ``lm_eval`` refuses."""
    from tasks import analyze, calibrate
    from tokrag_model import cli

    def no_model(_args):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    split = ["--split", "dev"] if command == "calibrate" else []
    rc = cli.main([command, *split, "--out", str(tmp_path / "out"), "--model-args", "pretrained=toy,k=3,k=5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].endswith("--model-args: key 'k' is given twice: k=3, then k=5; lm-eval would keep "
                                             "the last one silently: give it once")


def test_a_model_argument_repeated_with_its_value_passes(tmp_path) -> None:
    from tasks.analyze import build_parser, check_common_args

    args = build_parser().parse_args(["--out", str(tmp_path / "out"), "--model-args", "pretrained=toy,k=3,k=3"])
    assert check_common_args(args) is None  # the same value twice loses nothing (as lm_eval's check)
