"""A user's ``--include_path`` copy of one of our tasks is the one lm-eval runs (tasks.add_include_path puts our
task folder first; lm-eval lets a later include path's task override an earlier one of the same name)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tasks import TASK_DIR, add_include_path


def _copy_task(dest: Path) -> Path:
    for name in ("nq_oracle_bm25.yaml", "_qa_template", "utils.py"):
        shutil.copy(TASK_DIR / "qa" / name, dest / name)
    yaml = dest / "nq_oracle_bm25.yaml"
    yaml.write_text(yaml.read_text(encoding="utf-8") + "description: 'EDITED BY THE USER\\n'\n", encoding="utf-8")
    return yaml


def test_ours_go_first_and_once(tmp_path) -> None:
    assert add_include_path(None) == [str(TASK_DIR)]
    assert add_include_path(str(tmp_path)) == [str(TASK_DIR), str(tmp_path)]
    assert add_include_path([str(tmp_path), str(TASK_DIR)]) == [str(tmp_path), str(TASK_DIR)]  # given: kept as is


def test_users_edited_copy_of_our_task_wins(tmp_path) -> None:
    from lm_eval.tasks import TaskManager

    yaml = _copy_task(tmp_path)
    manager = TaskManager(include_path=add_include_path(str(tmp_path)), include_defaults=False)
    entry = manager.task_index["nq_oracle_bm25"]
    assert Path(entry.yaml_path).resolve() == yaml.resolve()  # was tasks/qa/nq_oracle_bm25.yaml: the edit ignored
    assert "nq_oracle_gold" in manager.all_tasks and Path(manager.task_index["nq_oracle_gold"].yaml_path).parent == TASK_DIR / "qa"
