"""A cell's ``data_fingerprint`` holds the files of the data folder its task reads (:func:`leaderboards.keys.task_read_files`),
not the whole folder: editing a README, another corpus or a file dropped in the folder kept no finished run (every
built-in cell was recomputed), while editing a file the loaders read still gives a new key. Runs finished under the
old whole-folder key are found while the folder is unchanged (:func:`leaderboards.keys.legacy_key_material`)."""

from __future__ import annotations

import gzip
import os
import shutil
import sys
from pathlib import Path

import pytest
from leaderboard_helpers import write_spec

from leaderboards import keys
from leaderboards.spec import load_spec

DATA = Path(os.environ.get("TOKRAG_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
pytestmark = pytest.mark.skipif(not (DATA / "nq_open_oracle").is_dir(), reason="needs the shared data folder")

_OPENED: list[set[str]] = []  # the paths opened while a test records (an audit hook cannot be removed)


def _hook(event: str, args: tuple) -> None:
    if event == "open" and _OPENED and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED[-1].add(os.fsdecode(args[0]))


sys.addaudithook(_hook)


def _load(task: str) -> set[Path]:
    """The files under the data folder that loading ``task``'s docs (3 questions) opens."""
    from tasks.utils import load_qa, load_wiki_lm

    meta = {k: v for k, v in keys._task_metadata(task, [], keys._HashMemo()).items() if k != "version"}
    _OPENED.append(set())
    try:
        if task.startswith("wiki_lm"):
            load_wiki_lm(**meta, max_docs=3)
        else:
            load_qa(**meta, max_docs=3, config_source=task)
    finally:
        opened = _OPENED.pop()
    root = DATA.resolve()
    return {Path(p).resolve() for p in opened if Path(p).resolve().is_relative_to(root) and Path(p).is_file()}


@pytest.mark.parametrize("task", ["nq_oracle_bm25_counterfactual", "nq_open_bm25_noise20", "webq_bm25", "wiki_lm_bm25"])
def test_every_file_the_loaders_open_is_keyed(task, monkeypatch):
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(DATA))
    opened = _load(task)
    assert opened, f"{task} opened no file of {DATA}"
    keyed = {p.resolve() for p in keys.task_read_files(task, [], keys._HashMemo())}
    assert opened <= keyed, f"{task}: opened but not keyed: {sorted(map(str, opened - keyed))}"


def _copy_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(DATA, data, ignore=shutil.ignore_patterns("wiki_vital_summaries"))
    data.joinpath("wiki_vital_summaries").mkdir()
    os.symlink(DATA / "wiki_vital_summaries" / "summaries_en-us.json", data / "wiki_vital_summaries" / "summaries_en-us.json")
    return data


def _keys(spec) -> list[str]:
    return [k for _c, k, _m in keys.cell_keys(spec)]


def test_an_unrelated_edit_keeps_the_key_and_a_read_file_changes_it(tmp_path, monkeypatch):
    data = _copy_data(tmp_path)
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    spec = load_spec(write_spec(tmp_path, tasks=["nq_oracle_bm25", "webq_bm25"], include=Path("tasks").resolve()))
    before = _keys(spec)
    with (data / "README.md").open("a") as f:
        f.write("one more line\n")
    (data / "my_corpus").mkdir()
    (data / "my_corpus" / "passages.jsonl").write_text('{"id": "a", "contents": "x"}\n')
    (data / "questions.jsonl").write_text('{"question": "q", "answers": ["a"]}\n')
    (data / "dpr_wiki_sample1k" / "sample_data.jsonl").write_text("")  # a corpus these tasks do not read
    (data / "nq_open" / "SOURCE.md").write_text("edited\n")
    assert _keys(spec) == before

    with gzip.open(data / "nq_open_oracle" / "nq-open-oracle.jsonl.gz", "ab") as f:  # the questions file
        f.write(b'{"question": "q?", "answers": ["a"], "ctxs": [{"title": "t", "text": "x"}]}\n')
    after = _keys(spec)
    assert after[0] != before[0] and after[1] != before[1]  # nq_oracle: questions; webq: nq-wiki-12k's gold passages
    with (data / "webquestions" / "test.json").open("a") as f:
        f.write(" ")
    last = _keys(spec)
    assert last[0] == after[0] and last[1] != after[1]
    (data / "webquestions" / "train.json").write_text("[]")  # the dev pool's file now (tasks.data._webq_pool)
    assert _keys(spec)[1] != last[1]


def test_runs_under_the_whole_folder_key_are_found_while_the_folder_is_unchanged(tmp_path, monkeypatch):
    data = _copy_data(tmp_path)
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    spec = load_spec(write_spec(tmp_path, tasks=["nq_oracle_bm25"], include=Path("tasks").resolve()))
    memo = keys._HashMemo()
    cell = spec.cells()[0]
    mat = keys.cell_key_material(spec, cell, memo)
    legacy = keys.legacy_key_material(spec, cell, mat, memo)
    assert legacy == {**mat, "data_fingerprint": keys.data_fingerprint(memo, None)}  # the whole folder, as before
    old = keys.fingerprint(legacy, length=20)
    runs = tmp_path / "runs"
    import leaderboards.runner

    monkeypatch.setattr(leaderboards.runner, "cell_is_done", lambda d, cell_id=None: d.name == old)
    got = dict((c.cell_id, (k, m)) for c, k, m in keys.cell_keys(spec, runs))
    assert got[cell.cell_id] == (old, legacy)
    assert keys.cell_keys(spec)[0][1] == keys.fingerprint(mat, length=20)  # no runs folder: the new key
    (data / "README.md").write_text("edited\n")  # the folder changed: the old run may hold other data
    got = dict((c.cell_id, k) for c, k, _m in keys.cell_keys(spec, runs))
    assert got[cell.cell_id] == keys.fingerprint(mat, length=20)


def test_the_hub_and_unknown_loaders_keep_their_keys(tmp_path, monkeypatch):
    memo = keys._HashMemo()
    monkeypatch.delenv("TOKRAG_DATA_DIR", raising=False)
    assert keys.task_read_files("nq_oracle_bm25", [], memo) is None
    assert keys.data_fingerprint(memo, None, None) == "hub"
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(DATA))
    assert keys.task_read_files("wikitext103_bm25_wiki", [], memo) is None  # not known: the whole folder


def test_a_bring_your_own_task_keys_its_files_once(tmp_path, monkeypatch):
    """A task over rag_qa_bm25 with its own questions and corpus: task_data_files holds them (as before); the data
    folder adds none of its files (the task reads none), so editing the folder keeps its key."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "README.md").write_text("x\n")
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "q.jsonl").write_text('{"question": "Who?", "answers": ["Ada"]}\n')
    (mine / "c.jsonl").write_text('{"id": "p1", "title": "Ada", "text": "Ada wrote it."}\n')
    (mine / "my_qa.yaml").write_text(
        f"include: {Path('tasks/qa/rag_qa_bm25.yaml').resolve()}\ntask: my_qa\n"
        f"metadata: {{questions: {mine / 'q.jsonl'}, corpus: {mine / 'c.jsonl'}}}\n")
    memo = keys._HashMemo()
    assert keys.task_read_files("my_qa", [mine], memo) == []
    assert set(keys.task_data_files("my_qa", [mine], memo)) == {str(mine / "q.jsonl"), str(mine / "c.jsonl")}
    spec = load_spec(write_spec(tmp_path, tasks=["my_qa"], include=mine))
    before = _keys(spec)
    (data / "README.md").write_text("y\n")
    assert _keys(spec) == before
    (mine / "q.jsonl").write_text('{"question": "Who?", "answers": ["Ada Lovelace"]}\n')
    assert _keys(spec) != before


def test_run_report_and_estimate_serve_a_run_finished_under_the_whole_folder_key(tmp_path, monkeypatch):
    """End to end: a cell finished before the narrowing (its key holds the whole data folder) is skipped by ``run``,
    counted done by ``run --estimate`` and read by ``report``'s collector while the folder is unchanged (the runner
    passed no runs folder to :func:`leaderboards.keys.cell_keys` before, so all were computed again)."""
    from leaderboards.estimate import estimate
    from leaderboards.report import collect
    from leaderboards.runner import run_spec

    data = _copy_data(tmp_path)
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    spec = load_spec(write_spec(tmp_path, tasks=["nq_oracle_bm25"], include=Path("tasks").resolve(), limit=2,
                                methods=[{"name": "none", "model": "tests.leaderboard_fixtures.toy_lm:ToyLM",
                                          "model_args": {"mode": "none"}}],
                                extra={"reference": "none"}))
    runs = tmp_path / "runs"
    with monkeypatch.context() as m:  # the keys as they were: the whole data folder
        m.setattr(keys, "task_read_files", lambda *a, **k: None)
        legacy = keys.cell_keys(spec)[0][1]
        assert run_spec(spec, runs, progress=False).ran == ["none/nq_oracle_bm25/seed1"]
    assert (runs / legacy / "DONE").is_file()
    assert keys.cell_keys(spec)[0][1] != legacy  # the narrowed key names another folder
    assert run_spec(spec, runs, progress=False).as_dict()["skipped"] == ["none/nq_oracle_bm25/seed1"]
    assert [p.name for p in runs.iterdir() if (p / "DONE").is_file()] == [legacy]
    assert collect(spec, runs)["none/nq_oracle_bm25/seed1"][1] == legacy
    assert estimate(spec, runs)["cells_done"] == 1
