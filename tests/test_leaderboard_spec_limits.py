"""Spec values that passed the spec check and ``--estimate`` but failed a run after the model load, or gave a wrong
result, are refused by the spec check in one line naming the spec file and key (a review's breaker, B):
seeds outside NumPy's range or repeated, a ``max_length`` that leaves no token for a prompt beside ``max_gen_toks``,
a folder given as the spec, an infinite or overflowing ``--fallback-s-per-question``; and the offline error of a
hub data set names the leaderboard's way to a local copy, not only ``--metadata``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import TOY, write_spec


def _spec(tmp_path, **kw):
    return write_spec(tmp_path, **kw)


@pytest.mark.parametrize("seed", [-5, 2**32])
def test_a_seed_outside_numpys_range_is_refused(tmp_path, seed):
    """``seeds: [-5]`` passed the check; the run loaded the model and died in ``np.random.seed``."""
    path = _spec(tmp_path, seeds=(1, seed))
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    msg = str(err.value)
    assert msg.startswith(f"leaderboard spec {path}: seeds[1] {seed} is out of range") and "[0, 4294967295]" in msg
    assert "\n" not in msg


def test_the_ends_of_the_seed_range_are_accepted(tmp_path):
    assert load_spec(_spec(tmp_path, seeds=(0, 2**32 - 1))).seeds == [0, 2**32 - 1]


def test_the_seed_range_is_the_one_the_lm_eval_seed_precheck_uses(tmp_path):
    """The range was written twice (``spec.SEED_MAX`` and ``tasks.precheck._SEED_RANGES``' numpy entry): the spec
    check now takes it from the precheck, so a change there moves both (here: the numpy range narrowed to [10, 99]
    before ``leaderboards.spec`` is imported, in a fresh interpreter)."""
    import subprocess
    import sys

    from tasks.precheck import _SEED_RANGES

    assert next((lo, hi) for name, lo, hi in _SEED_RANGES.values() if name == "numpy") == (0, 2**32 - 1)
    path = _spec(tmp_path, seeds=(10, 100))
    code = ("import tasks.precheck as p\n"
            "p._SEED_RANGES[1] = ('numpy', 10, 99)\n"
            "from leaderboards.spec import SEED_MIN, SEED_MAX, load_spec\n"
            "print(SEED_MIN, SEED_MAX)\n"
            "try:\n"
            f"    load_spec({str(path)!r})\n"
            "except Exception as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.splitlines()
    assert out == ["10 99", f"leaderboard spec {path}: seeds[1] 100 is out of range: a seed must be an integer in "
                            "[10, 99] (the range of NumPy's seed, which every cell sets to it)"]


def test_a_repeated_seed_is_refused_as_a_repeated_task_is(tmp_path):
    """``seeds: [1234, 1234]`` listed every cell twice ("2 of 1 cells are not finished")."""
    path = _spec(tmp_path, seeds=(1234, 1234))
    with pytest.raises(ConfigError, match=r"^leaderboard spec .*: seeds: duplicate entries in \[1234, 1234\]"):
        load_spec(path)


def _room_spec(tmp_path, *, max_length=None, max_gen_toks=8, tasks=None, methods=None, extra=None):
    path = _spec(tmp_path, tasks=tasks, methods=methods, extra=extra)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if max_length is not None:
        raw["shared"]["model_args"]["max_length"] = max_length
    raw["shared"]["gen_kwargs"]["max_gen_toks"] = max_gen_toks
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("max_length", [4, 8])
def test_max_length_at_most_max_gen_toks_is_refused(tmp_path, max_length):
    """``max_length: 5`` with ``max_gen_toks: 4``-style contracts: no token left for any prompt of a generating task;
    the run failed at its first request, after the model load."""
    path = _room_spec(tmp_path, max_length=max_length)
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert str(err.value).startswith(f"leaderboard spec {path}: shared.model_args.max_length {max_length} leaves no room "
                                     "for a prompt with shared.gen_kwargs.max_gen_toks 8")


def test_the_key_named_is_the_one_that_set_the_value(tmp_path):
    """A method's ``specific`` max_length and ``specific_gen_kwargs`` are what its cells use, and are named."""
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": {"max_length": 16},
                "specific_gen_kwargs": {"max_gen_toks": 20}}]
    path = _room_spec(tmp_path, max_length=64, methods=methods)
    with pytest.raises(ConfigError, match=r"methods\[1\]\.specific\.max_length 16 leaves no room for a prompt with "
                                          r"methods\[1\]\.specific_gen_kwargs\.max_gen_toks 20 \(none\)"):
        load_spec(path)
    path = _room_spec(tmp_path, max_length=64, extra={"models": [{"name": "a"},
                                                                 {"name": "b", "shared": {"model_args": {"max_length": 8}}}]})
    with pytest.raises(ConfigError, match=r"models\[1\]\.shared\.model_args\.max_length 8 leaves no room for a prompt "
                                          r"with shared\.gen_kwargs\.max_gen_toks 8 \(standard with model b\)"):
        load_spec(path)


def test_what_could_run_is_not_refused(tmp_path):
    """One token of room (the prompt's size is unknown before the task build), no max_length (the model's own), and a
    task that never generates (loglikelihood_rolling: max_gen_toks unused) all pass."""
    assert load_spec(_room_spec(tmp_path, max_length=9))
    assert load_spec(_room_spec(tmp_path))
    assert load_spec(_room_spec(tmp_path, max_length=4, tasks=["toy_lm"]))


def test_a_tokrag_methods_max_gen_toks_model_argument_that_the_spec_gen_kwargs_override_is_refused(tmp_path):
    """``shared.model_args.max_gen_toks: 32`` beside ``shared.gen_kwargs.max_gen_toks: 16``: the spec passed, and a
    tokrag method refused the run at its first request, after the model load, naming ``--gen_kwargs`` (a breaker).
    Equal values, and models that are not tokrag methods (lm-eval's own rule), pass."""
    def spec(model, arg):
        path = _room_spec(tmp_path, methods=[{"name": "standard", "model": model}])
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        raw["shared"]["model_args"]["max_gen_toks"] = arg
        path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
        return path

    path = spec("rag-standard", 32)
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert str(err.value) == (f"leaderboard spec {path}: shared.model_args.max_gen_toks 32 has no effect on standard: "
                              "shared.gen_kwargs.max_gen_toks 8 sets the generation budget of each request, which wins as "
                              "in lm-eval's hf (the run stopped at its first request); set shared.gen_kwargs.max_gen_toks "
                              "instead and drop the model argument")
    assert load_spec(spec("rag-standard", 8)) and load_spec(spec(TOY, 32))


def test_a_folder_given_as_the_spec_is_named_a_folder(tmp_path):
    """``leaderboard report <a folder>`` said the spec "does not exist"."""
    with pytest.raises(ConfigError, match=rf"^leaderboard spec {tmp_path} is a folder, not a spec file"):
        load_spec(tmp_path)


@pytest.mark.parametrize("value", ["inf", "Infinity", "nan", "-1"])
def test_a_non_finite_fallback_is_refused(tmp_path, value):
    """``--fallback-s-per-question inf`` printed ``inf cell-hours`` and a JSON line with ``Infinity``."""
    from leaderboards.cli import main

    path = _spec(tmp_path)
    with pytest.raises(ConfigError, match=r"^run --fallback-s-per-question must be a number of seconds > 0, got .*; give a finite number"):
        main(["run", str(path), "--estimate", "--runs-dir", str(tmp_path / "runs"), "--fallback-s-per-question", value])


def test_an_overflowing_fallback_is_refused_and_a_finite_one_gives_json(tmp_path, capsys):
    """1e308 seconds per question is finite, but times the questions it is not: refused, not ``Infinity``."""
    from leaderboards.cli import main

    path = _spec(tmp_path)
    args = ["run", str(path), "--estimate", "--runs-dir", str(tmp_path / "runs"), "--fallback-s-per-question"]
    with pytest.raises(ConfigError, match=r"^run --fallback-s-per-question 1e\+308: the estimate of toy overflows"):
        main([*args, "1e308"])
    capsys.readouterr()
    assert main([*args, "2"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["cell_hours"] == round(4 * 12 * 2 / 3600, 2)


def test_the_offline_hub_error_names_both_routes(monkeypatch):
    """Under ``tokrag leaderboard run`` the error suggested ``--metadata``, an option the leaderboard lacks."""
    import datasets

    from retrieval.errors import OfflineError
    from tasks.sources import hub_rows

    def offline(*_a, **_k):
        raise ConnectionError("Couldn't reach 'x/y' on the Hub\n(OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    with pytest.raises(OfflineError) as err:
        hub_rows("x/y", None, "test", local_name="PopQA")
    msg = str(err.value)
    assert "\n" not in msg
    assert "with lm_eval / tokrag eval, --metadata '{\"hub_id\": \"/path/to/PopQA\"}'" in msg
    assert "in a leaderboard (no --metadata), the task YAML's metadata: {hub_id: /path/to/PopQA}" in msg
    # x/y is not PopQA's own hub id: the data folder's copy is not read for it (eb18764), so it is not offered
    assert "a 'PopQA' folder in the data folder" not in msg
    assert msg.endswith("(the data folder's 'PopQA' folder is read only for the hub id akariasai/PopQA)"), msg
    with pytest.raises(OfflineError) as err:  # the data set's own hub id: the data folder is one of the routes
        hub_rows("akariasai/PopQA", None, "test", local_name="PopQA")
    assert "a 'PopQA' folder in the data folder ($TOKRAG_DATA_DIR or metadata data_dir), or its path as hub_id" in \
        str(err.value)
