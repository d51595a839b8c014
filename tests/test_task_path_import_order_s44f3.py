"""The start-up hook (``tokrag_lmeval.pth``) makes every lm-eval ``TaskManager`` index tokrag's task folder, whatever
lm-eval module a program imports first. ``lm_eval.tasks.manager`` imports lm-eval's registry half-way, so the hook's
patch used to find the module without its ``TaskManager`` and was lost: ``import lm_eval.tasks`` then
``TaskManager()`` (lm-eval's own Python pattern) indexed none of tokrag's tasks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHECK = ("print('nq_open_bm25' in TaskManager().all_tasks, "
         "getattr(TaskManager.__init__, '_tokrag_include', False))\n")


@pytest.mark.parametrize("first", [
    "import lm_eval, lm_eval.tasks\nTaskManager = lm_eval.tasks.TaskManager\n",
    "import lm_eval\nfrom lm_eval.tasks import TaskManager\n",
    "from lm_eval import evaluator\nfrom lm_eval.tasks import TaskManager\n",
    "from lm_eval.tasks.manager import TaskManager\n",
    "import lm_eval.tasks\nimport lm_eval.api.registry\nfrom lm_eval.tasks import TaskManager\n",
    "import lm_eval.api.registry\nfrom lm_eval.tasks import TaskManager\n",
])
def test_task_manager_indexes_tokrag_tasks_whatever_is_imported_first(first: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TOKRAG_NO_TASK_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT)  # the venv's .pth hook is active in a fresh interpreter
    res = subprocess.run([sys.executable, "-c", first + CHECK], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "True True", (first, res.stdout, res.stderr[-2000:])
