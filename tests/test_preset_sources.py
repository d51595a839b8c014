"""Where a Tok-RAG argument came from: a ``tokrag calibrate`` preset or the command line. An argument given
explicitly is reported as given even when it equals the preset's value: ``layer=45`` given with a preset whose
layer is 45 was refused with '; it comes from preset=PATH (params.layer): ..., or give layer= explicitly', which
tells the user to do what they did. Checked at the three places that report it: ``TokRAGLM.check_shape`` (the
leaderboard's pre-run check, no model loaded), ``check_cell_args`` itself, and the load (``setup``)."""

from __future__ import annotations

import json
import re

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import COMMON_ARGS, parse_args
from tokrag_model.methods.tokrag import TokRAGLM

OUTSIDE = r"--model tokrag: layer=45 is outside the model's 30 layers \(0..29\)"
TOO_BIG = r"--model tokrag: rag_top=60000 exceeds the model's vocabulary of 49152 tokens"


def _preset(path, params, model=None):
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                "model": model or {"pretrained": "m", "fingerprint": "abc", "n_layers": 30},
                                "params": params, "calibration": {}}))
    return str(path)


def _resolve(given):
    given = {"pretrained": "smollm2-135m-instruct", **given}
    return TokRAGLM.resolve_args(parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, given), given)


def _note(path, key):
    return (rf"; it comes from preset={re.escape(path)} \(params.{key}\): use a preset calibrated for this model "
            rf"\(tokrag calibrate --model smollm2-135m-instruct --split dev\), or give {key}= explicitly")


def test_resolve_args_records_which_arguments_the_preset_set(tmp_path):
    path = _preset(tmp_path / "p.json", {"layer": 12, "rag_top": 4, "rate": 1.5})
    cfg = _resolve({"preset": path, "layer": 12, "rate": "2"})  # layer equal to the preset's, rate over it
    assert (cfg["layer"], cfg["rag_top"], cfg["rate"]) == (12, 4, 2.0)
    assert cfg.from_preset == {"rag_top"}
    assert _resolve({"preset": path, "layer": None}).from_preset == {"layer", "rag_top", "rate"}  # null: not given
    assert _resolve({"layer": 12}).from_preset == frozenset()  # no preset
    # the record is no key: an explicit layer=12 and the preset's layer 12 resolve to the same values
    assert "from_preset" not in cfg and dict(_resolve({"preset": path})) == dict(_resolve({"preset": path, "layer": 12}))


def test_an_explicit_argument_equal_to_the_presets_is_reported_as_given(tmp_path):
    path = _preset(tmp_path / "p.json", {"layer": 45, "rag_top": 60000})
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}$"):  # was '; it comes from preset=... (params.layer)'
        TokRAGLM.check_shape(_resolve({"preset": path, "layer": 45}), 30, None)
    with pytest.raises(ConfigError, match=rf"^{TOO_BIG}$"):
        TokRAGLM.check_shape(_resolve({"preset": path, "layer": 12, "rag_top": "60000"}), 30, 49152)
    # set by the preset only: still named as the preset's
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}{_note(path, 'layer')}$"):
        TokRAGLM.check_shape(_resolve({"preset": path}), 30, None)
    with pytest.raises(ConfigError, match=rf"^{TOO_BIG}{_note(path, 'rag_top')}$"):
        TokRAGLM.check_shape(_resolve({"preset": path, "layer": 12}), 30, 49152)


def test_the_leaderboard_pre_run_check_reports_an_explicit_argument_as_given(tmp_path):
    from leaderboard_helpers import TOY, write_spec

    from leaderboards.runner import check_cell_args
    from leaderboards.spec import load_spec

    path = _preset(tmp_path / "p.json", {"layer": 45})
    for layer, note in ((45, ""), (None, _note(path, "layer"))):
        args = {"preset": path, **({"layer": layer} if layer else {})}
        spec = load_spec(write_spec(tmp_path / f"spec-{layer}", methods=[
            {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
            {"name": "tokrag-calibrated", "model": "tokrag", "model_args": args,
             "specific": {"pretrained": "smollm2-135m-instruct"}}]))
        with pytest.raises(ConfigError, match=rf"^leaderboard spec .*toy.yaml: method tokrag-calibrated: {OUTSIDE}{note}$"):
            check_cell_args(spec, spec.cells())


def test_the_load_reports_an_explicit_argument_as_given(tmp_path, backbone):
    model = {"pretrained": "smollm2-135m-instruct", "fingerprint": backbone.fingerprint, "n_layers": 30}
    path = _preset(tmp_path / "p.json", {"layer": 45}, model)
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}$"):  # was '; it comes from preset=... (params.layer)'
        TokRAGLM.with_backbone(backbone, preset=path, layer=45)
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}; it comes from preset={re.escape(path)} \(params.layer\): "):
        TokRAGLM.with_backbone(backbone, preset=path)
    lm = TokRAGLM.with_backbone(backbone, preset=path, layer=12)  # given over the preset
    assert lm.resolved_config["layer"] == 12 and type(lm.resolved_config) is dict  # results record plain values
