"""Commands suggested by leaderboard messages work when pasted into a shell in a runs folder whose name has spaces
('my runs/x y'): every path is shell-quoted, and a cell whose finished run only sits under another folder name gets
the move, not a run command (fast: toy model)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from leaderboard_helpers import pin_cell_keys, run_toy_spec

from leaderboards.check import MissingCell, check_against_baseline, write_baseline
from leaderboards.keys import cell_keys
from retrieval.errors import ConfigError

CELL = "standard/toy_qa/seed1"


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Each spec's run keys computed once per spec file (other work may edit the source the keys hash meanwhile)."""
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def spaced(tmp_path_factory):
    """The toy spec (toy_qa, limit 3) run once: ``(spec, runs, key of CELL)``."""
    root = tmp_path_factory.mktemp("quoting")
    spec, runs = run_toy_spec(root, tasks=["toy_qa"], limit=3)
    key = next(k for c, k, _ in cell_keys(spec) if c.cell_id == CELL)
    return spec, runs, key


def _copy(spaced, tmp_path: Path):
    spec, runs, key = spaced
    there = tmp_path / "my runs" / "x y"
    shutil.copytree(runs, there)
    return spec, there, key


def _paste(command: str, cwd: Path) -> None:
    """Run a suggested command as a user pasting it into bash."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_check_moved_aside_gives_the_quoted_move_and_no_run_command(spaced, tmp_path):
    spec, runs, key = _copy(spaced, tmp_path)
    base = tmp_path / "base.json"
    write_baseline(spec, runs, base)
    (runs / key).rename(runs / "aside")
    lines = check_against_baseline(spec, runs, base)
    text = next(x for x in lines if isinstance(x, MissingCell) and x.cell == CELL).render()
    assert "nothing needs re-running" in text
    assert "tokrag leaderboard run" not in text and "run the cell with" not in text
    mv = re.search(r"\((mv .*?)\);", text).group(1)
    _paste(mv, tmp_path)
    assert (runs / key / "DONE").is_file() and not (runs / "aside").exists()
    assert all(x.ok for x in check_against_baseline(spec, runs, base))


def test_run_refusal_of_a_moved_run_gives_a_quoted_move(spaced, tmp_path):
    from leaderboards.runner import run_spec

    spec, runs, key = _copy(spaced, tmp_path)
    (runs / key).rename(runs / "aside")
    with pytest.raises(ConfigError) as err:
        run_spec(spec, runs, progress=False)
    mv = re.search(r"\((mv .*?)\); nothing was run", str(err.value)).group(1)
    _paste(mv, tmp_path)
    assert (runs / key / "DONE").is_file()


@pytest.mark.parametrize("damage", ["no config_hash", "config_hash edited"])
def test_damaged_done_delete_command_is_quoted(spaced, tmp_path, damage):
    from leaderboards.runner import MisplacedRunError, verify_cell_dir

    spec, runs, key = _copy(spaced, tmp_path)
    done = runs / key / "DONE"
    manifest = json.loads(done.read_text(encoding="utf-8"))
    if damage == "no config_hash":  # and a config.json of another key: whose run it is cannot be told
        del manifest["config_hash"]
        cfg = runs / key / "config.json"
        cfg.write_text(json.dumps({**json.loads(cfg.read_text(encoding="utf-8")), "config_hash": "1" * 20}))
        manifest["files"]["config.json"] = hashlib.sha256(cfg.read_bytes()).hexdigest()
    else:
        manifest["config_hash"] = "0" * 20
    done.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(MisplacedRunError) as err:
        verify_cell_dir(runs / key, CELL)
    rm = re.search(r"\((rm .*?)\)", str(err.value)).group(1)
    _paste(rm, tmp_path)
    assert not done.exists() and (runs / key / "results.json").is_file()
