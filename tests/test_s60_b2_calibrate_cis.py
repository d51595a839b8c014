"""``tokrag calibrate`` gives each fixed layer's dev AUC with its 95% bootstrap CI (s60 b2, breaker): it accepted
``--bootstrap`` and ``--seed`` and ignored them, and printed every dev AUC as a bare number (``2 | 0.477 <- best``,
measured on 46 strict tokens of a tiny random Llama, where the CI is [0.238, 0.669]); the preset recorded no CI. Now the
table reads ``dev AUC [95% CI]``, the preset holds ``calibration.dev_ci_by_layer`` (with ``bootstrap`` and ``seed``), and
its CIs equal those ``tokrag analyze --split dev`` gives the same layers on the same records with the same
``--bootstrap``/``--seed``. Fake 4-layer model (``tests/analyze_fakes.py``), no weights."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def fake(monkeypatch):
    """Fake data: one strict token per sample (even samples benefit, odd ones detriment), S_R per layer varying with
    the sample, so that each layer's AUC and CI differ."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    def record(i, sid):
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        s_r = [((i * (j + 3)) % 7) / 7 for j in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.3, s_r,
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    monkeypatch.setattr(analyze, "check_data_paths", lambda args: None)
    state = install_fake(monkeypatch, record, device="cpu")
    state.pool = 24
    return state


def test_calibrate_prints_and_records_the_dev_auc_cis_analyze_gives(fake, tmp_path, capsys) -> None:
    from tasks import analyze, calibrate

    out = tmp_path / "out"
    common = ["--data", "wiki", "--n", "24", "--bootstrap", "300", "--seed", "3", "--out", str(out)]
    assert calibrate.main(common + ["--policy", "fixed"]) == 0
    printed = capsys.readouterr().out
    cal = json.loads((out / "tokrag_preset.json").read_text())["calibration"]
    assert cal["bootstrap"] == 300 and cal["seed"] == 3
    assert sorted(cal["dev_ci_by_layer"]) == ["0", "1", "2", "3"]

    assert analyze.main(common + ["--split", "dev", "--layers", "all"]) == 0
    capsys.readouterr()
    res = json.loads((out / "results.json").read_text())["results"]["wiki"]["policies"]
    for layer in range(4):
        s = res[f"layer{layer}"]["strict"]
        lo, hi = cal["dev_ci_by_layer"][str(layer)]
        assert (lo, hi) == (s["ci_low"], s["ci_high"]) and lo < hi  # the same resamples as analyze's table
        assert cal["dev_auc_by_layer"][str(layer)] == s["auc"]
        row = f"{s['auc']:.3f} [{lo:.3f}, {hi:.3f}]"
        assert any(line.split("│")[1:3] and line.split("│")[1].strip() == str(layer) and row in line
                   for line in printed.splitlines()), (row, printed)
    assert "dev AUC [95% CI]" in printed


def test_bootstrap_zero_keeps_the_plain_table_and_a_preset_without_cis(fake, tmp_path, capsys) -> None:
    """Guard: ``--bootstrap 0`` computes no CI (no key in the preset, the column as before)."""
    from tasks import calibrate

    out = tmp_path / "out"
    assert calibrate.main(["--data", "wiki", "--n", "24", "--bootstrap", "0", "--policy", "fixed", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    cal = json.loads((out / "tokrag_preset.json").read_text())["calibration"]
    assert "dev_ci_by_layer" not in cal and "bootstrap" not in cal
    assert "dev AUC [95% CI]" not in printed and "dev AUC" in printed


def test_the_seed_changes_the_cis_not_the_aucs(fake, tmp_path, capsys) -> None:
    from tasks import calibrate

    cals = []
    for seed in ("0", "1"):
        out = tmp_path / seed
        assert calibrate.main(["--data", "wiki", "--n", "24", "--bootstrap", "300", "--seed", seed, "--policy", "fixed",
                               "--out", str(out)]) == 0
        cals.append(json.loads((out / "tokrag_preset.json").read_text())["calibration"])
    assert cals[0]["dev_auc_by_layer"] == cals[1]["dev_auc_by_layer"]
    assert cals[0]["dev_ci_by_layer"] != cals[1]["dev_ci_by_layer"]
