"""``--include_path A:B`` (two task folders joined with ``:``, the form ``lm-eval ls --help`` and ``lm-eval validate
--help`` show) with a tokrag method (s60 r2, review of b1's 99dbb26): ``lm_eval run`` does not split the path (its
TaskManager globs ``Path('A:B')``, which adds no task), so b1's check rightly refuses it, but its line said only
``no such folder ...; give the folder that holds your task YAMLs`` although both parts are folders. Now the line says
that ``lm_eval run`` takes one folder there and that a ``--config`` file's ``include_path`` takes the list, which
runs (the second test follows that advice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--limit", "1"]


class Reached(Exception):
    pass


@pytest.fixture
def at_load(monkeypatch):
    def reached(*args, **kwargs):
        raise Reached(kwargs.get("tasks"))

    stop_at_model_load(monkeypatch, reached)


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "tasks a", tmp_path / "tasks b"
    for folder, name in ((a, "r2_task_a"), (b, "r2_task_b")):
        folder.mkdir()
        (folder / f"{name}.yaml").write_text(f"task: {name}\ninclude: {TASK_DIR / 'qa' / 'nq_oracle_bm25.yaml'}\n",
                                             encoding="utf-8")
    return a, b


def test_joined_folders_named(at_load, tmp_path):
    from tokrag_model.eval_cli import main

    a, b = _folders(tmp_path)
    with pytest.raises(ConfigError) as exc:
        main([*BASE, "--include_path", f"{a}:{b}", "--tasks", "r2_task_b"])
    assert str(exc.value) == (f"--include_path {a}:{b}: no such folder, so lm-eval would add no task from it: lm-eval "
                              f"run takes one folder here and does not split it at ':'; give one folder, or list them "
                              f"in a --config file (include_path: [{a}, {b}])")


def test_the_config_list_runs(at_load, tmp_path):
    from tokrag_model.eval_cli import main

    a, b = _folders(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text(f"include_path:\n  - {a}\n  - {b}\n", encoding="utf-8")
    with pytest.raises(Reached) as got:
        main([*BASE, "--config", str(config), "--tasks", "r2_task_a,r2_task_b"])
    assert got.value.args == (["r2_task_a", "r2_task_b"],)


def test_a_missing_part_is_worded_as_before(at_load, tmp_path):
    from tokrag_model.eval_cli import main

    a, _ = _folders(tmp_path)
    with pytest.raises(ConfigError) as exc:
        main([*BASE, "--include_path", f"{a}:{tmp_path / 'gone'}", "--tasks", "r2_task_a"])
    assert str(exc.value) == (f"--include_path {a}:{tmp_path / 'gone'}: no such folder, so lm-eval would add no task "
                              f"from it; give the folder that holds your task YAMLs")
