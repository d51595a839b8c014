"""``lm_eval --use_cache`` with a tokrag model wrote every response twice: the model's cache hook stores each response
as it finishes (so an interrupted run resumes, :meth:`tokrag_model.base.RAGMethodLM._to_cache`), and the patched
``CachingLM`` loop (:func:`tokrag_model._lmeval_hook.patch_caching_lm`, lm-eval 0.4.13's loop) stored all of them
again after the call: two sqlite writes (and commits) per response, 6 for 3 requests. It now stores a response after
the call only when the cache does not hold it already; a model whose hook stores nothing still gets every response
stored by the loop."""
from __future__ import annotations

import collections

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CacheHook, CachingLM
from sqlitedict import SqliteDict

from tokrag_model.methods import MODELS

QUESTIONS = ["who wrote hamlet", "what is the capital of france", "when was rome founded"]
CTXS = [{"docid": "d1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare.", "rank": 1}]


def _requests(kind: str) -> list[Instance]:
    out = []
    for i, q in enumerate(QUESTIONS):
        doc = {"qid": f"q{i}", "question": q, "answers": ["x"], "ctxs": CTXS}
        if kind == "generate_until":
            args = (f"Question: {q}?\nAnswer:", {"until": ["\n"], "max_gen_toks": 3, "do_sample": False})
        elif kind == "loglikelihood":
            args = (f"Question: {q}?\nAnswer:", " Shakespeare")
        else:
            args = (f"The question {q} has an answer in the passage.",)
        out.append(Instance(kind, doc, args, i))
    return out


@pytest.fixture
def writes(monkeypatch) -> collections.Counter:
    """The sqlite writes of lm-eval's cache, per key."""
    counts: collections.Counter = collections.Counter()
    real = SqliteDict.__setitem__

    def counting(self, key, value):
        counts[key] += 1
        return real(self, key, value)

    monkeypatch.setattr(SqliteDict, "__setitem__", counting)
    return counts


def _through_cache(lm, path: str, kind: str) -> tuple[list, int]:
    """``kind`` over the three requests through ``CachingLM`` at ``path``: (responses, requests the model ran)."""
    seen: list = []
    real = getattr(lm, kind)

    def counted(requests, *a, **k):
        seen.extend(requests)
        return real(requests, *a, **k)

    setattr(lm, kind, counted)
    cached = CachingLM(lm, path)
    try:
        return getattr(cached, kind)(_requests(kind)), len(seen)
    finally:
        cached.dbdict.close()
        lm.__dict__.pop(kind, None)
        lm.set_cache_hook(CacheHook(None))


@pytest.mark.parametrize("kind", ["generate_until", "loglikelihood", "loglikelihood_rolling"])
def test_each_response_is_written_to_the_cache_once(backbone, tmp_path, writes, kind):
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    path = str(tmp_path / "c_rank0.db")
    first, ran = _through_cache(lm, path, kind)
    assert ran == 3
    assert sorted(writes.values()) == [1, 1, 1]  # was [2, 2, 2]: the hook's write, then the loop's
    again, ran = _through_cache(lm, path, kind)  # read back: nothing computed, nothing written
    assert (again, ran, sum(writes.values())) == (first, 0, 3)


def test_a_model_whose_hook_stores_nothing_still_gets_its_responses_stored(backbone, tmp_path, writes, monkeypatch):
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    monkeypatch.setattr(lm, "_to_cache", lambda *a, **k: None)
    path, kind = str(tmp_path / "c_rank0.db"), "generate_until"
    first, ran = _through_cache(lm, path, kind)
    assert ran == 3 and sorted(writes.values()) == [1, 1, 1]  # the loop's writes
    again, ran = _through_cache(lm, path, kind)
    assert (again, ran) == (first, 0)
