"""Review of s57 f3 (cfbac8a), which keyed numpy, scipy, scikit-learn, rouge-score, rouge and datasets: a leaderboard
cell's ``provenance.json`` ``versions`` (:func:`leaderboards.runner.library_versions`) was a list of its own
(``runner._VERSIONED``), which lacked tokenizers, the Anserini jar, scikit-learn, rouge-score and rouge, and named
``faiss-cpu`` only (a ``faiss-gpu`` install: no FAISS version). It now reads the run key's list
(:func:`leaderboards.keys.library_versions`), so every library the key holds that is installed is in provenance.json
too: one list. Versions read from package metadata; another install is a patched ``importlib.metadata.version``."""

from __future__ import annotations

import importlib.metadata as md
import json

import pytest

NEWLY_KEYED = ("datasets", "numpy", "rouge", "rouge-score", "scikit-learn", "scipy")  # by s57 f3


@pytest.fixture(autouse=True)
def _own_folders(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def test_provenance_json_names_every_library_of_the_run_key(tmp_path) -> None:
    from leaderboard_helpers import run_toy_spec

    from leaderboards.keys import library_versions as keyed
    from leaderboards.runner import library_versions

    got = library_versions()
    for name in ("tokenizers", "anserini", "scikit-learn", "rouge-score", "rouge", *NEWLY_KEYED):
        assert got[name] == keyed()[name] is not None, name
    assert got["scikit-learn"] == md.version("scikit-learn") and got["rouge"] == md.version("rouge")
    assert got["python"].count(".") == 2 and got["tokrag"] == md.version("tokrag")
    assert got["lm_eval"] == md.version("lm_eval")
    assert {k: v for k, v in keyed().items() if v is not None}.items() <= got.items()

    _spec, runs = run_toy_spec(tmp_path / "t", tasks=["toy_qa"], limit=2, methods=[
        {"name": "standard", "model": "tests.leaderboard_fixtures.toy_lm:ToyLM", "model_args": {"mode": "first"}}])
    (prov,) = [json.loads(p.read_text()) for p in runs.glob("*/provenance.json")]
    config = json.loads(next(runs.glob("*/config.json")).read_text())
    assert {k: v for k, v in config["library_versions"].items() if v is not None}.items() <= prov["versions"].items()
    assert prov["versions"]["rouge-score"] == md.version("rouge-score")


def test_provenance_json_names_the_installed_faiss_distribution(monkeypatch) -> None:
    """A GPU install's ``faiss-gpu`` (the run key named it; provenance.json named ``faiss-cpu`` only, so none)."""
    from leaderboards.runner import library_versions

    real = md.version

    def version(name):
        if name == "faiss-cpu":
            raise md.PackageNotFoundError(name)
        return "1.8.0" if name == "faiss-gpu" else real(name)

    monkeypatch.setattr(md, "version", version)
    got = library_versions()
    assert got["faiss-gpu"] == "1.8.0" and "faiss-cpu" not in got
    assert got["numpy"] == real("numpy")


def test_a_library_not_installed_is_left_out_of_provenance_json(monkeypatch) -> None:
    from leaderboards.runner import library_versions

    real = md.version

    def version(name):
        if name in ("rouge", "scipy"):
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", version)
    got = library_versions()
    assert "rouge" not in got and "scipy" not in got and got["numpy"] == real("numpy")
