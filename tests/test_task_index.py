"""One resolution of task names to YAML files (tasks.task_index, lm-eval 0.4.13's own per-folder index code) for the
run key (leaderboards.keys.find_task_yaml) and the include-path precheck (tasks.precheck): a YAML that lm-eval's index
skips (an include that is not there, invalid YAML) is not the task's, so the key fingerprints the YAML that runs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from leaderboards.keys import _HashMemo, find_task_yaml, task_fingerprint, tree_fingerprint
from retrieval.errors import ConfigError
from tasks import TASK_DIR, add_include_path

OURS = TASK_DIR / "qa" / "nq_oracle_bm25.yaml"
SOURCES = {".py", ".yaml", ".yml", ".jinja", ".j2", ""}


def _manager_path(task: str, folders: list[Path]) -> Path | None:
    """The YAML lm-eval's own TaskManager runs for ``task`` (our folder added as the runner adds it)."""
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=add_include_path([str(p) for p in folders]), include_defaults=False)
    entry = tm.task_index.get(task)
    return None if entry is None or entry.yaml_path is None else Path(entry.yaml_path)


def _task(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "task: my_t\ndataset_path: json\noutput_type: generate_until\nmetadata:\n  version: {v}\n  corpus: {corpus}\n"


@pytest.mark.parametrize("broken", ["include: _no_such_template\ntask: my_t\n", "task: my_t\nmetadata: [unclosed\n"])
def test_find_task_yaml_skips_a_first_sorted_yaml_that_lm_eval_skips(tmp_path, broken):
    """a/first.yaml names my_t but does not load: lm-eval runs b/second.yaml (the old text scan gave a/first.yaml)."""
    folder = tmp_path / "mine"
    first = _task(folder / "a" / "first.yaml", broken)
    second = _task(folder / "b" / "second.yaml", GOOD.format(v=2, corpus="nq-wiki-12k"))
    assert sorted(p.as_posix() for p in folder.rglob("*.yaml"))[0] == first.as_posix()

    assert find_task_yaml("my_t", [folder]) == second
    assert _manager_path("my_t", [folder]).resolve() == second.resolve()  # what lm-eval runs

    # the run key fingerprints b/ (the YAML that runs), not a/, and its metadata is second's
    memo = _HashMemo()
    assert task_fingerprint("my_t", [folder], memo) == tree_fingerprint(folder / "b", _HashMemo(), SOURCES)
    assert task_fingerprint("my_t", [folder], memo) != tree_fingerprint(folder / "a", _HashMemo(), SOURCES)
    from leaderboards.spec import task_yaml_chain

    assert [p for p, _ in task_yaml_chain("my_t", [folder])] == [second]


def test_a_later_folder_whose_copy_lm_eval_skips_does_not_override(tmp_path):
    """[ok, broken]: lm-eval's index has no my_t from broken/, so ok/'s YAML runs (the text scan gave broken/'s)."""
    ok = _task(tmp_path / "ok" / "my_t.yaml", GOOD.format(v=1, corpus="nq-wiki-12k"))
    _task(tmp_path / "broken" / "my_t.yaml", "include: _gone\ntask: my_t\n")
    assert find_task_yaml("my_t", [tmp_path / "ok", tmp_path / "broken"]) == ok
    assert _manager_path("my_t", [tmp_path / "ok", tmp_path / "broken"]).resolve() == ok.resolve()
    good = _task(tmp_path / "good" / "my_t.yaml", GOOD.format(v=3, corpus="nq-wiki-12k"))
    assert find_task_yaml("my_t", [tmp_path / "ok", tmp_path / "good"]) == good  # a later valid one overrides


def test_our_copy_in_a_later_folder_without_its_template_keeps_our_yaml(tmp_path):
    """A copy of nq_oracle_bm25.yaml without _qa_template: lm-eval skips it and runs ours, which the key names."""
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(OURS, mine / "nq_oracle_bm25.yaml")
    assert find_task_yaml("nq_oracle_bm25", [mine]) == OURS
    memo = _HashMemo()
    assert task_fingerprint("nq_oracle_bm25", [mine], memo) == task_fingerprint("nq_oracle_bm25", [TASK_DIR], memo)


def test_a_group_or_tag_name_is_no_task_yaml(tmp_path):
    folder = tmp_path / "g"
    _task(folder / "t.yaml", GOOD.format(v=1, corpus="nq-wiki-12k") + "tag: [my_tag]\n")
    _task(folder / "z_group.yaml", "group: my_group\ntask: [my_t]\n")
    assert find_task_yaml("my_t", [folder]) == folder / "t.yaml"
    assert find_task_yaml("my_tag", [folder]) is None
    assert find_task_yaml("my_group", [folder]) is None
    assert find_task_yaml("no_such_task", [folder]) is None


def test_every_task_of_ours_resolves_to_the_yaml_lm_eval_runs():
    """The committed leaderboards' tasks: each name in tasks/ gives lm-eval's own path, with include_path [] and
    [tasks/] (the same YAML the text scan gave: no YAML of ours is skipped or a duplicate)."""
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=[str(TASK_DIR)], include_defaults=False)
    names = sorted({m for p in TASK_DIR.rglob("*.yaml")
                    for m in re.findall(r"^task:[ \t]*['\"]?(\w+)['\"]?[ \t]*$", p.read_text(encoding="utf-8"), re.M)})
    assert len(names) > 30 and "nq_oracle_bm25" in names and "wiki_lm_bm25" in names
    for name in names:
        expected = Path(tm.task_index[name].yaml_path)
        assert find_task_yaml(name, []) == expected, name
        assert find_task_yaml(name, [TASK_DIR]) == expected, name
        assert re.search(rf"^task:[ \t]*['\"]?{name}['\"]?[ \t]*$", expected.read_text(encoding="utf-8"), re.M), name


def test_precheck_index_is_lm_eval_index(tmp_path):
    """tasks.precheck._index_folder gives lm-eval's TaskIndex entries (names, kinds, paths), tags in file order."""
    from lm_eval.tasks._index import TaskIndex

    from tasks.precheck import _index_folder

    folder = tmp_path / "f"
    _task(folder / "a.yaml", "include: _gone\ntask: my_skipped\ntag: [lost_tag]\n")
    _task(folder / "b.yaml", "task: zed\ntag: [my_tag, foo]\n")
    _task(folder / "c.yaml", "task: alpha\ntag: my_tag\n")
    _task(folder / "d.yaml", "task: zed\n")  # a duplicate: the first wins
    _task(folder / "e.yaml", "group: grp\ntask: [zed, alpha]\n")
    _task(folder / "f.yaml", "task: foo\n")  # named like a tag already there: lm-eval keeps the tag
    _task(folder / "g.yaml", "- not a mapping\n")  # load_yaml refuses it: skipped, named by its file
    index, skipped = _index_folder(folder)
    lm = TaskIndex.build([folder])
    assert {n: (e[0], e[1]) for n, e in index.items()} == {
        n: ("TASK" if e.kind.name == "PY_TASK" else e.kind.name, e.yaml_path) for n, e in lm.items()}
    assert index["my_tag"][2] == {"task": ["zed", "alpha"]} and index["foo"][0] == "TAG"
    assert index["zed"][1] == folder / "b.yaml"
    assert set(skipped) == {"my_skipped", "lost_tag", "g"} and skipped["my_skipped"][0] == folder / "a.yaml"


def _copy_without_template(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = OURS.read_text(encoding="utf-8").replace("task: nq_oracle_bm25", "task: nq_oracle_bm25\n# EDITED")
    return _task(folder / "nq_oracle_bm25.yaml", text)


def test_precheck_says_the_cli_words_by_default_and_the_spec_words_for_a_spec(tmp_path):
    from tasks.precheck import check_include_path_tasks

    mine = tmp_path / "mine"
    copy = _copy_without_template(mine)
    with pytest.raises(ConfigError) as cli:
        check_include_path_tasks(["nq_oracle_bm25"], [str(mine)])
    assert str(cli.value).startswith(f"--include_path {mine}: {copy} needs {mine / '_qa_template'} for its "
                                     "'include: _qa_template'")
    assert str(cli.value).endswith("or run our task by its name instead of the copy: --tasks nq_oracle_bm25 "
                                   "(without --include_path)")
    with pytest.raises(ConfigError) as spec:
        check_include_path_tasks(["nq_oracle_bm25"], [str(mine)], spec=True)
    msg = str(spec.value)
    assert msg.startswith(f"include_path {mine}: {copy} needs {mine / '_qa_template'} for its 'include: _qa_template'")
    assert msg.endswith(f"or run our task nq_oracle_bm25 instead of the copy: remove {mine} from include_path")
    assert "--" not in msg and "\n" not in msg


def test_precheck_spec_words_keep_the_folder_for_other_tasks_and_name_bad_yaml(tmp_path):
    from tasks.precheck import check_include_path_tasks

    proj = tmp_path / "proj"
    copy = _copy_without_template(proj)
    _task(proj / "my_ok.yaml", GOOD.format(v=1, corpus="nq-wiki-12k").replace("my_t", "my_nq_ok"))
    with pytest.raises(ConfigError) as spec:
        check_include_path_tasks(["nq_oracle_bm25", "my_nq_ok"], [str(proj)], spec=True)
    assert str(spec.value).endswith(f"or run our task nq_oracle_bm25 instead of the copy: move {copy} out of {proj} "
                                    f"(keep {proj} in include_path for my_nq_ok)")
    with pytest.raises(ConfigError) as cli:
        check_include_path_tasks(["nq_oracle_bm25", "my_nq_ok"], [str(proj)])
    assert str(cli.value).endswith(f"--tasks nq_oracle_bm25 after moving {copy} out of {proj} (keep --include_path "
                                   f"{proj} for my_nq_ok)")

    bad = tmp_path / "bad"
    broken = _task(bad / "my_x.yaml", "task: my_x\nmetadata: [unclosed\n")
    for flag, kw in (("--include_path", {}), ("include_path", {"spec": True})):
        with pytest.raises(ConfigError) as err:
            check_include_path_tasks(["my_x"], [str(bad)], **kw)
        assert str(err.value).startswith(f"{flag} {bad}: {broken} is not valid YAML (line 3, column 1: "), str(err.value)
