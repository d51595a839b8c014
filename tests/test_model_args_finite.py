"""Float model arguments refuse NaN and infinity before any model loads.

``js_threshold`` was cast with a plain ``float``: ``layer=dynamic,js_threshold=nan`` (or a preset's ``NaN``) was
accepted, no gap is ever above NaN, so every token fell back to ``layer_fallback`` in a run labelled dynamic, and
the results JSON held a bare ``NaN``. ``replug_temperature=nan`` gave NaN mixture weights; ``inf`` gave uniform
weights in a run labelled ``mixture``. The ``>= low`` casters refused NaN but took ``inf`` (CAD's ``alpha=inf``:
logits inf - inf = NaN; Tok-RAG's ``rate=inf``: every RAG token)."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError


@pytest.mark.parametrize("method, args, message", [
    ("tokrag", {"layer": "dynamic", "js_threshold": "nan"}, "js_threshold='nan' is invalid: expected a finite number, got 'nan'"),
    ("tokrag", {"layer": "dynamic", "js_threshold": float("inf")}, "js_threshold=inf is invalid: expected a finite number, got inf"),
    ("tokrag", {"rate": "inf"}, "rate='inf' is invalid: expected a finite number > 0, got 'inf'"),
    ("rag-replug", {"replug_temperature": "nan"}, "replug_temperature='nan' is invalid: expected a finite number, got 'nan'"),
    ("rag-replug", {"replug_temperature": float("-inf")}, "replug_temperature=-inf is invalid: expected a finite number, got -inf"),
    ("rag-cad", {"alpha": float("inf")}, "alpha=inf is invalid: expected a finite number >= 0, got inf"),
    ("rag-adacad", {"alpha_floor": "Infinity"}, "alpha_floor='Infinity' is invalid: expected a finite number >= 0, got 'Infinity'"),
    ("rag-ensemble-entropy", {"entropy_temperature": float("inf")},
     "entropy_temperature=inf is invalid: expected a finite number > 0, got inf"),
])
def test_non_finite_float_arguments_are_refused(method, args, message):
    from tokrag_model.methods import MODELS

    with pytest.raises(ConfigError) as exc:
        MODELS[method](**args)
    assert f"--model {method}: model argument {message}" in str(exc.value)


def test_finite_values_still_pass():
    from tokrag_model.args import number_at_least, to_finite, to_opt_float

    assert (to_finite("5e-7"), to_finite(-1), to_opt_float(None), to_opt_float("null"), to_opt_float("0.05")) == (
        5e-7, -1.0, None, None, 0.05)
    assert number_at_least(0.0)(1e300) == 1e300 and number_at_least(0.0)("0") == 0.0


def test_a_preset_with_a_nan_threshold_is_refused(tmp_path):
    from tokrag_model.methods.tokrag import read_preset

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "params": {"layer": "dynamic",
                                "js_threshold": float("nan")}, "model": {"n_layers": 30}}))
    assert "NaN" in path.read_text()  # as json.dumps writes it, and json.loads reads it back as nan
    with pytest.raises(ConfigError) as exc:
        read_preset(path)
    assert str(exc.value) == f"preset={path}: params.js_threshold=nan is invalid: expected a finite number, got nan"


def test_an_integer_too_large_for_a_float_is_one_line():
    """A YAML integer literal of 400 digits raised OverflowError (int too large to convert to float) as a traceback."""
    with pytest.raises(ConfigError, match=r"--model tokrag: model argument rate=9{20}.* is invalid: int too large"):
        from tokrag_model.methods import MODELS

        MODELS["tokrag"](rate=int("9" * 400))
