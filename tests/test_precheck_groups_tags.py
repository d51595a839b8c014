"""The pre-load checks of the QA tasks (``tasks.precheck``) reach every task lm-eval would build, found by a breaker:

* a copy of ``_qa_template`` and ``utils.py`` beside a user's task (as leaderboards/README.md says to make) kept
  every check off: the copied ``utils.py`` re-exports ``tasks.utils.load_qa``, which is now recognised as ours;
* a folder with the name of a registered task (``--tasks rag_qa_bm25`` where ``./rag_qa_bm25/`` exists) had its
  YAMLs checked although lm-eval ignores it ("using the registered task");
* a group entry ``{task: rag_qa_dense, metadata: {...}}`` replaces the task's whole metadata (lm-eval's
  ``_load_full_config``: ``{**cfg, **overrides}``): without ``retriever`` it ran BM25 under the dense task's name;
* a task selected through a ``tag:`` was not checked at all.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR, add_include_path
from tasks.precheck import check_selected_tasks
from tests.eval_helpers import byo_data

DENSE = Path(TASK_DIR) / "qa" / "rag_qa_dense.yaml"


def _data(folder: Path) -> tuple[Path, Path]:
    return byo_data(folder)


def _manager(*folders: Path):
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=add_include_path([str(f) for f in folders]), include_defaults=False)


def _block(meta: dict, indent: str = "  ") -> str:
    return "".join(f"{indent}{k}: {v}\n" for k, v in meta.items())


def test_a_copied_template_and_utils_keep_the_checks_on(tmp_path):
    """leaderboards/README.md: copy _qa_template and utils.py beside a copied task. The copy's metadata block that
    drops the dense retriever of the YAML it includes is refused as for our own folder."""
    q, c = _data(tmp_path / "data")
    mine = tmp_path / "copy"
    mine.mkdir()
    shutil.copy(Path(TASK_DIR) / "qa" / "_qa_template", mine / "_qa_template")
    shutil.copy(Path(TASK_DIR) / "qa" / "utils.py", mine / "utils.py")
    (mine / "copy_dense.yaml").write_text(DENSE.read_text(encoding="utf-8").replace("task: rag_qa_dense",
                                                                                     "task: copy_rag_qa_dense"))
    path = mine / "my_copy.yaml"
    path.write_text("include: copy_dense.yaml\ntask: my_copy_dense\nmetadata:\n"
                    + _block({"dataset": "byo", "questions": q, "corpus": c, "hits": 2}), encoding="utf-8")
    tm = _manager(mine)
    assert tm.task_index["my_copy_dense"].cfg["custom_dataset"] == f"{mine}/utils.load_qa"  # not tasks/qa: the copy
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(tm, ["my_copy_dense"], {})
    msg = str(exc.value)
    assert msg.startswith(f"{path}: its metadata: block replaces the whole metadata: of {mine / 'copy_dense.yaml'}"), msg
    assert "retriever: dense would be dropped and the task would run with retriever: bm25" in msg, msg
    check_selected_tasks(tm, ["my_copy_dense"], {"retriever": "dense"})  # given: runs as meant


def test_a_utils_of_the_users_own_is_not_ours(tmp_path):
    from tasks.precheck import _our_loader, _ours

    (tmp_path / "utils.py").write_text("def load_qa(**kw):\n    return {}\n", encoding="utf-8")
    assert _ours(f"{tmp_path}/utils.load_qa") is False
    (tmp_path / "utils.py").write_text("from tasks.utils import load_qa\n\ndef load_qa(**kw):\n    return {}\n")
    assert _ours(f"{tmp_path}/utils.load_qa") is False  # redefined after the import: the user's
    (tmp_path / "utils.py").write_text("from tasks.utils import load_wiki_lm as load_qa\n", encoding="utf-8")
    assert _ours(f"{tmp_path}/utils.load_qa") is False and _our_loader(f"{tmp_path}/utils.load_qa") == "tasks.utils.load_wiki_lm"
    (tmp_path / "utils.py").write_text("import os\nfrom tasks.utils import load_qa  # noqa\n", encoding="utf-8")
    assert _ours(f"{tmp_path}/utils.load_qa") is True


class _ModelWouldLoad(Exception):
    pass


@pytest.fixture
def no_model(monkeypatch):
    from tests.eval_helpers import stop_at_model_load

    def refuse(*args, **kwargs):
        raise _ModelWouldLoad(kwargs.get("tasks"))

    stop_at_model_load(monkeypatch, refuse)


def _cli(tmp_path: Path, *tasks_args: str) -> list[str]:
    q, c = _data(tmp_path / "data")
    return ["--model", "rag-none", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
            "--metadata", json.dumps({"questions": str(q), "corpus": str(c), "hits": 2}), *tasks_args]


def test_a_folder_named_like_a_registered_task_is_not_read(no_model, tmp_path, monkeypatch):
    """``--tasks rag_qa_bm25`` where ./rag_qa_bm25/ holds a draft YAML: lm-eval runs the registered task ("using the
    registered task"), so the draft (whose metadata block drops the dense retriever) is not refused."""
    from tokrag_model.eval_cli import main

    q, c = _data(tmp_path / "data")
    shadow = tmp_path / "rag_qa_bm25"
    shadow.mkdir()
    (shadow / "draft.yaml").write_text(f"include: {DENSE}\ntask: draft6\nmetadata:\n"
                                       + _block({"dataset": "byo", "questions": q, "corpus": c}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(_ModelWouldLoad) as exc:
        main([*_cli(tmp_path), "--tasks", "rag_qa_bm25"])
    assert exc.value.args[0] == ["rag_qa_bm25"]
    with pytest.raises(ConfigError) as exc:  # a folder of another name is still read
        shadow.rename(tmp_path / "drafts")
        main([*_cli(tmp_path), "--tasks", "drafts"])
    assert "retriever: dense would be dropped" in str(exc.value)


def _group(folder: Path, entries: str, name: str = "my_dense_group") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(f"group: {name}\ntask:\n{entries}aggregate_metric_list:\n  - metric: em\n    aggregation: mean\n"
                    "metadata:\n  version: 1.0\n", encoding="utf-8")
    return path


def _entry(task: str, meta: dict) -> str:
    return f"  - task: {task}\n    metadata:\n" + _block(meta, "      ")


def test_a_group_entry_whose_metadata_drops_the_retriever_is_refused(tmp_path):
    """lm-eval builds the member with {**task config, **entry}: the entry's metadata replaces rag_qa_dense's (no
    retriever: BM25 under the dense task's name)."""
    q, c = _data(tmp_path / "data")
    path = _group(tmp_path / "grp", _entry("rag_qa_dense", {"questions": q, "corpus": c, "hits": 2, "dataset": "byo"}))
    tm = _manager(tmp_path / "grp")
    item = tm.task_index["my_dense_group"].cfg["task"][0]  # the premise, from lm-eval's own factory
    built = tm._factory._load_full_config(tm.task_index["rag_qa_dense"], {"task": "rag_qa_dense", **item})
    assert "retriever" not in built["metadata"] and built["metadata"]["hits"] == 2
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(tm, ["my_dense_group"], {})
    assert str(exc.value) == (
        f"{path}: its entry 'task: rag_qa_dense' (group my_dense_group) has a metadata: block, which replaces the whole "
        f"metadata: of {DENSE} (lm-eval does not merge the two), so retriever: dense would be dropped and the task "
        "would run with retriever: bm25; copy retriever: dense into that entry's metadata: block, or set it there to "
        "the value you want")
    check_selected_tasks(tm, ["my_dense_group"], {"retriever": "dense"})  # given on the command line: runs as meant


def test_a_group_entry_that_keeps_the_retriever_passes_and_its_own_data_is_checked(tmp_path):
    q, c = _data(tmp_path / "data")
    _group(tmp_path / "grp", _entry("rag_qa_dense", {"questions": q, "corpus": c, "dataset": "byo",
                                                     "retriever": "dense"}))
    check_selected_tasks(_manager(tmp_path / "grp"), ["my_dense_group"], {})
    _group(tmp_path / "grp2", _entry("rag_qa_dense", {"questions": tmp_path / "nope.jsonl", "corpus": c,
                                                      "dataset": "byo", "retriever": "dense"}), "g2")
    with pytest.raises(Exception) as exc:  # the entry's questions file is read before the model load
        check_selected_tasks(_manager(tmp_path / "grp2"), ["g2"], {})
    assert "nope.jsonl" in str(exc.value)
    _group(tmp_path / "grp3", "  - rag_qa_dense\n  - rag_qa_bm25\n", "g3")  # our tasks, no overrides
    q_meta = {"questions": str(q), "corpus": str(c)}
    check_selected_tasks(_manager(tmp_path / "grp3"), ["g3"], q_meta)
    with pytest.raises(Exception) as exc:  # members of a group are checked as our tasks are
        check_selected_tasks(_manager(tmp_path / "grp3"), ["g3"], {**q_meta, "hits": "five"})
    assert "five" in str(exc.value)


def test_a_group_entry_naming_a_users_task_is_checked_against_that_yaml(tmp_path):
    """{task: my_qa_dense, metadata: ...} where my_qa_dense is a user's YAML that includes rag_qa_dense and keeps its
    retriever: the entry's block drops it."""
    q, c = _data(tmp_path / "data")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "my_qa_dense.yaml").write_text(f"include: {DENSE}\ntask: my_qa_dense\n", encoding="utf-8")
    path = _group(mine, _entry("my_qa_dense", {"questions": q, "corpus": c, "dataset": "byo"}))
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(_manager(mine), ["my_dense_group"], {})
    assert str(exc.value).startswith(f"{path}: its entry 'task: my_qa_dense' (group my_dense_group) has a metadata: "
                                     f"block, which replaces the whole metadata: of {DENSE}"), str(exc.value)
    assert "so retriever: dense would be dropped" in str(exc.value)


def test_the_cli_refuses_the_group_before_the_model_loads(no_model, tmp_path):
    from tokrag_model.eval_cli import main

    q, c = _data(tmp_path / "data")
    _group(tmp_path / "grp", _entry("rag_qa_dense", {"questions": q, "corpus": c, "hits": 2, "dataset": "byo"}))
    with pytest.raises(ConfigError) as exc:
        main([*_cli(tmp_path), "--include_path", str(tmp_path / "grp"), "--tasks", "my_dense_group"])
    assert "its entry 'task: rag_qa_dense' (group my_dense_group)" in str(exc.value)
    assert getattr(exc.value, "_tokrag_before_load", False) is True


def test_a_task_selected_through_its_tag_is_checked(tmp_path):
    """tag: my_dense_tag on a YAML that includes rag_qa_dense.yaml with a metadata block lacking the retriever:
    --tasks my_dense_tag ran BM25 unchecked."""
    q, c = _data(tmp_path / "data")
    mine = tmp_path / "tag"
    mine.mkdir()
    path = mine / "my_tagged.yaml"
    path.write_text(f"include: {DENSE}\ntask: my_tagged_dense\ntag: my_dense_tag\nmetadata:\n"
                    + _block({"dataset": "byo", "questions": q, "corpus": c, "hits": 2}), encoding="utf-8")
    (mine / "ok.yaml").write_text(f"include: {DENSE}\ntask: my_ok_dense\ntag: my_ok_tag\n", encoding="utf-8")
    tm = _manager(mine)
    with pytest.raises(ConfigError) as exc:
        check_selected_tasks(tm, ["my_dense_tag"], {})
    assert str(exc.value).startswith(f"{path}: its metadata: block replaces the whole metadata: of {DENSE}")
    assert "retriever: dense would be dropped" in str(exc.value)
    check_selected_tasks(tm, ["my_ok_tag"], {"questions": str(q), "corpus": str(c)})  # a tag of a good YAML passes
    with pytest.raises(Exception) as exc:  # and its data is checked
        check_selected_tasks(tm, ["my_ok_tag"], {"questions": str(tmp_path / "missing.jsonl"), "corpus": str(c)})
    assert "missing.jsonl" in str(exc.value)


def test_tasks_readme_says_what_the_checks_reach():
    import re

    text = re.sub(r"\s+", " ", (Path(TASK_DIR) / "README.md").read_text(encoding="utf-8"))
    assert "a group of your own whose entry gives one of these tasks a `metadata:` block" in text
    assert "tasks selected through a `tag:`" in text and "a copy of `_qa_template` with its `utils.py`" in text
    assert "`cache_requests: refresh` in an `lm_eval --config` file works as `--cache_requests refresh`" in text
