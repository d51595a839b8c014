"""The results' ``tokrag_resolved_config`` recorded only what the ``auto`` arguments resolved to (``batch_invariant:
true``, ``weight_layout: col``, ``batch_size: 1``): a reader could not tell ``batch_invariant=auto`` (or the default)
from an explicit ``batch_invariant=true``. It now records the arguments asked as ``auto`` as given
(``requested_auto``), outside the model's ``resolved_config``, so the ``--use_cache`` key and the journal header
(which hash ``resolved_config``) stay as they were."""

from __future__ import annotations


def test_requested_auto_names_the_arguments_asked_as_auto() -> None:
    from tokrag_model.args import COMMON_ARGS, requested_auto

    assert requested_auto(COMMON_ARGS, {}) == {"weight_layout": "auto", "batch_invariant": "auto"}  # the defaults
    assert requested_auto(COMMON_ARGS, {"weight_layout": None, "batch_invariant": None}) == {  # YAML null: default
        "weight_layout": "auto", "batch_invariant": "auto"}
    assert requested_auto(COMMON_ARGS, {"batch_invariant": False, "weight_layout": "row", "dtype": "auto",
                                        "batch_size": "auto:4"}) == {"dtype": "auto", "batch_size": "auto:4"}
    assert requested_auto(COMMON_ARGS, {"batch_invariant": "AUTO", "weight_layout": "col", "batch_size": "1",
                                        "pretrained": "auto"}) == {"batch_invariant": "AUTO"}


def test_results_tell_auto_from_the_explicit_value(backbone) -> None:
    from tokrag_model.methods import MODELS

    auto = MODELS["tokrag"].with_backbone(backbone, batch_size="auto:4")
    rc = auto.get_model_info()["tokrag_resolved_config"]
    assert (rc["batch_invariant"], rc["weight_layout"], rc["batch_size"]) == (True, "col", 1)  # CPU, float32
    assert rc["requested_auto"] == {"weight_layout": "auto", "batch_size": "auto:4", "batch_invariant": "auto"}
    explicit = MODELS["tokrag"].with_backbone(backbone, batch_invariant=True, weight_layout="col", batch_size=1)
    rc2 = explicit.get_model_info()["tokrag_resolved_config"]
    assert rc2["requested_auto"] == {}
    assert {k: v for k, v in rc.items() if k != "requested_auto"} == {k: v for k, v in rc2.items() if k != "requested_auto"}
    # the model's own config (the --use_cache key, the journal header) is unchanged: the same answers, the same key
    assert "requested_auto" not in auto.resolved_config and auto.resolved_config == explicit.resolved_config
    assert auto._response_cache_model == explicit._response_cache_model
    off = MODELS["tokrag"].with_backbone(backbone, batch_invariant=False)
    assert off.get_model_info()["tokrag_resolved_config"]["requested_auto"] == {"weight_layout": "auto"}
