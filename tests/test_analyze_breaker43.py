"""Findings of breaker b4 (stop 43) on ``tokrag analyze`` / ``tokrag calibrate`` and Tok-RAG presets: ``--preset`` with
a dynamic rule scanning below the records' scan start failed after all the scoring; a preset could carry dynamic-rule
params with a fixed layer (refused when given explicitly); ``--policy fixed`` was refused for want of gap values it
does not use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.analyze import TokenRecord

L = 4


def rec(sample: str, lab: int, s_r: list[float], by: bool = False) -> TokenRecord:
    """A strict token of class ``lab`` (1 benefit, 0 detriment), bypassed (a function token) with ``by``; gaps from
    pair 2 (the default scan start of a 4-layer model is layer 1)."""
    tr, tp = (1, 2) if lab == 1 else (2, 1)
    return TokenRecord(sample, 0, 1, -1.0, -2.0, tr, tp, -0.5, -1.0, by, 0.5, s_r, [None, None, 1e-6, 2e-6], (0.0, 0.0))


# ------------------------------------------------------------------------------------------ 3. fixed needs no gap
def test_policy_fixed_needs_no_gap_values(capsys) -> None:
    """Every strict token bypassed (tiny --n): no gap value. ``--policy fixed`` was refused ("no generation-relevant
    dev token (no gap values); raise --n") although the fixed layer is chosen on S_R alone; now it calibrates, and
    the dynamic candidate is recorded as not calibrated. ``auto``/``dynamic`` still need the gaps."""
    from tasks.calibrate import calibrate_records, print_preset

    recs = [rec(f"wiki:{j}", j % 2, [0.1 * j if i == 2 else 0.0 for i in range(L)], by=True) for j in range(4)]
    cal = calibrate_records(recs, L, policy="fixed", js_min_layer=1)
    assert cal["params"] == {"layer": 2}  # the only layer whose S_R ranks benefit over detriment
    c = cal["calibration"]
    assert c["policy"] == "fixed" and c["dev_auc_by_quantile"] == []
    assert c["dynamic"]["n_gaps"] == 0 and c["dynamic"]["threshold"] is None and c["dynamic"]["uncalibrated_quantile"] is None
    print_preset({"params": cal["params"], "calibration": {**c, "dev_counts": {"strict": 4, "tokens": 4, "samples": 4}}})
    out = capsys.readouterr().out
    assert "dev dynamic rule: not calibrated (no generation-relevant dev token, so no gap value)" in out
    assert "preset params (fixed): {'layer': 2}" in out
    for policy in ("auto", "dynamic"):
        with pytest.raises(ConfigError, match=r"^calibrate: no generation-relevant dev token \(no gap values\) to choose "
                                              r"the dynamic rule's threshold on; raise --n, or give --policy fixed"):
            calibrate_records(recs, L, policy=policy, js_min_layer=1)
