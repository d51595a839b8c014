"""s51 r6 (review of f8's 9fa62c3): a run that loads a small-sample preset logs calibrate's note, but only when the
preset carries ``calibration.small_sample``, which calibrate writes since 9fa62c3. Every preset written before it
loaded silently however few tokens it was chosen on, though its ``calibration.dev_counts`` (which the note is
computed from) says so: the committed ``leaderboards/presets/tokrag-gemma-3-270m.json`` (82 NQ dev samples, 78 strict
tokens, 74 benefit: below the 200 of :data:`tasks.analyze.MIN_STRICT_TOKENS`) in every v2 leaderboard run, and u2's
own 3-sample preset of the M5 report. Adding the record to a committed preset would change the file's SHA-256 and so
the run key of every cell that uses it; the note is now computed from ``dev_counts`` where the record is absent (or
not an object with a note: a hand edit), so the same files warn with the same keys. ``dev_counts`` that is not a
count (hand-edited) gives no line and no crash; the SmolLM2 preset (755 strict tokens) stays silent."""

from __future__ import annotations

import json
import logging
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTE78 = ("note: only 78 strict tokens (74 benefit): below 200 an AUC's 95% CI is about ±0.08 or wider and a "
          "degenerate bootstrap CI is not certainty; raise --n")


def _load(name: str) -> dict:
    path = ROOT / "leaderboards" / "presets" / name
    return {**json.loads(path.read_text()), "path": str(path)}


def test_committed_presets_are_judged_by_their_dev_counts() -> None:
    from tokrag_model.methods.tokrag import preset_small_sample_warning

    gemma = _load("tokrag-gemma-3-270m.json")
    assert "small_sample" not in gemma["calibration"]  # as committed: written before the record existed
    assert preset_small_sample_warning(gemma) == (
        f"preset={gemma['path']}: a small-sample preset, calibrated on 82 dev samples with 78 strict tokens (74 "
        f"benefit); its params {{'layer': 5}} were chosen on them; tokrag calibrate's {NOTE78}")
    assert preset_small_sample_warning(_load("tokrag-smollm2-135m-instruct.json")) is None  # 755 strict tokens


def test_a_hand_edited_record_or_counts() -> None:
    from tokrag_model.methods.tokrag import preset_small_sample_warning

    counts = {"samples": 6, "strict": 26, "strict_benefit": 15, "tokens": 60}
    line = preset_small_sample_warning({"path": "p.json", "params": {"layer": 5},
                                        "calibration": {"dev_counts": counts}})
    assert line == ("preset=p.json: a small-sample preset, calibrated on 6 dev samples with 26 strict tokens (15 "
                    "benefit); its params {'layer': 5} were chosen on them; tokrag calibrate's note: only 26 strict "
                    "tokens (15 benefit): below 200 an AUC's 95% CI is about ±0.08 or wider and a degenerate "
                    "bootstrap CI is not certainty; raise --n")
    for record in ("small", ["note"], {}, {"note": 5}):  # not calibrate's record: the counts decide
        assert preset_small_sample_warning({"path": "p.json", "params": {"layer": 5},
                                            "calibration": {"small_sample": record, "dev_counts": counts}}) == line
    for bad in ({"strict": "many"}, {"strict": True}, "26", None, {}):  # no count: nothing to judge, no crash
        assert preset_small_sample_warning({"path": "p.json", "params": {}, "calibration": {"dev_counts": bad}}) is None
    assert preset_small_sample_warning({"path": "p.json", "params": {}, "calibration": {"dev_counts": {"strict": 26}}}) \
        == ("preset=p.json: a small-sample preset, calibrated with 26 strict tokens; its params {} were chosen on them; "
            "tokrag calibrate's note: only 26 strict tokens: below 200 an AUC's 95% CI is about ±0.08 or wider and a "
            "degenerate bootstrap CI is not certainty; raise --n")  # what is not recorded is not named
    one_class = preset_small_sample_warning({"path": "p.json", "params": {}, "calibration": {
        "dev_counts": {"samples": 300, "strict": 400, "strict_benefit": 400}}})
    assert one_class.endswith("note: the 400 strict token(s) are all benefit: an AUC needs both (n/a); raise --n")


def test_an_old_small_preset_warns_once_at_load(tmp_path, backbone, caplog) -> None:
    """TokRAGLM.setup (lm_eval, the leaderboard) over the real SmolLM2: its committed preset with the gemma preset's
    counts (no record) warns once."""
    from tokrag_model.methods.tokrag import TokRAGLM

    raw = json.loads((ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json").read_text())
    raw["model"]["fingerprint"] = backbone.fingerprint
    raw["calibration"]["dev_counts"].update(samples=82, strict=78, strict_benefit=74)
    path = tmp_path / "old_small.json"
    path.write_text(json.dumps(raw))
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm = TokRAGLM.with_backbone(backbone, preset=str(path))
    assert lm.resolved_config["layer"] == 14
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"preset={path}: a small-sample preset, calibrated on 82 dev samples with 78 strict tokens (74 benefit); its "
        f"params {{'layer': 14}} were chosen on them; tokrag calibrate's {NOTE78}"]
