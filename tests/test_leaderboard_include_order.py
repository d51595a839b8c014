"""A spec's ``include_path`` with a user's copy of one of our tasks: the run key fingerprints the YAML lm-eval
runs (a later include folder's task overrides an earlier one's; our ``tasks/`` is added first when absent), and a
copy without the files it includes is refused before the first cell, with the CLI's rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from leaderboard_helpers import FIX

from leaderboards.keys import _HashMemo, find_task_yaml, task_fingerprint
from retrieval.errors import ConfigError
from tasks import TASK_DIR, add_include_path

OURS = TASK_DIR / "qa" / "nq_oracle_bm25.yaml"


def _copy(folder: Path, *, template: bool = True) -> Path:
    """``folder`` with an edited copy of our nq_oracle_bm25.yaml (and its _qa_template and utils.py unless not)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = OURS.read_text(encoding="utf-8").replace("task: nq_oracle_bm25", "task: nq_oracle_bm25\n# MYCOPY")
    (folder / "nq_oracle_bm25.yaml").write_text(text, encoding="utf-8")
    if template:
        shutil.copy(TASK_DIR / "qa" / "_qa_template", folder / "_qa_template")
        shutil.copy(TASK_DIR / "utils.py", folder / "utils.py")
    return folder


@pytest.mark.parametrize("order, mine", [("mine,ours", False), ("mine", True), ("ours,mine", True)])
def test_find_task_yaml_is_the_yaml_lm_eval_runs(tmp_path, order, mine):
    mytasks = _copy(tmp_path / "mytasks")
    paths = [mytasks if p == "mine" else TASK_DIR for p in order.split(",")]
    found = find_task_yaml("nq_oracle_bm25", paths)
    assert found == (mytasks / "nq_oracle_bm25.yaml" if mine else OURS)

    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=add_include_path([str(p) for p in paths]), include_defaults=False)
    assert Path(tm.task_index["nq_oracle_bm25"].yaml_path).resolve() == found.resolve()


def test_run_key_fingerprints_our_task_when_our_folder_comes_last(tmp_path):
    """README's old order [mytasks, tasks]: lm-eval runs ours, so the key must be ours (it was the copy's)."""
    mytasks = _copy(tmp_path / "mytasks")
    memo = _HashMemo()
    ours = task_fingerprint("nq_oracle_bm25", [TASK_DIR], memo)
    assert task_fingerprint("nq_oracle_bm25", [mytasks, TASK_DIR], memo) == ours
    assert task_fingerprint("nq_oracle_bm25", [mytasks], memo) != ours


def _spec(tmp_path: Path, include: list[Path]) -> Path:
    spec = {"name": "order", "include_path": [str(p) for p in include], "reference": "standard",
            "shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 2}, "limit": 1},
            "tasks": ["nq_oracle_bm25"], "seeds": [1],
            "methods": [{"name": "standard", "model": "tests.leaderboard_fixtures.toy_lm:ToyLM",
                         "model_args": {"mode": "first"}}]}
    path = tmp_path / "order.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_run_refuses_a_copy_without_its_template_before_the_first_cell(tmp_path):
    """The copy is skipped by lm-eval's index, which ran our task with exit 0; now one line, exit 2, no cell folder."""
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    mineb = _copy(tmp_path / "my tasks", template=False)
    path = _spec(tmp_path, [mineb])
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as err:
        run_spec(load_spec(path), runs, progress=False)
    msg = str(err.value)
    assert msg.startswith(f"leaderboard spec {path}: include_path {mineb}: {mineb / 'nq_oracle_bm25.yaml'} needs "
                          f"{mineb / '_qa_template'} for its 'include: _qa_template'")
    assert "\n" not in msg
    assert not [p for p in runs.iterdir() if not p.name.startswith(".")] if runs.exists() else True

    import subprocess

    from leaderboard_helpers import runner_cmd, subprocess_env

    done = subprocess.run(runner_cmd(path, runs), env=subprocess_env(tmp_path / "cache"), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"tokrag leaderboard: error: {msg}"]
    assert not [p for p in runs.iterdir() if not p.name.startswith(".")] if runs.exists() else True
