"""Review of s57 f3 (cfbac8a), which keyed numpy, scipy, scikit-learn, rouge-score, rouge and datasets:

* ``run`` / ``run --estimate`` then said of every finished cell ``library_versions differs: a library was upgraded``,
  though nothing was upgraded: the new tokrag keys libraries the finished runs' keys did not record. The line now
  names the libraries and how each differs (keyed now but not then, another version, installed or not), and
  ``check``'s NOTE of a changed key says it per library line (:func:`leaderboards.runner.library_changes`,
  :func:`leaderboards.runner.key_field_cause`).

ToyLM cells; a library's version (or its absence from an older tokrag's key) is simulated by patching
``leaderboards.keys.library_versions``."""

from __future__ import annotations

import json

import pytest
from leaderboard_helpers import write_spec

NEWLY_KEYED = ("datasets", "numpy", "rouge", "rouge-score", "scikit-learn", "scipy")  # by s57 f3


@pytest.fixture(autouse=True)
def _own_folders(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def test_run_estimate_names_the_libraries_a_new_tokrag_keys_not_an_upgrade(tmp_path, monkeypatch, capsys) -> None:
    import leaderboards.keys as keys
    from leaderboards.cli import main
    from leaderboards.estimate import estimate
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    real = keys.library_versions
    now = real()
    # the finished runs: a tokrag whose run key did not record the six libraries, under torch 0.0.1
    monkeypatch.setattr(keys, "library_versions",
                        lambda: {**{k: v for k, v in real().items() if k not in NEWLY_KEYED}, "torch": "0.0.1"})
    path = write_spec(tmp_path, limit=3, tasks=["toy_qa"])
    spec, runs = load_spec(path), tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    config = json.loads(next(runs.glob("*/config.json")).read_text())
    assert "numpy" not in config["library_versions"] and config["library_versions"]["torch"] == "0.0.1"
    monkeypatch.setattr(keys, "library_versions", real)

    got = estimate(spec, runs)["other_inputs"]
    said = (f"library_versions differs: torch 0.0.1 -> {now['torch']} (another version installed); "
            f"{', '.join(NEWLY_KEYED)} keyed for the cells now but not for their finished runs, whose tokrag keyed "
            "other libraries")
    assert got.startswith(f"2 of the 2 cells to do have a finished run with other inputs in {runs} (")
    assert said in got, got
    assert "upgraded" not in got
    assert main(["run", str(path), "--runs-dir", str(runs), "--estimate"]) == 0
    assert said in capsys.readouterr().out


def test_library_changes_say_each_library_once() -> None:
    from leaderboards.runner import library_changes

    diffs = ["library_versions[torch] 2.4.0 -> 2.5.1", "library_versions[torch] 2.3.0 -> 2.5.1",
             "library_versions[rouge] null -> 1.0.0", "library_versions[scipy] 1.1 -> null",
             "library_versions[numpy] (absent) -> 2.4.6", "library_versions[jinja2] 3.1.6 -> (absent)",
             "model_args[alpha] 1 -> 2", "library_versions[numpy] (absent) -> 2.4.6"]
    assert library_changes(diffs, "its finished run", "the cell now") == (
        "torch 2.3.0 or 2.4.0 -> 2.5.1 (another version installed); rouge installed for the cell now, not for its "
        "finished run; scipy installed for its finished run, not for the cell now; numpy keyed for the cell now but "
        "not for its finished run, whose tokrag keyed other libraries; jinja2 not keyed for the cell now, whose "
        "tokrag keys other libraries, but for its finished run")
    assert library_changes(["model_args[alpha] 1 -> 2", "library_versions (absent) -> {}"]) == ""


def test_check_note_says_how_each_library_differs() -> None:
    """``check``'s NOTE for a FAIL whose runs have another key than the baseline's run: each library line says how it
    differs, between the baseline's run (old) and these runs (new); a whole-field line keeps the general words."""
    from leaderboards.check import KeyChanged

    note = KeyChanged("standard/toy_qa/seed1", "k" * 20, "b" * 20, (
        "library_versions[numpy] (absent) -> 2.4.6", "library_versions[torch] 2.4.0 -> 2.5.1",
        "model_args[alpha] 1 -> 2")).render()
    assert note == (
        f"NOTE standard/toy_qa/seed1  its runs have another run key ({'k' * 20}) than the run the baseline was written "
        f"from ({'b' * 20}): its config differs in library_versions[numpy] (absent) -> 2.4.6 (keyed for these runs but "
        "not for the run of the baseline, whose tokrag keyed other libraries); library_versions[torch] 2.4.0 -> 2.5.1 "
        "(another version installed); model_args[alpha] 1 -> 2 (a setting of the spec); this change may be the cause "
        "of the FAIL above")
    whole = KeyChanged("c", "k", "b", ("library_versions (absent) -> {...}",)).render()
    assert "library_versions (absent) -> {...} (the libraries the run key records, or their versions, differ)" in whole
