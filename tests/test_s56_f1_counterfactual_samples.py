"""``--samples`` on a counterfactual task was checked only as "at most" its split's questions (s56 f1). A counterfactual
task leaves out the questions whose gold passage holds no literal gold answer or that have no substitute of the same
kind (NQ-oracle's test split: 1 of 2,383, index 1325, nq-dev-0954, whose answer is "), starting on"), so
``{"nq_oracle_gold_counterfactual": [2382]}`` passed the pre-check and lm-eval failed with its AssertionError after the
model load (2,382 documents). The keep/skip rule is now one function, ``tasks.rag.counterfactual_kept``, which the
task build and the pre-check both call: the pre-check knows the exact number of documents.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

TAIL = "lm-eval would fail with an AssertionError after the model load"
LEFT_OUT = "1 left out: no literal gold answer in the gold passage or no substitute of the same kind"


@pytest.fixture
def unscored(monkeypatch):
    """The gold passages' BM25 scores (a Java search per question) are not what these tests check: all 0."""
    import retrieval

    monkeypatch.setattr(retrieval, "score_passages",
                        lambda corpus, queries, passages, **kw: {q: [0.0] * len(p) for q, p in passages.items()})


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _check(manager, samples, task, metadata=None):
    from tokrag_model._lmeval_hook import check_loaded_run

    check_loaded_run(manager, [task], model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                     samples=samples, metadata=metadata)


@pytest.mark.parametrize("task", ["nq_oracle_gold_counterfactual", "nq_oracle_bm25_counterfactual_all"])
def test_the_exact_number_of_documents_is_checked(manager, task):
    with pytest.raises(ConfigError) as err:
        _check(manager, {task: [0, 2382]}, task)
    assert str(err.value) == (f"--samples: task {task} has 2382 documents (the questions of its 'test' split, "
                              f"{LEFT_OUT}), so index 2382 is past its last, 2381; {TAIL}: list indices from 0 to 2381")
    _check(manager, {task: [0, 2381]}, task)


def test_max_docs_counts_the_left_out_question_only_when_it_keeps_it(manager):
    task = "nq_oracle_gold_counterfactual"
    with pytest.raises(ConfigError) as err:  # the first 1326 questions hold index 1325, the one left out
        _check(manager, {task: [1325]}, task, metadata={"max_docs": 1326})
    assert str(err.value) == (f"--samples: task {task} has 1325 documents (max_docs 1326 of the 2383 questions of its "
                              f"'test' split, {LEFT_OUT}), so index 1325 is past its last, 1324; {TAIL}: list indices "
                              "from 0 to 1324")
    with pytest.raises(ConfigError) as err:
        _check(manager, {task: [1325]}, task, metadata={"max_docs": 1325})
    assert str(err.value) == (f"--samples: task {task} has 1325 documents (max_docs 1325 of the 2383 questions of its "
                              f"'test' split), so index 1325 is past its last, 1324; {TAIL}: list indices from 0 to 1324")
    _check(manager, {task: [1324]}, task, metadata={"max_docs": 1326})
    with pytest.raises(ConfigError, match=r" has 1325 documents \(max_docs 1326 .*, 1 left out: "):  # any seed
        _check(manager, {task: [1325]}, task, metadata={"max_docs": 1326, "seed": 7})


def test_the_count_and_the_task_build_share_one_rule(manager, monkeypatch, unscored):
    """Leaving out one more question in ``counterfactual_kept`` moves both the built documents and the count."""
    import tasks.rag as rag

    real = rag.counterfactual_kept

    def also_drop_first(row, pool):
        return row["qid"] != first and real(row, pool)

    from tasks.data import load_qa_split

    first = load_qa_split("nq_oracle", "test", None, None, None)[0]["qid"]
    monkeypatch.setattr(rag, "counterfactual_kept", also_drop_first)
    docs = rag.build_qa_docs("nq_oracle", counterfactual=True, gold_only=True, max_docs=5)
    assert [d["qid"] for d in docs] == [r["qid"] for r in load_qa_split("nq_oracle", "test", None, None, None)[1:5]]
    with pytest.raises(ConfigError, match=r"^--samples: task nq_oracle_gold_counterfactual has 4 documents \(max_docs 5 "
                                          r"of the 2383 questions of its 'test' split, 1 left out: .*index 4 is past"):
        _check(manager, {"nq_oracle_gold_counterfactual": [4]}, "nq_oracle_gold_counterfactual", metadata={"max_docs": 5})


def test_the_counted_documents_are_the_built_ones(unscored):
    """The count of the pre-check's rule equals the documents the task build keeps around the left-out question."""
    from tasks.data import load_qa_split
    from tasks.rag import build_qa_docs, counterfactual_kept, counterfactual_pool

    rows = load_qa_split("nq_oracle", "test", None, None, None)[1320:1330]
    pool = counterfactual_pool()
    kept = [r["qid"] for r in rows if counterfactual_kept(r, pool)]
    assert len(kept) == 9 and "nq-dev-0954" not in kept
    docs = build_qa_docs("nq_oracle", counterfactual=True, gold_only=True, max_docs=1330)[1320:]
    assert len(docs) == 9 and [d["qid"] for d in docs] == kept  # docs 1320.. are questions 1320.. without 1325
    assert all(d["counterfactual_answer"] for d in docs)


def test_a_task_that_keeps_no_question_is_named(monkeypatch):
    """Every question left out (here by a stand-in rule): no index can be listed; the line says so, not 'index 0 is
    past its last, -1'."""
    import tasks.rag as rag
    from tasks.precheck import _check_samples_in_range

    monkeypatch.setattr(rag, "counterfactual_kept", lambda row, pool: False)
    with pytest.raises(ConfigError) as err:
        _check_samples_in_range("nq_oracle_gold_counterfactual", "nq_oracle",
                                {"counterfactual": True, "gold_only": True, "max_docs": 2}, [0, 1])
    assert str(err.value) == ("--samples: task nq_oracle_gold_counterfactual has no documents (max_docs 2 of the 2383 "
                              "questions of its 'test' split, 2 left out: no literal gold answer in the gold passage or "
                              "no substitute of the same kind), so index 0 is past them; lm-eval would fail after the "
                              "model load: drop the task from --samples, or raise its max_docs")
