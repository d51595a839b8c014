"""Every task loader records ``scored_by`` through the one implementation, :func:`retrieval.score_label`.

Before the fix ``retrieval.score_label`` returned ``dense`` for any dense setting and only ``tasks.rag.score_scale``
told cosines from raw inner products: a wiki_lm or wikitext103 task copied with ``retriever: dense,
retriever_params: {l2_norm: false}`` recorded ``scored_by: dense`` and REPLUG applied τ = 0.05 (chosen for cosines)
to unbounded inner products. Retrieval is replaced by a stub here (the loaders' own code runs unchanged).
"""

from __future__ import annotations

import json
import types

import pytest

from retrieval.corpus import Passage
from tasks.utils import wiki_split_of

DPR_PAIR = {"encoder_class": "dpr", "encoder": "facebook/dpr-ctx_encoder-single-nq-base",
            "query_encoder": "facebook/dpr-question_encoder-single-nq-base"}
SETTINGS = [(None, "dense"), ({"l2_norm": True}, "dense"), ({"l2_norm": False}, "dense-ip"), (DPR_PAIR, "dpr"),
            (dict(DPR_PAIR, encoder="my/dpr-ctx"), "dense-ip")]


def _fake_retrieve(corpus, queries, **kw):
    ctxs = {q: [{"docid": "other", "title": "Other", "text": "a passage", "score": 22.65, "rank": 1}] for q in queries}
    return types.SimpleNamespace(ctxs=ctxs, fingerprint="fake", config={})


@pytest.fixture
def stub_retrieval(monkeypatch):
    import retrieval

    monkeypatch.setattr(retrieval, "retrieve", _fake_retrieve)
    monkeypatch.setattr(retrieval, "check_run_sanity", lambda run: None)


def test_one_implementation() -> None:
    import tasks.rag
    from retrieval import score_label

    assert not hasattr(tasks.rag, "score_scale")  # its alias is gone: the QA loader calls score_label itself
    for params, label in SETTINGS:
        assert score_label("dense", params) == label
    assert score_label("hybrid", {"fusion": "rrf", "l2_norm": False}) == "hybrid-rrf"
    assert score_label("hybrid", None, "prebuilt:wikipedia-dpr-100w") == "hybrid-weighted"
    assert score_label("bm25") == "bm25" and score_label("dpr") == "dpr"


@pytest.mark.parametrize("params,label", SETTINGS)
def test_wiki_lm_records_the_scale(params, label, stub_retrieval, monkeypatch) -> None:
    import retrieval
    from tasks.utils import build_wiki_lm_docs

    titles = [t for t in (f"Article {i}" for i in range(400)) if wiki_split_of(t) == "test"][:2]
    assert len(titles) == 2
    # more than 32 words: a wiki_lm_bm25 doc needs words after its 32-word prefix (task version 3.0)
    passages = [Passage(f"d{i}", t, f"{t} is an article about something. " + " ".join(f"w{j}" for j in range(40)))
                for i, t in enumerate(titles)]
    monkeypatch.setattr(retrieval, "named_corpus", lambda name, data_dir=None: types.SimpleNamespace(passages=passages))
    docs = build_wiki_lm_docs(retriever="dense", retriever_params=params)
    assert len(docs) == 2 and {d["scored_by"] for d in docs} == {label}  # old code: "dense" for every setting


@pytest.mark.parametrize("params,label", SETTINGS)
def test_wikitext_records_the_scale(params, label, stub_retrieval, tmp_path) -> None:
    from tasks import wikitext

    d = tmp_path / "wikitext-103-raw-v1"
    d.mkdir()
    page = " = Robert Boulter = \n \n Robert Boulter is an English film , television and theatre actor . \n"
    (d / "test.jsonl").write_text(json.dumps({"page": page}) + "\n")
    docs = wikitext.build_wikitext_docs(k=1, retriever="dense", retriever_params=params, hub_id=str(tmp_path),
                                        corpus="my-corpus")
    assert docs and {x["scored_by"] for x in docs} == {label}  # old code: "dense" for every setting
