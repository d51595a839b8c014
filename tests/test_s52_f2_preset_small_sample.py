"""s52 f2: a preset's ``calibration.small_sample`` record (9fa62c3) decided the small-sample WARNING at load whenever
it was an object with a note, though it is only a copy of what ``calibration.dev_counts`` says (the note is computed
from those counts, :func:`tasks.calibrate.write_calibration`): the committed SmolLM2 preset (755 strict tokens) with
a record copied from a 26-token preset warned 'calibrated on 6 dev samples with 26 strict tokens', and the Gemma
preset (78 strict tokens) with it named 6 samples and 26 tokens instead of its own 82 and 78. The counts now decide;
the record is read only where ``dev_counts`` has no ``strict`` count. The committed presets load as before (Gemma
warns, SmolLM2 does not: tests/test_s51_r6_old_small_preset.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.analyze import MIN_STRICT_TOKENS, small_sample_note
from tokrag_model.methods.tokrag import preset_small_sample_warning

ROOT = Path(__file__).resolve().parents[1]
TAIL = ("below 200 an AUC's 95% CI is about ±0.08 or wider and a degenerate bootstrap CI is not certainty; raise --n")
STALE = {"note": f"note: only 26 strict tokens (15 benefit): {TAIL}", "samples": 6, "strict": 26, "strict_benefit": 15,
         "min_strict_tokens": 200}


def _load(name: str) -> dict:
    path = ROOT / "leaderboards" / "presets" / name
    return {**json.loads(path.read_text()), "path": str(path)}


def test_a_record_that_contradicts_the_counts_decides_nothing() -> None:
    smol = _load("tokrag-smollm2-135m-instruct.json")
    smol["calibration"]["small_sample"] = dict(STALE)
    assert preset_small_sample_warning(smol) is None  # 755 strict tokens (510 benefit): enough
    gemma = _load("tokrag-gemma-3-270m.json")
    own = preset_small_sample_warning(gemma)
    gemma["calibration"]["small_sample"] = dict(STALE)
    assert preset_small_sample_warning(gemma) == own == (
        f"preset={gemma['path']}: a small-sample preset, calibrated on 82 dev samples with 78 strict tokens (74 "
        f"benefit); its params {{'layer': 5}} were chosen on them; tokrag calibrate's note: only 78 strict tokens (74 "
        f"benefit): {TAIL}")


def test_a_record_as_calibrate_writes_it_gives_the_same_line() -> None:
    counts = {"samples": 6, "strict": 26, "strict_benefit": 15, "tokens": 60}
    record = {"note": small_sample_note(26, 15), "samples": 6, "strict": 26, "strict_benefit": 15,
              "min_strict_tokens": MIN_STRICT_TOKENS}
    assert record == STALE
    line = preset_small_sample_warning({"path": "p.json", "params": {"layer": 5},
                                        "calibration": {"dev_counts": counts, "small_sample": record}})
    assert line == ("preset=p.json: a small-sample preset, calibrated on 6 dev samples with 26 strict tokens (15 "
                    f"benefit); its params {{'layer': 5}} were chosen on them; tokrag calibrate's {STALE['note']}")


def test_the_record_is_read_only_without_a_strict_count() -> None:
    for counts in (None, {}, {"strict": "many", "samples": 6}):
        assert preset_small_sample_warning({"path": "p.json", "params": {}, "calibration": {
            "dev_counts": counts, "small_sample": STALE}}) == (
            "preset=p.json: a small-sample preset, calibrated on 6 dev samples with 26 strict tokens (15 benefit); its "
            f"params {{}} were chosen on them; tokrag calibrate's {STALE['note']}")
        assert preset_small_sample_warning({"path": "p.json", "params": {}, "calibration": {"dev_counts": counts}}) is None
