"""s61 f1: ``tokrag analyze --preset P`` on dev samples only some of which P was calibrated on (``wiki 4 of 6``)
said "... so its AUC is its dev fit", which overstates a partial overlap; lm_eval's WARNING (s61 r1, b7542d6) says
"is partly its dev fit" there. The note now follows the same rule; a run whose samples are all P's keeps the words.
On the fake 4-layer model of :mod:`tests.analyze_fakes` (P calibrated on the first 4 wiki dev samples)."""

from __future__ import annotations

import json

import pytest

from tests.analyze_fakes import strict_record as _record  # one strict token per sample (the shared toy records)

FIX = "not a held-out estimate; run --split test for that"


@pytest.fixture
def preset(monkeypatch, tmp_path, capsys):
    from tasks import calibrate
    from tests.analyze_fakes import install_fake

    install_fake(monkeypatch, _record, device="cpu")
    assert calibrate.main(["--data", "wiki", "--out", str(tmp_path / "cal"), "--n", "4"]) == 0
    capsys.readouterr()
    return str(tmp_path / "cal" / "tokrag_preset.json")


@pytest.mark.parametrize("n, shared, words", [
    (6, "wiki 4 of 6", "is partly its dev fit"),  # 2 of the 6 samples are held out
    (4, "wiki 4 of 4", "is its dev fit"),  # all of them are the preset's: the words as before
    (2, "wiki 2 of 2", "is its dev fit"),
])
def test_the_in_sample_note_says_partly_when_some_samples_are_not_the_presets(preset, tmp_path, capsys, n, shared,
                                                                              words):
    from tasks import analyze

    out = tmp_path / "an"
    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", str(out), "--n", str(n), "--bootstrap", "5",
                         "--preset", preset]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: the calibrated row")]
    assert notes == [f"note: the calibrated row is in-sample: the preset was calibrated on these dev samples ({shared}), "
                     f"so its AUC {words}, {FIX}"]
    assert json.loads((out / "results.json").read_text())["preset_in_sample"] == {"wiki": int(shared.split()[1])}
