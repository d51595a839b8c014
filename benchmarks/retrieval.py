"""Retrieval benchmark on ``nq-wiki-12k`` (12,633 passages) with all 2,655 NQ-oracle questions.

Prints BM25 gold-passage@5 (target >= 0.80) and answer recall@5 (>= 0.83), MiniLM dense gold@5
(>= 0.90), BM25 batch-search throughput at k=10 after warm-up (>= 1,500 q/s), BM25 index build seconds
(< 60 s, a fresh build into a temporary folder) and dense encoding speed (passages/s, measured when the
embeddings were computed; they are cached under the tokrag cache folder and reused afterwards).
The last output line is one JSON object.

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TOKRAG_DATA_DIR=../shared/data python benchmarks/retrieval.py

Bad options (``--questions``/``--threads`` below 1, a ``--data-dir`` that is not a folder, a ``--cache-dir`` that
cannot be written) get one ``retrieval.py: error: ...`` line and exit 2 before any work; SIGTERM or Ctrl-C ends it
with one line and exit 130 (during the BM25 index build itself, SIGTERM is still the JVM's own handler).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time

# this file is named retrieval.py: keep its folder off sys.path so that "import retrieval" finds the package
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import retrieval  # noqa: E402,F401  (Java set-up)
from retrieval import answer_recall_at_k, format_table, gold_at_k, mrr, named_corpus, nq_oracle_questions, retrieve  # noqa: E402
from retrieval.bm25 import Bm25Searcher, build_bm25_index, default_threads  # noqa: E402
from retrieval.dense import DENSE_PARAMS, dense_index_dir  # noqa: E402


def check_args(args: argparse.Namespace) -> None:
    """Refuse bad options before any work (one line each).

    Raises:
        ConfigError: ``--questions``/``--threads`` below 1, a ``--data-dir`` (or ``$TOKRAG_DATA_DIR``) that is not a
            folder, a ``--cache-dir`` that cannot be created or written (e.g. under a file).
    """
    from benchmarks._cli import at_least, existing_dir, writable_dir

    at_least("--questions", args.questions, 1, "leave it out for all questions")
    at_least("--threads", args.threads, 1)
    if args.data_dir is not None:
        existing_dir("--data-dir", args.data_dir)
    elif os.environ.get("TOKRAG_DATA_DIR"):
        existing_dir("$TOKRAG_DATA_DIR", os.environ["TOKRAG_DATA_DIR"])
    if args.cache_dir is not None:
        writable_dir("--cache-dir", args.cache_dir)


def _sigterm(signum, frame):
    """SIGTERM (a CI timeout, ``kill``) ends the run as Ctrl-C does: a Python exception, not the default action."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None, help="folder laid out like ../shared/data (default $TOKRAG_DATA_DIR)")
    ap.add_argument("--cache-dir", default=None, help="tokrag cache (default $TOKRAG_CACHE_DIR or ~/.cache/tokrag)")
    ap.add_argument("--questions", type=int, default=None, help="use only the first N questions (>= 1; default all)")
    ap.add_argument("--no-dense", action="store_true", help="skip the dense part")
    ap.add_argument("--threads", type=int, default=default_threads(),
                    help=f"BM25 index and search threads (default {default_threads()})")
    args = ap.parse_args(argv)
    check_args(args)
    from benchmarks._cli import checkout

    started = checkout()  # the code this run reads (the provenance's commit), before the index build
    signal.signal(signal.SIGTERM, _sigterm)

    corpus = named_corpus("nq-wiki-12k", args.data_dir)
    qs = nq_oracle_questions(args.data_dir, limit=args.questions)
    queries = {q["qid"]: q["question"] for q in qs}
    gold = {q["qid"]: q["gold_docids"] for q in qs}
    answers = {q["qid"]: q["answers"] for q in qs}
    print(f"corpus {corpus.name}: {len(corpus)} passages (fingerprint {corpus.fingerprint}); {len(queries)} questions", flush=True)

    # BM25 index build, fresh
    with tempfile.TemporaryDirectory(prefix="tokrag-bench-") as tmp:
        t0 = time.perf_counter()
        idx = build_bm25_index(corpus, os.path.join(tmp, "bm25"), threads=args.threads)
        build_s = time.perf_counter() - t0
        # the JVM, started by the build, replaced our SIGTERM handler with its own, which exits the process from a
        # Java thread while Python runs native code (the dense encoding): a SIGSEGV and an hs_err_pid*.log. Take it back.
        signal.signal(signal.SIGTERM, _sigterm)
        print(f"BM25 index build: {build_s:.2f} s", flush=True)
        s = Bm25Searcher(idx, corpus=corpus)
        for _ in range(6):  # JIT warm-up
            s.batch_search(queries, k=10, threads=args.threads)
        rates = []
        for _ in range(7):
            t0 = time.perf_counter()
            s.batch_search(queries, k=10, threads=args.threads)
            rates.append(len(queries) / (time.perf_counter() - t0))
        qps = statistics.median(rates)
        print(f"BM25 batch search k=10, {args.threads} threads: median {qps:.0f} q/s (runs: {', '.join(f'{r:.0f}' for r in rates)})", flush=True)
        s.close()

    with tempfile.TemporaryDirectory(prefix="tokrag-bench-runs-") as runs:
        bm25 = retrieve(corpus, queries, "bm25", k=100, cache_dir=runs, params={"threads": args.threads})
        metrics = {
            "bm25_gold@1": gold_at_k(bm25, gold, 1), "bm25_gold@5": gold_at_k(bm25, gold, 5),
            "bm25_gold@20": gold_at_k(bm25, gold, 20), "bm25_answer_recall@5": answer_recall_at_k(bm25, answers, 5),
            "bm25_answer_recall@20": answer_recall_at_k(bm25, answers, 20), "bm25_mrr": mrr(bm25, gold),
        }
    out = {
        "bm25_gold_at_5": round(metrics["bm25_gold@5"], 4),
        "bm25_answer_recall_at_5": round(metrics["bm25_answer_recall@5"], 4),
        "bm25_qps": round(qps, 1),
        "bm25_qps_best": round(max(rates), 1),
        "bm25_index_build_s": round(build_s, 2),
        "dense_gold_at_5": None,
        "dense_passages_per_s": None,
        "num_questions": len(queries),
        "num_passages": len(corpus),
    }
    if not args.no_dense:
        t0 = time.perf_counter()
        dense = retrieve(corpus, queries, "dense", k=20, cache_dir=args.cache_dir, params={"progress": True, "threads": 1})
        dense_s = time.perf_counter() - t0
        meta = json.loads((dense_index_dir(corpus, DENSE_PARAMS, args.cache_dir) / "tokrag_index.json").read_text())
        metrics.update({
            "dense_gold@1": gold_at_k(dense, gold, 1), "dense_gold@5": gold_at_k(dense, gold, 5),
            "dense_gold@20": gold_at_k(dense, gold, 20), "dense_answer_recall@5": answer_recall_at_k(dense, answers, 5),
        })
        out["dense_gold_at_5"] = round(metrics["dense_gold@5"], 4)
        out["dense_passages_per_s"] = meta.get("passages_per_s")
        out["dense_encode_s"] = meta.get("encode_seconds")
        print(f"dense (MiniLM) retrieval incl. any encoding: {dense_s:.1f} s (searches this run: {dense.searches})", flush=True)
    print(format_table(metrics, title=f"nq-wiki-12k, {len(queries)} NQ-oracle questions"))
    from benchmarks._cli import provenance

    fingerprints = {"corpus": corpus.fingerprint, "bm25_run": bm25.fingerprint}
    if not args.no_dense:
        fingerprints["dense_run"] = dense.fingerprint  # its key covers the encoder's weights and the index
    out["provenance"] = provenance("cpu" if not args.no_dense else None, fingerprints, started)
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    from benchmarks._cli import run

    try:
        sys.exit(run(main))
    except KeyboardInterrupt:
        print("retrieval.py: interrupted; no figures", file=sys.stderr)
        sys.exit(130)
