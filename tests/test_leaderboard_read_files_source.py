"""The data files a cell's run key hashes are the ones the loaders declare (:func:`tasks.utils.read_files`, one list):
``leaderboards.keys`` re-described them before, so a loader reading a new file left it out of the key silently.
Now the loaders refuse docs built from a data-folder file their ``*_read_files`` does not list. ``adopt_legacy_key``
caught every exception as "another cell's run there": a run folder that cannot be read silently meant recompute."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from leaderboard_helpers import write_spec

from leaderboards import keys
from leaderboards.spec import load_spec

DATA = Path(os.environ.get("TOKRAG_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
needs_data = pytest.mark.skipif(not (DATA / "nq_open_oracle").is_dir(), reason="needs the shared data folder")


@needs_data
def test_the_key_reads_the_loaders_own_list(monkeypatch):
    import tasks.utils

    monkeypatch.setenv("TOKRAG_DATA_DIR", str(DATA))
    base = keys.task_read_files("nq_oracle_bm25", [], keys._HashMemo())
    assert base and all(Path(p).is_relative_to(DATA) for p in base)
    extra = DATA / "README.md"
    real = tasks.utils.qa_read_files
    monkeypatch.setattr(tasks.utils, "qa_read_files", lambda metadata, task: [*real(metadata, task), extra])
    assert keys.task_read_files("nq_oracle_bm25", [], keys._HashMemo()) == [*base, extra]
    wiki = keys.task_read_files("wiki_lm_bm25", [], keys._HashMemo())
    assert wiki == tasks.utils.wiki_lm_read_files({}) == [DATA / "wiki_vital_summaries" / "summaries_en-us.json"]


@needs_data
@pytest.mark.parametrize("task,loader", [("nq_oracle_bm25", "qa"), ("wiki_lm_bm25", "wiki_lm")])
def test_a_loader_refuses_a_file_its_list_lacks(task, loader, monkeypatch, tmp_path):
    import tasks.utils

    monkeypatch.setenv("TOKRAG_DATA_DIR", str(DATA))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    meta = {k: v for k, v in keys._task_metadata(task, [], keys._HashMemo()).items() if k != "version"}
    monkeypatch.setattr(tasks.utils, f"{loader}_read_files", lambda *a, **k: [])
    load = tasks.utils.load_wiki_lm if loader == "wiki_lm" else tasks.utils.load_qa
    extra = {} if loader == "wiki_lm" else {"config_source": task}
    with pytest.raises(RuntimeError, match=rf"^tasks\.utils\.{loader} read {DATA}/\S+, which "
                                           rf"tasks\.utils\.{loader}_read_files does not list: add it there"):
        load(**meta, max_docs=2, **extra)


def test_an_unreadable_run_folder_is_not_silently_recomputed(tmp_path, monkeypatch):
    import leaderboards.runner

    spec = load_spec(write_spec(tmp_path, tasks=["nq_oracle_bm25"], include=Path("tasks").resolve()))
    memo = keys._HashMemo()
    cell = spec.cells()[0]
    mat = keys.cell_key_material(spec, cell, memo)
    key = keys.fingerprint(mat, length=20)

    def unreadable(d, cell_id=None):
        raise PermissionError(13, "Permission denied", str(d / "DONE"))

    monkeypatch.setattr(leaderboards.runner, "cell_is_done", unreadable)
    with pytest.raises(PermissionError):
        keys.adopt_legacy_key(spec, cell, key, mat, tmp_path / "runs", memo)

    def misplaced(d, cell_id=None):
        raise leaderboards.runner.MisplacedRunError(f"{d}: another cell's run")

    monkeypatch.setattr(leaderboards.runner, "cell_is_done", misplaced)
    assert keys.adopt_legacy_key(spec, cell, key, mat, tmp_path / "runs", memo) == (key, mat)


def test_the_seed_keyed_is_the_cells_lm_eval_metadata(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=["nq_oracle_bm25_noise20", "nq_oracle_bm25"],
                                include=Path("tasks").resolve()))
    memo = keys._HashMemo()
    got = {c.task.task: keys.cell_key_material(spec, c, memo).get("task_draw_seed") for c in spec.cells()}
    assert got == {"nq_oracle_bm25_noise20": spec.cells()[0].lm_eval_metadata()["seed"], "nq_oracle_bm25": None}
