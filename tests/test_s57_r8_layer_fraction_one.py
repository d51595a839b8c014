"""``js_min_layer=1.0`` / ``layer_fallback=1.0`` are refused as ``layer=1.0`` is (s57 r8).

b1's 718d8b8 refused ``layer=1.0``: the float 1.0 ran as layer index 1, near the bottom, where a fraction 1.0 means the
top of the model (r5's 8b5b306 kept ``01`` as layer 1). The dynamic rule's ``js_min_layer`` and ``layer_fallback``
(:func:`tokrag_model.methods.tokrag.layer_or_fraction`) still read 1.0 as layer index 1; they now go through the same
rule (:func:`tokrag_model.args.refuse_float_one`).
"""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import resolved_args
from tokrag_model.methods import MODELS
from tokrag_model.methods.tokrag import layer_or_fraction, read_preset, resolve_layer

MESSAGE = ("1.0 is no fraction of the depth (those lie in (0, 1)) and was read as layer index 1, near the bottom; "
           "write 1 for layer index 1, the top layer's index (the model's number of layers less 1), or a fraction "
           "below 1")


@pytest.mark.parametrize("value", [1.0, "1.0", " 1.0 ", "1e0", "01.0", "+1.", "1.00"])
def test_one_as_a_float_is_refused(value):
    with pytest.raises(ValueError) as exc:
        layer_or_fraction(value)
    assert str(exc.value) == MESSAGE


@pytest.mark.parametrize("value, got", [(1, 1), ("1", 1), ("01", 1), ("+1", 1), (2.0, 2), ("2.0", 2), (0, 0),
                                        ("0", 0), (0.5, 0.5), ("0.3125", 0.3125), (20 / 32, 0.625)])
def test_layers_and_fractions_read_as_before(value, got):
    out = layer_or_fraction(value)
    assert out == got and type(out) is type(got)


@pytest.mark.parametrize("key", ["js_min_layer", "layer_fallback"])
def test_the_model_argument_is_one_line_naming_it(key):
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS["tokrag"], {"layer": "dynamic", key: "1.0"})
    assert str(exc.value).startswith(f"--model tokrag: model argument {key}='1.0' is invalid: {MESSAGE}")
    assert "\n" not in str(exc.value)
    # before: layer index 1 of a 30-layer model (near the bottom), where a fraction 1.0 would be the top
    ok = resolved_args(MODELS["tokrag"], {"layer": "dynamic", key: "1"})
    assert resolve_layer(ok[key], 30, key) == 1


def test_a_preset_setting_it_is_refused_naming_the_param(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "model": {"n_layers": 30},
                                "params": {"layer": "dynamic", "js_threshold": 1e-6, "layer_fallback": 1.0}}))
    with pytest.raises(ConfigError) as exc:
        read_preset(path)
    assert str(exc.value) == f"preset={path}: params.layer_fallback=1.0 is invalid: {MESSAGE}"
