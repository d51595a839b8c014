"""s51 u2 M5: tasks/README says a small ``--n`` preset "carries the small-sample note", but only ``tokrag calibrate``
printed it: the preset file had no such field, and ``lm_eval ... preset=FILE`` with a 3-sample preset (26 strict
tokens) said nothing. Now ``calibrate`` stores the note with the counts it is based on in
``calibration.small_sample``, and a model that loads such a preset (lm_eval, the leaderboard: ``TokRAGLM.setup``;
``tokrag analyze --preset``) logs one WARNING naming the file and its size. Presets without the field (older ones,
or calibrated on enough tokens) load silently."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.analyze_fakes import strict_record as _record  # one strict token per sample (the shared toy records)

ROOT = Path(__file__).resolve().parents[1]
NOTE8 = ("note: only 8 strict tokens (4 benefit): below 200 an AUC's 95% CI is about ±0.08 or wider and a degenerate "
         "bootstrap CI is not certainty; raise --n")


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


def test_calibrate_stores_the_note_and_analyze_warns_of_it(fake, tmp_path, caplog) -> None:
    from tasks import analyze, calibrate

    assert calibrate.main(["--out", str(tmp_path / "cal"), "--n", "4", "--bootstrap", "5"]) == 0
    path = tmp_path / "cal" / "tokrag_preset.json"
    cal = json.loads(path.read_text())["calibration"]
    assert cal["dev_counts"]["samples"] == 8 and cal["dev_counts"]["strict"] == 8
    assert cal["small_sample"] == {"note": NOTE8, "samples": 8, "strict": 8, "strict_benefit": 4,
                                   "min_strict_tokens": 200}
    params = json.loads(path.read_text())["params"]
    with caplog.at_level(logging.WARNING):
        assert analyze.main(["--split", "test", "--data", "wiki", "--out", str(tmp_path / "a"), "--n", "2",
                             "--bootstrap", "5", "--preset", str(path)]) == 0
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"preset={path}: a small-sample preset, calibrated on 8 dev samples with 8 strict tokens (4 benefit); its "
        f"params {params} were chosen on them; tokrag calibrate's {NOTE8}"]


def test_a_preset_calibrated_on_enough_tokens_carries_no_note(fake, tmp_path) -> None:
    from tasks import calibrate

    fake.pool = 100
    assert calibrate.main(["--out", str(tmp_path / "cal"), "--n", "100", "--bootstrap", "5"]) == 0
    cal = json.loads((tmp_path / "cal" / "tokrag_preset.json").read_text())["calibration"]
    assert cal["dev_counts"]["strict"] == 200
    assert "small_sample" not in cal


def test_loading_a_small_preset_logs_one_warning(tmp_path, backbone, caplog) -> None:
    """The model lm_eval and the leaderboard build (``TokRAGLM.setup``), over the real SmolLM2: the committed preset
    with a ``small_sample`` record warns once; as committed (no record: written before it existed) it is silent."""
    from tokrag_model.methods.tokrag import TokRAGLM

    raw = json.loads((ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json").read_text())
    raw["model"]["fingerprint"] = backbone.fingerprint
    old, small = tmp_path / "old.json", tmp_path / "small.json"
    old.write_text(json.dumps(raw))
    raw["calibration"]["small_sample"] = {"note": NOTE8, "samples": 8, "strict": 8, "strict_benefit": 4,
                                          "min_strict_tokens": 200}
    raw["calibration"]["dev_counts"].update(samples=8, strict=8, strict_benefit=4)  # the counts the record copies
    small.write_text(json.dumps(raw))
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        TokRAGLM.with_backbone(backbone, preset=str(old))
        assert not [r for r in caplog.records if r.levelno == logging.WARNING]
        lm = TokRAGLM.with_backbone(backbone, preset=str(small))
    assert lm.resolved_config["layer"] == 14  # the preset applies as before
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"preset={small}: a small-sample preset, calibrated on 8 dev samples with 8 strict tokens (4 benefit); its "
        f"params {{'layer': 14}} were chosen on them; tokrag calibrate's {NOTE8}"]
