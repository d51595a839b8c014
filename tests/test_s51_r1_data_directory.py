"""s51 r1 (review of 9a3f982): the folder that report/check/rescore tell a user to ``cd`` into after a relative data
path is not found from here was taken from the data files that ANY finished run in the runs folder read, of any
task: a run of another task that read ``/other/data/q.jsonl`` (its own, other questions) made the advice for a task
whose ``questions: data/q.jsonl`` is missing say "run from /other, which holds 'data/q.jsonl'" and
``run: cd /other && tokrag leaderboard run ...``: followed, the cells run on the other task's questions without a
word. Only the finished runs of the missing value's own task tell where it was read from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards.report import collect
from leaderboards.runner import IncompleteRunError, run_spec
from leaderboards.spec import load_spec

ONE = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]


def _tasks(tmp_path: Path, other: Path) -> Path:
    """toy_qa with ``questions: data/q.jsonl`` (relative); toy_b, the same task reading ``other/data/q.jsonl``
    (absolute: another question set under the same relative name)."""
    t = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", t / "toy_qa", ignore=shutil.ignore_patterns("__pycache__"))
    (t / "toy_qa" / "toy_qa_noise67.yaml").unlink()
    y = t / "toy_qa" / "toy_qa.yaml"
    y.write_text(y.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, questions: data/q.jsonl}"))
    (t / "toy_qa" / "toy_b.yaml").write_text(y.read_text().replace("task: toy_qa", "task: toy_b")
                                             .replace("data/q.jsonl", str(other / "data" / "q.jsonl")))
    for d, q in ((tmp_path / "work", "capital of australia"), (other, "capital of france")):
        (d / "data").mkdir(parents=True)
        (d / "data" / "q.jsonl").write_text(f'{{"id": "q1", "question": "{q}", "answers": ["x"]}}\n')
    return t


def _advice(spec, runs) -> str:
    with pytest.raises(IncompleteRunError) as exc:
        collect(spec, runs)
    return str(exc.value)


def test_another_tasks_data_file_of_the_same_name_is_not_suggested(tmp_path, monkeypatch):
    work, other, elsewhere = tmp_path / "work", tmp_path / "other", tmp_path / "elsewhere"
    elsewhere.mkdir()
    tasks = _tasks(tmp_path, other)
    runs = tmp_path / "runs"
    monkeypatch.chdir(work)
    run_spec(load_spec(write_spec(tmp_path / "s2", name="s2", include=tasks, tasks=["toy_b"], limit=1, methods=ONE)),
             runs, progress=False)  # another spec's task, same runs folder: it read other/data/q.jsonl
    spec = load_spec(write_spec(tmp_path / "s1", name="s1", include=tasks, tasks=["toy_qa"], limit=1, methods=ONE))

    monkeypatch.chdir(elsewhere)  # toy_qa never ran: nothing says where its data/q.jsonl is
    text = _advice(spec, runs)
    assert str(other) not in text
    assert "run from the directory that holds 'data/q.jsonl', or give an absolute path" in text
    # the last line (s60 n1: no cell of the spec is finished, so no 'report ... --allow-missing' follows it)
    assert text.splitlines()[-1] == f"run: tokrag leaderboard run {spec.path} --runs-dir {runs}"


def test_the_folder_a_run_of_the_same_task_read_is_suggested_not_another_tasks(tmp_path, monkeypatch):
    """One spec with both tasks, run from work/: whichever order the run folders are listed in, the advice for
    toy_qa names work/ (its finished run read work/data/q.jsonl), never other/."""
    work, other, elsewhere = tmp_path / "work", tmp_path / "other", tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = load_spec(write_spec(tmp_path / "s", include=_tasks(tmp_path, other), tasks=["toy_qa", "toy_b"], limit=1,
                                methods=ONE))
    runs = tmp_path / "runs"
    monkeypatch.chdir(work)
    run_spec(spec, runs, progress=False)

    monkeypatch.chdir(elsewhere)
    text = _advice(spec, runs)
    assert f"from {work} this path names the file that run read, unchanged" in text and str(other) not in text
    assert text.splitlines()[-2] == f"run: cd {work} && tokrag leaderboard run {spec.path} --runs-dir {runs}"
