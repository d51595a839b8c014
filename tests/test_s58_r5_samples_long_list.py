"""s58 r5, review of f1's 917f094: a ``--samples`` list out of order is refused with the list to give, and 917f094
spelt out the whole sorted list: a 300-index random subset (a legitimate ``--samples file.json`` written with
``random.sample``) gave a 1,938-character line, 2,000 indices about 10,000. Past 10 indices the line now gives the
count, the first three and the last index; a list of up to 10 is still given whole (as test_s58_f1_samples_order)."""

from __future__ import annotations

import random

import pytest

from retrieval.errors import ConfigError

WHY = ("lm-eval evaluates each document once, in the task's order, but files the n-th under the list's n-th item as "
       "its doc_id (--log_samples), so such a list can file documents under other documents' ids")


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _refusal(manager, indices, task="nq_oracle_bm25") -> str:
    """The one line the start-up hook's checks refuse ``--samples '{task: indices}'`` with (rag-standard)."""
    from tokrag_model._lmeval_hook import check_loaded_run

    with pytest.raises(ConfigError) as err:
        check_loaded_run(manager, [task], model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                         samples={task: indices})
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_long_unsorted_list_is_summarised_not_spelt_out(manager):
    indices = random.Random(0).sample(range(2000), 300)
    assert indices[:2] == [1729, 788]
    low = sorted(indices)
    assert low[:3] == [2, 25, 27] and low[-1] == 1987
    assert _refusal(manager, indices) == (
        f"--samples: task nq_oracle_bm25 lists index 1729 before 788 (items 1 and 2 of its list); {WHY}: give its 300 "
        "distinct indices in increasing order ([2, 25, 27, ..., 1987])")


def test_a_long_list_with_a_repeat_counts_the_distinct_indices(manager):
    indices = list(range(0, 40, 2)) + [6]  # 20 distinct, 6 again at item 21
    assert _refusal(manager, indices) == (
        f"--samples: task nq_oracle_bm25 lists index 6 twice (items 4 and 21 of its list); {WHY}: give its 20 "
        "distinct indices in increasing order ([0, 2, 4, ..., 38])")


def test_up_to_ten_indices_are_given_whole(manager):
    indices = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert _refusal(manager, indices) == (
        f"--samples: task nq_oracle_bm25 lists index 9 before 8 (items 1 and 2 of its list); {WHY}: give "
        "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]")



def test_an_index_past_a_qa_tasks_documents_is_named_before_the_order(manager):
    """917f094 checked the order before the documents' count (check_selected_tasks): [5000, 1] on nq_oracle_gold
    (2,383 documents) was refused as 'lists index 5000 before 1 ... give [1, 5000]', a list refused again once given
    (test_s55_f1_samples_past_documents' unsorted case failed the same way). The count comes first now."""
    assert _refusal(manager, [5000, 1], "nq_oracle_gold").startswith(
        "--samples: task nq_oracle_gold has 2383 documents (the questions of its 'test' split), so index 5000 is past "
        "its last, 2382; ")
    assert _refusal(manager, [2382, 1], "nq_oracle_gold") == (
        f"--samples: task nq_oracle_gold lists index 2382 before 1 (items 1 and 2 of its list); {WHY}: give [1, 2382]")


def test_the_order_is_still_checked_for_a_task_that_is_not_qa(manager):
    """A tokrag method on a plain-text task (no document count before the load): the order check still runs."""
    assert _refusal(manager, [1, 0], "wiki_lm_bm25") == (
        f"--samples: task wiki_lm_bm25 lists index 1 before 0 (items 1 and 2 of its list); {WHY}: give [0, 1]")
