"""tokrag calibrate / analyze output paths a careless command gives (s52 b1; the run's files in
/work/scratch/s52/b1/calib_evidence/): ``tokrag calibrate --split dev --n 2 --preset-out some/dir/`` (a folder meant)
loaded the model, scored the samples and then wrote the preset to the FILE ``some/dir``; ``--out ''`` (an unset shell
variable) wrote the records files and tokrag_preset.json into the working directory (a clone's root). Both are now
refused before the model loads; ``--preset-out ''`` too."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


@pytest.fixture
def no_model(monkeypatch, tmp_path):
    from tasks import analyze, calibrate

    def load(_args):
        raise AssertionError("the model was loaded before the output paths were checked")

    monkeypatch.setattr(analyze, "load_lm", load)
    monkeypatch.setattr(calibrate, "load_lm", load)
    monkeypatch.chdir(tmp_path)
    return calibrate, analyze


def test_a_preset_out_ending_in_a_slash_is_refused(no_model, tmp_path):
    calibrate, _ = no_model
    given = f"{tmp_path / 'presets'}/"
    with pytest.raises(ConfigError) as exc:
        calibrate.main(["--data", "wiki", "--split", "dev", "--out", str(tmp_path / "o"), "--preset-out", given])
    assert str(exc.value) == (f"--preset-out {given}: ends with '/', so it names a folder; give the path of a preset "
                              f"file (e.g. {given}tokrag_preset.json)")


@pytest.mark.parametrize("command", ["calibrate", "analyze"])
def test_an_empty_out_is_refused(no_model, tmp_path, command):
    main = dict(zip(("calibrate", "analyze"), no_model))[command].main
    with pytest.raises(ConfigError) as exc:
        main(["--data", "wiki", "--split", "dev", "--out", ""])
    assert str(exc.value) == ("--out is empty (an unset shell variable?); give a folder, or leave the option out for "
                              "the default")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_preset_out_is_refused(no_model, tmp_path):
    calibrate, _ = no_model
    with pytest.raises(ConfigError, match=r"^--preset-out is empty \(an unset shell variable\?\)"):
        calibrate.main(["--data", "wiki", "--split", "dev", "--out", str(tmp_path / "o"), "--preset-out", " "])
