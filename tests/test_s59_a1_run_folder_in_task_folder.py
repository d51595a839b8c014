"""s59 a1: a leaderboard whose runs folder sits in its task folder keeps its cells' keys after a run.

With the task YAMLs in ``lb/`` (``include_path: .``) and ``cd lb && tokrag leaderboard run spec.yaml``, the default
``./runs`` is ``lb/runs``: :func:`leaderboards.keys.task_fingerprint` walked it as task source, and the extensionless
``DONE`` marker of each finished cell changed the task fingerprint, so every cell had a new key after each run and was
computed again (a needless recompute, never a stale number). A finished run folder is no longer entered.
"""

from __future__ import annotations

import shutil

from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards import keys
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec


def test_runs_folder_in_the_task_folder_keeps_the_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    lb = tmp_path / "lb"
    lb.mkdir()
    shutil.copy(FIX / "tasks" / "toy_qa" / "utils.py", lb / "utils.py")
    shutil.copy(FIX / "tasks" / "toy_qa" / "toy_qa.yaml", lb / "toy_qa.yaml")
    monkeypatch.chdir(lb)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec = load_spec(write_spec(lb, tasks=["toy_qa"], include=lb, limit=4, methods=methods))
    before = [k for _, k, _ in keys.cell_keys(spec)]
    run_spec(spec, lb / "runs", progress=False)
    assert [p.parent.name for p in (lb / "runs").glob("*/DONE")] == before
    assert [k for _, k, _ in keys.cell_keys(spec)] == before  # was another key: the cell would run again
    assert keys.task_data_files("toy_qa", [lb], keys._HashMemo()) == {}


def test_code_subfolders_are_still_keyed(tmp_path):
    """A subfolder of task code is entered as before; one holding DONE beside config.json (a finished run) is not."""
    lb = tmp_path / "lb"
    (lb / "sub").mkdir(parents=True)
    (lb / "sub" / "helper.py").write_text("X = 1\n")
    before = keys._HashMemo().tree(lb, {".py", ""}, source=True)
    assert before == keys.tree_fingerprint(lb, keys._HashMemo(), {".py", ""}, code=True)
    (lb / "sub" / "helper.py").write_text("X = 2\n")
    edited = keys._HashMemo().tree(lb, {".py", ""}, source=True)
    assert edited != before
    (lb / "sub" / "DONE").write_text("")
    assert keys._HashMemo().tree(lb, {".py", ""}, source=True) != edited  # DONE alone: an extensionless file, keyed
    (lb / "sub" / "config.json").write_text("{}")
    (tmp_path / "none").mkdir()
    nothing = keys.tree_fingerprint(tmp_path / "none", keys._HashMemo(), {".py", ""})
    assert keys._HashMemo().tree(lb, {".py", ""}, source=True) == nothing  # the run folder is not entered
