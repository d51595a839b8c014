"""A name that differs from a valid one only in case gets a did-you-mean, and is still refused (s57 h2; breaker b1's
finding 6): ``--model RAG-CAD`` printed "unknown --model 'RAG-CAD'" and nothing else, and a spec task
``NQ_ORACLE_BM25`` the same, because :func:`retrieval.errors.closest` compares as written (``rag_cad`` got a
suggestion). lm-eval's registries are case-sensitive, so the name is never accepted: :func:`unknown_name` only
suggests."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError, unknown_name
from tasks import TASK_DIR

NOISE = ["nq_oracle_bm25_noise20", "nq_oracle_bm25_noise40", "nq_oracle_bm25_noise60", "nq_oracle_bm25_noise80",
         "nq_oracle_bm25"]


def test_a_case_variant_gets_the_name_and_says_names_are_case_sensitive():
    assert unknown_name("--model", "RAG-CAD", ["rag-cad", "rag-adacad", "hf"], list_all=0) == (
        "unknown --model 'RAG-CAD' (did you mean 'rag-cad'? names are case-sensitive)")
    assert unknown_name("retriever", "BM25", ["bm25", "dense", "hybrid"], hint="or a run file") == (
        "unknown retriever 'BM25' (did you mean 'bm25'? names are case-sensitive); valid: bm25, dense, hybrid; "
        "or a run file")


def test_a_mistyped_case_variant_gets_the_closest_names_as_written_in_the_registry():
    assert unknown_name("task", "NQ_ORACLE_BM25_NOISE30", NOISE, list_all=0) == (
        "unknown task 'NQ_ORACLE_BM25_NOISE30' (closest: nq_oracle_bm25_noise20, nq_oracle_bm25_noise40, "
        "nq_oracle_bm25_noise60, nq_oracle_bm25_noise80)")
    assert unknown_name("--model", "Rag_Cad", ["rag-cad", "hf"], list_all=0) == (
        "unknown --model 'Rag_Cad' (did you mean 'rag-cad'?)")


def test_suggestions_for_names_in_the_registry_case_are_unchanged():
    assert unknown_name("task", "nq_oracle_bm25_noise30", NOISE, list_all=0) == (
        "unknown task 'nq_oracle_bm25_noise30' (closest: nq_oracle_bm25_noise20, nq_oracle_bm25_noise40, "
        "nq_oracle_bm25_noise60, nq_oracle_bm25_noise80)")
    assert unknown_name("retriever", "bm26", ["bm25", "dense", "hybrid"]) == (
        "unknown retriever 'bm26' (did you mean 'bm25'?); valid: bm25, dense, hybrid")
    assert unknown_name("retriever", "zzz", ["bm25", "dense"]) == "unknown retriever 'zzz'; valid: bm25, dense"


def test_lm_eval_model_registry_refuses_the_case_variant_with_the_suggestion():
    from lm_eval.api import registry

    import tokrag_model  # noqa: F401 - installs the --model hook

    with pytest.raises(ConfigError) as exc:
        registry.get_model("RAG-CAD")
    assert str(exc.value).startswith("unknown --model 'RAG-CAD' (did you mean 'rag-cad'? names are case-sensitive); "
                                     "the tokrag methods are "), exc.value


def test_a_spec_task_in_another_case_gets_the_suggestion(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path))  # the hash memo's file, if any, goes there
    from leaderboards.keys import _HashMemo, task_fingerprint

    with pytest.raises(ConfigError) as exc:
        task_fingerprint("NQ_ORACLE_BM25", [Path(TASK_DIR)], _HashMemo())
    assert str(exc.value).startswith("unknown task 'NQ_ORACLE_BM25' (did you mean 'nq_oracle_bm25'? names are "
                                     "case-sensitive); no YAML under "), exc.value
