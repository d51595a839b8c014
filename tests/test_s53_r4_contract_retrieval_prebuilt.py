"""The contract's retrieval line names a prebuilt DPR / hybrid retrieval's question encoder and its weights hash
(s53 r4, review of 3b8d0ff, s52 u1 P14).

Over ``prebuilt:wikipedia-dpr-100w`` (``nq_open_dpr_wiki``, ``triviaqa_dpr_wiki``, ``webq_dpr_wiki``, a hybrid over it)
the passages are encoded in Pyserini's FAISS index (``dense_index``, identified by its md5) and the question encoder
is the only encoder tokrag loads: the run's ``encoder`` record holds just ``query_encoder`` /
``query_encoder_sha256`` (:func:`retrieval.prebuilt.encoder_identity`), and ``params.query_encoder`` is None for the
default one. 3b8d0ff named a query encoder only after a passage ``encoder``, so these lines read ``dpr,
dense_index=dpr-multi, max_length=512, k=5``: which question encoder, and its hash, were in no report file.

The records are the run configs tokrag wrote (``tokrag_data.retrieval`` = the cached run's ``retriever``, ``params``,
``encoder``: /work/scratch/s53/r4/metas/1-dpr-*.json, 5-hybrid-*.json, from the prebuilt tests' tiny DPR), with the
default encoder's name as a real run resolves it.
"""

from __future__ import annotations

from leaderboards.report import compute, render_markdown, retrieval_text
from tests.test_s53_f1_contract_retrieval import DENSE, _loaded, _spec

QENC = {"query_encoder": "facebook/dpr-question_encoder-multiset-base", "query_encoder_sha256": "82fcae37b102910f"}
DPR = {"retriever": "dpr", "params": {"dense_index": "dpr-multi", "max_length": 512, "query_encoder": None},
       "encoder": dict(QENC)}
HYBRID = {"retriever": "hybrid", "encoder": dict(QENC),
          "params": {"alpha": 1.3, "b": 0.4, "dense_index": "dpr-multi", "depth": 1000, "k1": 0.9, "max_length": 512,
                     "normalization": False, "query_encoder": None, "weight_on_dense": False}}


def test_a_prebuilt_dpr_and_hybrid_name_their_question_encoder_and_its_hash():
    assert retrieval_text({"tokrag_data": {"retrieval": DPR}, "hits": 5}, {}) == (
        "dpr, query encoder facebook/dpr-question_encoder-multiset-base (weights sha256 82fcae37b102910f), "
        "dense_index=dpr-multi, max_length=512, k=5")
    assert retrieval_text({"tokrag_data": {"retrieval": HYBRID}, "hits": 5}, {}) == (
        "hybrid k1=0.9 b=0.4, query encoder facebook/dpr-question_encoder-multiset-base (weights sha256 "
        "82fcae37b102910f), alpha=1.3, dense_index=dpr-multi, depth=1000, max_length=512, normalization=False, "
        "weight_on_dense=False, k=5")
    # a query_encoder given in the task's params (a local folder) and no hash recorded: the name still shows
    own = {"retriever": "dpr", "params": {"dense_index": "dpr-multi", "max_length": 512, "query_encoder": "/m/q"}}
    assert retrieval_text({"tokrag_data": {"retrieval": own}, "hits": 3}, {}) == (
        "dpr, query encoder /m/q, dense_index=dpr-multi, max_length=512, k=3")


def test_the_dpr_line_reaches_the_contract_and_a_local_dense_line_is_unchanged(tmp_path):
    spec = _spec(tmp_path)
    loaded = _loaded(spec, {"toy_qa": DPR, "toy_qa_noise67": DENSE})
    for _cell, _key, d in loaded.values():
        for cfg in d["results"]["configs"].values():
            cfg["metadata"]["hits"] = 5
    data = compute(spec, loaded, timings=False)
    lines = [x for x in data["models"][0]["contract"] if x.startswith("retrieval.")]
    assert lines == [
        "retrieval.toy_qa (as run, from the results): dpr, query encoder facebook/dpr-question_encoder-multiset-base "
        "(weights sha256 82fcae37b102910f), dense_index=dpr-multi, max_length=512, k=5",
        # the passage encoder is the query encoder: named once, as before
        "retrieval.toy_qa_noise67 (as run, from the results): dense, encoder all-MiniLM-L6-v2 (weights sha256 "
        "852d031e81868b3f), encoder_class=auto, l2_norm=True, max_length=256, pooling=mean, k=5"]
    assert f"- {lines[0]}\n" in render_markdown(data)


def test_webq_questions_are_not_said_to_be_held_out_of_its_test_split():
    """WebQuestions' dev / few-shot pool is its training data (the data folder's devtest.json here: test is all 2,032
    of test.json, tasks.data.load_qa_split); only without training data is a hash slice of test.json held out. The
    questions line said '2032 in split test (dev / few-shot held out by hash: ...)' for it, as for NQ."""
    from leaderboards.report import questions_text

    meta = {"dataset": "webq", "tokrag_data": {"questions": {"split": "test", "in_split": 2032}}}
    assert questions_text(meta, 8, 2032) == (
        "dataset webq, 2032 in split test (the dev / few-shot pool is WebQuestions' training data, a 10% hash slice of "
        "test.json where the data folder has none: tasks/README.md, \"Splits\"), first 8 of 2032 scored")
    # NQ's test split does lose its pool: unchanged
    meta = {"dataset": "nq_oracle", "tokrag_data": {"questions": {"split": "test", "in_split": 2383}}}
    assert questions_text(meta, 300, 2383) == (
        "dataset nq_oracle, 2383 in split test (dev / few-shot held out by hash: tasks/README.md, \"Splits\"), "
        "first 300 of 2383 scored")
