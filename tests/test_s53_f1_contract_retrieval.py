"""The fairness contract names each task's retriever and its identity (s52 u1, P14).

u1's dense task (``retriever: dense``) and BM25 task gave contracts that listed k, max_length, the budget and the
template but not BM25 vs dense; the retriever appeared only inside the Provenance table's retrieval column, and the
dense encoder's weights hash, which the results record (``configs.<task>.metadata.tokrag_data.retrieval.encoder
.encoder_sha256``: ``852d031e81868b3f``), nowhere in the report. Now the contract has, per task whose cells record it,
``retrieval.<task> (as run, from the results): bm25 k1=0.9 b=0.4, k=5`` or ``dense, encoder all-MiniLM-L6-v2 (weights
sha256 852d031e81868b3f), ..., k=5``; a folder whose results lack the record falls back to provenance.json's
``retrieval.retriever``; a task without either gets no line.

Synthetic finished cells shaped as the runner writes them (the records copied from u1's run folders,
/work/scratch/s52/u1/runs/c369da0073de8a3c072f and 72bfcecbbb7311501bc9), fed to ``report.compute``: no model runs.
"""

from __future__ import annotations

import copy

from leaderboards.page import render_html
from leaderboards.report import compute, render_markdown
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec

BM25 = {"retriever": "bm25", "params": {"b": 0.4, "k1": 0.9}}
DENSE = {"retriever": "dense",
         "encoder": {"encoder": "all-MiniLM-L6-v2", "encoder_sha256": "852d031e81868b3f",
                     "query_encoder": "all-MiniLM-L6-v2", "query_encoder_sha256": "852d031e81868b3f"},
         "params": {"encoder": "all-MiniLM-L6-v2", "encoder_class": "auto", "l2_norm": True, "max_length": 256,
                    "pooling": "mean", "prefix_passage": None, "prefix_query": None, "query_encoder": None}}
RUN = {"retrieval": {"retriever": "bm25(b=0.4,k1=0.9) k=5", "ctxs": "66aee89ecb16967b"}}
DENSE_LINE = ("retrieval.toy_qa_noise67 (as run, from the results): dense, encoder all-MiniLM-L6-v2 (weights sha256 "
              "852d031e81868b3f), encoder_class=auto, l2_norm=True, max_length=256, pooling=mean, k=5")


def _loaded(spec, retrieval: dict, prov: dict | None = None) -> dict:
    """A finished cell per cell of ``spec``; its results record ``retrieval[task]`` (absent: no record)."""
    out = {}
    for cell in spec.cells():
        t, n = cell.task.task, 4
        samples = [{"doc_id": i, "doc": {"qid": f"q{i}", "ctxs": [{"docid": "d", "text": "x"}] * 5}, "filter": "none",
                    "em": 1.0, "arguments": [["ctx", {"until": ["\n"], "max_gen_toks": 8}]]} for i in range(n)]
        meta = {"version": 1.0}
        if t in retrieval:
            meta["tokrag_data"] = {"retrieval": copy.deepcopy(retrieval[t])}
        results = {"results": {t: {"em,none": 1.0}}, "n-samples": {t: {"original": 21, "effective": n}},
                   "configs": {t: {"output_type": "generate_until", "metadata": meta}}, "config": {"limit": n}}
        data = {"samples": {t: samples}, "results": results, "cost": {}, "provenance": copy.deepcopy(prov or {}),
                "config": {}}
        out[cell.cell_id] = (cell, f"key-{cell.cell_id}", data)
    return out


def _spec(tmp_path):
    return load_spec(write_spec(tmp_path, limit=4, extra={"bootstrap": {"iters": 100, "seed": 7}}))


def test_the_contract_names_bm25_and_the_dense_encoder_with_its_weights_hash(tmp_path):
    spec = _spec(tmp_path)
    # k from provenance.json's cached-run string, as in u1's folders (their task metadata has no hits)
    data = compute(spec, _loaded(spec, {"toy_qa": BM25, "toy_qa_noise67": DENSE}, RUN), timings=False)
    contract = [x for x in data["models"][0]["contract"] if x.startswith("retrieval.")]
    assert contract == ["retrieval.toy_qa (as run, from the results): bm25 k1=0.9 b=0.4, k=5", DENSE_LINE]
    md = render_markdown(data)
    assert "- retrieval.toy_qa (as run, from the results): bm25 k1=0.9 b=0.4, k=5\n" in md
    assert f"- {DENSE_LINE}\n" in md
    assert "852d031e81868b3f" in render_html(data, [])


def test_a_query_encoder_of_its_own_and_the_task_hits_are_named(tmp_path):
    spec = _spec(tmp_path)
    dense = copy.deepcopy(DENSE)
    dense["encoder"].update(query_encoder="my/query-enc", query_encoder_sha256="0123456789abcdef")
    loaded = _loaded(spec, {"toy_qa": dense})
    for _cell, _key, d in loaded.values():
        d["results"]["configs"].get("toy_qa", {}).get("metadata", {})["hits"] = 3
    contract = [x for x in compute(spec, loaded, timings=False)["models"][0]["contract"] if x.startswith("retrieval.")]
    assert contract == ["retrieval.toy_qa (as run, from the results): dense, encoder all-MiniLM-L6-v2 (weights "
                            "sha256 852d031e81868b3f), query encoder my/query-enc (weights sha256 0123456789abcdef), "
                            "encoder_class=auto, l2_norm=True, max_length=256, pooling=mean, k=3"]


def test_older_folders_fall_back_to_provenance_and_a_task_without_a_record_has_no_line(tmp_path):
    spec = _spec(tmp_path)
    contract = compute(spec, _loaded(spec, {}, RUN), timings=False)["models"][0]["contract"]
    assert [x for x in contract if x.startswith("retrieval.")] == [
        "retrieval.toy_qa (as run, from the results): bm25(b=0.4,k1=0.9) k=5",
        "retrieval.toy_qa_noise67 (as run, from the results): bm25(b=0.4,k1=0.9) k=5"]
    contract = compute(spec, _loaded(spec, {}), timings=False)["models"][0]["contract"]
    assert not [x for x in contract if x.startswith("retrieval.")]


def test_methods_that_retrieved_differently_are_said_to_differ(tmp_path):
    spec = _spec(tmp_path)
    loaded = _loaded(spec, {"toy_qa": BM25}, RUN)
    cid = "none/toy_qa/seed1"
    loaded[cid][2]["results"]["configs"]["toy_qa"]["metadata"]["tokrag_data"]["retrieval"]["params"]["b"] = 0.75
    contract = [x for x in compute(spec, loaded, timings=False)["models"][0]["contract"] if x.startswith("retrieval.")]
    assert contract == ["retrieval.toy_qa (as run, from the results): DIFFERS between methods: "
                        "bm25 k1=0.9 b=0.4, k=5 | bm25 k1=0.9 b=0.75, k=5",
                        "retrieval.toy_qa_noise67 (as run, from the results): bm25(b=0.4,k1=0.9) k=5"]  # no record: provenance
