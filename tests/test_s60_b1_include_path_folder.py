"""``--include_path`` that is not a folder, with a tokrag method, is refused before lm-eval indexes it (s60 b1,
breaker): lm-eval globs ``<path>/**/*.yaml``, so a relative folder given from another working directory (or a typo)
and a YAML file given instead of its folder added no task without a word: ``lm_eval --model rag-standard ...
--include_path inc2 --tasks my_ok`` said ``unknown task 'my_ok'; 'lm_eval ls tasks' lists them all``, and with a task
name the package also has, the package's task ran instead of the user's copy. Now
``tokrag_model._lmeval_hook.check_include_folders``' one line (from the hook's ``EvaluatorConfig._validate_arguments``
patch, so the ``--config`` file's ``include_path`` is checked too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--limit", "1"]


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)


def _refused(args: list[str]) -> str:
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*BASE, *args])
    return str(exc.value)


def test_missing_relative_folder(no_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    msg = _refused(["--include_path", "my tasks", "--tasks", "nq_oracle_bm25"])  # the package's task would have run
    assert msg == (f"--include_path my tasks: no such folder (a relative path, read from {Path.cwd()}), so lm-eval "
                   f"would add no task from it; give the folder that holds your task YAMLs"), msg


def test_missing_absolute_folder(no_model, tmp_path):
    msg = _refused(["--include_path", str(tmp_path / "nope"), "--tasks", "my_ok"])
    assert msg == (f"--include_path {tmp_path / 'nope'}: no such folder, so lm-eval would add no task from it; give "
                   f"the folder that holds your task YAMLs"), msg


def test_a_yaml_file_instead_of_its_folder(no_model, tmp_path):
    yaml = tmp_path / "ok.yaml"
    yaml.write_text(f"task: my_ok\ninclude: {TASK_DIR / 'qa' / 'nq_oracle_bm25.yaml'}\n", encoding="utf-8")
    msg = _refused(["--include_path", str(yaml), "--tasks", "my_ok"])
    assert msg == (f"--include_path {yaml} is a file; lm-eval indexes the *.yaml files under a folder and would add "
                   f"no task from it: give its folder (--include_path {tmp_path}), or pass the YAML itself to --tasks")


def test_config_file_include_path(no_model, tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(f"include_path: {tmp_path / 'gone'}\n", encoding="utf-8")
    msg = _refused(["--config", str(config), "--tasks", "nq_oracle_bm25"])
    assert msg.startswith(f"--include_path {tmp_path / 'gone'}: no such folder,"), msg


def test_a_folder_passes(tmp_path):
    from tokrag_model._lmeval_hook import check_include_folders

    (tmp_path / "f").mkdir()
    check_include_folders(str(tmp_path / "f"))
    check_include_folders([str(tmp_path / "f"), tmp_path])
    check_include_folders(None)
