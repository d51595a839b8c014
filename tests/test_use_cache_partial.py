"""lm-eval's ``--use_cache`` after an interrupted ``loglikelihood`` / ``loglikelihood_rolling`` run: the requests
finished before the interrupt are in the cache (as ``hf`` adds each one as it finishes), so a rerun resumes.

Found by a review: the scoring path gave the cache every result only after the last request was scored, so a
Ctrl-C kept nothing for these request types although ``tokrag eval`` then says the finished requests are kept.
"""

from __future__ import annotations

import sqlite3

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM

from tokrag_model.methods import MODELS

PASSAGES = [{"docid": "d1", "title": "Radium", "text": "Radium was discovered by Marie and Pierre Curie in 1898.",
             "score": 9.0, "rank": 1}]
DOCS = [{"id": f"q{i}", "question": q, "answers": [a], "ctxs": PASSAGES, "retriever": "bm25"}
        for i, (q, a) in enumerate([("Who discovered radium", "Marie Curie"), ("What is the capital of France", "Paris")])]
TEXTS = ["The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Roentgen.",
         "Paris is the capital and most populous city of France."]


def _requests(kind: str) -> list[Instance]:
    if kind == "loglikelihood":
        return [Instance(kind, d, (f"Question: {d['question']}?\nAnswer:", " " + d["answers"][0]), i)
                for i, d in enumerate(DOCS)]
    return [Instance(kind, d, (t,), i) for i, (d, t) in enumerate(zip(DOCS, TEXTS))]


def _rows(path: str) -> int:
    con = sqlite3.connect(path + ".db" if not path.endswith(".db") else path)
    try:
        return con.execute("select count(*) from unnamed").fetchone()[0]
    finally:
        con.close()


def _interrupted_run(lm, path: str, kind: str, requests: list[Instance], cut_at: int) -> None:
    """``kind`` over ``requests`` through lm-eval's CachingLM at ``path``, with a KeyboardInterrupt raised at the
    ``cut_at``-th teacher-forced pass (as a Ctrl-C there); the model's own pass is put back afterwards."""
    real, calls = lm.decoder.teacher_force, []

    def counted(*args, **kwargs):
        calls.append(1)
        if len(calls) == cut_at:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    lm.decoder.teacher_force = counted
    cached = CachingLM(lm, path)
    try:
        with pytest.raises(KeyboardInterrupt):
            getattr(cached, kind)(requests)
    finally:
        cached.dbdict.close()
        lm.decoder.teacher_force = real


@pytest.mark.parametrize("method, kind", [("rag-standard", "loglikelihood"), ("rag-standard", "loglikelihood_rolling"),
                                          ("tokrag", "loglikelihood_rolling")])
def test_an_interrupted_scoring_run_keeps_its_finished_requests_in_the_cache(backbone, tmp_path, method, kind):
    reference = getattr(MODELS[method].with_backbone(backbone, batch_size=1), kind)(_requests(kind))

    lm = MODELS[method].with_backbone(backbone, batch_size=1)  # one request per teacher-forced pass
    real, path = lm.decoder.teacher_force, str(tmp_path / "cache.db")
    _interrupted_run(lm, path, kind, _requests(kind), cut_at=2)
    assert _rows(path) == 1  # the request scored before the interrupt (it was 0)

    calls: list[int] = []
    resumed = CachingLM(lm, path)
    lm.decoder.teacher_force = lambda *a, **k: (calls.append(1), real(*a, **k))[1]
    again = getattr(resumed, kind)(_requests(kind))
    resumed.dbdict.close()
    assert len(calls) == 1  # only the request the interrupt cut was scored again
    assert again == reference  # the cached value is the one an uninterrupted run returns


LONG = ["The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Roentgen, in recognition of the "
        "extraordinary services he rendered by the discovery of the remarkable rays subsequently named after him.",
        "Paris is the capital and most populous city of France. With an estimated population of two million residents, "
        "it is the centre of the Ile-de-France region and one of the largest cities in Europe."]


@pytest.mark.parametrize("cut_at", [2, 3, 4])  # 2 documents x 2 windows: 4 passes
def test_a_document_of_several_windows_is_cached_only_whole(backbone, tmp_path, cut_at):
    """Several windows per document (max_length=48: windows of 24 tokens), scored one per pass in length order, so a
    document's windows are spread over passes: an interrupt at any pass must leave in the cache only whole documents
    with their full sums (a partial sum, returned by the resumed run, would differ from the uninterrupted total)."""
    reqs = lambda: [Instance("loglikelihood_rolling", d, (t,), i) for i, (d, t) in enumerate(zip(DOCS, LONG))]  # noqa: E731
    lm = MODELS["rag-standard"].with_backbone(backbone, batch_size=1, max_length=48)
    reference = lm.loglikelihood_rolling(reqs())
    path = str(tmp_path / "cache.db")
    _interrupted_run(lm, path, "loglikelihood_rolling", reqs(), cut_at)
    kept = _rows(path)
    assert kept <= (cut_at - 1) // 2  # at most the documents whose 2 windows both ran before the cut
    resumed = CachingLM(lm, path)
    assert resumed.loglikelihood_rolling(reqs()) == reference
    resumed.dbdict.close()
