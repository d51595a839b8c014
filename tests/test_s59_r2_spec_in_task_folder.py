"""s59 r2 (review of a1's 6396d23): a leaderboard spec file sitting in its task folder is no task source.

With the spec and the task YAMLs in one folder (``include_path: .``, ``cd lb && tokrag leaderboard run spec.yaml``,
the layout a1's 6396d23 made keep its keys after a run), :func:`leaderboards.keys.task_fingerprint` walked the
spec as one of the task folder's YAMLs: editing its description, adding a method, or a copy of it beside it (to try
another alpha) gave every cell of every method a new key, so the whole leaderboard was computed again. A YAML with
top-level ``methods:`` and ``tasks:`` and no ``task:`` (:func:`leaderboards.keys._leaderboard_spec_file`) is left
out of a task folder's fingerprint; the task YAMLs beside it are keyed as before.
"""

from __future__ import annotations

import shutil

from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards import keys
from leaderboards.spec import load_spec


def _lb(tmp_path):
    lb = tmp_path / "lb"
    lb.mkdir()
    for f in ("utils.py", "toy_qa.yaml"):
        shutil.copy(FIX / "tasks" / "toy_qa" / f, lb / f)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    return lb, write_spec(lb, tasks=["toy_qa"], include=lb, limit=4, methods=methods)


def test_editing_the_spec_beside_the_task_keeps_the_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    lb, path = _lb(tmp_path)
    before = [k for _, k, _ in keys.cell_keys(load_spec(path))]
    shutil.copy(path, lb / "toy-alpha.yaml")  # a copy of the spec beside it
    path.write_text(path.read_text(encoding="utf-8") + "description: the same cells, other words\n", encoding="utf-8")
    assert [k for _, k, _ in keys.cell_keys(load_spec(path))] == before  # was another key for every cell
    assert keys._leaderboard_spec_file(path) and not keys._leaderboard_spec_file(lb / "toy_qa.yaml")


def test_the_task_yaml_beside_the_spec_is_still_keyed(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    lb, path = _lb(tmp_path)
    before = [k for _, k, _ in keys.cell_keys(load_spec(path))]
    y = lb / "toy_qa.yaml"
    y.write_text(y.read_text(encoding="utf-8").replace("max_gen_toks: 8", "max_gen_toks: 9"), encoding="utf-8")
    assert [k for _, k, _ in keys.cell_keys(load_spec(path))] != before
    (lb / "group.yaml").write_text("group: g\ntask: [toy_qa]\n", encoding="utf-8")  # a task-side YAML of the folder
    assert not keys._leaderboard_spec_file(lb / "group.yaml")
