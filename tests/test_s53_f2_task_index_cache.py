"""tokrag's disk cache of lm-eval's own task index (tokrag_model/_task_index_cache.py): the cached index equals
lm-eval's build exactly, a changed folder (or an included file outside it) is indexed again, a bad cache falls back to
lm-eval's build, TOKRAG_NO_TASK_INDEX_CACHE=1 turns it off, and the patched TaskIndex.build merges include folders as
lm-eval does. The cache logic is pointed at a copy of a few of lm-eval's task folders (never the venv's own folder)."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import types
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

from lm_eval.tasks import _index  # noqa: E402

from tokrag_model import _task_index_cache as tic  # noqa: E402

LM_TASKS = Path(_index.__file__).parent
ORIGINAL = getattr(_index.TaskIndex.build, "__wrapped__", _index.TaskIndex.build)  # lm-eval's own build


def _strict(a, b, where=""):
    """Equal with the exact types (True is not 1, 1.0 is not 1), dict keys in the same order."""
    assert type(a) is type(b), (where, a, b)
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _strict(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _strict(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, (where, a, b)


def _same_index(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        x, y = a[k], b[k]
        assert type(x) is type(y) is _index.Entry
        assert (x.name, x.kind, x.tags, x.yaml_path) == (y.name, y.kind, y.tags, y.yaml_path), k
        assert type(x.yaml_path) is type(y.yaml_path)
        _strict(x.cfg, y.cfg, k)


class _Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, paths, **kw):
        self.calls += 1
        return ORIGINAL(paths, **kw)


@pytest.fixture
def folder(tmp_path):
    """A copy of lm-eval's arc (tags), hellaswag (!function), glue and xnli (groups, includes) task folders, plus a
    YAML lm-eval skips (no task key: a DEBUG 'Skip' line)."""
    root = tmp_path / "lm_tasks"
    for name in ("arc", "hellaswag", "glue", "xnli"):
        shutil.copytree(LM_TASKS / name, root / name)
    (root / "not_a_task.yaml").write_text("dataset_path: x\n", encoding="utf-8")
    return root


def _cache_files(cache: Path) -> list[Path]:
    return sorted((cache / tic.CACHE_SUBDIR).glob("*.json"))


def test_the_cached_index_is_lm_evals_own_and_a_warm_read_builds_nothing(folder, tmp_path, caplog):
    cache = tmp_path / "cache"
    ref = ORIGINAL([folder])
    assert len(ref) == 33 and ref["arc_easy"].cfg["metadata"] == {"version": 1.0}
    assert ref["ai2_arc"].tags == {"arc_easy", "arc_challenge"} and ref["xnli"].kind is _index.Kind.GROUP
    assert ref["hellaswag"].cfg["process_docs"] == str(folder.resolve() / "hellaswag" / "utils.process_docs")
    build = _Counting()
    with caplog.at_level(logging.DEBUG, logger="lm_eval.tasks._index"):
        cold = tic.cached_folder_index(folder, build, cache_dir=cache)
    cold_log = [(r.levelno, r.lineno, r.getMessage()) for r in caplog.records if r.name == "lm_eval.tasks._index"]
    assert build.calls == 1 and len(_cache_files(cache)) == 1
    assert any("Skip " in m and "not_a_task.yaml" in m for _, _, m in cold_log)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="lm_eval.tasks._index"):
        warm = tic.cached_folder_index(folder, build, cache_dir=cache)
    warm_log = [(r.levelno, r.lineno, r.getMessage()) for r in caplog.records if r.name == "lm_eval.tasks._index"]
    assert build.calls == 1  # read from the cache: no YAML loaded
    _same_index(ref, cold)
    _same_index(ref, warm)
    assert warm_log == cold_log  # lm-eval's log lines, with their levels and source lines


@pytest.mark.parametrize("change", ["edit", "add", "remove", "add_py"])
def test_a_changed_file_in_the_folder_builds_the_index_again(folder, tmp_path, change):
    cache = tmp_path / "cache"
    build = _Counting()
    tic.cached_folder_index(folder, build, cache_dir=cache)
    arc = folder / "arc" / "arc_easy.yaml"
    if change == "edit":  # same size, mtime put back: the ctime still shows it
        st = arc.stat()
        arc.write_text(arc.read_text(encoding="utf-8").replace("ARC-Easy", "ARC-Eas2"), encoding="utf-8")
        os.utime(arc, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "add":
        (folder / "arc" / "arc_new.yaml").write_text("include: arc_easy.yaml\ntask: arc_new\n", encoding="utf-8")
    elif change == "remove":
        (folder / "arc" / "arc_challenge_chat.yaml").unlink()
    else:
        (folder / "arc" / "utils.py").write_text("x = 1\n", encoding="utf-8")
    again = tic.cached_folder_index(folder, build, cache_dir=cache)
    assert build.calls == 2
    ref = ORIGINAL([folder])
    _same_index(ref, again)
    if change == "edit":
        assert again["arc_easy"].cfg["dataset_name"] == "ARC-Eas2"
    elif change == "add":
        assert again["arc_new"].cfg["dataset_name"] == "ARC-Easy" and "arc_new" in again["ai2_arc"].tags
    elif change == "remove":
        assert "arc_challenge_chat" not in again and "llama" not in again
    _same_index(ref, tic.cached_folder_index(folder, build, cache_dir=cache))
    assert build.calls == 2  # the new index was cached


def test_an_included_file_outside_the_folder_is_part_of_the_key(folder, tmp_path):
    outside = tmp_path / "elsewhere" / "_template.yaml"
    outside.parent.mkdir()
    outside.write_text("dataset_path: first/set\noutput_type: generate_until\n", encoding="utf-8")
    (folder / "uses_outside.yaml").write_text(f"include: {outside}\ntask: uses_outside\n", encoding="utf-8")
    cache, build = tmp_path / "cache", _Counting()
    assert tic.cached_folder_index(folder, build, cache_dir=cache)["uses_outside"].cfg["dataset_path"] == "first/set"
    tic.cached_folder_index(folder, build, cache_dir=cache)
    assert build.calls == 1
    outside.write_text("dataset_path: other/set\noutput_type: generate_until\n", encoding="utf-8")
    again = tic.cached_folder_index(folder, build, cache_dir=cache)
    assert build.calls == 2 and again["uses_outside"].cfg["dataset_path"] == "other/set"
    outside.unlink()  # now lm-eval skips the YAML (its include is missing)
    gone = tic.cached_folder_index(folder, build, cache_dir=cache)
    assert build.calls == 3 and "uses_outside" not in gone
    _same_index(ORIGINAL([folder]), gone)


@pytest.mark.parametrize("damage", ["truncated", "not_json", "wrong_shape", "other_key", "a_folder"])
def test_a_bad_cache_file_falls_back_to_lm_evals_build(folder, tmp_path, damage, caplog):
    cache, build = tmp_path / "cache", _Counting()
    tic.cached_folder_index(folder, build, cache_dir=cache)
    (path,) = _cache_files(cache)
    text = path.read_text(encoding="utf-8")
    if damage == "truncated":
        path.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "not_json":
        path.write_bytes(b"\x00\xff garbage")
    elif damage == "wrong_shape":
        path.write_text("[1, 2]", encoding="utf-8")
    elif damage == "other_key":
        data = json.loads(text)
        data["key"] = "0" * 64
        data["entries"] = data["entries"][:3]
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.unlink()
        path.mkdir()
    with caplog.at_level(logging.DEBUG, logger="tokrag_model"):
        got = tic.cached_folder_index(folder, build, cache_dir=cache)
    assert build.calls == 2
    _same_index(ORIGINAL([folder]), got)
    assert any("lm-eval task index cache" in r.getMessage() for r in caplog.records if r.name == "tokrag_model")
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "tokrag_model")
    if damage != "a_folder":  # rewritten whole: the next read builds nothing
        tic.cached_folder_index(folder, build, cache_dir=cache)
        assert build.calls == 2


def test_an_unwritable_cache_folder_and_an_unjsonable_config_give_lm_evals_build(folder, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    build = _Counting()
    got = tic.cached_folder_index(folder, build, cache_dir=blocker / "cache")  # its parent is a file
    _same_index(ORIGINAL([folder]), got)
    (folder / "dated.yaml").write_text("task: dated\ndataset_path: x\nreleased: 2020-01-02\n", encoding="utf-8")
    cache = tmp_path / "cache"
    got = tic.cached_folder_index(folder, build, cache_dir=cache)
    assert str(type(got["dated"].cfg["released"]).__name__) == "date"
    _same_index(ORIGINAL([folder]), got)
    assert _cache_files(cache) == []  # a date would come back as a string: not cached


def _fake_lm_eval_index(root: Path):
    """An ``lm_eval.tasks._index`` stand-in whose own task folder is ``root``, with lm-eval's own build."""
    cls = type("TaskIndex", (), {"build": staticmethod(ORIGINAL)})
    module = types.SimpleNamespace(TaskIndex=cls, __file__=str(root / "_index.py"))
    tic.patch_task_index(module)
    tic.patch_task_index(module)  # idempotent
    assert cls.build.__wrapped__ is ORIGINAL
    return cls


def test_the_patched_build_keeps_lm_evals_folder_order_overrides_and_warnings(folder, tmp_path, monkeypatch, caplog):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "arc_easy.yaml").write_text("task: arc_easy\ndataset_path: my/arc\n", encoding="utf-8")
    (mine / "own.yaml").write_text("task: own_task\ndataset_path: my/own\ntag: ai2_arc\n", encoding="utf-8")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(tic.DISABLE_ENV, raising=False)
    cls = _fake_lm_eval_index(folder)
    paths = [folder, mine]
    with caplog.at_level(logging.WARNING, logger="lm_eval.tasks._index"):
        ref = ORIGINAL(paths)
    ref_warnings = [r.getMessage() for r in caplog.records]
    assert ref_warnings == [f"Task 'arc_easy' from {mine / 'arc_easy.yaml'} overrides existing task from "
                            f"{folder / 'arc' / 'arc_easy.yaml'}",
                            "Task 'ai2_arc' from None overrides existing task from None"]
    for _ in ("cold", "warm"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="lm_eval.tasks._index"):
            got = cls.build(paths)
        assert [r.getMessage() for r in caplog.records] == ref_warnings
        _same_index(ref, got)
        assert got["arc_easy"].cfg["dataset_path"] == "my/arc" and got["ai2_arc"].tags == {"own_task"}
    assert len(_cache_files(tmp_path / "cache")) == 1  # only lm-eval's own folder is cached
    _same_index(ORIGINAL([mine]), cls.build([mine]))  # no default folder: lm-eval's build


def test_the_opt_out_leaves_lm_evals_build_and_writes_nothing(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(tic.DISABLE_ENV, "1")
    cls = _fake_lm_eval_index(folder)
    _same_index(ORIGINAL([folder]), cls.build([folder]))
    assert not (tmp_path / "cache" / tic.CACHE_SUBDIR).exists()
    monkeypatch.setenv(tic.DISABLE_ENV, "0")  # 0 or empty: the cache is on
    cls.build([folder])
    assert len(_cache_files(tmp_path / "cache")) == 1


def test_the_start_up_hook_patches_lm_evals_task_index():
    import lm_eval.tasks

    assert lm_eval.tasks.TaskManager is not None  # imported as the CLI imports it
    assert getattr(_index.TaskIndex.build, "_tokrag", False)
    assert _index.TaskIndex.build.__wrapped__.__module__ == "lm_eval.tasks._index"
