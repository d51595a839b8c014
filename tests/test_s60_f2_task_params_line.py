"""A task's ``retriever_params`` line names the task metadata key only, never ``tokrag retrieve``'s flags (s60 f2).

``tasks.utils._task_params_line`` removed the CLI flag only for ``k1``, ``b`` and ``alpha`` when the line began with
them, so ``lm_eval --tasks rag_qa_hybrid`` with ``retriever_params {"normalization": true}`` over a local corpus read
``rag_qa_hybrid: task metadata retriever_params normalization=True (--normalization): ... set fusion weighted
(--fusion weighted; task metadata retriever_params fusion: weighted) ...`` (measured with the real lm_eval CLI); the
same for ``(--rrf-k)`` and every flag after the first of several settings. lm_eval has none of these flags.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks.utils import check_retriever_params

TO_RRF = ("a setting of reciprocal rank fusion, but this hybrid fuses by weighted fusion (fusion weighted), which "
          "ignores it; set fusion rrf (task metadata retriever_params fusion: rrf) to use it, or leave it out")
TO_WEIGHTED = ("fusion (fusion rrf, the default over a local corpus), which ignores {it}; set fusion weighted (task "
               "metadata retriever_params fusion: weighted) to use {it}, or leave {it} out")


@pytest.mark.parametrize("params, line", [
    ({"normalization": True},
     "normalization=True: a setting of weighted fusion, but this hybrid fuses by reciprocal rank "
     + TO_WEIGHTED.format(it="it")),
    ({"weight_on_dense": "true"},
     "weight_on_dense=True: a setting of weighted fusion, but this hybrid fuses by reciprocal rank "
     + TO_WEIGHTED.format(it="it")),
    ({"alpha": 0.95},
     "alpha=0.95: a setting of weighted fusion, but this hybrid fuses by reciprocal rank " + TO_WEIGHTED.format(it="it")),
    ({"alpha": 1, "normalization": True, "weight_on_dense": True},
     "alpha=1.0, normalization=True, weight_on_dense=True: settings of weighted fusion, but this hybrid fuses by "
     "reciprocal rank " + TO_WEIGHTED.format(it="them")),
    ({"fusion": "weighted", "alpha": 0.5, "rrf_k": 10}, "rrf_k=10: " + TO_RRF),
])
def test_a_fusion_line_names_no_cli_flag(params, line):
    with pytest.raises(ConfigError) as exc:
        check_retriever_params(params, "hybrid", "passages.jsonl", task="rag_qa_hybrid")
    assert str(exc.value) == f"rag_qa_hybrid: task metadata retriever_params {line}"
    assert "(--" not in str(exc.value) and "--fusion" not in str(exc.value)


@pytest.mark.parametrize("params, retriever, line", [  # the lines that were right already stay as they were
    ({"k1": "x"}, "bm25", "nq_oracle_bm25: task metadata retriever_params k1='x': k1 must be a finite number"),
    ({"b": "0.4"}, "bm25", "nq_oracle_bm25: task metadata retriever_params b='0.4': b must be a finite number"),
    ({"alpha": "1e-1", "fusion": "weighted"}, "hybrid",
     "nq_oracle_bm25: task metadata retriever_params alpha='1e-1': alpha must be a finite number; YAML reads 1e-1 as "
     "a string: write 1.0e-1"),
    ({"rrf_k": 0}, "hybrid", "nq_oracle_bm25: task metadata retriever_params rrf_k=0: must be a whole number >= 1 "
     "(the RRF constant, default 60)"),
    ({"fusion": "Weighted"}, "hybrid", "nq_oracle_bm25: task metadata retriever_params fusion='Weighted'; use 'rrf' or "
     "'weighted'"),
])
def test_other_lines_are_unchanged(params, retriever, line):
    with pytest.raises(ConfigError) as exc:
        check_retriever_params(params, retriever, "passages.jsonl", task="nq_oracle_bm25")
    assert str(exc.value) == line


def test_the_cli_keeps_its_flags():
    """tokrag retrieve's own line (retrieval.api._resolve_params) still names --normalization and --fusion weighted."""
    from retrieval.api import _resolve_params

    with pytest.raises(ConfigError) as exc:
        _resolve_params("hybrid", {"normalization": True})
    assert str(exc.value).startswith("normalization=True (--normalization): a setting of weighted fusion")
    assert "set fusion weighted (--fusion weighted; task metadata retriever_params fusion: weighted)" in str(exc.value)
