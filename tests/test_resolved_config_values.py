"""The results' ``tokrag_resolved_config`` recorded the arguments as given: a fixed-layer tokrag run said
``layer: 0.625`` (not the decoder layer it used, 19 of SmolLM2's 30) beside the dynamic rule's js_threshold /
js_min_layer / layer_fallback, which a fixed layer does not read; rag-replug said ``replug_temperature: null`` though
τ = 1.0 (the default for the docs' BM25 scores) weighted the passages (found by a provenance review). The resolved
values are now recorded beside them (``layer_resolved``, ``unused_args``, ``replug_temperature_resolved``); the
arguments keep their values, and the model's ``resolved_config`` itself is unchanged."""

from __future__ import annotations

from lm_eval.api.instance import Instance


def _doc(scored_by="bm25"):
    return {"qid": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "scored_by": scored_by,
            "ctxs": [{"docid": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare.",
                      "score": 7.5, "source": "retrieved"},
                     {"docid": "p2", "title": "Paris", "text": "Paris is the capital of France.", "score": 3.0,
                      "source": "retrieved"}]}


def _request(doc):
    return Instance("generate_until", doc, ("Question: who wrote hamlet\nAnswer:",
                                            {"until": ["\n"], "max_gen_toks": 2, "do_sample": False}), 0)


def test_a_fixed_tokrag_layer_records_the_layer_used(backbone):
    from tokrag_model.methods import MODELS

    n = backbone.model.config.num_hidden_layers
    assert n == 30  # SmolLM2-135M
    lm = MODELS["tokrag"].with_backbone(backbone)
    rc = lm.get_model_info()["tokrag_resolved_config"]
    assert rc["layer"] == 0.625 and rc["layer_resolved"] == 19  # round(0.625 * 30)
    assert rc["unused_args"] == ["js_threshold", "js_min_layer", "layer_fallback"]
    assert "layer_resolved" not in lm.resolved_config  # the run's own config (journals, run keys) as before
    rc = MODELS["tokrag"].with_backbone(backbone, layer=-2).get_model_info()["tokrag_resolved_config"]
    assert (rc["layer"], rc["layer_resolved"]) == (-2, 28)
    rc = MODELS["tokrag"].with_backbone(backbone, layer="dynamic").get_model_info()["tokrag_resolved_config"]
    assert rc["layer_resolved"] == "dynamic" and "unused_args" not in rc
    assert (rc["js_min_layer_resolved"], rc["layer_fallback_resolved"]) == (round(10 / 32 * 30), round(20 / 32 * 30))


def test_replug_records_the_temperature_used(backbone):
    from tokrag_model.methods import MODELS

    lm = MODELS["rag-replug"].with_backbone(backbone)
    lm.generate_until([_request(_doc("bm25"))], disable_tqdm=True)
    rc = lm.get_model_info()["tokrag_resolved_config"]
    assert rc["replug_temperature"] is None and rc["replug_temperature_resolved"] == 1.0
    lm.generate_until([_request(_doc("dense"))], disable_tqdm=True)
    assert lm.get_model_info()["tokrag_resolved_config"]["replug_temperature_resolved"] == [0.05, 1.0]
    lm = MODELS["rag-replug"].with_backbone(backbone, replug_temperature=0.5)
    lm.generate_until([_request(_doc("bm25"))], disable_tqdm=True)
    rc = lm.get_model_info()["tokrag_resolved_config"]
    assert (rc["replug_temperature"], rc["replug_temperature_resolved"]) == (0.5, 0.5)
    assert MODELS["rag-replug"].with_backbone(backbone, replug_mode="uniform").get_model_info()[
        "tokrag_resolved_config"]["replug_temperature_resolved"] is None
