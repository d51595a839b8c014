"""tasks.task_index.index_folder indexes a folder once per process while its files stay as they are (a review found
load_spec re-indexing tokrag's tasks/ for each of a spec's tasks, --estimate for each cell); an added, edited or
removed file (a YAML, or an extensionless file a YAML includes) is indexed again. Counted by lm-eval's load_yaml
calls, not timed."""

from __future__ import annotations

from pathlib import Path

import pytest

GOOD = "task: {name}\ndataset_path: json\noutput_type: generate_until\nmetadata:\n  version: 1\n"


@pytest.fixture()
def loads(monkeypatch) -> list:
    """The YAMLs lm-eval's load_yaml was asked to load (the includes it follows, extensionless here, left out)."""
    import lm_eval.tasks._yaml_loader as loader

    calls: list = []
    real = loader.load_yaml

    def counting(path, *a, **kw):
        if str(path).endswith(".yaml"):
            calls.append(path)
        return real(path, *a, **kw)

    monkeypatch.setattr(loader, "load_yaml", counting)
    return calls


def test_a_folder_is_indexed_once_until_a_file_changes(tmp_path, loads):
    from tasks.task_index import index_folder, task_yaml

    folder = tmp_path / "mine"
    folder.mkdir()
    a = folder / "a.yaml"
    a.write_text(GOOD.format(name="t_a"), encoding="utf-8")
    (folder / "b.yaml").write_text("include: _tmpl\ntask: t_b\n", encoding="utf-8")  # _tmpl missing: skipped

    index, skipped = index_folder(folder)
    assert sorted(index) == ["t_a"] and [p.name for p in skipped] == ["b.yaml"] and len(loads) == 2
    for _ in range(5):  # as load_spec asks for each task of a spec: no file is loaded again
        assert task_yaml("t_a", [folder]) == a
    assert sorted(index_folder(folder)[0]) == ["t_a"] and len(loads) == 2

    index["junk"] = None  # the caller's copy: the memo is not changed
    assert "junk" not in index_folder(folder)[0] and len(loads) == 2

    (folder / "_tmpl").write_text("dataset_path: json\noutput_type: generate_until\n", encoding="utf-8")
    assert sorted(index_folder(folder)[0]) == ["t_a", "t_b"] and len(loads) == 4  # the include now loads

    a.write_text(GOOD.format(name="t_c"), encoding="utf-8")  # an edit
    assert sorted(index_folder(folder)[0]) == ["t_b", "t_c"] and len(loads) == 6
    assert task_yaml("t_a", [folder]) is None and len(loads) == 6

    a.unlink()
    assert sorted(index_folder(folder)[0]) == ["t_b"] and len(loads) == 7


def test_load_spec_indexes_tokrag_tasks_folder_once(loads):
    """The v2 spec's seven tasks all resolve through one index of tasks/ (seven before)."""
    from leaderboards.spec import load_spec
    from tasks import TASK_DIR
    from tasks.task_index import index_folder

    index_folder(TASK_DIR)  # an earlier test may have indexed it: from here on, nothing is loaded again
    before = len(loads)
    spec = load_spec(TASK_DIR.parent / "leaderboards" / "specs" / "nq-wiki-12k-v2.yaml")
    assert len(spec.tasks) == 7 and len(loads) == before


def test_a_relative_and_an_absolute_folder_are_memoised_apart(monkeypatch):
    """The memo was keyed by the absolute path only, while its entries hold the folder's paths as given: after a
    relative ``tasks`` was indexed, the absolute folder's lookups returned ``tasks/qa/...`` (relative) paths."""
    from tasks import TASK_DIR
    from tasks.task_index import task_yaml

    root = Path(TASK_DIR)
    monkeypatch.chdir(root.parent)
    assert task_yaml("nq_oracle_bm25", [root.name]) == Path(root.name) / "qa" / "nq_oracle_bm25.yaml"
    assert task_yaml("nq_oracle_bm25", [root]) == root / "qa" / "nq_oracle_bm25.yaml"
