"""lm-eval's ``--samples`` with a repeated or unsorted index list (s58 f1, from s58 b2's report). lm-eval 0.4.13
evaluates each selected document once, in the task's order (``Task.doc_iterator``: ``i in samples``), but labels the
n-th evaluated document ``doc_id = samples[n]`` in the samples file (``evaluate``): ``lm_eval --model rag-standard
--tasks nq_oracle_bm25 --samples '{"nq_oracle_bm25": [0, 0, 1]}' --log_samples`` evaluated documents 0 and 1 and filed
both under ``doc_id 0``; ``[1, 0]`` swapped the labels. Exit 0 either way. The pre-load check now refuses both."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

WHY = ("lm-eval evaluates each document once, in the task's order, but files the n-th under the list's n-th item as "
       "its doc_id (--log_samples), so such a list can file documents under other documents' ids")


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _check(manager, samples, tasks=("nq_oracle_bm25",)):
    from tokrag_model._lmeval_hook import check_loaded_run

    check_loaded_run(manager, list(tasks), model="rag-standard", model_args="pretrained=smollm2-135m-instruct",
                     samples=samples)


@pytest.mark.parametrize("indices, line", [
    ([0, 0, 1], "lists index 0 twice (items 1 and 2 of its list); {why}: give [0, 1]"),
    ([0, 1, 1], "lists index 1 twice (items 2 and 3 of its list); {why}: give [0, 1]"),
    ([4, 2, 9, 2], "lists index 2 twice (items 2 and 4 of its list); {why}: give [2, 4, 9]"),
    ([0, 1.0, 1], "lists index 1 twice (items 2 and 3 of its list); {why}: give [0, 1]"),  # 1.0 selects document 1
    ([1, 0], "lists index 1 before 0 (items 1 and 2 of its list); {why}: give [0, 1]"),
    ([0, 5, 3], "lists index 5 before 3 (items 2 and 3 of its list); {why}: give [0, 3, 5]"),
])
def test_a_repeated_or_unsorted_index_is_refused_before_the_load(manager, indices, line):
    with pytest.raises(ConfigError) as err:
        _check(manager, {"nq_oracle_bm25": indices})
    assert str(err.value) == "--samples: task nq_oracle_bm25 " + line.format(why=WHY)
    assert "\n" not in str(err.value)


def test_the_task_named_is_the_one_with_the_bad_list(manager):
    with pytest.raises(ConfigError) as err:
        _check(manager, {"nq_oracle_gold": [0, 1], "nq_oracle_bm25": [2, 2]}, tasks=("nq_oracle_gold", "nq_oracle_bm25"))
    assert str(err.value).startswith("--samples: task nq_oracle_bm25 lists index 2 twice (items 1 and 2 of its list)")


def test_increasing_lists_of_distinct_indices_pass(manager):
    _check(manager, {"nq_oracle_bm25": [0, 1]})
    _check(manager, {"nq_oracle_bm25": [3]})
    _check(manager, {"nq_oracle_bm25": [0, 1.0, 7]})  # whole floats, as a JSON file of floats gives them
    _check(manager, {"nq_oracle_gold": [2, 5], "nq_oracle_bm25": [0, 9]}, tasks=("nq_oracle_gold", "nq_oracle_bm25"))


def test_the_cli_exits_2_with_one_line_before_the_model_load(tmp_path):
    """``lm_eval --model tokrag ... --samples '{"nq_oracle_bm25": [0, 0, 1]}'``: one line, exit 2, before the load."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([sys.executable, "-m", "lm_eval", "run", "--model", "tokrag", "--model_args",
                           "pretrained=smollm2-135m-instruct", "--tasks", "nq_oracle_bm25", "--log_samples",
                           "--output_path", str(tmp_path / "out"), "--samples", '{"nq_oracle_bm25": [0, 0, 1]}'],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and " WARNING " not in ln and " INFO " not in ln]
    assert lines == ["python -m lm_eval: error: --samples: task nq_oracle_bm25 lists index 0 twice (items 1 and 2 of "
                     f"its list); {WHY}: give [0, 1]", "(set TOKRAG_TRACEBACK=1 for the stack trace)"]
    assert not (tmp_path / "out").exists()
