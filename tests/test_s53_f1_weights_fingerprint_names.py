"""One run folder held two different values both named ``model_fingerprint`` (s52 u1, P7): ``config.json``'s, the run
key's fingerprint of the files ``pretrained`` names (``a5dffc7de57e8d76`` in u1's folder), and ``provenance.json``'s,
the weights as the model loaded them (``d99538b711f0fa20``, results' ``config.tokrag_model_fingerprint``), which the
report's "model fingerprint" column showed. A reader checking the report against the folder found a mismatch.

``config.json`` keeps its name (the run key hashes its material: a rename would re-key every run); provenance.json
now writes ``loaded_weights_fingerprint``, the report's column and JSON say "loaded weights fingerprint" with a note
naming both, and a folder written before (``model_fingerprint`` in provenance.json) is still found by its key and
reported with the same value.

Toy runs (tests/leaderboard_fixtures): ToyLM's ``fingerprint`` is the first 16 hex digits of the SHA-256 of its
``pretrained`` file; the run key's is :func:`leaderboards.keys.weights_fingerprint`, another hash of the same file.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from leaderboards.report import collect, compute, render_csv, render_markdown
from tests.leaderboard_helpers import FIX, pin_cell_keys, run_toy_spec

LOADED = hashlib.sha256((FIX / "toy_weights.bin").read_bytes()).hexdigest()[:16]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        pin_cell_keys(mp)
        spec, runs = run_toy_spec(tmp_path_factory.mktemp("p7"), tasks=["toy_qa"], limit=4)
        yield spec, runs


def _folders(runs: Path) -> list[Path]:
    return sorted(d.parent for d in runs.glob("*/DONE"))


def test_the_run_folder_names_its_two_weight_hashes_differently(toy):
    _, runs = toy
    folders = _folders(runs)
    assert len(folders) == 2
    for d in folders:
        config = json.loads((d / "config.json").read_text())
        prov = json.loads((d / "provenance.json").read_text())
        assert "model_fingerprint" not in prov
        assert prov["loaded_weights_fingerprint"] == LOADED
        # the run key's hash keeps its name in config.json and is another value
        assert len(config["model_fingerprint"]) == 16 and config["model_fingerprint"] != LOADED


def test_the_report_says_loaded_weights_and_names_both(toy):
    from leaderboards.report import WEIGHTS_NOTE

    spec, runs = toy
    data = compute(spec, collect(spec, runs), timings=False)
    key_fp = json.loads((_folders(runs)[0] / "config.json").read_text())["model_fingerprint"]
    for p in data["provenance"]:
        assert p["loaded_weights_fingerprint"] == LOADED and p["weights_fingerprint"] == key_fp
        assert "model_fingerprint" not in p
    md = render_markdown(data)
    assert "| cell | config hash | loaded weights fingerprint | task fingerprint |" in md
    assert "| standard/toy_qa/seed1 | " in md and f" | {LOADED} | " in md
    assert f"- {WEIGHTS_NOTE}" in md
    assert "config.json's model_fingerprint is another hash, the run key's fingerprint" in WEIGHTS_NOTE
    assert "model fingerprint" not in render_csv(data).splitlines()[0]


def test_a_folder_written_before_is_found_and_reports_the_same_value(toy, tmp_path, monkeypatch):
    """provenance.json as the runner wrote it before (``model_fingerprint``), its DONE manifest to match."""
    import leaderboards.report

    spec, runs = toy
    keys = leaderboards.report.cell_keys(spec, runs)  # the keys the runs were made with (pinned by the fixture)
    monkeypatch.setattr(leaderboards.report, "cell_keys", lambda spec, runs=None: keys)
    old = tmp_path / "runs"
    shutil.copytree(runs, old, ignore=shutil.ignore_patterns("*.lock"))
    for d in _folders(old):
        prov = json.loads((d / "provenance.json").read_text())
        prov = {("model_fingerprint" if k == "loaded_weights_fingerprint" else k): v for k, v in prov.items()}
        (d / "provenance.json").write_text(json.dumps(prov, indent=2), encoding="utf-8")
        done = json.loads((d / "DONE").read_text())
        done["files"]["provenance.json"] = hashlib.sha256((d / "provenance.json").read_bytes()).hexdigest()
        (d / "DONE").write_text(json.dumps(done, indent=2), encoding="utf-8")
    loaded = collect(spec, old)  # raises IncompleteRunError if a folder were not found or not accepted
    assert sorted(loaded) == ["none/toy_qa/seed1", "standard/toy_qa/seed1"]
    assert all(v[2] is not None for v in loaded.values())
    data = compute(spec, loaded, timings=False)
    assert [p["loaded_weights_fingerprint"] for p in data["provenance"]] == [LOADED, LOADED]
