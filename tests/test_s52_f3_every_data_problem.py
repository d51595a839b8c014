"""The pre-run data check named one problem per task: a task over a hub data set and a ``prebuilt:`` index, with both
missing (``triviaqa_bm25_wiki``, ``trex_bm25_wiki``, ``wikitext103_bm25_wiki`` offline on a fresh machine), named only
the data set, and the 9 GB index only on the next try (s51 u2 L5). ``tasks.precheck.every_problem`` now runs the
check of each input of a task (its questions; its corpus or index) and refuses what each refuses: one line for
``lm_eval`` / ``tokrag eval`` (joined with "; also: "), one line each in ``tokrag leaderboard run --estimate``."""

from __future__ import annotations

import pytest

from retrieval import prebuilt
from retrieval.errors import ConfigError, DataError, OfflineError
from tasks import TASK_DIR
from tasks.precheck import ALSO, check_selected_tasks, every_problem


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE=1, an empty data folder and empty hub and datasets caches (none of the data sets is there)."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "datasets"))


@pytest.fixture
def no_index(tmp_path, monkeypatch):
    """An empty Pyserini cache (the download plan is Pyserini's own, from the retrieval worker) and no URL answers."""
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.delenv("TOKRAG_JVM_IN_PROCESS", raising=False)
    monkeypatch.setattr(prebuilt, "url_reachable", lambda url, timeout=10.0: False)
    return tmp_path / "pyserini" / "indexes"


@pytest.mark.parametrize("task, hub", [("triviaqa_bm25_wiki", "'mandarjoshi/trivia_qa' (unfiltered.nocontext)"),
                                       ("trex_bm25_wiki", "'facebook/kilt_tasks' (trex)"),
                                       ("wikitext103_bm25_wiki", "'EleutherAI/wikitext_document_level' (wikitext-103-raw-v1)")])
def test_the_data_set_and_the_index_are_both_named(manager, offline, no_index, tmp_path, task, hub):
    with pytest.raises(OfflineError) as exc:
        check_selected_tasks(manager, [task], {"cache_dir": str(tmp_path / "runs")})
    lines = exc.value.problems
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"cannot load the hub dataset {hub}, split "), lines[0]
    assert "HF_HUB_OFFLINE=1 and it is neither in the hub cache" in lines[0]
    assert lines[1].startswith("prebuilt index 'wikipedia-dpr-100w' is not cached and cannot be downloaded (no "
                               f"internet?); copy the unpacked folder to {no_index}/lucene-index.wikipedia-dpr-100w."), lines[1]
    assert str(exc.value) == lines[0] + ALSO + lines[1] and "\n" not in str(exc.value)  # one line under lm_eval


def test_one_problem_is_raised_as_it_is_and_none_is_nothing():
    error = DataError("q.jsonl:2: malformed JSON")

    def bad():
        raise error

    with pytest.raises(DataError) as exc:
        every_problem(lambda: None, bad)
    assert exc.value is error and not hasattr(exc.value, "problems")
    assert every_problem(lambda: None, lambda: None) is None


def test_several_problems_keep_the_first_ones_class_and_each_line_once():
    def raiser(cls, text):
        def check():
            raise cls(text)
        return check

    with pytest.raises(ConfigError) as exc:
        every_problem(raiser(ConfigError, "a\n  b"), raiser(OfflineError, "c"), raiser(DataError, "a b"))
    assert exc.value.problems == ["a b", "c"]
    assert str(exc.value) == "a b; also: c"
    with pytest.raises(ZeroDivisionError):  # not a refusal: a fault of the check, not hidden
        every_problem(raiser(ConfigError, "a"), lambda: 1 / 0)
