"""s59 r5, review of f1's dbbf3c0 (lm-eval reads a task's local data file by its content): ``--cache_requests true``
(``simple_evaluate(cache_requests=True)``) was refused only for tokrag's tasks, but lm-eval keys its request cache by
task name, so a user task over a local data file, run again after an edit of the file, read the prompts built from its
old rows. It is now refused for such a task too (``refresh`` passes and gives the new rows' prompts).
"""

from __future__ import annotations

import os

import pytest
from leaderboard_helpers import FIX

from retrieval.errors import ConfigError

from local_json_task import GOLD, _evaluate, _task, _write_rows, env  # noqa: F401  (env: a fixture)


def test_cache_requests_true_is_refused_for_a_task_over_a_local_data_file(env):
    data = env / "my data" / "q.jsonl"
    data.parent.mkdir()
    _write_rows(data, GOLD)
    tasks = _task(env, "toy_json", f'"{data}"')
    with pytest.raises(ConfigError) as exc:  # before: it ran, and a second run after an edit read the old prompts
        _evaluate(tasks, ["toy_json"], cache_requests=True)
    assert str(exc.value) == (
        "--cache_requests true: lm-eval keys its request cache by task name only, so task 'toy_json' would reuse the "
        f"prompts built from an earlier version of its local data {data} once that is edited; leave it off or pass "
        "--cache_requests refresh, which rebuilds the prompts")
    # refresh rebuilds the prompts: after an edit the new rows' prompts and answers
    out = _evaluate(tasks, ["toy_json"], cache_requests=True, rewrite_requests_cache=True)
    assert out["results"]["toy_json"]["em,none"] == 1.0
    st = data.stat()
    _write_rows(data, ["tan", "gold"])
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    out = _evaluate(tasks, ["toy_json"], cache_requests=True, rewrite_requests_cache=True)
    assert [s["target"] for s in out["samples"]["toy_json"]] == ["tan", "gold"]
    assert all("is tan." in s["arguments"][0][0] or "is gold." in s["arguments"][0][0]
               for s in out["samples"]["toy_json"])


def test_which_tasks_the_refusal_reaches(env, monkeypatch):
    from lm_eval.tasks import TaskManager

    from tokrag_model._lmeval_hook import check_cache_requests

    (env / "rel").mkdir()
    _write_rows(env / "rel" / "q.jsonl", GOLD)
    tasks = _task(env, "toy_rel", "rel/q.jsonl")  # relative: datasets reads it from the working directory
    on = {"cache_requests": True, "rewrite_requests_cache": False, "delete_requests_cache": False}
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    monkeypatch.chdir(env)
    with pytest.raises(ConfigError, match=r"so task 'toy_rel' would reuse the prompts built from an earlier version of "
                                          r"its local data .*rel/q\.jsonl once that is edited"):
        check_cache_requests(manager, ["toy_rel"], on)
    check_cache_requests(manager, ["toy_rel"], {**on, "rewrite_requests_cache": True})  # refresh passes
    check_cache_requests(manager, ["toy_rel"], {})  # off passes
    monkeypatch.chdir(env / "rel")  # no rel/q.jsonl from here: the run would fail on the missing file, not this check
    check_cache_requests(manager, ["toy_rel"], on)
    fixtures = TaskManager(include_path=str(FIX / "tasks"), include_defaults=False)
    check_cache_requests(fixtures, ["toy_qa"], on)  # a user's own custom_dataset loader: left to lm-eval
