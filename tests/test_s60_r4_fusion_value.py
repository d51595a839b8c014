"""A local hybrid's ``fusion`` that is neither ``rrf`` nor ``weighted`` is one line before any search or model load
(s60 r4, review of n1's c0c5fa5).

c0c5fa5 added :func:`retrieval.hybrid.check_fusion_settings` to :func:`retrieval.api._resolve_params`; its first test,
``fusion not in _FUSION_ONLY`` (a dict), hashed the value. A task's ``retriever_params {fusion: [weighted], alpha:
0.5}`` (a YAML flow list, or JSON in ``--metadata``) thus ended ``lm_eval --tasks rag_qa_hybrid`` in a ``TypeError:
unhashable type: 'list'`` traceback from the pre-load check (measured with the real CLI); before c0c5fa5 it was
refused, at search time, by :func:`retrieval.hybrid.component_hits`: ``fusion=['weighted']; use 'rrf' or
'weighted'``. Now that same line is raised by the check, for any fusion other than the two (``'Weighted'``, None
too), so a task is refused before the model load and ``retrieve()`` before it opens the run cache.
"""

from __future__ import annotations

import json

import pytest

from retrieval.api import _resolve_params, retrieve
from retrieval.errors import ConfigError
from tasks.utils import check_retriever_params


@pytest.mark.parametrize("fusion", [["weighted"], {"weighted": 1}, "Weighted", "RRF", None, 1])
def test_a_fusion_other_than_the_two_is_one_line(fusion):
    with pytest.raises(ConfigError) as exc:
        _resolve_params("hybrid", {"fusion": fusion, "alpha": 0.5})
    assert str(exc.value) == f"fusion={fusion!r}; use 'rrf' or 'weighted'"


def test_a_tasks_line_names_the_task():
    with pytest.raises(ConfigError) as exc:
        check_retriever_params({"fusion": ["weighted"], "alpha": 0.5}, "hybrid", "passages.jsonl",
                               task="rag_qa_hybrid")
    assert str(exc.value) == ("rag_qa_hybrid: task metadata retriever_params fusion=['weighted']; "
                              "use 'rrf' or 'weighted'")


@pytest.mark.parametrize("params, fusion, alpha", [
    ({}, "rrf", 0.1),
    ({"fusion": "rrf"}, "rrf", 0.1),
    ({"fusion": "weighted", "alpha": 0.5}, "weighted", 0.5),
])
def test_the_two_fusions_pass(params, fusion, alpha):
    p, _ = _resolve_params("hybrid", params)
    assert (p["fusion"], p["alpha"], p["rrf_k"]) == (fusion, alpha, 60)


def test_retrieve_refuses_before_the_run_cache(tmp_path):
    """Before: the same line from component_hits, after the run's cache lock was taken (runs/hybrid-<key>.lock)."""
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n")
    cache = tmp_path / "cache"
    with pytest.raises(ConfigError) as exc:
        retrieve(str(corpus), {"q1": "capital of france"}, "hybrid", k=1,
                 params={"fusion": "Weighted", "alpha": 0.5}, cache_dir=cache)
    assert str(exc.value) == "fusion='Weighted'; use 'rrf' or 'weighted'"
    assert not any((cache / d).exists() for d in ("indexes", "dense", "runs"))
