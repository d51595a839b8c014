"""Two tokrag methods whose layer arguments name the same decoder layer, one as a fraction of the depth and one as an
index (a new-user trial: ``tokrag`` (default layer 0.625 = round(0.625 * 30) = 19 on the 30-layer SmolLM2) beside
``{name: tokrag-l19, model: tokrag, model_args: {layer: 19}}``), ran both and published two identical rows: the
pre-run refusal of two methods with the same configuration compared the layer arguments as written. The depth is read
from the model's config without loading weights (:func:`tokrag_model.loading.model_shape`); nothing is run here."""

from __future__ import annotations

import pytest
import yaml

from leaderboards.runner import check_distinct_methods
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tokrag_model.loading import model_shape

SMOL = "smollm2-135m-instruct"


def _spec(tmp_path, methods, pretrained=SMOL):
    spec = {"name": "dup", "reference": methods[0]["name"], "tasks": ["nq_oracle_bm25"], "seeds": [1234],
            "shared": {"model_args": {"pretrained": pretrained, "k": 5}, "gen_kwargs": {"max_gen_toks": 16}, "limit": 5},
            "methods": methods}
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return load_spec(path)


@pytest.fixture(scope="module")
def smol_depth():
    shape = model_shape(SMOL)
    if shape is None or shape.n_layers is None:
        pytest.skip(f"{SMOL}'s config is not available without a download on this machine")
    assert shape.n_layers == 30
    return shape.n_layers


def test_a_layer_index_equal_to_the_default_fraction_is_refused(tmp_path, smol_depth):
    spec = _spec(tmp_path, [{"name": "tokrag", "model": "tokrag"},
                            {"name": "tokrag-l19", "model": "tokrag", "model_args": {"layer": 19}}])
    with pytest.raises(ConfigError) as exc:
        check_distinct_methods(spec, spec.cells())
    msg = str(exc.value)
    assert "methods 'tokrag' and 'tokrag-l19' run the same configuration" in msg
    assert "layer 0.625 and 19 are both decoder layer 19 of the model's 30" in msg


def test_a_fraction_and_an_index_of_another_layer_stay_distinct(tmp_path, smol_depth):
    spec = _spec(tmp_path, [{"name": "tokrag", "model": "tokrag"},
                            {"name": "tokrag-l18", "model": "tokrag", "model_args": {"layer": 18}},
                            {"name": "tokrag-top", "model": "tokrag", "model_args": {"layer": -1}},
                            {"name": "tokrag-dyn", "model": "tokrag", "model_args": {"layer": "dynamic"}}])
    check_distinct_methods(spec, spec.cells())  # nothing refused


def test_two_fractions_of_one_layer_and_a_negative_index_are_refused(tmp_path, smol_depth):
    spec = _spec(tmp_path, [{"name": "tokrag-a", "model": "tokrag", "model_args": {"layer": 0.63}},
                            {"name": "tokrag-b", "model": "tokrag", "model_args": {"layer": -11}}])
    with pytest.raises(ConfigError, match="layer 0.63 and -11 are both decoder layer 19 of the model's 30"):
        check_distinct_methods(spec, spec.cells())


def test_a_model_whose_depth_is_unknown_compares_fractions_as_written(tmp_path):
    """A hub id not in the local cache: no depth without a download, so 0.625 and 19 are not refused."""
    spec = _spec(tmp_path, [{"name": "tokrag", "model": "tokrag"},
                            {"name": "tokrag-l19", "model": "tokrag", "model_args": {"layer": 19}}],
                 pretrained="no-such-owner/no-such-model-xyz")
    assert model_shape("no-such-owner/no-such-model-xyz") is None
    check_distinct_methods(spec, spec.cells())
