"""s61 r1 (review of p1's 0da30e1): an edited preset file differs from its finished run in ``model_arg_files`` alone.

0da30e1 keyed a ``preset=`` model argument by its content as ``model_args.preset = sha256:<hex>``, beside the same
SHA-256 in ``model_arg_files``. After an edit of the preset file (the spec unchanged), ``tokrag leaderboard run`` then
said ``model_arg_files differs: a file a model argument names changed; model_args differs (a setting of the spec)``:
the second cause is wrong, the spec did not change, and ``check``'s note named the SHA-256 twice. Now the key holds
fixed text in place of the path (``keys.FILE_CONTENT``) and the content once, so the words are those before s61:
``model_arg_files differs: a file a model argument names changed``. Spellings and copies still give one key."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard_helpers import TOY, write_spec
from leaderboards import keys
from leaderboards.runner import finished_runs_by_cell, other_inputs_note, other_inputs_summary, run_spec
from leaderboards.spec import load_spec


def _spec(root: Path, preset: str):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first", "preset": preset}}]
    return load_spec(write_spec(root / "s", tasks=["toy_qa"], limit=3, methods=methods))


@pytest.fixture
def edited(tmp_path, monkeypatch) -> tuple[Path, str]:
    """A finished ToyLM cell run with ``preset=./p.json``, then the preset file edited; ``(root, old SHA-256 prefix)``."""
    import hashlib

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p.json").write_text('{"params": {"layer": 3}}\n')
    old = hashlib.sha256((tmp_path / "p.json").read_bytes()).hexdigest()
    assert run_spec(_spec(tmp_path, "./p.json"), tmp_path / "runs", progress=False).ran == ["standard/toy_qa/seed1"]
    (tmp_path / "p.json").write_text('{"params": {"layer": 2}}\n')
    return tmp_path, old


def test_an_edited_preset_is_a_changed_file_not_a_changed_setting(edited):
    root, old = edited
    spec = _spec(root, "./p.json")
    todo = keys.cell_keys(spec, root / "runs")
    summary = other_inputs_summary(spec, root / "runs", todo)
    assert "(model_arg_files differs: a file a model argument names changed); run computes it anew" in summary
    assert "a setting of the spec" not in summary
    (cell, key, mat), = todo
    note = other_inputs_note(cell.cell_id, key, mat, finished_runs_by_cell(root / "runs"), spec=spec.name)
    assert f"its config differs in model_arg_files[preset] {old[:16]}... -> " in note
    assert "model_args[preset]" not in note and note.count(old[:16]) == 1


def test_the_key_holds_the_content_once(edited):
    import hashlib

    root, _old = edited
    sha = hashlib.sha256((root / "p.json").read_bytes()).hexdigest()
    (_cell, key, mat), = keys.cell_keys(_spec(root, "./p.json"), root / "runs")
    assert mat["model_args"]["preset"] == keys.FILE_CONTENT == "file: its SHA-256 in model_arg_files"
    assert mat["model_arg_files"] == {"preset": sha}
    assert keys.cell_keys(_spec(root, str(root / "p.json")), root / "runs")[0][1] == key  # spellings: one key
