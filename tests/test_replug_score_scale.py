"""REPLUG's default τ follows the scale the doc's scores are on (``doc["scored_by"]``, retrieval.score_label).

Before the fix a dense task with ``retriever_params: {l2_norm: false}`` recorded ``scored_by: dense`` like the
cosine default, so τ = 0.05 (chosen for cosines) was applied to raw inner products: the breaker's scores
[22.65, 22.122, 3.923] gave the weights [1.0, 0.0, 0.0] (top-1, not a mixture) on every question. Such docs now
record ``dense-ip``, for which REPLUG has no default and asks for ``replug_temperature``.
"""

from __future__ import annotations

import math

import pytest

from retrieval.errors import ConfigError
from retrieval import score_label
from tokrag_model.methods.replug import REPLUG_TAU, doc_temperature, replug_weights

from test_retrieval_dense import mini  # noqa: F401 - the fixture: 20 NQ-oracle questions, gold + 20 DPR passages

DPR_PAIR = {"encoder_class": "dpr", "encoder": "facebook/dpr-ctx_encoder-single-nq-base",
            "query_encoder": "facebook/dpr-question_encoder-single-nq-base"}


def test_the_label_tells_cosines_from_inner_products() -> None:
    assert score_label("dense") == score_label("dense", {}) == "dense"  # MiniLM, mean pooling, L2-normalised
    assert score_label("dense", {"l2_norm": True, "pooling": "cls"}) == "dense"  # still cosines
    assert score_label("dense", {"l2_norm": False}) == "dense-ip"
    assert score_label("dense", {"l2_norm": False, "pooling": "cls", "encoder": "some/encoder"}) == "dense-ip"
    assert score_label("dense", DPR_PAIR) == "dpr"  # the encoders of Pyserini's prebuilt DPR index: its scale
    assert score_label("dense", dict(DPR_PAIR, l2_norm=True)) == "dpr"  # the DPR class ignores l2_norm
    assert score_label("dense", dict(DPR_PAIR, encoder="my/dpr-ctx")) == "dense-ip"  # another checkpoint
    assert score_label("bm25") == "bm25" and score_label("dpr", None, "prebuilt:wikipedia-dpr-100w") == "dpr"
    assert score_label("hybrid", {"fusion": "rrf", "l2_norm": False}) == "hybrid-rrf"  # ranks: scale-free
    assert score_label("hybrid", {"fusion": "weighted", "alpha": 0.1}) == "hybrid-weighted"


def test_inner_products_get_no_default_temperature() -> None:
    with pytest.raises(ConfigError, match=r"^--model rag-replug: no default temperature for scores from 'dense-ip' "
                                          r"\(doc 'q3'; .*l2_norm false.*pass replug_temperature=τ"):
        doc_temperature({"qid": "q3", "scored_by": "dense-ip"}, None)
    assert doc_temperature({"qid": "q3", "scored_by": "dense-ip"}, 4.0) == 4.0  # an explicit τ is used
    assert "dense-ip" not in REPLUG_TAU
    # what the old default did to the breaker's un-normalised scores, and what it does to cosines
    w = replug_weights([22.65, 22.122, 3.923], 0.05)
    assert [round(float(x), 3) for x in w] == [1.0, 0.0, 0.0]  # exp(-0.528 / 0.05) = 2.6e-5
    w = replug_weights([0.847, 0.785, 0.149], doc_temperature({"scored_by": "dense"}, None))
    e1, e2 = math.exp((0.785 - 0.847) / 0.05), math.exp((0.149 - 0.847) / 0.05)
    assert [float(x) for x in w] == pytest.approx([1 / (1 + e1 + e2), e1 / (1 + e1 + e2), e2 / (1 + e1 + e2)])


def test_dense_docs_record_their_scale(mini, data_dir, tmp_path) -> None:
    """build_qa_docs over a local corpus: cosines -> ``dense`` (τ 0.05), l2_norm false -> ``dense-ip`` (refused)."""
    from tasks.rag import build_qa_docs

    corpus, _, _ = mini
    common = {"corpus": corpus, "data_dir": data_dir, "max_docs": 3, "cache_dir": tmp_path, "retriever": "dense"}
    cos = build_qa_docs("nq_oracle", **common)
    raw = build_qa_docs("nq_oracle", retriever_params={"l2_norm": False}, **common)
    assert {d["scored_by"] for d in cos} == {"dense"} and {d["scored_by"] for d in raw} == {"dense-ip"}
    assert all(-1.0 <= c["score"] <= 1.0 for d in cos for c in d["ctxs"])
    assert max(c["score"] for d in raw for c in d["ctxs"]) > 1.0  # inner products, not cosines
    assert doc_temperature(cos[0], None) == 0.05
    with pytest.raises(ConfigError, match="no default temperature for scores from 'dense-ip'"):
        doc_temperature(raw[0], None)
