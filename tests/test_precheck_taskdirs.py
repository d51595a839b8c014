"""A user's copy of our task YAMLs without the files they need beside them (``_qa_template`` for ``include:``,
``utils.py`` for ``!function utils.load_qa``) is refused before the model load in one line naming the YAML, the
missing file and what to copy where (``tasks.precheck.check_task_paths`` / ``check_include_path_tasks``, run by the
start-up hook around lm-eval's ``process_tasks``). Before: ``--tasks /folder`` (or a ``.yaml`` path / glob) ended in
lm-eval's ``FileNotFoundError`` traceback; ``--include_path /folder --tasks NAME`` said "unknown task" or silently ran
our task of that name (lm-eval's index skips an unreadable YAML). Under ``lm_eval`` such a pre-load argument error
exits 2, as under ``tokrag eval`` (it exited 1). In-process cases run ``tokrag eval``'s entry with
``lm_eval.simple_evaluate`` (which builds the model) replaced by a function that raises :class:`_Reached`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tasks.precheck import check_include_path_tasks, check_task_paths, missing_task_files
from tests.eval_helpers import stop_at_model_load

QA = Path(TASK_DIR) / "qa"
BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--limit", "1"]


class _Reached(Exception):
    """The run got past every pre-load check to lm-eval's ``simple_evaluate``."""


@pytest.fixture
def no_model(monkeypatch):
    def reached(*args, **kwargs):
        raise _Reached(kwargs.get("tasks"))

    stop_at_model_load(monkeypatch, reached)


def _copy(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(QA / name, folder / name)
    return folder


def _run(args: list[str]):
    from tokrag_model.eval_cli import main

    return main([*BASE, *args])


def _refused(args: list[str]) -> str:
    with pytest.raises(ConfigError) as exc:
        _run(args)
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


def test_copied_folder_without_template_is_named_before_the_load(no_model, tmp_path):
    folder = _copy(tmp_path / "mine", "nq_oracle_bm25.yaml")
    yaml_file = folder / "nq_oracle_bm25.yaml"
    for tasks in (str(folder), str(yaml_file), str(folder / "*.yaml")):
        msg = _refused(["--tasks", tasks])
        assert msg.startswith(f"--tasks {tasks}: {yaml_file} needs {folder / '_qa_template'} for its "
                              "'include: _qa_template'"), msg
        assert f"copy tasks/qa/_qa_template and tasks/qa/utils.py (in {Path(TASK_DIR).parent}) into {folder}" in msg
        assert msg.endswith("or run our task by its name instead of the copy: --tasks nq_oracle_bm25"), msg


def test_include_path_with_a_broken_copy_is_named(no_model, tmp_path):
    folder = _copy(tmp_path / "mine", "nq_oracle_bm25.yaml")
    msg = _refused(["--include_path", str(folder), "--tasks", "nq_oracle_bm25"])  # ran OUR task, copy unread
    assert msg.startswith(f"--include_path {folder}: {folder / 'nq_oracle_bm25.yaml'} needs "
                          f"{folder / '_qa_template'}"), msg
    assert msg.endswith("--tasks nq_oracle_bm25 (without --include_path)"), msg
    text = (folder / "nq_oracle_bm25.yaml").read_text(encoding="utf-8").replace("task: nq_oracle_bm25", "task: my_nq")
    (folder / "nq_oracle_bm25.yaml").write_text(text, encoding="utf-8")
    msg = _refused(["--include_path", str(folder), "--tasks", "my_nq"])  # was "unknown task 'my_nq'"
    assert "'include: _qa_template'" in msg and "run our task" not in msg, msg


def test_template_without_utils_names_utils(tmp_path):
    folder = _copy(tmp_path / "mine", "nq_oracle_bm25.yaml", "_qa_template")
    missing = missing_task_files(folder / "nq_oracle_bm25.yaml")
    assert [(m[0], m[1], m[2], m[3]) for m in missing] == [
        ("!function utils.load_qa", folder / "utils.py", QA / "utils.py", folder / "_qa_template")]
    with pytest.raises(ConfigError, match=r"for its '!function utils.load_qa' \(in _qa_template, which it includes\)"):
        check_task_paths(str(folder))


def test_valid_cases_reach_the_model_load(no_model, tmp_path):
    good = _copy(tmp_path / "good", "nq_oracle_bm25.yaml", "_qa_template", "utils.py")
    own = tmp_path / "own"
    own.mkdir()
    (own / "own_task.yaml").write_text("task: own_task\ndataset_path: x\noutput_type: generate_until\n"
                                       "doc_to_text: q\ndoc_to_target: a\n", encoding="utf-8")
    assert missing_task_files(good / "nq_oracle_bm25.yaml") == [] and missing_task_files(own / "own_task.yaml") == []
    for args in (["--tasks", "nq_oracle_bm25"], ["--tasks", str(good)], ["--tasks", str(good / "nq_oracle_bm25.yaml")],
                 ["--include_path", str(good), "--tasks", "nq_oracle_bm25"], ["--tasks", str(own)],
                 ["--include_path", str(own), "--tasks", "own_task"]):
        with pytest.raises(_Reached):
            _run(args)


def test_a_broken_copy_beside_a_good_one_is_not_refused(tmp_path):
    folder = _copy(tmp_path / "mine", "nq_oracle_bm25.yaml", "_qa_template", "utils.py")
    _copy(folder / "old", "nq_oracle_bm25.yaml")  # a stale copy in a subfolder: lm-eval skips it, uses the good one
    check_include_path_tasks(["nq_oracle_bm25"], str(folder))
    check_include_path_tasks("other_task", [str(folder / "old")])  # not asked for
    with pytest.raises(ConfigError, match="'include: _qa_template'"):
        check_include_path_tasks("nq_oracle_bm25", [str(folder / "old")])


def test_lm_eval_exits_2_with_one_line(tmp_path):
    """The one subprocess case: the real ``lm_eval`` console script (hook from the .pth file) exits 2, as argparse
    and ``tokrag eval`` do for a bad argument (it exited 1: Python's status for an uncaught exception)."""
    folder = _copy(tmp_path / "mine", "nq_oracle_bm25.yaml")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lm_eval"), *BASE, "--tasks", str(folder)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0].startswith(f"lm_eval: error: --tasks {folder}: "
                                                   f"{folder / 'nq_oracle_bm25.yaml'} needs"), proc.stderr[-2000:]


def test_harness_exits_2_for_a_pre_load_error_only_when_run_as_a_program(capsys, monkeypatch):
    """``HarnessCLI.execute`` (patched by the hook) called from a ``__main__`` module's top level (the ``lm_eval``
    script) turns a tokrag error marked as raised before the model load into one line and ``SystemExit(2)``; called
    from ``tokrag eval`` (any other module) the error propagates, and an unmarked error is left alone."""
    import argparse

    from lm_eval._cli.harness import HarnessCLI

    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setattr(sys, "argv", ["lm_eval"])

    def failing(marked):
        def func(args):
            exc = ConfigError("--tasks x: bad")
            if marked:
                exc._tokrag_before_load = True
            raise exc
        return argparse.Namespace(func=func)

    cli = object.__new__(HarnessCLI)
    code = compile("cli.execute(args)", "lm_eval_script", "exec")
    with pytest.raises(SystemExit) as stop:
        exec(code, {"__name__": "__main__", "cli": cli, "args": failing(True)})
    assert stop.value.code == 2
    err = capsys.readouterr().err  # the program is _program()'s: here pytest's
    assert ": error: --tasks x: bad\n" in err and err.count("\n") == 2, err
    with pytest.raises(ConfigError):
        exec(code, {"__name__": "__main__", "cli": cli, "args": failing(False)})
    with pytest.raises(ConfigError):
        exec(code, {"__name__": "tokrag_model.eval_cli", "cli": cli, "args": failing(True)})


def test_symlinked_yaml_and_template_are_read_at_their_target(tmp_path):
    """lm-eval's ``load_yaml`` resolves a YAML's path (``Path(path).expanduser().resolve()``) and reads its includes
    and ``!function`` modules next to the link's target: a link to our YAML, or a user's YAML whose ``_qa_template``
    is a link to ours (its ``utils.py`` beside the target), runs; the precheck refused both (exit 2)."""
    sel = tmp_path / "sel"
    sel.mkdir()
    (sel / "nq_oracle_bm25.yaml").symlink_to(QA / "nq_oracle_bm25.yaml")
    assert missing_task_files(sel / "nq_oracle_bm25.yaml") == []
    check_include_path_tasks(["nq_oracle_bm25"], str(sel))
    check_task_paths(str(sel))
    own = tmp_path / "tl"
    own.mkdir()
    (own / "_qa_template").symlink_to(QA / "_qa_template")
    (own / "my.yaml").write_text("include: _qa_template\ntask: my_nq\nmetadata: {version: 1, dataset: nq_oracle, "
                                 "retriever: bm25, corpus: nq-wiki-12k, hits: 5}\n", encoding="utf-8")
    assert missing_task_files(own / "my.yaml") == []
    check_include_path_tasks(["my_nq"], str(own))
    broken = _copy(tmp_path / "copies", "nq_oracle_bm25.yaml")  # a link to a copy whose folder lacks the template
    link = tmp_path / "links"
    link.mkdir()
    (link / "nq_oracle_bm25.yaml").symlink_to(broken / "nq_oracle_bm25.yaml")
    with pytest.raises(ConfigError, match=f"needs {broken / '_qa_template'} for its 'include: _qa_template', and there "
                                          rf"is no such file \(lm-eval reads it next to {broken / 'nq_oracle_bm25.yaml'}"):
        check_include_path_tasks(["nq_oracle_bm25"], str(link))


def test_a_yaml_with_a_syntax_error_beside_a_good_link_is_named_as_such(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "nq_oracle_bm25.yaml").symlink_to(QA / "nq_oracle_bm25.yaml")
    (folder / "bad.yaml").write_text("task: bad\n  x: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        check_task_paths(str(folder))
    assert str(exc.value) == (f"--tasks {folder}: {folder / 'bad.yaml'} is not valid YAML (line 2, column 4: mapping "
                              f"values are not allowed here); fix it, or move it out of {folder}")


def test_copy_advice_names_the_utils_beside_our_yaml_of_that_task(tmp_path):
    """A copied ``wikitext103_bm25_wiki.yaml`` needs ``tasks/wiki_lm/utils.py`` (``load_wikitext103``); the advice named
    ``tasks/qa/utils.py`` (the first ``utils.py`` in sorted order), and following it ended in lm-eval's traceback."""
    wiki = Path(TASK_DIR) / "wiki_lm"
    folder = tmp_path / "wt"
    folder.mkdir()
    shutil.copy(wiki / "wikitext103_bm25_wiki.yaml", folder / "wikitext103_bm25_wiki.yaml")
    assert missing_task_files(folder / "wikitext103_bm25_wiki.yaml") == [
        ("!function utils.load_wikitext103", folder / "utils.py", wiki / "utils.py", folder / "wikitext103_bm25_wiki.yaml")]
    with pytest.raises(ConfigError, match=f"; copy tasks/wiki_lm/utils.py \\(in {Path(TASK_DIR).parent}\\) into {folder}, "
                                          "or run our task by its name"):
        check_task_paths(str(folder))
    text = (wiki / "wikitext103_bm25_wiki.yaml").read_text(encoding="utf-8")
    renamed = tmp_path / "renamed"  # a renamed task in a file of another name: the module that has the function
    renamed.mkdir()
    (renamed / "my_wt.yaml").write_text(text.replace("task: wikitext103_bm25_wiki", "task: my_wt"), encoding="utf-8")
    assert missing_task_files(renamed / "my_wt.yaml")[0][2] == wiki / "utils.py"
    folder = _copy(tmp_path / "mine", "nq_oracle_bm25.yaml", "_qa_template")  # the template's own folder's utils.py
    assert missing_task_files(folder / "nq_oracle_bm25.yaml")[0][2] == QA / "utils.py"


def _renamed(folder: Path, name: str, extra: str = "") -> Path:
    """A copy of our ``nq_oracle_bm25.yaml`` as task ``name`` (``extra`` lines after its ``task:``), no template."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (QA / "nq_oracle_bm25.yaml").read_text(encoding="utf-8")
    (folder / f"{name}.yaml").write_text(text.replace("task: nq_oracle_bm25", f"task: {name}{extra}"), encoding="utf-8")
    return folder / f"{name}.yaml"


def test_a_broken_member_of_a_requested_group_or_tag_is_named(tmp_path):
    """``--include_path /folder --tasks my_group`` (``task: [my_nq2]``) or ``--tasks my_tag`` whose member is a copy
    without its template got past the check: a traceback after the model load, or "unknown task 'my_tag'"."""
    grp = tmp_path / "grp"
    member = _renamed(grp, "my_nq2")
    (grp / "my_group.yaml").write_text("group: my_group\ntask:\n  - my_nq2\naggregate_metric_list:\n"
                                       "  - {metric: em, aggregation: mean}\nmetadata: {version: 1}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        check_include_path_tasks(["my_group"], str(grp))
    assert str(exc.value).startswith(f"--include_path {grp}: {member} (a task of group my_group) needs "
                                     f"{grp / '_qa_template'} for its 'include: _qa_template'"), exc.value
    tag = tmp_path / "tag"
    member = _renamed(tag, "my_nq3", "\ntag: [my_tag]")
    with pytest.raises(ConfigError) as exc:
        check_include_path_tasks("my_tag", [str(tag)])
    assert str(exc.value).startswith(f"--include_path {tag}: {member} (a task of tag my_tag) needs "
                                     f"{tag / '_qa_template'}"), exc.value
    for folder in (grp, tag):
        for name in ("_qa_template", "utils.py"):
            shutil.copy(QA / name, folder / name)
    check_include_path_tasks(["my_group"], str(grp))
    check_include_path_tasks(["my_tag"], str(tag))


def test_a_broken_member_of_a_group_entry_or_inline_group_is_named(tmp_path):
    """A group's ``task:`` entry ``{group: inner}`` (lm-eval builds the registered group ``inner``) or an inline group
    ``{group: sub, task: [...]}`` hid its members from the check, which followed ``{task: NAME}`` entries only: a member
    copied without its template ended in a traceback after the model load. The check now expands groups and tags as
    the other prechecks do (``_expand_selected``)."""
    folder = tmp_path / "grp"
    member = _renamed(folder, "my_nq4")
    agg = "aggregate_metric_list:\n  - {metric: em, aggregation: mean}\nmetadata: {version: 1}\n"
    (folder / "inner.yaml").write_text("group: inner\ntask:\n  - my_nq4\n" + agg, encoding="utf-8")
    (folder / "outer.yaml").write_text("group: outer\ntask:\n  - group: inner\n" + agg, encoding="utf-8")
    (folder / "inline.yaml").write_text("group: inline\ntask:\n  - group: sub\n    task: [my_nq4]\n" + agg,
                                        encoding="utf-8")
    for name, kind in (("outer", "group outer"), ("inline", "group inline")):
        with pytest.raises(ConfigError) as exc:
            check_include_path_tasks([name], str(folder))
        assert str(exc.value).startswith(f"--include_path {folder}: {member} (a task of {kind}) needs "
                                         f"{folder / '_qa_template'} for its 'include: _qa_template'"), exc.value
    for name in ("_qa_template", "utils.py"):
        shutil.copy(QA / name, folder / name)
    check_include_path_tasks(["outer", "inline"], str(folder))


def test_include_path_refuses_only_the_yaml_lm_eval_would_run(tmp_path, caplog):
    """An unedited backup (``old/nq_oracle_bm25.yaml`` without its template) is skipped by lm-eval's index, which runs
    our task (the same YAML): ``--tasks nq_oracle_bm25,my_nq_ok`` was refused, and the advice ("without
    --include_path") lost the user's ``my_nq_ok``. Of two YAMLs of a name in one folder lm-eval runs the first it can
    index (sorted paths): one whose ``utils.py`` is missing is indexed (``!function`` is not imported then) and run."""
    proj = _copy(tmp_path / "proj", "_qa_template", "utils.py")
    _renamed(proj, "my_nq_ok")
    _copy(proj / "old", "nq_oracle_bm25.yaml")
    with caplog.at_level("WARNING", logger="tasks.precheck"):
        check_include_path_tasks(["nq_oracle_bm25", "my_nq_ok"], str(proj))
    assert f"{proj / 'old' / 'nq_oracle_bm25.yaml'} misses {proj / 'old' / '_qa_template'}, so lm-eval skips it and " \
           "runs our nq_oracle_bm25" in caplog.text
    edited = _renamed(proj / "old", "nq_oracle_bm25", "\ndoc_to_text: 'MYCOPY {{question}}'")  # edits: refused
    with pytest.raises(ConfigError) as exc:
        check_include_path_tasks(["nq_oracle_bm25", "my_nq_ok"], str(proj))
    assert str(exc.value).startswith(f"--include_path {proj}: {edited} needs {proj / 'old' / '_qa_template'}"), exc.value
    assert str(exc.value).endswith(f"or run our task by its name instead of the copy: --tasks nq_oracle_bm25 after "
                                   f"moving {edited} out of {proj} (keep --include_path {proj} for my_nq_ok)"), exc.value
    two = _copy(tmp_path / "two", "_qa_template", "utils.py")
    _renamed(two / "b", "my_nq")  # the good one, sorted second
    first = _renamed(two / "a", "my_nq")
    shutil.copy(QA / "_qa_template", two / "a" / "_qa_template")  # its utils.py is missing: indexed, then run
    with pytest.raises(ConfigError, match=f"{first} needs {two / 'a' / 'utils.py'} for its '!function utils.load_qa'"):
        check_include_path_tasks(["my_nq"], str(two))


def test_a_tasks_path_that_does_not_exist_is_no_such_file(no_model, tmp_path, monkeypatch):
    """``--tasks ../t/brokn/my_copy.yaml`` (a typo in the folder) said "unknown task '/abs/.../my_copy.yaml'"."""
    from tasks.precheck import check_task_files_exist

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    msg = _refused(["--tasks", "t/brokn/my_copy.yaml"])
    assert msg == (f"--tasks t/brokn/my_copy.yaml: no such file ({tmp_path / 't' / 'brokn' / 'my_copy.yaml'}); give "
                   "the path of a task YAML or of a folder of them, or a task name ('lm_eval ls tasks' lists them)"), msg
    with pytest.raises(ConfigError, match=r"^--tasks t/brokn: no such file \("):
        check_task_files_exist("nq_oracle_bm25,t/brokn")
    with pytest.raises(ConfigError, match=r"^--tasks my\.yml: no such file \("):
        check_task_files_exist(["my.yml"])
    with pytest.raises(ConfigError, match=r"^--tasks t/\*\.yaml: no file matches \("):
        check_task_files_exist("t/*.yaml")
    check_task_files_exist(["nq_oracle_bm25", "t", str(QA / "nq_oracle_bm25.yaml"), str(QA / "*.yaml")])


def test_a_utils_py_without_the_function_is_named(tmp_path):
    """Following the old advice (``tasks/qa/utils.py`` beside a copied ``wikitext103_bm25_wiki.yaml``) ended in lm-eval's
    ``AttributeError: Module ... has no function 'load_wikitext103'`` traceback; a module that may define it
    dynamically (``import *``) is left to lm-eval."""
    folder = tmp_path / "wt"
    folder.mkdir()
    shutil.copy(Path(TASK_DIR) / "wiki_lm" / "wikitext103_bm25_wiki.yaml", folder / "wikitext103_bm25_wiki.yaml")
    shutil.copy(QA / "utils.py", folder / "utils.py")
    with pytest.raises(ConfigError) as exc:
        check_task_paths(str(folder))
    assert str(exc.value).startswith(
        f"--tasks {folder}: {folder / 'wikitext103_bm25_wiki.yaml'} needs load_wikitext103 from {folder / 'utils.py'} "
        "for its '!function utils.load_wikitext103', and that file has no load_wikitext103"), exc.value
    assert "; copy tasks/wiki_lm/utils.py" in str(exc.value), exc.value
    (folder / "utils.py").write_text("from tasks.wikitext import *  # noqa\n", encoding="utf-8")
    assert missing_task_files(folder / "wikitext103_bm25_wiki.yaml") == []
    shutil.copy(Path(TASK_DIR) / "wiki_lm" / "utils.py", folder / "utils.py")
    check_task_paths(str(folder))


def test_a_tag_named_like_a_task_does_not_break_the_check(tmp_path):
    """lm-eval's index keeps a task whose name another task uses as its tag (the tag is not registered then); the
    check's own index added the tag's task to the task's config and failed (AttributeError)."""
    folder = _copy(tmp_path / "mine", "_qa_template", "utils.py")
    _renamed(folder, "foo")
    _renamed(folder, "zed", "\ntag: [foo]")  # indexed after foo.yaml
    check_include_path_tasks(["foo", "zed"], str(folder))
