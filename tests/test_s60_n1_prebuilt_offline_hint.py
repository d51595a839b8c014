"""Offline, a task over the prebuilt Wikipedia index says how to run it over a local corpus (s60 n1, new-user trial).

Without the hub, ``lm_eval --model tokrag ... --tasks nq_open_bm25_wiki`` stopped (before the model load) with
"... copy the unpacked folder to ..., or build a local index with 'tokrag index build --corpus ...' and use that
corpus": a task user was not told how to "use" a corpus (the task's metadata ``corpus``), and the index build it
asked for is not needed (a task builds its index on first use). The line now names both ways. Following it, the same
task over a local corpus passes the check offline (and, measured, ran: ``--metadata '{"corpus": "nq-dpr-1k"}'
--limit 2`` in 25 s).
"""

from __future__ import annotations

import json

import pytest

from retrieval import prebuilt as pb
from retrieval.errors import OfflineError
from tasks import TASK_DIR
from tasks.precheck import check_selected_tasks

HINT = ("or search a local corpus instead, whose index is built on first use (tokrag retrieve --corpus passages.jsonl; "
        "a task: its metadata corpus, e.g. --metadata '{\"corpus\": \"passages.jsonl\"}')")


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty Pyserini cache and run cache; every download URL unreachable (recorded, no network)."""
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.delenv("TOKRAG_JVM_IN_PROCESS", raising=False)
    calls: list[str] = []
    monkeypatch.setattr(pb, "url_reachable", lambda url, timeout=10.0: calls.append(url) or False)
    return {"cache_dir": str(tmp_path / "runs")}, calls


def test_the_line_names_the_local_corpus_ways(manager, offline, tmp_path):
    meta, calls = offline
    with pytest.raises(OfflineError) as err:
        check_selected_tasks(manager, ["nq_open_bm25_wiki"], meta)
    msg = str(err.value)
    assert "\n" not in msg and msg.endswith(HINT) and "tokrag index build" not in msg
    assert msg.startswith("prebuilt index 'wikipedia-dpr-100w' is not cached and cannot be downloaded (no internet?); "
                          f"copy the unpacked folder to {tmp_path / 'pyserini' / 'indexes'}/lucene-index.")
    assert len(calls) == 1

    # following it: the task's metadata corpus, a local file, needs no prebuilt index and asks no URL
    passages = tmp_path / "passages.jsonl"
    passages.write_text(json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n")
    check_selected_tasks(manager, ["nq_open_bm25_wiki"], {**meta, "corpus": str(passages)})
    assert len(calls) == 1


def test_the_searchers_own_refusal_says_the_same(offline):
    """open_lucene's refusal (Pyserini found no URL that answers) is the same line as the precheck's."""
    err = pb._lucene_offline("wikipedia-dpr-100w")
    assert isinstance(err, OfflineError) and str(err).endswith(HINT)
