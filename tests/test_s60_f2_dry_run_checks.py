"""``tokrag retrieve --dry-run`` refuses what the run refuses, with the run's line and exit code (s60 f2, r4's leftover).

Before, the dry run checked only a prebuilt hybrid's alpha: ``--hybrid --alpha 0.95`` over a local corpus (RRF fusion,
which ignores alpha) said "nothing to download", exit 0, and ``--fusion rrf`` / ``--rrf-k 10`` over
``prebuilt:wikipedia-dpr-100w`` printed the 69.45 GB download plan, exit 0, though the run refuses all three before
any search. Now the dry run runs the run's checks of the options first (``retrieval.cli._check_index_args``, then
``retrieval.api._resolve_params`` / ``retrieval.hybrid.check_fusion_settings`` / ``retrieval.prebuilt.check_params``):
nothing downloaded, no index, no model, no worker process (``call_java`` is made to fail here).
"""

from __future__ import annotations

import json

import pytest

from tokrag_model.cli import main

PREBUILT = "prebuilt:wikipedia-dpr-100w"
RRF_ALPHA = ("alpha=0.95 (--alpha): a setting of weighted fusion, but this hybrid fuses by reciprocal rank fusion "
             "(fusion rrf, the default over a local corpus), which ignores it; set fusion weighted (--fusion weighted; "
             "task metadata retriever_params fusion: weighted) to use it, or leave it out")
PREBUILT_VALID = ("valid: alpha, b, dense_index, depth, k1, max_length, normalization, query_encoder, weight_on_dense, "
                  "batch_size, device, index, progress, threads")


@pytest.fixture
def here(tmp_path, monkeypatch, capsys):
    """A folder with a 2-passage corpus and a 1-question topics file; caches under it; no Java call allowed."""
    (tmp_path / "passages.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n"
        + json.dumps({"id": "p2", "title": "Hamlet", "text": "Hamlet was written by Shakespeare."}) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "what is the capital of france",
                                                  "answers": ["Paris"]}) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_java(*args, **kwargs):
        raise AssertionError(f"the worker was called: {args[:1]}")

    import retrieval.worker

    monkeypatch.setattr(retrieval.worker, "call_java", no_java)
    capsys.readouterr()
    return tmp_path


# (options, the run's line after "tokrag retrieve: error: ")
REFUSED = [
    (["--corpus", "passages.jsonl", "--hybrid", "--alpha", "0.95"], RRF_ALPHA),
    (["--corpus", "passages.jsonl", "--hybrid", "--normalization"],
     "normalization=True (--normalization): a setting of weighted fusion, but this hybrid fuses by reciprocal rank "
     "fusion (fusion rrf, the default over a local corpus), which ignores it; set fusion weighted (--fusion weighted; "
     "task metadata retriever_params fusion: weighted) to use it, or leave it out"),
    (["--corpus", "passages.jsonl", "--hybrid", "--fusion", "weighted", "--alpha", "0.5", "--rrf-k", "10"],
     "rrf_k=10 (--rrf-k): a setting of reciprocal rank fusion, but this hybrid fuses by weighted fusion (fusion "
     "weighted), which ignores it; set fusion rrf (--fusion rrf; task metadata retriever_params fusion: rrf) to use "
     "it, or leave it out"),
    (["--corpus", "passages.jsonl", "--hybrid", "--fusion", "weighted"],
     "weighted hybrid fusion needs an explicit alpha (fused = alpha * BM25 + dense); Pyserini's default 0.1 is not "
     "used silently"),
    (["--corpus", "passages.jsonl", "--dpr"],
     "retriever 'dpr' searches Pyserini's prebuilt DPR FAISS index (corpus 'prebuilt:wikipedia-dpr-100w'); for a "
     "local corpus use retriever 'dense' with encoder_class 'dpr' and DPR encoders"),
    (["--corpus", "passages.jsonl", "--dense", "--index", "idx"],
     "--index names a BM25 (Lucene) index folder; dense indexes live in the cache, keyed by corpus and encoder"),
    (["--corpus", PREBUILT, "--hybrid", "--alpha", "1.3", "--fusion", "rrf"],
     f"unknown hybrid parameter 'fusion' over a Pyserini prebuilt corpus; {PREBUILT_VALID}"),
    (["--corpus", PREBUILT, "--hybrid", "--alpha", "1.3", "--rrf-k", "10"],
     f"unknown hybrid parameter 'rrf_k' over a Pyserini prebuilt corpus; {PREBUILT_VALID}"),
    (["--corpus", PREBUILT, "--index", "idx"],
     "--index names a local BM25 index folder; with --corpus prebuilt:NAME Pyserini's own indexes are used"),
    (["--dense"], "without --corpus only BM25 over --index is possible; give --corpus for dense/hybrid"),
    ([], "give --corpus (a corpus file or name) or --index (an index folder or Pyserini prebuilt name)"),
]


@pytest.mark.parametrize("options, line", REFUSED, ids=[" ".join(o) or "nothing" for o, _ in REFUSED])
def test_the_dry_run_refuses_with_the_runs_line(here, capsys, options, line):
    assert main(["retrieve", *options, "--topics", "q.jsonl", "--output", "out/run.trec"]) == 2
    run_err = capsys.readouterr().err
    assert run_err == f"tokrag retrieve: error: {line}\n"
    assert main(["retrieve", *options, "--dry-run"]) == 2
    cap = capsys.readouterr()
    assert cap.err == run_err and cap.out == ""  # no plan, no "nothing to download"
    for folder in ("cache", "pyserini", "out", "idx"):
        assert not (here / folder).exists(), folder


def test_the_dry_run_with_pyserini_topics_refuses_before_the_topics_line(here, capsys):
    """The run's first download is the topic file: the dry run printed that line, then refused; now the refusal only."""
    assert main(["retrieve", "--corpus", PREBUILT, "--hybrid", "--alpha", "1.3", "--rrf-k", "10",
                 "--topics", "pyserini:dpr-wq-test", "--dry-run"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == (f"tokrag retrieve: error: unknown hybrid parameter 'rrf_k' over a Pyserini "
                                         f"prebuilt corpus; {PREBUILT_VALID}\n")


@pytest.mark.parametrize("options", [
    ["--corpus", "passages.jsonl", "--hybrid", "--fusion", "weighted", "--alpha", "0.5", "--normalization"],
    ["--corpus", "passages.jsonl", "--hybrid", "--rrf-k", "30"],
    ["--corpus", "passages.jsonl", "--hybrid", "--alpha", "0.1"],  # the placeholder default: the run takes it (r4)
    ["--corpus", "passages.jsonl", "--k1", "1.2"],
    ["--index", "idx"],
])
def test_settings_the_run_takes_still_print_the_local_line(here, capsys, options):
    assert main(["retrieve", *options, "--dry-run"]) == 0
    name = "passages.jsonl" if "--corpus" in options else "--index"
    assert capsys.readouterr().out == f"{name}: a local corpus or index folder: nothing to download\n"


def test_a_prebuilt_hybrid_with_alpha_still_asks_for_the_plan(here, monkeypatch, capsys):
    """The plan is Pyserini's table read by the worker (stubbed here): the checks pass, the plan is printed as before."""
    import retrieval.prebuilt
    import retrieval.worker

    calls = []
    monkeypatch.setattr(retrieval.worker, "call_java", lambda *a: calls.append(a) or "PLAN")
    monkeypatch.setattr(retrieval.prebuilt, "format_plan", lambda plan: f"formatted {plan}")
    assert main(["retrieve", "--corpus", PREBUILT, "--hybrid", "--alpha", "1.3", "--dry-run"]) == 0
    assert capsys.readouterr().out == "formatted PLAN\n"
    assert [c[:3] for c in calls] == [("prebuilt_plan", "wikipedia-dpr-100w", "hybrid")] and calls[0][3]["alpha"] == 1.3


def test_an_expectation_files_dry_run_refuses_what_its_run_refuses(here, capsys):
    (here / "e.yaml").write_text(
        "corpus: passages.jsonl\ntopics: q.jsonl\nconditions:\n"
        "  - name: hybrid\n    retriever: hybrid\n    params: {alpha: 0.95}\n    expected: {answer_recall@1: 1.0}\n")
    assert main(["retrieve", "eval", "--expect", "e.yaml"]) == 2
    run_err = capsys.readouterr().err
    assert run_err.endswith(f"error: {RRF_ALPHA}\n") and run_err.count("\n") == 1
    assert main(["retrieve", "eval", "--expect", "e.yaml", "--dry-run"]) == 2
    cap = capsys.readouterr()
    assert cap.err == run_err and "nothing to download" not in cap.out
    assert not (here / "cache").exists()


def test_an_expectation_files_unknown_retriever_is_the_runs_line(here, capsys):
    (here / "e.yaml").write_text(
        "corpus: passages.jsonl\ntopics: q.jsonl\nconditions:\n"
        "  - name: odd\n    retriever: bm26\n    expected: {answer_recall@1: 1.0}\n")
    assert main(["retrieve", "eval", "--expect", "e.yaml"]) == 2
    run_err = capsys.readouterr().err
    assert "unknown retriever 'bm26'" in run_err and run_err.count("\n") == 1
    assert main(["retrieve", "eval", "--expect", "e.yaml", "--dry-run"]) == 2
    assert capsys.readouterr().err == run_err
