"""A task over Pyserini's prebuilt indexes that cannot get its index is refused before the model loads
(:func:`tasks.precheck.check_prebuilt_download`), unless its run is already in the run cache.

The download plan is Pyserini's real one (asked of the retrieval worker, Java there) over an empty ``$PYSERINI_CACHE``;
the reachability of the download URL is monkeypatched in every precheck test (no network), and
:func:`retrieval.prebuilt.url_reachable` itself is tried against loopback only.
"""

from __future__ import annotations

import http.server
import socket
import threading
from pathlib import Path

import pytest

from retrieval import prebuilt as pb
from retrieval.errors import OfflineError
from tasks import TASK_DIR
from tasks.precheck import check_selected_tasks

CORPUS = "prebuilt:wikipedia-dpr-100w"


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty Pyserini cache and run cache; every reachability check recorded and answered ``reachable[0]``."""
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.delenv("TOKRAG_JVM_IN_PROCESS", raising=False)
    calls: list[str] = []
    reachable = [False]

    def fake(url, timeout=10.0):
        calls.append(url)
        return reachable[0]

    monkeypatch.setattr(pb, "url_reachable", fake)
    return {"cache_dir": str(tmp_path / "runs")}, calls, reachable, tmp_path / "pyserini" / "indexes"


def test_an_unreachable_uncached_index_is_the_searchers_offline_error(manager, offline):
    meta, calls, _, indexes = offline
    with pytest.raises(OfflineError) as err:
        check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("prebuilt index 'wikipedia-dpr-100w' is not cached and cannot be downloaded (no internet?); "
                          f"copy the unpacked folder to {indexes}/lucene-index.wikipedia-dpr-100w."), msg
    assert msg.endswith("or search a local corpus instead, whose index is built on first use (tokrag retrieve --corpus "
                        "passages.jsonl; a task: its metadata corpus, e.g. --metadata '{\"corpus\": \"passages.jsonl\"}')")
    assert len(calls) == 1 and calls[0].startswith("https://") and calls[0].endswith(
        "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz"), calls  # Pyserini's first URL of that index


def test_dpr_names_the_faiss_index_as_open_faiss_does(manager, offline, monkeypatch):
    meta, calls, _, indexes = offline
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the question encoder is then left to the task build
    with pytest.raises(OfflineError, match=r"^prebuilt FAISS index 'wikipedia-dpr-100w\.dpr-multi' \(or its passage texts\) "
                                           rf"is not cached and cannot be downloaded \(no internet\?\); copy the unpacked "
                                           rf"folders to {indexes}$"):
        check_selected_tasks(manager, ["nq_open_dpr_wiki"], meta)
    assert len(calls) == 1


def test_a_reachable_url_is_left_to_the_task_build(manager, offline):
    meta, calls, reachable, _ = offline
    reachable[0] = True
    check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)
    assert len(calls) == 1


def _seed_run(cache_dir: str, k: int) -> None:
    """A bm25 run over the prebuilt corpus, saved by the product's run cache with the config ``retrieve`` builds."""
    from retrieval.api import _resolve_params, _run_config
    from retrieval.cache import RunCache

    p, _ = _resolve_params("bm25", None, prebuilt=True)
    corpus = {"name": CORPUS, "indexes": [{"name": "wikipedia-dpr-100w", "md5": "7b58c08da992b2ea7e96667f0b176651"}],
              "size": 21015324}
    queries = {"q1": "who wrote hamlet"}
    config = _run_config("bm25", p, corpus, k, queries, {}, None, prebuilt=True)  # as api._prebuilt_run (its code)
    ctxs = {"q1": [{"docid": str(i), "title": "Hamlet", "text": "Hamlet is a play.", "score": 10.0 - i, "rank": i}
                   for i in range(1, k + 1)]}
    run = RunCache(cache_dir).save(config, ctxs, queries, 1)
    assert RunCache(cache_dir).load(config) is not None and Path(run.trec_path).is_file()


def test_a_cached_run_needs_no_index(manager, offline):
    meta, calls, _, _ = offline
    _seed_run(meta["cache_dir"], 5)
    check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)  # unreachable, index absent: the run is served cached
    assert calls == []


def test_a_cached_run_of_another_depth_does_not_count(manager, offline):
    meta, calls, _, _ = offline
    _seed_run(meta["cache_dir"], 10)
    with pytest.raises(OfflineError, match="wikipedia-dpr-100w"):
        check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)
    check_selected_tasks(manager, ["nq_open_bm25_wiki"], {**meta, "hits": 10})
    assert len(calls) == 1


def test_a_cached_run_of_another_pyserini_does_not_count(manager, offline, monkeypatch):
    """The run cache recomputes a run made by another Pyserini/Anserini (its key holds the engine versions since
    f6874ba), so the precheck must not count it as cached: it did, and an offline run without the index failed only
    after the model load (a review)."""
    import retrieval.cache

    meta, calls, _, _ = offline
    real = retrieval.cache.engine_versions
    monkeypatch.setattr(retrieval.cache, "engine_versions", lambda r: {**real(r), "pyserini": "0.12.0"})
    import retrieval.api

    monkeypatch.setattr(retrieval.api, "engine_versions", retrieval.cache.engine_versions)
    _seed_run(meta["cache_dir"], 5)  # saved as made by pyserini 0.12.0
    monkeypatch.setattr(retrieval.cache, "engine_versions", real)
    monkeypatch.setattr(retrieval.api, "engine_versions", real)
    with pytest.raises(OfflineError, match="wikipedia-dpr-100w"):
        check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)
    assert len(calls) == 1


def test_url_reachable_on_loopback():
    """Any HTTP answer is reachable (404 included: Pyserini's own download decides); a closed port is not."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 - http.server's name
            self.send_response(200 if self.path == "/index.tar.gz" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert pb.url_reachable(f"{base}/index.tar.gz", timeout=5)
        assert pb.url_reachable(f"{base}/missing.tar.gz", timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert not pb.url_reachable(f"http://127.0.0.1:{closed}/index.tar.gz", timeout=5)


def test_dpr_under_hf_hub_offline_needs_its_question_encoder_even_for_a_cached_run(manager, offline, monkeypatch, tmp_path):
    """The task build hashes the question encoder's weights for the run key before it looks in the run cache: under
    HF_HUB_OFFLINE=1 an encoder missing from the local hub cache failed there, after the model load, even with the
    run cached. The precheck now raises the encoder's error first (no index check, no network): one line naming it and
    the prebuilt indexes not cached (s51 u2 M2: no longer resolve_encoder's generic line, whose MiniLM advice cannot
    query a DPR index)."""
    meta, calls, _, _ = offline
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    _seed_run(meta["cache_dir"], 5)  # a bm25 run: the dpr task's own would be keyed by the encoder's hash
    with pytest.raises(OfflineError, match=r"^dpr retrieval over prebuilt:wikipedia-dpr-100w needs 3 downloads that are "
                                           r"not here: the DPR question encoder 'facebook/dpr-question_encoder-multiset-"
                                           r"base' \(about 0\.44 GB; HF_HUB_OFFLINE=1 forbids its download\)"):
        check_selected_tasks(manager, ["nq_open_dpr_wiki"], meta)
    assert calls == []
    check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)  # bm25 needs no encoder: served from the cached run
