"""``lm_eval --model tokrag --tasks wikitext103_bm25_wiki`` (and ``tokrag eval``) checked the task's hub data set before
the model load but not its prebuilt index (``prebuilt:wikipedia-dpr-100w``): offline, with the data at hand and the
index neither cached nor downloadable, the model loaded and the task build failed after it; the leaderboard runner
checked the index itself (a review, stop 47). :func:`tasks.precheck.check_selected_tasks`, which both call, now checks
it (:func:`tasks.precheck.check_wikitext_prebuilt`), at the depth the task caches its run."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError, OfflineError
from tasks import TASK_DIR
from tasks.precheck import check_selected_tasks
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)

INDEX = "https://example.invalid/lucene-index.wikipedia-dpr-100w.tar.gz"


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture()
def no_index(offline, tmp_path, monkeypatch):
    """The task's hub data set in the hub cache (offline); the prebuilt index not cached (the plan the retrieval worker
    gives, without Java) and its URL not answering; ``asked`` records each look at the run cache ``(corpus, retriever,
    k)`` and each plan asked ``(corpus, retriever)``."""
    import retrieval.prebuilt
    import retrieval.worker
    import tasks.precheck

    hub_snapshot(tmp_path / "hub", "EleutherAI/wikitext_document_level",
                 {"wikitext-103-raw-v1/test.jsonl": '{"page": " = Marie Curie = \\n Marie Curie was a physicist ."}\n'})
    asked: list[tuple] = []

    def plan(fn, name, retriever, params):
        asked.append((name, retriever))
        return {"corpus": name, "retriever": retriever, "items": [
            {"what": "Lucene index", "name": name, "url": INDEX, "bytes": 1, "md5": "0" * 32, "path": "x", "cached": False}]}

    monkeypatch.setattr(retrieval.worker, "call_java", plan)
    monkeypatch.setattr(retrieval.prebuilt, "url_reachable", lambda url, timeout=10.0: url != INDEX)
    monkeypatch.setattr(tasks.precheck, "_run_cached", lambda cache_dir, corpus, retriever, k: asked.append(
        (corpus, retriever, k)) and False)
    return asked


def test_the_cli_check_refuses_wikitext103_without_its_prebuilt_index(manager, no_index):
    from retrieval.prebuilt import _lucene_offline

    with pytest.raises(OfflineError) as exc:
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {})
    assert str(exc.value) == str(_lucene_offline("wikipedia-dpr-100w")) and "\n" not in str(exc.value)
    assert str(exc.value).startswith("prebuilt index 'wikipedia-dpr-100w' is not cached and cannot be downloaded")
    # the run the task caches: hits (3) + OWN_TITLE_MARGIN (20) passages per chunk
    assert no_index == [("prebuilt:wikipedia-dpr-100w", "bm25", 23), ("wikipedia-dpr-100w", "bm25")]


def test_metadata_over_the_task_picks_the_index_and_depth(manager, no_index, tmp_path):
    with pytest.raises(OfflineError):
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {"hits": "5"})
    assert no_index[0] == ("prebuilt:wikipedia-dpr-100w", "bm25", 25)
    no_index.clear()
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text('{"id": "p1", "title": "T", "text": "x"}\n', encoding="utf-8")
    check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {"corpus": str(corpus)})  # a local corpus: the build's
    assert no_index == []
    with pytest.raises(ConfigError, match=r"^wikitext103_bm25_wiki: task metadata hits='x' is not valid"):
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {"hits": "x"})  # the loader's line, before the load
