"""A task's ``retriever_params`` are checked before the model load as :func:`retrieval.retrieve` checks them, over a local
corpus too (fixer fi, stop 47): ``--tasks nq_oracle_bm25 --metadata '{"retriever_params": {"k1": "x"}}'`` and
``l2_norm: "flase"`` on a dense task were refused only at the retrieval, after the model load (the pre-load check ran
``retrieval.api._resolve_params`` for ``prebuilt:`` corpora only). The runtime-only ``progress`` was read with
``bool()``, so ``"false"`` turned the progress bar on; the tasks now hand it on as a bool and refuse other values."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.mark.parametrize("task, params, line", [
    ("nq_oracle_bm25", {"k1": "x"}, r"^nq_oracle_bm25: task metadata retriever_params k1='x': k1 must be a finite number$"),
    ("nq_oracle_dense", {"l2_norm": "flase"},
     r"^nq_oracle_dense: task metadata retriever_params l2_norm='flase': expected true or false$"),
    ("nq_oracle_bm25", {"progress": "maybe"},
     r"^nq_oracle_bm25: task metadata retriever_params progress='maybe': expected true or false$"),
    ("nq_oracle_bm25", {"k_1": 0.9}, r"^nq_oracle_bm25: task metadata retriever_params: unknown bm25 parameter 'k_1'.*; valid: b, k1, "),
    ("wiki_lm_bm25", {"b": "0.4"}, r"^wiki_lm_bm25: task metadata retriever_params b='0.4': b must be a finite number$"),
    ("wikitext103_bm25_wiki", {"progress": "no"}, r"^wikitext103_bm25_wiki: task metadata retriever_params progress='no': expected true or false$"),
])
def test_bad_retriever_params_are_refused_before_the_model_load(manager, task, params, line) -> None:
    from tasks.precheck import check_selected_tasks

    with pytest.raises(ConfigError, match=line) as err:
        check_selected_tasks(manager, [task], {"retriever_params": params})
    assert "\n" not in str(err.value)


def test_wikitext_over_a_local_corpus_is_checked(manager, tmp_path) -> None:
    from tasks.precheck import check_selected_tasks

    with pytest.raises(ConfigError, match=r"^wikitext103_bm25_wiki: task metadata retriever_params l2_norm='flase': expected "
                                          r"true or false$"):
        check_selected_tasks(manager, ["wikitext103_bm25_wiki"], {
            "corpus": str(tmp_path / "corpus.jsonl"), "retriever": "dense", "hub_id": str(tmp_path / "no-copy"),
            "retriever_params": {"l2_norm": "flase"}})


def test_qa_arguments_refuses_a_local_corpus_bad_flag() -> None:
    from tasks.utils import qa_arguments

    with pytest.raises(ConfigError, match=r"^nq_oracle_dense: task metadata retriever_params l2_norm='flase': expected true "
                                          r"or false$"):
        qa_arguments({"dataset": "nq_oracle", "retriever": "dense", "retriever_params": {"l2_norm": "flase"}},
                     "nq_oracle_dense")
    with pytest.raises(ConfigError, match=r"^nq_oracle_bm25: task metadata retriever_params='k1=3': expected a mapping"):
        qa_arguments({"dataset": "nq_oracle", "retriever_params": "k1=3"}, "nq_oracle_bm25")


def test_good_params_pass_unchanged_and_progress_is_a_bool() -> None:
    from tasks.utils import qa_arguments, wiki_lm_arguments

    meta = {"dataset": "nq_oracle", "retriever": "dense", "retriever_params": {"l2_norm": "false", "progress": "false"}}
    kw, *_ = qa_arguments(meta, "nq_oracle_dense")
    assert kw["retriever_params"] == {"l2_norm": "false", "progress": False}
    assert meta["retriever_params"] == {"l2_norm": "false", "progress": "false"}  # the recorded metadata as given
    kw, *_ = qa_arguments({"dataset": "nq_open", "retriever": "dpr", "corpus": "prebuilt:wikipedia-dpr-100w",
                           "retriever_params": {"dense_index": "dpr-multi", "progress": 1}}, "nq_open_dpr_wiki")
    assert kw["retriever_params"] == {"dense_index": "dpr-multi", "progress": True}
    assert wiki_lm_arguments({"retriever_params": {"progress": "False", "k1": 1.2}}) == {
        "retriever_params": {"progress": False, "k1": 1.2}}
    kw, *_ = qa_arguments({"dataset": "nq_oracle"}, "nq_oracle_bm25")
    assert "retriever_params" not in kw


def test_progress_false_reaches_the_retrieval_as_false(monkeypatch) -> None:
    """What the wiki_lm task build hands :func:`retrieval.retrieve` (which reads ``progress`` with ``bool()``)."""
    import retrieval

    seen = {}

    class Stop(Exception):
        pass

    def fake_retrieve(corpus, queries, retriever="bm25", k=5, params=None, **kw):
        seen.update(params or {})
        raise Stop

    monkeypatch.setattr(retrieval, "retrieve", fake_retrieve)
    from tasks.utils import load_wiki_lm

    with pytest.raises(Stop):
        load_wiki_lm(max_docs=1, retriever_params={"progress": "false"})
    assert seen == {"progress": False}


def test_the_task_line_names_the_task_and_no_cli_flag(manager) -> None:
    """Before the load, a bad retriever_params named no task and cited tokrag retrieve's flag (--b), which lm_eval has
    not: "['nq_oracle_bm25', 'wiki_lm_bm25'] -> b='0.4' (--b): b must be a finite number" (a review, stop 47). The
    line names the task and the task metadata key, like check_task_keys' lines; retrieval's own line keeps its flag."""
    from retrieval.api import _resolve_params
    from tasks.precheck import check_selected_tasks
    from tasks.utils import qa_arguments

    with pytest.raises(ConfigError) as err:
        check_selected_tasks(manager, ["nq_oracle_bm25", "wiki_lm_bm25"], {"retriever_params": {"b": "0.4"}})
    assert str(err.value) == "nq_oracle_bm25: task metadata retriever_params b='0.4': b must be a finite number"
    with pytest.raises(ConfigError) as err:
        qa_arguments({"dataset": "nq_open", "retriever": "hybrid", "retriever_params": {"fusion": "weighted"}},
                     "nq_open_hybrid")
    assert str(err.value).startswith("nq_open_hybrid: task metadata retriever_params: weighted hybrid fusion needs an "
                                     "explicit alpha")
    with pytest.raises(ConfigError) as err:
        qa_arguments({"dataset": "nq_oracle", "retriever_params": {"k1": -1}}, "nq_oracle_bm25")
    assert str(err.value) == "nq_oracle_bm25: task metadata retriever_params k1=-1: BM25 k1 must be >= 0 (default 0.9)"
    with pytest.raises(ConfigError) as err:
        _resolve_params("bm25", {"b": "0.4"})
    assert str(err.value) == "b='0.4' (--b): b must be a finite number"
