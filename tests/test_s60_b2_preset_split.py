"""``tokrag analyze --preset P`` refuses, before the model loads, a preset whose ``calibration.data`` records a split
other than dev (s60 b2, breaker): a preset with ``calibration.data.wiki.split`` edited to ``test`` printed
``calibrated on wiki test (30 samples)`` and then scored its ``calibrated`` row on the test questions as a held-out
estimate, exit 0 (``benchmarks/tokrag_analysis.py --preset`` refused it, after the load). Fake 4-layer model
(``tests/analyze_fakes.py``), no weights."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError


@pytest.fixture
def preset(monkeypatch, tmp_path):
    """A preset written by ``tokrag calibrate`` on the fake's wiki dev records; returns its path."""
    from tasks import analyze, calibrate

    from tests.analyze_fakes import install_fake

    def record(i, sid):
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2,
                                    [0.1 * (j + 1) + 0.05 * i for j in range(4)],
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    monkeypatch.setattr(analyze, "check_data_paths", lambda args: None)
    state = install_fake(monkeypatch, record, device="cpu")
    state.loads = 0

    def load(args):
        state.loads += 1
        return state.lm

    monkeypatch.setattr(analyze, "load_lm", load)
    monkeypatch.setattr(calibrate, "load_lm", load)
    out = tmp_path / "cal"
    assert calibrate.main(["--data", "wiki", "--n", "6", "--policy", "fixed", "--bootstrap", "0", "--out", str(out)]) == 0
    state.loads = 0
    state.path = out / "tokrag_preset.json"
    return state


@pytest.mark.parametrize("split", ["test", None, ""])
def test_a_preset_calibrated_on_another_split_is_refused_before_the_load(preset, tmp_path, split) -> None:
    from tasks import analyze

    p = json.loads(preset.path.read_text())
    assert p["calibration"]["data"]["wiki"]["split"] == "dev"
    p["calibration"]["data"]["wiki"]["split"] = split
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(p))
    with pytest.raises(ConfigError) as err:
        analyze.main(["--data", "wiki", "--n", "6", "--split", "test", "--preset", str(edited), "--bootstrap", "0",
                      "--out", str(tmp_path / "an")])
    assert str(err.value) == (f"--preset {edited}: calibration.data.wiki.split is {split!r}, not 'dev': a preset is "
                              "chosen on dev questions only (test questions are never used for tuning), so this one "
                              "cannot be scored as calibrated; write one with 'tokrag calibrate --split dev'")
    assert preset.loads == 0 and not (tmp_path / "an" / "results.json").exists()


def test_a_dev_preset_and_one_without_a_recorded_split_are_scored(preset, tmp_path) -> None:
    """Guards: calibrate's own preset runs; one whose data entry records no split (not judged) too."""
    from tasks import analyze

    args = ["--data", "wiki", "--n", "6", "--split", "test", "--bootstrap", "0"]
    assert analyze.main(args + ["--preset", str(preset.path), "--out", str(tmp_path / "a")]) == 0
    res = json.loads((tmp_path / "a" / "results.json").read_text())["results"]["wiki"]["policies"]
    assert res["calibrated"]["strict"]["n"] == 6
    p = json.loads(preset.path.read_text())
    del p["calibration"]["data"]["wiki"]["split"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(p))
    assert analyze.main(args + ["--preset", str(bare), "--out", str(tmp_path / "b")]) == 0
