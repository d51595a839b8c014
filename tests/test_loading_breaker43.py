"""Breaker 43 (b5)'s defects in loading a model and in ``--use_cache``.

1. ``--use_cache`` read back answers computed by other tokrag code: the key (:meth:`RAGMethodLM.response_cache_args`)
   covered the request, the doc and the model configuration, not tokrag's own code, so an edited Tok-RAG rule run
   with the same command got ``Cached requests: 3`` and the old answers, recorded under the new code's provenance. The
   key now holds :func:`tokrag_model.base.answer_code_fingerprint`; the results record how many responses came from
   the cache (``tokrag_cached_responses``).
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CacheHook, CachingLM

from tokrag_model.methods import MODELS

QUESTION = "who got the first nobel prize in physics"
DOC = {"qid": "q0", "question": QUESTION, "answers": ["Wilhelm Roentgen"],
       "ctxs": [{"docid": "d1", "title": "Nobel Prize", "text": "The first Nobel Prize in Physics went to Wilhelm "
                 "Roentgen.", "rank": 1}]}


def _request() -> list[Instance]:
    return [Instance("generate_until", DOC, (f"Question: {QUESTION}?\nAnswer:",
                                             {"until": ["\n"], "max_gen_toks": 4, "do_sample": False}), 0)]


def _ran(lm, path: str) -> int:
    """``generate_until`` of :func:`_request` through lm-eval's ``CachingLM`` at ``path``: the requests the model ran."""
    seen: list = []
    real = lm.generate_until

    def counted(requests, *a, **k):
        seen.extend(requests)
        return real(requests, *a, **k)

    lm.generate_until = counted
    cached = CachingLM(lm, path)
    try:
        cached.generate_until(_request())
        return len(seen)
    finally:
        cached.dbdict.close()
        lm.__dict__.pop("generate_until", None)
        lm.set_cache_hook(CacheHook(None))


# 1. --use_cache and the code that computed the answers
def test_use_cache_recomputes_answers_of_other_tokrag_code(backbone, tmp_path, monkeypatch):
    import tokrag_model.base as base

    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    path = str(tmp_path / "c_rank0.db")
    assert _ran(lm, path) == 1
    assert _ran(lm, path) == 0  # the same code again: read back
    monkeypatch.setattr(base, "answer_code_fingerprint", lambda: "0123456789abcdef", raising=False)  # edited code
    assert _ran(lm, path) == 1  # it was 0: the old code's answer, recorded as the new code's


def test_the_code_fingerprint_is_the_leaderboards_model_code_hash():
    from leaderboards.keys import _HashMemo, code_fingerprint
    from retrieval.io import fingerprint
    from tokrag_model.base import ANSWER_CODE_PACKAGES, answer_code_fingerprint

    assert ANSWER_CODE_PACKAGES == ("tokrag_model", "tasks")
    memo = _HashMemo()
    assert answer_code_fingerprint() == fingerprint([[p, code_fingerprint(p, memo)] for p in ANSWER_CODE_PACKAGES])
    assert len(answer_code_fingerprint()) == 16


def test_the_results_record_how_many_responses_came_from_the_cache(backbone, tmp_path):
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1)
    assert lm.get_model_info()["tokrag_cached_responses"] is None  # no --use_cache
    path = str(tmp_path / "c_rank0.db")
    _ran(lm, path)
    assert lm.get_model_info()["tokrag_cached_responses"] == 0
    _ran(lm, path)
    assert lm.get_model_info()["tokrag_cached_responses"] == 1


# 2. an alias name that is also a folder in the working directory: the alias loaded, the folder silently never read
@pytest.mark.parametrize("alias", ["gemma-3-270m", "smollm2-135m-instruct", "SmolLM2-135M-Instruct"])
def test_an_alias_that_is_also_a_folder_here_is_refused(tmp_path, monkeypatch, alias):
    from retrieval.errors import ConfigError
    from tokrag_model.loading import check_pretrained, resolve_pretrained

    (tmp_path / alias).mkdir()
    (tmp_path / alias / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    for call in (check_pretrained, resolve_pretrained):
        with pytest.raises(ConfigError) as exc:
            call(alias)
        assert str(exc.value) == (
            f"pretrained={alias!r} names both the offline alias {alias.lower()} and the folder {tmp_path / alias} in "
            f"the working directory: pass pretrained=./{alias} for the folder, or run from another directory (or "
            "rename the folder) for the alias")
    assert resolve_pretrained(f"./{alias}").source == "local"
    check_pretrained(str(tmp_path / alias))
    (tmp_path / alias / "config.json").unlink()
    (tmp_path / alias).rmdir()
    (tmp_path / alias).write_text("not a folder")  # a file of that name is no model: the alias, as before
    check_pretrained(alias)
