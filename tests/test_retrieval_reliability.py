"""Reliability of retrieval: two processes filling one run cache, JVM heap bounds for large batch searches."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import time

import pytest

from retrieval import Corpus, Passage, load_run, retrieve

WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river mountain city "
         "music science history capital france germany paris berlin banana fruit ocean star").split()


def _corpus() -> Corpus:
    import random

    rng = random.Random(7)
    return Corpus([Passage(f"p{i}", f"T{i}", " ".join(rng.choices(WORDS, k=30))) for i in range(300)], name="synthetic")


def _queries() -> dict[str, str]:
    import random

    rng = random.Random(11)
    return {f"q{i}": " ".join(rng.choices(WORDS, k=4)) for i in range(300)}


def _fill(cache: str, barrier, out) -> None:
    from retrieval.java import start_jvm

    start_jvm()
    corpus, queries = _corpus(), _queries()
    barrier.wait(timeout=120)
    res = []
    for k in (3, 5, 8):  # three cache entries, each raced for by both processes (and the index build too)
        run = retrieve(corpus, queries, "bm25", k=k, cache_dir=cache)
        res.append((k, run.searches, run.fingerprint, run.jsonl_path.read_bytes().decode()))
    out.put(res)


def test_two_processes_fill_one_cache_without_corruption(tmp_path):
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_fill, args=(str(tmp_path), barrier, out)) for _ in range(2)]
    t0 = time.time()
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    a, b = results
    for (k, s1, f1, j1), (_, s2, f2, j2) in zip(a, b, strict=True):
        assert f1 == f2 and j1 == j2  # same run, same bytes
        assert sorted((s1, s2)) == [0, 300]  # exactly one process searched; the other waited and read it
        run = load_run(tmp_path / "runs" / f"bm25-{f1}")  # checksums verified
        assert len(run.ctxs) == 300 and all(len(c) <= k for c in run.ctxs.values())
    indexes = list((tmp_path / "indexes").iterdir())
    assert [p.name for p in indexes if not p.name.endswith(".lock")] == [f"bm25-{_corpus().fingerprint}"]
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary files left behind
    print(f"two-process cache fill: {time.time() - t0:.1f} s")


def test_jvm_heap_is_bounded():
    from retrieval.java import start_jvm

    rt = start_jvm().autoclass("java.lang.Runtime").getRuntime()
    assert rt.maxMemory() <= 4 * 2**30  # -Xmx4g (TOKRAG_JVM_HEAP)


@pytest.mark.reliability
def test_batch_search_10k_queries_k100_fits_in_memory(tmp_path):
    """10,000 queries at k=100 over nq-dpr-1k in a fresh process: completes, 1M hits, bounded peak memory."""
    code = textwrap.dedent(
        f"""
        import json, random, resource, retrieval
        from retrieval import named_corpus
        from retrieval.bm25 import Bm25Searcher, build_bm25_index
        c = named_corpus("nq-dpr-1k")
        idx = build_bm25_index(c, cache_dir={str(tmp_path)!r})
        words = [w for p in c.passages[:300] for w in p.text.split() if w.isalpha()]
        rng = random.Random(0)
        queries = {{f"q{{i}}": " ".join(rng.choices(words, k=6)) for i in range(10000)}}
        s = Bm25Searcher(idx, corpus=c)
        hits = s.batch_search(queries, k=100)
        rt = s._pc.autoclass("java.lang.Runtime").getRuntime()
        print(json.dumps({{"n": len(hits), "hits": sum(map(len, hits.values())), "max_k": max(map(len, hits.values())),
                          "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          "jvm_max_mib": rt.maxMemory() / 2**20, "jvm_used_mib": (rt.totalMemory() - rt.freeMemory()) / 2**20}}))
        """
    )
    env = dict(os.environ, TOKRAG_JVM_HEAP="4g")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    m = json.loads(out.stdout.strip().splitlines()[-1])
    print(m)
    assert m["n"] == 10000 and m["max_k"] == 100 and m["hits"] > 800_000
    assert m["jvm_max_mib"] <= 4096
    assert m["peak_rss_mib"] < 6 * 1024  # JVM heap (<= 4 GiB) + Python: far below 24 GiB


def test_one_probe_based_writability_check(tmp_path):
    # os.access says yes to root on /proc; the probe does not (retrieval.io.check_writable, used everywhere)
    import leaderboards.runner
    from retrieval import io
    from retrieval.errors import ConfigError

    assert leaderboards.runner.check_writable is io.check_writable
    with pytest.raises(ConfigError, match=r"^x /proc is not writable"):
        io.check_writable("/proc", "x", folder=True)
    with pytest.raises(ConfigError, match=r"cannot write the index folder /proc/tokrag-idx: its parent /proc is not writable"):
        io.check_index_folder("/proc/tokrag-idx")
    assert io.check_writable(tmp_path / "a" / "b", "x", folder=True) == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []  # creates nothing, leaves no probe
