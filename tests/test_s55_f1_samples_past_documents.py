"""lm-eval's ``--samples`` with an index past a task's documents (``{"nq_oracle_gold": [999999]}``) failed only after
the model load, with lm-eval's ``AssertionError: Elements of --samples should be in the interval [0,k-1] ...``
(``Task.doc_iterator``), about 40 s later (s55 f1). lm-eval 0.4.13's ``simple_evaluate`` builds the model before the
tasks, so the start-up hook's checks see no built task; building one (retrieval or passage scoring) took 19 s here.
A QA task's documents are its split's questions, the first ``max_docs`` of them: ``check_selected_tasks`` now counts
them as the task build reads them (0.3 s) and refuses the index in one line, before the load.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _check(manager, samples, tasks=("nq_oracle_gold",), metadata=None):
    from tokrag_model._lmeval_hook import check_loaded_run

    check_loaded_run(manager, list(tasks), model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                     samples=samples, metadata=metadata)


def _size(dataset: str, split: str = "test") -> int:
    from tasks.data import load_qa_split

    return len(load_qa_split(dataset, split, None, None, None))


TAIL = "lm-eval would fail with an AssertionError after the model load"


def test_an_index_past_the_documents_is_refused_naming_task_index_and_count(manager):
    assert _size("nq_oracle") == 2383  # the data folder's NQ-open oracle test split (tasks/qa/nq_oracle_gold.yaml)
    with pytest.raises(ConfigError) as err:
        _check(manager, {"nq_oracle_gold": [0, 999999]})
    assert str(err.value) == ("--samples: task nq_oracle_gold has 2383 documents (the questions of its 'test' split), "
                              f"so index 999999 is past its last, 2382; {TAIL}: list indices from 0 to 2382")
    with pytest.raises(ConfigError) as err:
        _check(manager, {"nq_oracle_gold": [2383, 1.0, 5000.0, 2382]})
    assert str(err.value) == ("--samples: task nq_oracle_gold has 2383 documents (the questions of its 'test' split), "
                              f"so index 2383 (and 1 more) is past its last, 2382; {TAIL}: list indices from 0 to 2382")


def test_the_last_document_passes(manager):
    _check(manager, {"nq_oracle_gold": [0, 2382]})
    _check(manager, {"nq_oracle_gold": [2382.0]})


def test_max_docs_and_split_are_counted_as_the_task_reads_them(manager):
    with pytest.raises(ConfigError) as err:
        _check(manager, {"nq_oracle_gold": [3]}, metadata={"max_docs": 3})
    assert str(err.value) == ("--samples: task nq_oracle_gold has 3 documents (max_docs 3 of the 2383 questions of its "
                              f"'test' split), so index 3 is past its last, 2; {TAIL}: list indices from 0 to 2")
    _check(manager, {"nq_oracle_gold": [2]}, metadata={"max_docs": 3})
    dev = _size("nq_oracle", "dev")
    assert 0 < dev < 2383
    with pytest.raises(ConfigError, match=rf"^--samples: task nq_oracle_gold has {dev} documents \(the questions of "
                                          rf"its 'dev' split\), so index {dev} is past its last, {dev - 1}; "):
        _check(manager, {"nq_oracle_gold": [dev]}, metadata={"split": "dev"})


def test_a_group_member_is_counted_and_the_counterfactual_count_is_exact(manager):
    n_open = _size("nq_open")
    with pytest.raises(ConfigError, match=rf"^--samples: task nq_open_bm25 has {n_open} documents "):
        _check(manager, {"nq_open_bm25": [n_open]}, tasks=("rag_qa",))
    _check(manager, {"nq_open_bm25": [n_open - 1]}, tasks=("rag_qa",))
    # s56 f1: counted by the task build's own rule (tasks.rag.counterfactual_kept), no longer a bound
    with pytest.raises(ConfigError, match=r"^--samples: task nq_oracle_gold_counterfactual has 2382 documents .*index "
                                          r"2383 is past its last, 2381; "):
        _check(manager, {"nq_oracle_gold_counterfactual": [2383]}, tasks=("nq_oracle_gold_counterfactual",))


def test_simple_evaluate_refuses_it_before_the_model_is_built(monkeypatch):
    import lm_eval
    from lm_eval.api.registry import get_model

    built = []
    cls = get_model("rag-standard")
    monkeypatch.setattr(cls, "create_from_arg_obj", classmethod(lambda c, *a, **k: built.append(a) or 1 / 0))
    monkeypatch.setattr(cls, "create_from_arg_string", classmethod(lambda c, *a, **k: built.append(a) or 1 / 0))
    with pytest.raises(ConfigError, match=r"^--samples: task nq_oracle_gold has 2383 documents .* index 999999 is past"):
        lm_eval.simple_evaluate(model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                                tasks=["nq_oracle_gold"], samples={"nq_oracle_gold": [999999]})
    assert built == []
