"""A user's task YAML that includes one of our tasks and has a ``metadata:`` block of its own: lm-eval's
``load_yaml`` merges an include at the top level only, so that block replaces the included task's whole
``metadata:``. ``include: .../rag_qa_dense.yaml`` with ``dataset``/``questions``/``corpus`` in its own block ran
BM25 (the default) under the dense task's settings' name, without a word; it is now refused before the model
loads (``tokrag eval`` / ``lm_eval``, ``tokrag leaderboard run``), naming the dropped ``retriever: dense``."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR, add_include_path
from tasks.precheck import check_selected_tasks  # the new checks are imported where used: the old code had none
from tests.eval_helpers import byo_data, stop_at_model_load

DENSE = Path(TASK_DIR) / "qa" / "rag_qa_dense.yaml"


def _data(folder: Path) -> tuple[Path, Path]:
    return byo_data(folder)


def _task(folder: Path, name: str = "my_qa_dense", *, meta: dict | None = None, include: Path = DENSE) -> Path:
    """``folder/<name>.yaml`` including ``include``, with ``meta`` as its own metadata block (None: no block)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = f"include: {include}\ntask: {name}\n"
    if meta is not None:
        text += "metadata:\n" + "".join(f"  {k}: {v}\n" for k, v in meta.items())
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _user_meta(tmp_path: Path, **extra) -> dict:
    q, c = _data(tmp_path / "data")
    return {"version": 2.0, "dataset": "byo", "questions": str(q), "corpus": str(c), "hits": 3, **extra}


def _manager(folder: Path):
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=add_include_path([str(folder)]), include_defaults=False)


def _expected(path: Path) -> str:
    return (f"{path}: its metadata: block replaces the whole metadata: of {DENSE}, which it includes (lm-eval does "
            "not merge the two), so retriever: dense would be dropped and the task would run with retriever: bm25; "
            f"copy retriever: dense into the metadata: block of {path}, or set it there to the value you want")


def test_lm_eval_really_drops_the_included_metadata(tmp_path):
    """The premise: lm-eval's own loader gives the user's block alone (no retriever: the task runs bm25)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    from tasks.precheck import dropped_metadata

    path = _task(tmp_path / "mytasks", meta=_user_meta(tmp_path))
    meta = load_yaml(path, resolve_func=False)["metadata"]
    assert "retriever" not in meta and meta["hits"] == 3
    dropped, giver = dropped_metadata(path)
    assert [(k, v) for k, v, _ in dropped] == [("prompt", "instruct"), ("retriever", "dense")]
    assert {src for _, _, src in dropped} == {DENSE} and giver == path


def test_precheck_refuses_a_dense_include_whose_metadata_block_drops_the_retriever(tmp_path):
    mine = tmp_path / "mytasks"
    path = _task(mine, meta=_user_meta(tmp_path))
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(_manager(mine), ["my_qa_dense"], {})
    assert str(exc.value) == _expected(path)
    assert "\n" not in str(exc.value)


def test_retriever_copied_into_the_block_passes(tmp_path):
    """prompt: instruct is dropped too, but it is the default: not refused."""
    from tasks.precheck import check_include_metadata

    mine = tmp_path / "mytasks"
    path = _task(mine, meta=_user_meta(tmp_path, retriever="dense"))
    check_include_metadata(path)
    check_selected_tasks(_manager(mine), ["my_qa_dense"], {})


def test_retriever_given_with_metadata_passes(tmp_path):
    """``--metadata '{"retriever": "dense"}'`` sets the key explicitly: what runs is what was asked for."""
    mine = tmp_path / "mytasks"
    _task(mine, meta=_user_meta(tmp_path))
    check_selected_tasks(_manager(mine), ["my_qa_dense"], {"retriever": "dense"})
    with pytest.raises(ConfigError, match="retriever: dense would be dropped"):
        check_selected_tasks(_manager(mine), ["my_qa_dense"], {"hits": 3})


def test_an_include_without_a_metadata_block_of_its_own_passes(tmp_path):
    from tasks.precheck import dropped_metadata

    mine = tmp_path / "mytasks"
    path = _task(mine, meta=None)
    assert dropped_metadata(path) == ([], None)
    q, c = _data(tmp_path / "data")
    check_selected_tasks(_manager(mine), ["my_qa_dense"], {"questions": str(q), "corpus": str(c)})


def test_version_alone_is_not_refused(tmp_path):
    """The block gives every key but version: the user's own version (none) is recorded, nothing else changes."""
    from tasks.precheck import check_include_metadata, dropped_metadata

    meta = _user_meta(tmp_path, retriever="dense", prompt="instruct", hits=5)
    del meta["version"]
    path = _task(tmp_path / "mytasks", meta=meta)
    assert [k for k, _, _ in dropped_metadata(path)[0]] == ["version"]
    check_include_metadata(path)


def test_several_dropped_keys_are_all_named_with_what_would_run(tmp_path):
    """An include of an include (my_base -> rag_qa_dense): the block of the top YAML replaces both."""
    from tasks.precheck import check_include_metadata

    mine = tmp_path / "mytasks"
    base = _task(mine, "my_base", meta={"version": 1.0, "dataset": "byo", "retriever": "dense", "prompt": "base",
                                        "noise": 0.2})
    top = _task(mine, "my_top", meta={"corpus": "x.jsonl", "questions": "q.jsonl"}, include=base)
    with pytest.raises(ConfigError) as exc:
        check_include_metadata(top)
    msg = str(exc.value)
    assert msg.startswith(f"{top}: its metadata: block replaces the whole metadata: of {base}, which it includes")
    assert ("so prompt: base, dataset: byo, retriever: dense, noise: 0.2 would be dropped and the task would run "
            "with prompt: instruct, no dataset, retriever: bm25, noise: 0.0; copy prompt: base, dataset: byo, "
            f"retriever: dense, noise: 0.2 into the metadata: block of {top}, or set each there") in msg
    assert "hits" not in msg and "version" not in msg  # hits: 5 (ours) is the default; version is not refused


def test_our_own_tasks_drop_nothing():
    from tasks.precheck import dropped_metadata

    for yaml_file in sorted(Path(TASK_DIR).rglob("*.yaml")):
        assert dropped_metadata(yaml_file) == ([], None), yaml_file


def test_a_tasks_yaml_path_is_checked_by_check_task_path_metadata(tmp_path):
    """``--tasks my_qa_dense.yaml``: lm-eval passes the loaded config on without its path."""
    from tasks.precheck import check_task_path_metadata

    path = _task(tmp_path / "mytasks", meta=_user_meta(tmp_path))
    with pytest.raises(ConfigError) as exc:
        check_task_path_metadata(str(path), {})
    assert str(exc.value) == _expected(path)
    check_task_path_metadata(str(path), {"retriever": "dense"})
    check_task_path_metadata("nq_oracle_bm25", {})  # a name: left to check_selected_tasks


@pytest.fixture
def no_model(monkeypatch):
    """``tokrag eval`` up to lm-eval's ``simple_evaluate`` (the model load), lm-eval's own tasks not indexed."""
    class Reached(Exception):
        pass

    stop_at_model_load(monkeypatch, lambda *a, **k: (_ for _ in ()).throw(Reached()))
    return Reached


def test_tokrag_eval_refuses_before_the_model_load(no_model, tmp_path):
    from tokrag_model.eval_cli import main

    mine = tmp_path / "mytasks"
    path = _task(mine, meta=_user_meta(tmp_path))
    base = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
            "--limit", "1", "--include_path", str(mine), "--tasks", "my_qa_dense"]
    with pytest.raises(ConfigError) as exc:
        main(base)
    assert str(exc.value) == _expected(path)
    with pytest.raises(no_model):  # the fix the line gives reaches the model load
        main([*base, "--metadata", '{"retriever": "dense"}'])


def test_tokrag_eval_refuses_a_tasks_yaml_path_before_the_model_load(no_model, tmp_path):
    """``--tasks path/my_qa_dense.yaml`` (no --include_path): lm-eval hands the loaded config on without its path, so
    the name-based check never saw it and the run went on with BM25; the hook now checks the given paths."""
    from tokrag_model.eval_cli import main

    path = _task(tmp_path / "mytasks", meta=_user_meta(tmp_path))
    base = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
            "--limit", "1", "--tasks", str(path)]
    with pytest.raises(ConfigError) as exc:
        main(base)
    assert str(exc.value) == _expected(path)
    with pytest.raises(no_model):
        main([*base, "--metadata", '{"retriever": "dense"}'])


def test_leaderboard_run_refuses_before_the_first_cell(tmp_path, monkeypatch):
    import yaml

    import leaderboards.runner
    from leaderboard_helpers import FIX
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    mine = tmp_path / "mytasks"
    path = _task(mine, meta=_user_meta(tmp_path))
    spec = {"name": "dense", "include_path": [str(mine)], "reference": "standard",
            "shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 2}, "limit": 1},
            "tasks": ["my_qa_dense"], "seeds": [1],
            "methods": [{"name": "standard", "model": "tests.leaderboard_fixtures.toy_lm:ToyLM",
                         "model_args": {"mode": "first"}}]}
    spec_path = tmp_path / "dense.yaml"
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    loads = []
    monkeypatch.setattr(leaderboards.runner, "make_model", lambda cell: loads.append(cell) or 1 / 0)
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as exc:
        run_spec(load_spec(spec_path), runs, progress=False)
    lines = str(exc.value).splitlines()
    assert lines[0] == f"leaderboard spec {spec_path}: 1 problem(s) with the data of its tasks; nothing was run:"
    assert lines[1:] == [f"  task my_qa_dense: {_expected(path)}"]
    assert loads == [] and (not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")])


def _readme_example(readme: Path) -> str:
    """The YAML block of ``readme`` that includes rag_qa_dense.yaml."""
    import re

    blocks = re.findall(r"```yaml\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if "rag_qa_dense.yaml" in b]
    assert len(found) == 1, readme
    return found[0]


@pytest.mark.parametrize("readme", ["tasks/README.md", "leaderboards/README.md"])
def test_the_readme_example_keeps_the_dense_retriever(tmp_path, readme):
    """The READMEs' example runs the dense task as written; without its retriever line it is refused."""
    from lm_eval.tasks._yaml_loader import load_yaml

    from tasks.precheck import check_include_metadata

    text = _readme_example(Path(TASK_DIR).parent / readme).replace("/path/to/tokrag/tasks", str(TASK_DIR))
    path = tmp_path / "my_qa_dense.yaml"
    path.write_text(text, encoding="utf-8")
    check_include_metadata(path)
    assert load_yaml(path, resolve_func=False)["metadata"]["retriever"] == "dense"
    path.write_text("\n".join(line for line in text.splitlines() if "retriever:" not in line), encoding="utf-8")
    with pytest.raises(ConfigError, match="so retriever: dense would be dropped"):
        check_include_metadata(path)
