"""With ``--use_cache``, a rag-replug run answered from the cache recorded ``replug_temperature_resolved: null``
(null: no doc was weighted) although its answers were computed with τ = 1.0: τ was recorded only when the
weights were computed, which requests read back from the cache skip (s46 b7 proof 3). It is now resolved as the
requests are read, from the docs' ``scored_by`` and ``replug_temperature``."""

from __future__ import annotations

import pytest
from lm_eval.api.model import CachingLM

from test_resolved_config_values import _doc, _request


def _cached_run(backbone, path, **args):
    """A fresh rag-replug model answering one BM25 doc through lm-eval's CachingLM at ``path`` -> (model, answers)."""
    from tokrag_model.methods import MODELS

    lm = MODELS["rag-replug"].with_backbone(backbone, **args)
    lm.start_evaluation(use_cache=True)
    cached = CachingLM(lm, str(path))
    try:
        return lm, cached.generate_until([_request(_doc("bm25"))])
    finally:
        cached.dbdict.close()


@pytest.mark.parametrize(("args", "tau"), [({}, 1.0), ({"replug_temperature": 0.5}, 0.5),
                                           ({"replug_mode": "uniform"}, None)])
def test_a_run_answered_from_the_cache_records_the_temperature(backbone, tmp_path, args, tau):
    first, answers = _cached_run(backbone, tmp_path / "cache", **args)
    assert first.cached_responses == 0
    assert first.resolved_values() == {"replug_temperature_resolved": tau}

    again, answers_again = _cached_run(backbone, tmp_path / "cache", **args)
    assert again.cached_responses == 1  # answered from the cache: no weights computed
    assert answers_again == answers
    assert again.get_model_info()["tokrag_resolved_config"]["replug_temperature_resolved"] == tau


def test_a_doc_without_passages_records_no_temperature(backbone, tmp_path):
    from tokrag_model.methods import MODELS

    lm = MODELS["rag-replug"].with_backbone(backbone)
    doc = dict(_doc("bm25"), ctxs=[])
    lm.response_cache_args("generate_until", _request(doc))
    assert lm.resolved_values() == {"replug_temperature_resolved": None}


def test_a_reused_model_records_the_temperature_of_each_evaluation_only(backbone):
    """A model object reused for several evaluations (a notebook; ``tokrag leaderboard run``'s cells of one model)
    summed the τs of every earlier evaluation: a dense-scored run after a BM25 one recorded [0.05, 1.0]. Each
    evaluation (``start_evaluation``) now records its own."""
    from tokrag_model.methods import MODELS

    lm = MODELS["rag-replug"].with_backbone(backbone)
    lm.start_evaluation()
    lm.response_cache_args("generate_until", _request(_doc("bm25")))
    assert lm.resolved_values() == {"replug_temperature_resolved": 1.0}
    lm.start_evaluation()
    lm.response_cache_args("generate_until", _request(_doc("dense")))
    assert lm.resolved_values() == {"replug_temperature_resolved": 0.05}
