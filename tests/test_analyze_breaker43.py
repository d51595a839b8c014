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


# ------------------------------------------------------------------------------------------ 2. preset dynamic params
def _preset(tmp_path: Path, params: dict, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                "model": {"pretrained": "smollm2-135m-instruct", "n_layers": 30}, "params": params}))
    return path



def bind_scorer(lm: object) -> None:
    """Give a fake ``lm`` (tests/analyze_fakes.py) ``TokRAGLM``'s own ``use_params`` / ``set_scan_start`` and a scorer
    built by them, on token classes with no function or skip token."""
    from types import MethodType

    from tokrag_model.methods.tokrag import TokRAGLM

    lm.is_function = lm.is_skip = lambda t: False
    for name in ("use_params", "set_scan_start"):
        setattr(lm, name, MethodType(getattr(TokRAGLM, name), lm))
    lm.use_params(lm.params, warn_sliding=False)

def _resolve(given: dict) -> dict:
    from tokrag_model.args import COMMON_ARGS, parse_args
    from tokrag_model.methods.tokrag import TokRAGLM

    return TokRAGLM.resolve_args(parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, given), given)


def test_a_preset_with_dynamic_params_beside_a_fixed_layer_is_refused_as_explicit_ones_are(tmp_path) -> None:
    """``{"layer": 14, "js_threshold": 0.5, "layer_fallback": 3}`` loaded silently (the threshold and fallback did
    nothing), while ``layer=14,js_threshold=0.5,layer_fallback=3`` is refused; now the preset is refused alike, in one
    line naming the file and the params, by lm_eval's model and by ``tokrag analyze --preset``. Under an explicit
    ``layer=dynamic`` the params apply (tests/test_model_lmeval.py), under an explicit fixed layer they are overridden."""
    from tasks.analyze import preset_policy
    from tokrag_model.methods.tokrag import TokRAGLM, read_preset

    path = _preset(tmp_path, {"layer": 14, "js_threshold": 0.5, "layer_fallback": 3})
    with pytest.raises(ConfigError) as exc:
        _resolve({"preset": str(path)})
    assert str(exc.value) == (
        f"--model tokrag: preset={path}: params js_threshold, layer_fallback have no effect with the preset's layer=14 "
        "(a fixed fusion layer); add layer=dynamic to the model arguments (or set params.layer to \"dynamic\" in the "
        "preset) to use them, or drop them from the preset")
    with pytest.raises(ConfigError, match=r"^--model tokrag: preset=.*: params js_threshold, layer_fallback have no "):
        TokRAGLM(pretrained="no-such-model", preset=str(path))  # before the (missing) weights are looked up
    with pytest.raises(ConfigError) as exc:
        preset_policy(read_preset(path), 30)
    assert str(exc.value) == (
        f"preset={path}: params js_threshold, layer_fallback have no effect with the preset's layer=14 (a fixed fusion "
        "layer); set params.layer to \"dynamic\" in the preset to use them, or drop them from the preset")
    got = _resolve({"preset": str(path), "layer": "dynamic"})
    assert (got["layer"], got["js_threshold"], got["layer_fallback"]) == ("dynamic", 0.5, 3)
    assert _resolve({"preset": str(path), "layer": 12})["layer"] == 12
    # no layer in the preset: the default fixed layer 0.625
    bare = _preset(tmp_path, {"js_min_layer": 5}, "bare.json")
    with pytest.raises(ConfigError, match=r"params js_min_layer has no effect with layer=0.625 \(the default: the "
                                          r"preset sets none\) \(a fixed fusion layer\); .* to use it, or drop it"):
        _resolve({"preset": str(bare)})
    # a dynamic preset and a fixed one without dynamic params load as before
    dyn = _preset(tmp_path, {"layer": "dynamic", "js_threshold": 0.5, "js_min_layer": 5, "layer_fallback": 3}, "d.json")
    assert _resolve({"preset": str(dyn)})["js_min_layer"] == 5
    assert preset_policy(read_preset(dyn), 30).min_layer == 5
    assert _resolve({"preset": str(_preset(tmp_path, {"layer": 14}, "f.json"))})["layer"] == 14


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parents[1] / "leaderboards" / "presets").glob("*.json")))
def test_the_committed_presets_still_load(name) -> None:
    """Each preset under leaderboards/presets/ resolves as lm_eval's model resolves it (the leaderboard's
    ``tokrag-calibrated`` cells give ``preset=`` alone) and as ``tokrag analyze --preset`` reads it."""
    from tasks.analyze import preset_policy
    from tokrag_model.methods.tokrag import read_preset

    path = Path(__file__).parents[1] / "leaderboards" / "presets" / name
    raw = json.loads(path.read_text())
    preset = read_preset(path, raw["model"]["fingerprint"], raw["model"]["n_layers"])
    got = _resolve({"preset": str(path)})
    assert got["layer"] == raw["params"]["layer"] and got.from_preset == frozenset(raw["params"])
    assert preset_policy(preset, raw["model"]["n_layers"]).layer == raw["params"]["layer"]


# ------------------------------------------------------------------------------------------ 1. --preset scan start
def _scanned_record(fake):
    """Records as the decoder writes them (4 layers): gaps only at the pairs above the model's scan start
    (``fake.lm.params.js_min_layer``, as it is when the sample is scored); even samples benefit, odd ones detriment."""
    from tasks import analyze
    from tokrag_model.methods.tokrag import resolve_layer

    def record(i, sid):
        start = resolve_layer(fake.lm.params.js_min_layer, 4, "js_min_layer")
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        gaps = [1e-6 * (ell + i) if ell > start else None for ell in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2,
                                    [0.1 * (j + 1) + 0.05 * i for j in range(4)], gaps, (0.3, 0.2))]
    return record


def test_analyze_preset_scanning_below_the_models_start_records_its_gaps(monkeypatch, tmp_path) -> None:
    """``tokrag analyze --preset P`` with P's dynamic rule scanning from js_min_layer=0 (below the model's default
    start, round(10/32*4) = 1) failed after all the scoring: "policy calibrated: the records have no gap for layer
    pair 1 (they scan from a later layer)". Now the records scan from the lower start (their key names it, so records
    of the default start are not reused for it), the calibrated row is scored, the dynamic row keeps the model's
    start; a run without such a preset keeps the default records (same file, reused)."""
    from types import SimpleNamespace

    from tasks import analyze
    from tests.analyze_fakes import install_fake
    from tokrag_model.methods.tokrag import TokRAGParams

    holder = SimpleNamespace()
    fake = install_fake(monkeypatch, lambda i, sid: _scanned_record(holder.fake)(i, sid))
    holder.fake = fake
    bind_scorer(fake.lm)
    fake.lm.decoder.windows = None
    preset = tmp_path / "p.json"
    preset.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                  "model": {"pretrained": "fake-lm", "fingerprint": "fp0", "n_layers": 4},
                                  "params": {"layer": "dynamic", "js_threshold": 1e-12, "js_min_layer": 0,
                                             "layer_fallback": 2}}))
    out = tmp_path / "an"
    base = ["--data", "wiki", "--split", "test", "--out", str(out), "--n", "4", "--bootstrap", "5"]
    assert analyze.main(base) == 0  # the default analysis: scan from layer 1
    plain = json.loads((out / "results.json").read_text())
    assert plain["configs"]["wiki"]["tokrag"]["js_min_layer"] == TokRAGParams().js_min_layer
    assert len(fake.scored) == 4

    fake.lm.params = TokRAGParams()
    assert analyze.main(base + ["--preset", str(preset)]) == 0
    res = json.loads((out / "results.json").read_text())
    cfg = res["configs"]["wiki"]
    assert cfg["tokrag"]["js_min_layer"] == 0 and cfg["reused"] == 0 and len(fake.scored) == 8  # rescored from pair 1
    assert cfg["records_file"] != plain["configs"]["wiki"]["records_file"]
    pols = res["results"]["wiki"]["policies"]
    # pair 1 holds a gap 1e-6*(1+i) > 1e-12 at every token: layer 0
    assert pols["calibrated"]["describe"] == "JS-gap > 1e-12 above layer 0, else 2" and pols["calibrated"]["mean_layer"] == 0.0
    assert pols["dynamic"]["describe"] == "JS-gap > 5e-07 above layer 1, else 2"  # the model's own start

    for argv in (base + ["--preset", str(preset)], base):  # the same runs again: each records file reused
        fake.lm.params = TokRAGParams()  # as a new process loads the model
        assert analyze.main(argv) == 0
        assert json.loads((out / "results.json").read_text())["configs"]["wiki"]["reused"] == 4
    assert len(fake.scored) == 8  # nothing scored again
    assert json.loads((out / "results.json").read_text())["results"] == plain["results"]


def test_a_preset_layer_spelled_Dynamic_is_read_as_lm_eval_reads_it(tmp_path) -> None:
    """``{"layer": "Dynamic", ...}`` loaded under lm_eval (the layer argument's cast lowercases it) but
    ``tokrag analyze --preset`` refused it: preset_unused_dynamic compared the raw "Dynamic" with "dynamic" ("params
    js_threshold ... have no effect with the preset's layer='Dynamic'"). read_preset now casts params.layer."""
    from tasks.analyze import preset_policy
    from tokrag_model.methods.tokrag import preset_unused_dynamic, read_preset

    path = _preset(tmp_path, {"layer": "Dynamic", "js_threshold": 0.5, "js_min_layer": 5, "layer_fallback": 3})
    assert _resolve({"preset": str(path)})["layer"] == "dynamic"
    preset = read_preset(path)
    assert preset_unused_dynamic(preset, lm_eval=False) is None
    pol = preset_policy(preset, 30)
    assert (pol.kind, pol.min_layer, pol.layer) == ("dynamic", 5, 3)
    fixed = read_preset(_preset(tmp_path, {"layer": "14"}, "f.json"))
    assert preset_policy(fixed, 30).layer == 14


def test_print_preset_names_the_recorded_uncalibrated_threshold(capsys) -> None:
    """print_preset said "uncalibrated 5e-7" whatever threshold the record's uncalibrated_quantile was measured at;
    it now prints the recorded ``uncalibrated_threshold`` (5e-7, the default, reads as before)."""
    from tasks.calibrate import calibrate_records, print_preset
    from tests.test_analyze import rec

    recs = [rec(f"q{j}", 1, *((1, 2) if j % 2 else (2, 1)), s_r=[0.9 if j % 2 else 0.1] * 8, s_l=0.5,
                gaps=[None] * 3 + [float(j) * 1e-6] * 5, analysis=(0.0, 0.0)) for j in range(14)]
    cal = calibrate_records(recs, 8, quantiles=(0.5,))
    cal["calibration"]["dynamic"]["uncalibrated_threshold"] = 2.5e-05
    print_preset({"calibration": cal["calibration"], "params": cal["params"]})
    q = cal["calibration"]["dynamic"]["uncalibrated_quantile"]
    assert f"dev dynamic rule: threshold = quantile of 70 gaps (uncalibrated 2.5e-5 sits at quantile {q:.3f})" in \
        capsys.readouterr().out.splitlines()
