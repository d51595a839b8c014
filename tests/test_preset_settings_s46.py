"""Findings of breaker b2 (stop 46) on Tok-RAG presets and ``tokrag analyze``'s rate: a preset recorded only its layer or
threshold, not the Tok-RAG settings (``n_anchors``, windows, tops, ``bypass``, ``rate``) it was chosen under, so a
``preset=P`` run used the defaults with a layer chosen under others, unwarned, and ``analyze --preset`` scored it under
the run's settings; ``analyze`` / ``calibrate`` scored ``S_R − S_L`` while the decoder picks RAG iff
``rate·S_R > S_L`` (on the fake 4-layer model of :mod:`tests.analyze_fakes`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _record(i, sid):
    """One strict token per sample (even samples benefit, odd ones detriment), 4 layers; ``S_L`` 0.2 and
    ``S_R`` = 0.1·(layer+1) + 0.05·i, so at layer 0 rate 3 flips the decision of samples 0 and 1 (0.1, 0.15 < 0.2)."""
    from tasks import analyze

    tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
    s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


SETTINGS = {"rate": 1.0, "n_anchors": 1, "window_left": 2, "window_right": 1, "rag_top": 5, "pure_top": 3,
            "bypass": False, "token_lists": "generalised"}  # token_lists: a preset setting since s57 r8


def test_calibrate_writes_the_settings_it_chose_under_and_a_preset_run_applies_them(fake, tmp_path) -> None:
    """``calibrate --model-args n_anchors=1,rag_top=5,bypass=false`` wrote params {'layer': L} only, and a later
    ``preset=P`` run decoded with n_anchors 3, rag_top 2, bypass on; now the params carry every setting and the
    run applies them (recorded as the preset's)."""
    from tasks import calibrate
    from tokrag_model.methods.tokrag import PRESET_SETTINGS, TokRAGLM, TokRAGParams, read_preset

    fake.lm.params = TokRAGParams(n_anchors=1, rag_top=5, bypass=False)
    assert calibrate.main(["--data", "wiki", "--out", str(tmp_path / "cal"), "--n", "4", "--policy", "fixed"]) == 0
    path = tmp_path / "cal" / "tokrag_preset.json"
    params = json.loads(path.read_text())["params"]
    assert set(params) == {"layer", *PRESET_SETTINGS} and {k: params[k] for k in PRESET_SETTINGS} == SETTINGS
    cfg = {k: a.default for k, a in TokRAGLM.EXTRA_ARGS.items()} | {"preset": str(path)}
    got = TokRAGLM.resolve_args(cfg, {"preset": str(path)}, read_preset(path))
    assert {k: got[k] for k in PRESET_SETTINGS} == SETTINGS and got.from_preset == frozenset(params)


def test_an_explicit_setting_over_the_presets_is_warned_in_one_line(tmp_path) -> None:
    """An explicit model argument still overrides the preset's setting, now with one WARNING line naming the setting,
    the preset's value and the run's (lm_eval logs it in ``TokRAGLM.setup``); a preset without the setting (the
    committed ones) counts as calibrated with the default."""
    from tokrag_model.methods.tokrag import TokRAGLM, preset_override_warning, read_preset

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "model": {"n_layers": 30},
                                "params": {"layer": 2, **SETTINGS}}))
    preset = read_preset(path)
    cfg = {k: a.default for k, a in TokRAGLM.EXTRA_ARGS.items()} | {"preset": str(path), "pretrained": "smol"}
    given = {"preset": str(path), "n_anchors": "3", "rag_top": "5"}
    got = TokRAGLM.resolve_args({**cfg, "n_anchors": 3, "rag_top": 5}, given, preset)
    assert (got["n_anchors"], got["rag_top"], got["bypass"]) == (3, 5, False)  # explicit over the preset's
    assert preset_override_warning(preset, got, given) == (
        f"preset={path}: calibrated with n_anchors=1 (this run: 3); its params "
        "{'layer': 2} were chosen under those settings, so they may not suit this run's: drop n_anchors from the model "
        "arguments (the preset applies its own), or calibrate a preset with them (tokrag calibrate --model smol "
        "--split dev --model-args n_anchors=3)")
    assert preset_override_warning(preset, got, {"preset": str(path), "rag_top": "5"}) is None  # equal: nothing
    assert preset_override_warning(None, got, given) is None
    committed = read_preset(ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json")
    old = TokRAGLM.resolve_args(cfg | {"preset": committed["path"], "bypass": False}, {"bypass": "false"}, committed)
    # the committed preset's params lack bypass: calibrated with the default, and the line says so for that key only
    assert "bypass=True (this run: False; a setting its params lack: the default)" in preset_override_warning(
        committed, old, {"bypass": "false"})


def test_analyze_refuses_a_preset_calibrated_under_other_settings_than_the_runs(fake, tmp_path) -> None:
    """``analyze --preset P`` scored P's layer on records of the run's settings (n_anchors 3) though P chose it under
    n_anchors 1; now refused before any scoring, naming the setting and both values. The rate alone is no conflict:
    the calibrated row applies the preset's."""
    from tasks import analyze

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "model": {"n_layers": 4, "fingerprint": "fp0"},
                                "params": {"layer": 2, **SETTINGS, "bypass": True}}))
    argv = ["--data", "wiki", "--split", "dev", "--out", str(tmp_path / "an"), "--n", "4", "--bootstrap", "5",
            "--preset", str(path)]
    with pytest.raises(ConfigError) as exc:
        analyze.main(argv)
    assert str(exc.value) == (
        f"--preset {path} was calibrated with n_anchors=1 (this run: 3), rag_top=5 (this run: 2), and its layer was "
        "chosen under those settings: give them in --model-args (or "
        f"--model-args preset={path}), or calibrate a preset with this run's")
    assert fake.scored == []
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "model": {"n_layers": 4, "fingerprint": "fp0"},
                                "params": {"layer": 0, "rate": 3.0}}))
    assert analyze.main(argv) == 0
    res = json.loads((tmp_path / "an" / "results.json").read_text())["results"]["wiki"]["policies"]
    # the preset's rate-3 decoder at layer 0: RAG for every sample (0.3 + 0.15 i > 0.2), the 2 benefit tokens right;
    # the run's rate 1 there: RAG for sample 3 only (0.25 > 0.2), only detriment sample 1 right
    assert res["calibrated"]["strict"]["accuracy"] == 0.5 and res["layer0"]["strict"]["accuracy"] == 0.25


@pytest.mark.parametrize("rate", [1.0, 3.0])
def test_analyze_scores_the_decoders_rate(fake, tmp_path, rate) -> None:
    """``analyze --model-args rate=3`` recorded rate 3 but its accuracy came from ``S_R − S_L > 0`` (the rate-1
    decoder); now from ``rate·S_R − S_L``, the decoder's decision (``tokrag_choose_rag``) on every token."""
    from tasks import analyze
    from tokrag_model.methods.tokrag import TokRAGParams, tokrag_choose_rag

    fake.lm.params = TokRAGParams(rate=rate)
    out = tmp_path / "an"
    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", str(out), "--n", "4", "--bootstrap", "5"]) == 0
    res = json.loads((out / "results.json").read_text())["results"]["wiki"]["policies"]
    recs = [r for i in range(4) for r in _record(i, f"q{i}")]
    for layer in range(4):
        want = sum(tokrag_choose_rag(r.s_r[layer], r.s_l, rate) == (r.strict_label == 1) for r in recs) / 4
        assert res[f"layer{layer}"]["strict"]["accuracy"] == want
    assert res["layer0"]["strict"]["accuracy"] == (0.5 if rate == 3.0 else 0.25)


def test_calibrate_chooses_the_layer_under_the_models_rate() -> None:
    """calibrate scored every layer by ``S_R − S_L`` whatever the model's rate; now by ``rate·S_R − S_L``: here the
    layers rank the tokens alike at rate 1, and only layer 1 ranks them at rate 10."""
    from tasks.analyze import TokenRecord
    from tasks.calibrate import calibrate_records

    recs = []
    for j in range(8):
        lab = j % 2
        tr, tp = (1, 2) if lab else (2, 1)
        s_r = [0.5, 0.02 if lab else 0.01, 0.5, 0.5]  # layer 1: benefit above detriment by a little
        s_l = 0.1 if lab else 0.05                    # S_L favours detriment more: S_R − S_L ranks them backwards
        recs.append(TokenRecord(f"q{j}", 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, s_l, s_r,
                                [None, None, 1e-6, 1e-6], (0.0, 0.0)))
    one = calibrate_records(recs, 4, quantiles=(0.5,), policy="fixed")["calibration"]["dev_auc_by_layer"]
    ten = calibrate_records(recs, 4, quantiles=(0.5,), policy="fixed", rate=10.0)["calibration"]["dev_auc_by_layer"]
    assert one[1] == 0.0 and ten[1] == 1.0


def test_a_preset_run_decodes_with_the_presets_settings_and_warns_of_an_explicit_other(tmp_path, backbone, caplog) -> None:
    """The load (``TokRAGLM.setup``): ``preset=P`` alone decodes with P's settings, silently; an explicit
    ``n_anchors=3`` over P's 1 decodes with 3 after one WARNING line (was: silent either way, P's settings unused)."""
    import logging

    from tokrag_model.methods.tokrag import TokRAGLM

    raw = json.loads((ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json").read_text())
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**raw, "model": {**raw["model"], "fingerprint": backbone.fingerprint},
                                "params": {"layer": 2, **SETTINGS}}))
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm = TokRAGLM.with_backbone(backbone, preset=str(path))
        assert [r for r in caplog.records if r.levelno == logging.WARNING] == []
        assert (lm.params.layer, lm.params.n_anchors, lm.params.rag_top, lm.params.bypass) == (2, 1, 5, False)
        lm = TokRAGLM.with_backbone(backbone, preset=str(path), n_anchors=3)
    assert lm.params.n_anchors == 3 and lm.params.rag_top == 5
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"preset={path}: calibrated with n_anchors=1 (this run: 3); its params "
        "{'layer': 2} were chosen under those settings, so they may not suit this run's: drop n_anchors from the model "
        f"arguments (the preset applies its own), or calibrate a preset with them (tokrag calibrate --model "
        f"{lm.resolved_config['pretrained']} --split dev --model-args n_anchors=3)"]


def test_the_default_note_names_only_the_settings_a_presets_params_lack() -> None:
    """Both the lm_eval WARNING line and ``analyze --preset``'s refusal (one helper, ``preset_settings_conflict``) said
    "(a setting its params lack: the default)" after every conflict, also for a setting the preset's params hold; now
    the note follows each key the params lack, and only it."""
    from tokrag_model.methods.tokrag import preset_settings_conflict

    preset = {"path": "p.json", "params": {"layer": 2, "n_anchors": 1}}
    assert preset_settings_conflict(preset, {"n_anchors": 3, "bypass": False}) == (
        "n_anchors=1 (this run: 3), bypass=True (this run: False; a setting its params lack: the default)")
    assert preset_settings_conflict(preset, {"n_anchors": 1, "bypass": True}) is None
