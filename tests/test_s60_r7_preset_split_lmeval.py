"""``lm_eval --model tokrag --model_args preset=P`` refuses, before the model loads, a preset whose ``calibration.data``
records a split other than dev (s60 r7, b2's leftover): b2's b6d8e0c refused it in ``tokrag analyze --preset`` only,
and ``read_preset`` (the lm_eval path, the leaderboard's pre-run check, the load) used it without a word (measured:
a ``tokrag calibrate`` preset of a tiny random Llama with ``calibration.data.wiki.split`` edited to ``test`` ran
``lm_eval ... --tasks wiki_lm_bm25 --limit 2`` to its table, exit 0). The committed presets and a preset that records
no split (older presets) still load, with the same params."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load
from tests.leaderboard_helpers import tiny_llama

REPO = Path(__file__).resolve().parents[1]


class Reached(Exception):
    """simple_evaluate was called: every pre-load check passed."""


def _preset(tmp_path: Path, data: dict) -> Path:
    p = {"format": "tokrag-preset/1", "method": "tokrag", "model": {"n_layers": 4}, "params": {"layer": 3},
         "calibration": {"data": data}}
    path = tmp_path / "my preset.json"
    path.write_text(json.dumps(p))
    return path


@pytest.fixture
def model(tmp_path, monkeypatch) -> Path:
    def reached(*args, **kwargs):
        raise Reached

    stop_at_model_load(monkeypatch, reached)
    return tiny_llama(tmp_path / "tiny", layers=4)


def _eval(model: Path, preset: Path) -> None:
    from tokrag_model.eval_cli import main

    main(["--model", "tokrag", "--model_args", f"pretrained={model},preset={preset}", "--tasks", "wiki_lm_bm25",
          "--limit", "2", "--device", "cpu"])


@pytest.mark.parametrize("data, name, split", [
    ({"wiki": {"split": "test"}}, "wiki", "test"),
    ({"nq": {"split": "dev"}, "wiki": {"split": "Test"}}, "wiki", "Test"),
    ({"nq": {"split": None}}, "nq", None),
], ids=["test", "second-data-set", "null"])
def test_lm_eval_refuses_a_preset_calibrated_on_another_split(model, tmp_path, data, name, split) -> None:
    preset = _preset(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        _eval(model, preset)
    assert str(err.value) == (f"preset={preset}: calibration.data.{name}.split is {split!r}, not 'dev': a preset is "
                              "chosen on dev questions only (test questions are never used for tuning), so its params "
                              "may be fitted to the questions this run scores; write one with 'tokrag calibrate "
                              "--split dev'")


@pytest.mark.parametrize("data", [{"nq": {"split": "dev"}, "wiki": {"split": "dev"}}, {"wiki": {"n": 20}}],
                         ids=["dev", "no-split"])
def test_lm_eval_runs_a_dev_preset_and_an_older_one(model, tmp_path, data) -> None:
    """Guard: a dev preset, and one whose data entry records no split (not judged), pass every pre-load check."""
    with pytest.raises(Reached):
        _eval(model, _preset(tmp_path, data))


@pytest.mark.parametrize("name, layer", [("tokrag-gemma-3-270m.json", 5), ("tokrag-smollm2-135m-instruct.json", 14)])
def test_the_committed_presets_still_read(name, layer) -> None:
    """Guard: the committed presets record dev data and read as before (the same params)."""
    from tokrag_model.methods.tokrag import preset_split_error, read_preset

    path = REPO / "leaderboards" / "presets" / name
    preset = read_preset(path)
    assert preset_split_error(preset) is None
    assert preset["params"] == {"layer": layer}


def test_read_preset_check_split_false_leaves_the_refusal_to_the_caller(tmp_path) -> None:
    """``tokrag analyze --preset`` reads with ``check_split=False`` and refuses in its own words (b2's test)."""
    from tokrag_model.methods.tokrag import preset_split_error, read_preset

    preset = read_preset(_preset(tmp_path, {"wiki": {"split": "test"}}), check_split=False)
    assert preset_split_error(preset) == "calibration.data.wiki.split is 'test', not 'dev'"
