"""A fractional ``--limit`` that leaves a task fewer documents than the launcher's processes (review s46 b5, defect 3).

``torchrun --nproc_per_node 2 -m lm_eval --tasks wiki_lm_bm25 --limit 0.004`` (231 documents: lm-eval takes
ceil(231 x 0.004) = 1) failed after the model load with three tracebacks, while ``--limit 1`` was refused before it.
The pre-load check now turns a fraction into each task's count as lm-eval does
(:func:`lm_eval.evaluator_utils.get_sample_size`) and refuses it in one line.
"""

from __future__ import annotations

import math

import pytest


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


def _size(manager, name):
    return len(manager.load([name])["tasks"][name].eval_docs)


def test_a_fraction_leaving_fewer_documents_than_processes_is_refused(monkeypatch, manager):
    from retrieval.errors import ConfigError
    from tasks.precheck import check_run_arguments

    size = _size(manager, "wiki_lm_bm25")
    assert size >= 100 and math.ceil(size * 0.004) == 1
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError) as exc:
        check_run_arguments(manager, ["wiki_lm_bm25"], model="rag-standard", limit=0.004)
    assert str(exc.value) == (
        f"--limit 0.004: task wiki_lm_bm25 has {size} documents, of which lm-eval takes 1 (ceil({size} x 0.004)), fewer "
        "than the 2 processes (WORLD_SIZE=2), and a process with none fails; pass --limit 2 or more, or start at most "
        "1 process")


def test_a_fraction_giving_each_process_a_document_runs(monkeypatch, manager):
    from tasks.precheck import check_run_arguments

    size = _size(manager, "wiki_lm_bm25")
    enough = 1.5 / size  # ceil(1.5) = 2 documents
    monkeypatch.setenv("WORLD_SIZE", "2")
    check_run_arguments(manager, ["wiki_lm_bm25"], model="rag-standard", limit=enough)
    monkeypatch.setenv("WORLD_SIZE", "1")
    check_run_arguments(manager, ["wiki_lm_bm25"], model="rag-standard", limit=0.004)  # one process: any fraction


def test_three_processes_count_against_each_task(monkeypatch, manager):
    from retrieval.errors import ConfigError
    from tasks.precheck import check_run_arguments

    size = _size(manager, "wiki_lm_bm25")
    two = 1.5 / size
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ConfigError, match=r"of which lm-eval takes 2 .*start at most 2 processes$"):
        check_run_arguments(manager, ["wiki_lm_bm25"], model="rag-standard", limit=two)
