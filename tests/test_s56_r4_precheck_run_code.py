"""The prebuilt pre-check counts a cached run only if the task build would serve it (s56 r4, review of f4's F2).

Since 6c9a550 a run's cache key holds ``code`` (:func:`retrieval.cache.run_code`): a run cached by other retrieval
code is recomputed by the task build, which then needs the prebuilt index. :func:`tasks.precheck._run_cached` compared
the engine versions but not ``code``, so an offline task whose only cached run was made by older retrieval code passed
the pre-check and failed after the model load (the download). It now compares ``code`` as the run key does."""

from __future__ import annotations

import pytest

from retrieval import prebuilt as pb
from retrieval.errors import OfflineError
from tasks import TASK_DIR
from tasks.precheck import _run_cached, check_selected_tasks

CORPUS = "prebuilt:wikipedia-dpr-100w"
OTHER_CODE = "0123456789abcdef"  # what a run of older retrieval code records


def _seed(cache_dir: str, code: str | None) -> dict:
    """A bm25 run over the prebuilt corpus (k 5) saved by the product's run cache, recorded as computed by ``code``
    (``None``: the config the running code builds for it); returns the run's config."""
    from retrieval.api import _resolve_params, _run_config
    from retrieval.cache import RunCache

    p, _ = _resolve_params("bm25", None, prebuilt=True)
    corpus = {"name": CORPUS, "indexes": [{"name": "wikipedia-dpr-100w", "md5": "7b58c08da992b2ea7e96667f0b176651"}],
              "size": 21015324}
    config = _run_config("bm25", p, corpus, 5, {"q1": "who wrote hamlet"}, {}, None)
    if code is None:
        from retrieval.cache import run_code

        code = run_code("bm25", prebuilt=True)  # what retrieval.api._prebuilt_run records
    config["code"] = code
    ctxs = {"q1": [{"docid": str(i), "title": "Hamlet", "text": "Hamlet is a play.", "score": 10.0 - i, "rank": i}
                   for i in range(1, 6)]}
    RunCache(cache_dir).save(config, ctxs, {"q1": "who wrote hamlet"}, 1)
    return config


def test_a_run_of_other_retrieval_code_is_no_hit(tmp_path):
    cache = str(tmp_path / "runs")
    stale = _seed(cache, OTHER_CODE)
    assert _run_cached(cache, CORPUS, "bm25", 5) is False  # was True: the engine matched, the code was not compared
    from retrieval.cache import RunCache, run_code

    current = {**stale, "code": run_code("bm25", prebuilt=True)}
    assert RunCache(cache).load(current) is None  # the task build recomputes it: precheck and cache agree
    _seed(cache, None)  # the running code's own run is served, so it counts
    assert _run_cached(cache, CORPUS, "bm25", 5) is True
    assert RunCache(cache).load(current) is not None


def test_the_offline_task_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    """As a user runs it: nq_open_bm25_wiki offline, the index absent, only an older code's run cached."""
    from lm_eval.tasks import TaskManager

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.delenv("TOKRAG_JVM_IN_PROCESS", raising=False)
    calls: list[str] = []
    monkeypatch.setattr(pb, "url_reachable", lambda url, timeout=10.0: calls.append(url) or False)
    meta = {"cache_dir": str(tmp_path / "runs")}
    _seed(meta["cache_dir"], OTHER_CODE)
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    with pytest.raises(OfflineError, match=r"^prebuilt index 'wikipedia-dpr-100w' is not cached and cannot be "
                                           r"downloaded \(no internet\?\)"):
        check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)
    assert len(calls) == 1  # the plan was asked for: the stale run did not count
