"""A README.md ``configs:`` card read as ``datasets`` reads it (381569d) could make a local copy (or a hub cache
snapshot) read files outside its folder: ``path: ../outside/test.jsonl``, an absolute path or ``data_dir: ../outside``
were read, while a leaderboard's run key fingerprints only the folder named as ``hub_id`` (editing the file that was
read kept the key: a stale cell reused; /work/scratch/s49/r1/repro_key_outside.py). Such a pattern is now refused in
one line; a symlink inside the folder (which the run key follows) is still read. And a card declaring several configs,
none of them the default, was read for a task without a config by the folder's layout (a flat ``test.jsonl`` that no
config declares), where ``datasets.load_dataset(folder)`` refuses ("Config name is missing"): refused in one line
(s49 r1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.sources import hub_rows
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)


def _jsonl(*questions: str) -> str:
    return "".join(f'{{"question": "{q}", "answers": ["a"]}}\n' for q in questions)


def _card(config: str) -> str:
    return f"---\nconfigs:\n- config_name: default\n{config}---\n"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _outside_line(card: Path, split: str, pattern: str, reached: Path, snapshot: bool = False) -> str:
    why = ("a snapshot is read from its own files only (that file is none of the data set's files at the snapshot's "
           "commit)" if snapshot else  # a leaderboard keys a hub data set by its id, not a folder (s49 m1)
           "a local copy is read from its own files only (a leaderboard's run key fingerprints the folder, not that "
           "file)")
    return (f"{card}: config 'default' declares split {split!r} as {pattern}, which reaches {reached}, outside "
            f"{card.parent}; {why}: move the file into the folder (a symlink there will do) and make the card's path "
            "relative to it")


@pytest.mark.parametrize("how", ["dotdot", "absolute", "data_dir"])
def test_a_local_cards_pattern_outside_the_folder_is_refused(offline, tmp_path, how):
    outside = _write(tmp_path / "outside", {"test.jsonl": _jsonl("outside row")})
    pattern, config = {
        "dotdot": ("../outside/test.jsonl", "  data_files:\n  - split: test\n    path: ../outside/test.jsonl\n"),
        "absolute": (f"{outside / 'test.jsonl'}", f"  data_files:\n  - split: test\n    path: {outside / 'test.jsonl'}\n"),
        "data_dir": ("**/test[-._ 0-9]* in its data_dir ../outside",  # the pattern datasets infers there
                     "  data_dir: ../outside\n")}[how]
    local = _write(tmp_path / "copy", {"README.md": _card(config), "test.jsonl": _jsonl("flat")})
    with pytest.raises(ConfigError) as exc:  # the old code read ['outside row']
        hub_rows(str(local), None, "test")
    assert str(exc.value) == _outside_line(local / "README.md", "test", pattern, outside / "test.jsonl")


def test_a_symlink_inside_the_local_folder_is_still_read(offline, tmp_path):
    """The run key follows symlinks in the folder (retrieval.io.tree_fingerprint): a linked file or folder is read."""
    outside = _write(tmp_path / "outside", {"test.jsonl": _jsonl("linked row")})
    local = _write(tmp_path / "copy", {"README.md": _card("  data_files:\n  - split: test\n    path: parts/*.jsonl\n")})
    os.symlink(outside, local / "parts")
    assert [r["question"] for r in hub_rows(str(local), None, "test")[0]] == ["linked row"]


def test_a_snapshots_pattern_into_another_revision_is_refused(offline):
    card = _card("  data_files:\n  - split: test\n    path: ../" + "d" * 40 + "/test.jsonl\n")
    snap = hub_snapshot(offline.parent / "hub", "me/away", {"README.md": card, "../" + "d" * 40 + "/test.jsonl": _jsonl("x")})
    with pytest.raises(ConfigError) as exc:
        hub_rows("me/away", None, "test")
    assert str(exc.value) == _outside_line(snap / "README.md", "test", "../" + "d" * 40 + "/test.jsonl",
                                           snap.parent / ("d" * 40) / "test.jsonl", snapshot=True)


@pytest.mark.parametrize("flat", [True, False], ids=["flat_file", "no_flat_file"])
def test_several_configs_none_default_and_no_task_config_is_refused_as_datasets_does(offline, tmp_path, flat):
    """datasets.load_dataset(folder) says: Config name is missing. Please pick one among the available configs: ['a',
    'b']. The old code read the flat test.jsonl (['flat']), or without it said to lay out <folder>/test.jsonl."""
    card = ("---\nconfigs:\n- config_name: a\n  data_files:\n  - split: test\n    path: a.jsonl\n- config_name: b\n"
            "  data_files:\n  - split: test\n    path: b.jsonl\n---\n")
    local = _write(tmp_path / "copy", {"README.md": card, "a.jsonl": _jsonl("a"), "b.jsonl": _jsonl("b"),
                                       **({"test.jsonl": _jsonl("flat")} if flat else {})})
    with pytest.raises(ConfigError) as exc:
        hub_rows(str(local), None, "test")
    assert str(exc.value) == (
        f"{local / 'README.md'}: its configs metadata declares the configs 'a', 'b' and none is the default (named "
        "default or marked default: true), and the task names no config; as datasets.load_dataset refuses such a data "
        "set without a config name, mark the config to read default: true")
    assert [r["question"] for r in hub_rows(str(local), "b", "test")[0]] == ["b"]  # a config named: read
