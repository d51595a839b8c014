"""s61 p1: a ``preset=`` model argument is keyed by the preset file's content, not by the path as written.

Before, the leaderboard run key held ``model_args.preset`` as written beside the file's SHA-256
(``model_arg_files``), and the ``--use_cache`` key held the resolved config's ``preset`` as written beside the params it
applied: ``./p.json``, ``p.json``, ``/abs/p.json`` and a copy of the file gave four keys over the same preset (every
cell, every cached answer computed again). Edited content did change both keys (``model_arg_files``; the applied
params), so there was no stale result. Now both keys hold the content, not the path (``--use_cache``:
``sha256:<hex>``; the leaderboard key: ``model_arg_files`` alone, its ``model_args.preset`` fixed text since s61 r1);
a run finished under the
old key is still served; the results keep the path as written; a spec without a preset keeps its key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from leaderboard_helpers import TOY, tiny_llama, write_spec
from leaderboards import keys
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec


def _spec(root: Path, preset: str | None):
    args = {"mode": "first", **({"preset": preset} if preset is not None else {})}
    methods = [{"name": "standard", "model": TOY, "model_args": args}]
    return load_spec(write_spec(root / "s", tasks=["toy_qa"], limit=3, methods=methods))


def _key(root: Path, preset: str | None) -> tuple[str, dict]:
    (_cell, key, mat), = keys.cell_keys(_spec(root, preset), root / "runs")
    return key, mat


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p.json").write_text('{"params": {"layer": 3}}\n')
    (tmp_path / "sub").mkdir()
    shutil.copy(tmp_path / "p.json", tmp_path / "sub" / "copy.json")
    return tmp_path


def test_every_spelling_and_a_copy_of_a_preset_is_one_leaderboard_key(here):
    import hashlib

    sha = hashlib.sha256((here / "p.json").read_bytes()).hexdigest()
    got = [_key(here, s) for s in ("./p.json", "p.json", str(here / "p.json"), "sub/copy.json", "sub/../p.json")]
    assert len({k for k, _ in got}) == 1
    # the path is replaced by fixed text; the content is keyed once, in model_arg_files (s61 r1: was sha256:<hex>)
    assert [m["model_args"]["preset"] for _, m in got] == [keys.FILE_CONTENT] * 5
    assert [m["model_arg_files"] for _, m in got] == [{"preset": sha}] * 5
    # a preset value that names no file is kept as written (the run refuses it)
    assert keys.content_keyed_args({"preset": "nowhere.json", "k": 3}, {}) == {"preset": "nowhere.json", "k": 3}


def test_an_edited_preset_is_another_leaderboard_key(here):
    before = _key(here, "./p.json")[0]
    (here / "p.json").write_text('{"params": {"layer": 2}}\n')
    assert _key(here, "./p.json")[0] != before


def test_a_spec_without_a_preset_keeps_its_key_material(here):
    """Guard: no ``preset`` argument, no change (the model args as written, no ``model_arg_files``)."""
    _key_, mat = _key(here, None)
    assert "model_arg_files" not in mat and "preset" not in mat["model_args"]
    assert mat["model_args"]["mode"] == "first" and mat["model_args"]["k"] == 3


def test_a_run_keyed_with_the_path_as_written_is_served_and_results_keep_the_path(here, monkeypatch):
    with monkeypatch.context() as m:  # keyed as before s61: the path as written
        m.setattr(keys, "CONTENT_KEYED_ARGS", ())
        first = run_spec(_spec(here, "./p.json"), here / "runs", progress=False)
        old_key = _key(here, "./p.json")[0]
    assert first.ran == ["standard/toy_qa/seed1"]
    new_key, mat = _key(here, "./p.json")
    assert new_key == old_key and mat["model_args"]["preset"] == "./p.json"  # the finished legacy run is adopted
    again = run_spec(_spec(here, "./p.json"), here / "runs", progress=False)
    assert again.ran == []
    results = json.loads(next((here / "runs" / old_key).rglob("results*.json")).read_text())
    assert "preset=./p.json," in results["config"]["model_args"]


def test_a_run_is_served_under_another_spelling_and_records_the_path_it_was_run_with(here):
    first = run_spec(_spec(here, "./p.json"), here / "runs", progress=False)
    assert first.ran == ["standard/toy_qa/seed1"]
    for other in (str(here / "p.json"), "sub/copy.json"):
        assert run_spec(_spec(here, other), here / "runs", progress=False).ran == []
    (done,) = [d.parent for d in (here / "runs").glob("*/DONE")]
    results = json.loads(next(done.rglob("results*.json")).read_text())
    assert "preset=./p.json," in results["config"]["model_args"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_llama(tmp_path_factory.mktemp("p1key") / "m", layers=4)


def _use_cache_key(model: Path, preset: str) -> tuple[str, dict]:
    from tokrag_model.methods import MODELS

    lm = MODELS["tokrag"](pretrained=str(model), device="cpu", preset=preset)
    return lm._response_cache_model, dict(lm.resolved_config)


def test_every_spelling_and_a_copy_of_a_preset_is_one_use_cache_key(tiny, tmp_path, monkeypatch):
    from tokrag_model.methods import MODELS

    monkeypatch.chdir(tmp_path)
    lm = MODELS["tokrag"](pretrained=str(tiny), device="cpu")
    preset = {"format": "tokrag-preset/1", "method": "tokrag",
              "model": {"fingerprint": lm.fingerprint, "files_fingerprint": lm.files_fingerprint, "n_layers": 4},
              "params": {"layer": 2}, "calibration": {}}
    (tmp_path / "p.json").write_text(json.dumps(preset))
    (tmp_path / "sub").mkdir()
    shutil.copy(tmp_path / "p.json", tmp_path / "sub" / "copy.json")
    got = [_use_cache_key(tiny, s) for s in ("./p.json", "p.json", str(tmp_path / "p.json"), "sub/copy.json")]
    assert len({k for k, _ in got}) == 1
    assert [c["preset"] for _, c in got] == ["./p.json", "p.json", str(tmp_path / "p.json"), "sub/copy.json"]
    assert [c["layer"] for _, c in got] == [2] * 4
    # an edited preset (other params; or the same params, other content) is another key
    (tmp_path / "p.json").write_text(json.dumps({**preset, "params": {"layer": 1}}))
    assert _use_cache_key(tiny, "./p.json")[0] != got[0][0]
    (tmp_path / "p.json").write_text(json.dumps({**preset, "calibration": {"note": "edited"}}))
    assert _use_cache_key(tiny, "./p.json")[0] != got[0][0]
