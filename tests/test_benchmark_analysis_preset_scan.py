"""benchmarks/tokrag_analysis.py --preset P, with P's dynamic rule scanning from a lower js_min_layer than the model's,
failed after all the test scoring ("policy calibrated: the records have no gap for layer pair ...") as
``tokrag analyze`` did (fixed there by tasks.analyze.widen_records_scan); the benchmark now widens the scan too."""
import json
from types import SimpleNamespace

from tests.test_analyze_breaker43 import _scanned_record


def test_benchmark_preset_scanning_below_the_models_start(monkeypatch, tmp_path) -> None:
    from benchmarks import tokrag_analysis
    from tasks import calibrate
    from tests.analyze_fakes import install_fake

    holder = SimpleNamespace()
    fake = install_fake(monkeypatch, lambda i, sid: _scanned_record(holder.fake)(i, sid))
    holder.fake = fake
    fake.lm.scorer = SimpleNamespace(is_function=lambda t: False, is_skip=lambda t: False)
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
