"""s60 k1: a local ``pretrained`` path is keyed by the fingerprint of its files, not by its spelling.

Before, ``leaderboards.keys.cell_key_material`` held ``model_args.pretrained`` as written beside
``model_fingerprint`` (the SHA-256 of the files it names), so ``./m/w.bin``, ``/abs/m/w.bin``, ``link/w.bin`` (a
symlink to the folder) and the folder moved elsewhere gave four run keys over the same weights and every cell was
computed again. Now the key holds ``local:<model_fingerprint>`` there (the results record the path as written), and a
run finished under the old key is still served while the spec writes the path so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from leaderboard_helpers import FIX, TOY, write_spec
from leaderboards import keys
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from retrieval.io import fingerprint

METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]


@pytest.fixture
def models(tmp_path, monkeypatch):
    """``tmp_path/m/toy_weights.bin`` and a symlink ``tmp_path/link`` to ``m``; the working directory is ``tmp_path``."""
    (tmp_path / "m").mkdir()
    shutil.copy(FIX / "toy_weights.bin", tmp_path / "m" / "toy_weights.bin")
    (tmp_path / "link").symlink_to(tmp_path / "m", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _spec(root: Path, pretrained: str, name: str = "toy"):
    return load_spec(write_spec(root / "s", name=name, weights=pretrained, tasks=["toy_qa"], limit=3, methods=METHODS))


def _finished(runs: Path) -> list[str]:
    """The run folders under ``runs`` with a ``DONE`` marker, sorted."""
    return sorted(d.parent.name for d in runs.glob("*/DONE"))


def _key(root: Path, pretrained: str) -> tuple[str, dict]:
    (_cell, key, mat), = keys.cell_keys(_spec(root, pretrained))
    return key, mat


def test_every_spelling_of_a_local_path_is_one_key(models):
    spellings = ["./m/toy_weights.bin", str(models / "m" / "toy_weights.bin"), "m//toy_weights.bin",
                 "link/toy_weights.bin", "./link/../m/toy_weights.bin"]
    got = [_key(models, s) for s in spellings]
    fp = keys.weights_fingerprint({"pretrained": spellings[0]}, keys._HashMemo())
    assert {k for k, _ in got} == {got[0][0]}
    assert [m["model_args"]["pretrained"] for _, m in got] == [f"local:{fp}"] * len(spellings)
    assert [m["model_fingerprint"] for _, m in got] == [fp] * len(spellings)
    shutil.move(models / "m", models / "moved")  # the folder moved: same files, same key
    assert _key(models, "moved/toy_weights.bin")[0] == got[0][0]


def test_other_files_still_give_another_key(models):
    before = _key(models, "./m/toy_weights.bin")[0]
    (models / "m2").mkdir()
    (models / "m2" / "toy_weights.bin").write_bytes((FIX / "toy_weights.bin").read_bytes() + b"\0")
    assert _key(models, "./m2/toy_weights.bin")[0] != before


def test_a_hub_id_and_an_alias_are_keyed_as_written(models):
    for name in ("someorg/not-here-model", "smollm2-135m-instruct", "SmolLM2-135M-Instruct"):
        assert not keys.local_pretrained(name)
        assert keys.keyed_model_args({"pretrained": name, "k": 3}, "fp") == {"pretrained": name, "k": 3}
    assert keys.local_pretrained("./m") and keys.local_pretrained(str(models / "link" / "toy_weights.bin"))


def test_a_finished_run_is_served_under_another_spelling_and_records_the_path_as_written(models):
    first = run_spec(_spec(models, "./m/toy_weights.bin"), models / "runs", progress=False)
    assert first.ran == ["standard/toy_qa/seed1"]
    (name,) = _finished(models / "runs")
    folder = models / "runs" / name
    cfg = json.loads((folder / "config.json").read_text())
    fp = cfg["model_fingerprint"]
    assert cfg["model_args"]["pretrained"] == f"local:{fp}"
    recorded = json.loads((folder / "results.json").read_text())["config"]["model_args"]  # the path as written
    assert "pretrained=./m/toy_weights.bin" in recorded
    for other in (str(models / "m" / "toy_weights.bin"), "link/toy_weights.bin"):
        again = run_spec(_spec(models, other), models / "runs", progress=False)
        assert (again.ran, again.skipped) == ([], ["standard/toy_qa/seed1"])
    assert _finished(models / "runs") == [folder.name]


def test_a_run_finished_under_the_old_key_is_served_while_the_spec_writes_the_path_so(models, monkeypatch):
    # a run keyed as before s60 (pretrained as written in the key), by the real runner
    with monkeypatch.context() as m:
        m.setattr(keys, "keyed_model_args", lambda args, fp: args)
        old = run_spec(_spec(models, "./m/toy_weights.bin"), models / "runs", progress=False)
    assert old.ran == ["standard/toy_qa/seed1"]
    (name,) = _finished(models / "runs")
    folder = models / "runs" / name
    assert json.loads((folder / "config.json").read_text())["model_args"]["pretrained"] == "./m/toy_weights.bin"
    key, mat = _key(models, "./m/toy_weights.bin")
    assert key != folder.name
    assert fingerprint({**mat, "model_args": {**mat["model_args"], "pretrained": "./m/toy_weights.bin"}},
                       length=20) == folder.name
    served = run_spec(_spec(models, "./m/toy_weights.bin"), models / "runs", progress=False)
    assert (served.ran, served.skipped) == ([], ["standard/toy_qa/seed1"])
    (cell, got, _), = keys.cell_keys(_spec(models, "./m/toy_weights.bin"), models / "runs")
    assert got == folder.name
    # another spelling never ran under the old key: computed once under the new key, then served
    moved = run_spec(_spec(models, str(models / "m" / "toy_weights.bin")), models / "runs", progress=False)
    assert moved.ran == ["standard/toy_qa/seed1"]
    assert _finished(models / "runs") == sorted([folder.name, key])


def test_run_estimate_matches_a_run_keyed_by_the_fingerprint(models):
    from leaderboards.estimate import Measurement, estimate_cell

    spec = _spec(models, "./m/toy_weights.bin")
    (cell, _key_, mat), = keys.cell_keys(spec)
    done = Measurement(method="standard", model=TOY, pretrained=mat["model_args"]["pretrained"], k=3, task="toy_qa",
                       kind="qa", limit=3, n=3, wall_s=6.0, version=None, size=None)
    assert estimate_cell(cell, "qa", [done], None, mat["model_args"]["pretrained"]) == (2.0, "method+task", 1)

