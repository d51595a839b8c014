"""``benchmarks/tokrag_analysis.py`` calibrates with its own ``--bootstrap`` (s60 r7, review of b2's b074a64): b074a64
gave ``tasks.calibrate.write_calibration`` ``n_boot=1000`` by default, and the benchmark, which calls it without one,
drew 1,000 resamples per fixed layer for the preset's ``dev_ci_by_layer`` whatever its ``--bootstrap`` said (measured
on the fake 4-layer model: ``--bootstrap 0`` wrote ``calibration.bootstrap`` 1000 and the CIs; ``--bootstrap 7``
likewise 1000). Now the calibration uses the benchmark's ``--bootstrap`` (seed 0, the study's): 0 writes no CI, as
``tokrag calibrate --bootstrap 0``."""

from __future__ import annotations

import json

import pytest


def _record(i, sid):
    """One strict token per sample (even samples benefit, odd ones detriment), S_R per layer varying with the sample
    (the fake data of tests/test_s60_b2_calibrate_cis.py)."""
    from tasks import analyze

    tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
    s_r = [((i * (j + 3)) % 7) / 7 for j in range(4)]
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.3, s_r,
                                [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]


@pytest.fixture
def fake(monkeypatch):
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    monkeypatch.setattr(analyze, "check_data_paths", lambda args: None)
    state = install_fake(monkeypatch, _record, device="cpu")
    state.pool = 24
    return state


@pytest.mark.parametrize("n_boot", [0, 7])
def test_the_benchmark_calibrates_with_its_bootstrap(fake, tmp_path, n_boot) -> None:
    from benchmarks import tokrag_analysis
    from tasks import calibrate

    out = tmp_path / "bm"
    assert tokrag_analysis.main(["--data", "wiki", "--n", "12", "--bootstrap", str(n_boot), "--out", str(out)]) == 0
    cal = json.loads((out / "tokrag_preset.json").read_text())["calibration"]
    assert cal["dev_counts"]["strict"] == 12
    if n_boot == 0:
        assert "dev_ci_by_layer" not in cal and "bootstrap" not in cal
        return
    assert (cal["bootstrap"], cal["seed"]) == (7, 0)
    dev = [r for i in range(12) for r in _record(i, f"wiki:q{i}")]  # the 12 dev samples the fake scored
    expected = calibrate.layer_cis(dev, 4, 1.0, 7, 0)
    assert cal["dev_ci_by_layer"] == {str(k): v for k, v in expected.items()}
    assert any(lo is not None and lo < hi for lo, hi in expected.values())
