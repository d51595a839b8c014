"""leaderboards.rescore refused every cell of a task with a ``!function`` nested inside ``fewshot_config`` even when
nothing changed: lm-eval's ``TaskConfig.to_dict`` turns only top-level callables into their source, so a nested one
reaches ``results.json`` as ``"<function fs_text at 0x7f97...>"``, an address that differs per process, and
``generation_difference`` always found ``fewshot_config.doc_to_text`` changed (advice: re-run, which cannot help). Now
such a leaf is compared by the function's name, without its address; a renamed function is still a difference."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from leaderboard_helpers import FIX, TOY, pin_cell_keys, runner_cmd, subprocess_env, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.rescore import generation_difference

_FS_YAML = ("include: toy_qa.yaml\ntask: toy_qa_fs\n"
            "fewshot_config: {sampler: first_n, doc_to_text: !function utils.fs_text}\n")
_FS_TEXT = '\n\ndef fs_text(doc: dict) -> str:\n    return "Q: " + doc["question"]\n'
_ONE = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


def test_unchanged_task_with_nested_function_is_rescored(tmp_path):
    shutil.copytree(FIX / "tasks", tmp_path / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tasks" / "toy_qa" / "toy_qa_fs.yaml").write_text(_FS_YAML)
    with (tmp_path / "tasks" / "toy_qa" / "utils.py").open("a") as f:
        f.write(_FS_TEXT)
    spec = write_spec(tmp_path / "s", include=tmp_path / "tasks", tasks=["toy_qa_fs"], limit=2, methods=_ONE)
    # run in another process, as a real run is: the function's address there is not this process's
    subprocess.run(runner_cmd(spec, tmp_path / "runs"), env=subprocess_env(tmp_path / "cache"), check=True,
                   capture_output=True, timeout=300)
    recorded = (tmp_path / "runs").rglob("results.json")
    assert any("<function fs_text at 0x" in p.read_text() for p in recorded)  # the case: an address in the log
    assert lb_main(["rescore", str(spec), "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "leaderboard.json").exists()


def test_nested_function_compared_by_name():
    old = {"fewshot_config": {"sampler": "first_n", "doc_to_text": "<function fs_text at 0x7f97aa01c040>"}}
    same = {"fewshot_config": {"sampler": "first_n", "doc_to_text": "<function fs_text at 0x7f12bb99d1c0>"}}
    other = {"fewshot_config": {"sampler": "first_n", "doc_to_text": "<function fs_other at 0x7f12bb99d1c0>"}}
    assert generation_difference(old, same) is None
    assert generation_difference(old, other) == ('fewshot_config.doc_to_text: "<function fs_text>" in the run -> '
                                                 '"<function fs_other>" now')
