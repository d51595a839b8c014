"""s59 r2 (review of a1's c1742b5/e74f9d1): a log file beside a task YAML that runs no code of its own is no input.

a1 keyed every data file (``.txt``, ``.json``, ...) directly in the folder of each YAML of a task's chain, for a user
task whose own loader (``custom_dataset: !function utils.load``) reads a file beside its YAML. The documented
bring-your-own task is a YAML of a user's folder that ``include:``s a task of another folder (tokrag's
``tasks/qa/rag_qa_*.yaml``), whose ``!function`` code lives there; with the spec, that YAML and a log in one folder,
``cd lb && tokrag leaderboard run spec.yaml > out.txt 2>&1`` keyed ``out.txt``, which the run itself writes: every
cell was "left unfinished: its inputs changed while it ran" (measured with the real CLI and ToyLM), every run. Now
only the folder of a YAML that names ``!function`` code is read (that code may read the files beside it).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards import keys
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec


def _byo_folder(tmp_path: Path) -> Path:
    """``lb/byo_qa.yaml``: the fixture toy_qa task (whose ``!function`` loader lives in its own folder) under another
    name, as a bring-your-own task includes tokrag's template."""
    lb = tmp_path / "lb"
    lb.mkdir()
    (lb / "byo_qa.yaml").write_text(f"include: {FIX / 'tasks' / 'toy_qa' / 'toy_qa.yaml'}\ntask: byo_qa\n",
                                    encoding="utf-8")
    return lb


def test_a_log_beside_a_yaml_without_code_is_not_keyed(tmp_path):
    lb = _byo_folder(tmp_path)
    (lb / "out.txt").write_text("leaderboard toy: 1 cell to run\n", encoding="utf-8")
    (lb / "estimate.json").write_text("{}", encoding="utf-8")
    assert keys.task_folder_data_files(keys._HashMemo().task_chain("byo_qa", [lb])) == []
    assert keys.task_data_files("byo_qa", [lb], keys._HashMemo()) == {}  # was {.../lb/estimate.json: ..., .../lb/out.txt: ...}


def test_a_yaml_with_its_own_loader_still_keys_the_files_beside_it(tmp_path):
    """a1's case: the task's own ``!function`` loader sits beside its YAML and may read any file there."""
    own = tmp_path / "own"
    own.mkdir()
    shutil.copy(FIX / "tasks" / "toy_qa" / "utils.py", own / "utils.py")
    shutil.copy(FIX / "tasks" / "toy_qa" / "toy_qa.yaml", own / "toy_qa.yaml")
    (own / "questions.jsonl").write_bytes(b'{"q": 1}\n')
    got = keys.task_data_files("toy_qa", [own], keys._HashMemo())
    assert got == {str((own / "questions.jsonl").resolve()): hashlib.sha256(b'{"q": 1}\n').hexdigest()}


def test_a_run_writing_its_log_beside_the_yaml_finishes_its_cells(tmp_path, monkeypatch):
    """The run appends to ``lb/out.txt`` while each cell computes (as ``> out.txt`` does); the cells are done and
    keep their keys (before: both left unfinished, their inputs changed while they ran)."""
    import tests.leaderboard_fixtures.toy_lm as toy_lm

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    lb = _byo_folder(tmp_path)
    log = lb / "out.txt"
    log.write_text("", encoding="utf-8")
    answer = toy_lm.ToyLM.generate_until

    def logging_answer(self, requests, disable_tqdm: bool = False):
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"answering {len(requests)} requests\n")
        return answer(self, requests, disable_tqdm)

    monkeypatch.setattr(toy_lm.ToyLM, "generate_until", logging_answer)
    monkeypatch.chdir(lb)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]
    spec = load_spec(write_spec(lb, tasks=["byo_qa"], include=lb, limit=4, methods=methods))
    before = {c.method.name: k for c, k, _ in keys.cell_keys(spec)}
    run_spec(spec, lb / "runs", progress=False)
    assert log.read_text(encoding="utf-8").count("answering") == 2  # the log did grow during both cells
    assert sorted(p.parent.name for p in (lb / "runs").glob("*/DONE")) == sorted(before.values())
    em = {name: json.loads(next((lb / "runs" / k).glob("results*.json")).read_text(encoding="utf-8"))["results"]["byo_qa"]["em,none"]
          for name, k in before.items()}
    assert em == {"standard": 0.75, "none": 0.0}  # ToyLM on the first 4 toy_qa questions
    assert {c.method.name: k for c, k, _ in keys.cell_keys(spec)} == before  # the next run finds them done
