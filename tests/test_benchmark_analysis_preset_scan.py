"""benchmarks/tokrag_analysis.py --preset P, with P's dynamic rule scanning from a lower js_min_layer than the model's,
failed after all the test scoring ("policy calibrated: the records have no gap for layer pair ...") as
``tokrag analyze`` did (fixed there by tasks.analyze.widen_records_scan); the benchmark now widens the scan too."""
import json
from types import SimpleNamespace

from tests.test_analyze_breaker43 import _scanned_record, bind_scorer


def test_benchmark_preset_scanning_below_the_models_start(monkeypatch, tmp_path) -> None:
    from benchmarks import tokrag_analysis
    from tasks import calibrate
    from tests.analyze_fakes import install_fake

    holder = SimpleNamespace()
    fake = install_fake(monkeypatch, lambda i, sid: _scanned_record(holder.fake)(i, sid))
    holder.fake = fake
    bind_scorer(fake.lm)
    fake.lm.decoder.windows = None
    monkeypatch.setattr(calibrate, "print_preset", lambda preset: None)  # its tables need a full calibration block
    preset = tmp_path / "p.json"
    preset.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                  "model": {"pretrained": "fake-lm", "fingerprint": "fp0", "n_layers": 4},
                                  "params": {"layer": "dynamic", "js_threshold": 1e-12, "js_min_layer": 0,
                                             "layer_fallback": 2},
                                  "calibration": {"data": {"wiki": {"split": "dev"}}, "dev_counts": {"strict": 7}}}))
    out = tmp_path / "bm"
    assert tokrag_analysis.main(["--data", "wiki", "--n", "4", "--bootstrap", "5", "--preset", str(preset),
                                 "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["configs"]["wiki"]["tokrag"]["js_min_layer"] == 0
    pols = res["results"]["wiki"]["policies"]
    assert pols["calibrated"]["describe"] == "JS-gap > 1e-12 above layer 0, else 2"
    assert pols["dynamic"]["describe"] == "JS-gap > 5e-07 above layer 1, else 2"  # the model's own start


def test_benchmark_refuses_a_preset_before_the_model_loads(monkeypatch, tmp_path) -> None:
    """A preset ``tokrag analyze --preset`` refuses before its model load (the dynamic rule's params beside a fixed
    layer, 075676f) was refused by the benchmark only after ``load_lm``: minutes of loading, then the same line. Now
    both call :func:`tasks.analyze.check_preset_before_load` first."""
    import pytest

    from benchmarks import tokrag_analysis
    from retrieval.errors import ConfigError
    from tasks import analyze
    from tests.test_analyze_breaker43 import _preset

    def no_load(args):
        raise AssertionError("load_lm called before the preset was checked")

    monkeypatch.setattr(analyze, "load_lm", no_load)
    path = _preset(tmp_path, {"layer": 14, "js_threshold": 0.5, "layer_fallback": 3})
    with pytest.raises(ConfigError) as exc:
        tokrag_analysis.main(["--data", "wiki", "--n", "4", "--preset", str(path), "--out", str(tmp_path / "bm")])
    assert str(exc.value).startswith(f"preset={path}: params js_threshold, layer_fallback have no effect with the "
                                     "preset's layer=14 (a fixed fusion layer)")
