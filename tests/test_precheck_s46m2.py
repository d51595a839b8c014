"""Pre-load checks of tasks/precheck.py found by a reviewer (stop 46).

* ``lm_eval --metadata '{"prompt": "base"}' --gen_kwargs 'until=["\\n"]'`` (README's base-model line) applies that
  ``until`` to every ``generate_until`` task (lm-eval 0.4.13 ``simple_evaluate``: ``set_config(generation_kwargs,
  update=True)``), so ELI5 (stops at a new "Question:", the whole generation scored) and WoW (a blank line) were cut
  at their first newline, silently: a WARNING now names each such task and its own stop.
* ``wikitext103_bm25_wiki`` offline without its hub data set stopped only after the model load under ``lm_eval`` /
  ``tokrag eval`` (the leaderboard runner checked it): the CLI's pre-load check now checks it too.
"""

from __future__ import annotations

import logging

import pytest

from retrieval.errors import ConfigError, OfflineError
from tasks import TASK_DIR
from tasks.precheck import check_selected_tasks
from tests.hub_cache_helpers import offline  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


def test_an_until_given_with_the_base_prompt_is_warned_on_the_tasks_with_their_own_stop(manager, monkeypatch, caplog):
    import tasks.precheck
    import tasks.sources

    # over prebuilt:wikipedia-dpr-100w and KILT's hub questions: their checks are other tests'
    monkeypatch.setattr(tasks.precheck, "check_prebuilt_download", lambda corpus, kw: None)
    monkeypatch.setattr(tasks.sources, "check_hub_source", lambda *args, **kwargs: None)

    def warnings(*args) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tasks.precheck"):
            check_selected_tasks(manager, *args)
        return [r.getMessage() for r in caplog.records if r.name == "tasks.precheck"]

    names = ["eli5_bm25_wiki", "wow_bm25_wiki", "nq_oracle_bm25"]
    tail = ("; lm-eval applies --gen_kwargs to every generate_until task, and prompt=base needs the newline stop only on "
            "the short-answer tasks: run this task in its own lm_eval call without until in --gen_kwargs "
            "(tasks/README.md, \"Prompts\")")
    want = ["eli5_bm25_wiki: --gen_kwargs until replaces this task's own stop strings ['Question:']" + tail,
            "wow_bm25_wiki: --gen_kwargs until replaces this task's own stop strings ['\\n\\n']" + tail]
    assert warnings(names, {"prompt": "base"}, 'until=["\\n"]') == want  # README's base-model line
    assert warnings(names, {"prompt": "base"}, {"until": ["\n"], "max_gen_toks": 16}) == want
    assert warnings(names, {}, 'until=["\\n"]') == []  # the instruct format: an until is the user's choice
    assert warnings(["eli5_bm25_wiki", "wow_bm25_wiki"], {"prompt": "base"}) == []  # their own stop, kept


def test_wikitext103_without_its_hub_data_is_refused_before_the_model_loads(manager, offline, tmp_path, monkeypatch):
    import tasks.precheck

    indexes = []  # the prebuilt index, checked with the data (tasks.precheck.every_problem; s52 f3; it was checked only
    # once the data passed): tests/test_fb_wikitext_prebuilt_precheck.py, tests/test_s52_f3_every_data_problem.py
    monkeypatch.setattr(tasks.precheck, "check_prebuilt_download", lambda corpus, kw: indexes.append(corpus))
    with pytest.raises(OfflineError) as exc:
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {})
    assert str(exc.value).startswith(
        "cannot load the hub dataset 'EleutherAI/wikitext_document_level' (wikitext-103-raw-v1), split 'test': "
        "HF_HUB_OFFLINE=1 and it is neither in the hub cache"), exc.value
    assert "a 'wikitext_document_level' folder in the data folder" in str(exc.value)
    (tmp_path / "datasets" / "EleutherAI___wikitext_document_level" / "wikitext-103-raw-v1").mkdir(parents=True)
    assert indexes == ["prebuilt:wikipedia-dpr-100w"]  # the index passed here: the data set's own error, as it is
    check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {})  # in the datasets cache: left to the task build
    assert indexes == ["prebuilt:wikipedia-dpr-100w"] * 2
    with pytest.raises(ConfigError) as exc:  # its metadata hub_id: a path, not looked up on the hub (f8357bf)
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {"hub_id": "/no/such/copy"})
    assert str(exc.value) == ("task wikitext103_bm25_wiki: metadata hub_id '/no/such/copy' (in --metadata) names "
                              "/no/such/copy, which does not exist; create it or give an existing path as hub_id in "
                              "--metadata"), exc.value
