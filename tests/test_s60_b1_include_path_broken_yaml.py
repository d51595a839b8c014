"""``--include_path FOLDER --tasks NAME`` where NAME's YAML in FOLDER does not parse and its file is named otherwise
(s60 b1, breaker): ``my_copy.yaml`` holding ``task: mytask`` and an unclosed ``[`` further down was skipped by
lm-eval's index, and the run said only ``unknown task 'mytask'; 'lm_eval ls tasks' lists them all`` (with
``task: my_bad`` in ``bad.yaml``: ``(did you mean 'lambada'?)``), naming neither the file nor the error; the existing
check named it only when the file's name was the task's. The skipped file's top-level ``task:``/``group:`` lines
as written now name it (``tasks.precheck._names_as_written``): the same one line as for ``mytask.yaml``."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tasks.precheck import check_include_path_tasks
from tests.eval_helpers import stop_at_model_load

QA = TASK_DIR / "qa"
BROKEN = ("task: mytask\ninclude: {qa}/nq_oracle_bm25.yaml\nmetadata:\n  version: 1\n  hits: [3\n")


def _folder(tmp_path):
    folder = tmp_path / "my tasks"
    folder.mkdir()
    (folder / "my_copy.yaml").write_text(BROKEN.format(qa=QA), encoding="utf-8")
    return folder


def test_named_by_its_task_line(tmp_path):
    folder = _folder(tmp_path)
    with pytest.raises(ConfigError) as exc:
        check_include_path_tasks(["mytask"], str(folder))
    assert str(exc.value) == (f"--include_path {folder}: {folder / 'my_copy.yaml'} is not valid YAML (line 6, column "
                              f"1: expected ',' or ']', but got '<stream end>'), so lm-eval's index skips it and task "
                              f"mytask is not defined there; fix it")


def test_cli_line_before_the_load(tmp_path, monkeypatch):
    from tokrag_model.eval_cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    folder = _folder(tmp_path)
    (folder / "bad.yaml").write_text("task: my_bad\n  foo: [\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--include_path", str(folder), "--tasks", "my_bad", "--limit", "1"])
    assert str(exc.value) == (f"--include_path {folder}: {folder / 'bad.yaml'} is not valid YAML (line 2, column 6: "
                              f"mapping values are not allowed here), so lm-eval's index skips it and task my_bad is "
                              f"not defined there; fix it")


def test_names_as_written():
    """Top-level task:/group: scalars, plain or quoted, a trailing comment allowed; nested keys, lists and flow
    mappings are not names."""
    import tempfile
    from pathlib import Path

    from tasks.precheck import _names_as_written

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.yaml"
        path.write_text("task: a_1  # mine\ngroup: 'g 2'\n  task: nested\ntask: [x, y]\ntag: t\ngroup: \"q\"\n"
                        "task:\n", encoding="utf-8")
        assert _names_as_written(path) == ["a_1", "g 2", "q"]
        assert _names_as_written(Path(d) / "missing.yaml") == []


def test_a_good_task_beside_a_broken_yaml_passes(tmp_path):
    folder = _folder(tmp_path)
    (folder / "ok.yaml").write_text(f"task: my_ok\ninclude: {QA}/nq_oracle_bm25.yaml\n", encoding="utf-8")
    check_include_path_tasks(["my_ok"], str(folder))
