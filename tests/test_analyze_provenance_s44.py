"""Provenance of ``tokrag analyze`` / ``tokrag calibrate`` (stop 44 breaker findings): the records key held the
weights' fingerprint but not the model folder's other files, the scoring code or the library versions, so an edited
``config.json`` (rope_theta, same weights) reused the old records under the same key ("2 of 2 samples reused", other
counts than a fresh run); ``results.json`` recorded no versions, model-files fingerprint or machine; a preset recorded
only the weights' fingerprint, and one calibrated with another ``config.json`` loaded silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(monkeypatch):
    """The fake 4-layer model of :mod:`tests.analyze_fakes`, with a model-files and a code fingerprint and the
    model info lm_eval records (``get_model_info``)."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    def record(i, sid):  # even samples benefit (RAG top-1 gold), odd ones detriment
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2,
                                    [0.1 * (j + 1) + 0.05 * i for j in range(4)],
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    state = install_fake(monkeypatch, record, device="cpu")
    state.lm.files_fingerprint = "files0"
    monkeypatch.setattr("tasks.analyze.records_code_fingerprint", lambda: state.code)
    state.code = "code0"
    state.info = {"tokrag_model_fingerprint": "fp0", "tokrag_model_files_fingerprint": "files0",
                  "tokrag_versions": {"torch": "9.9", "tokrag_commit": "abc"}, "tokrag_machine": {"cpu": "x"}}
    state.lm.get_model_info = lambda: state.info
    return state


def test_records_are_recomputed_after_the_model_files_code_or_libraries_change(fake, tmp_path, monkeypatch,
                                                                               capsys) -> None:
    from tasks import analyze

    out = tmp_path / "out"
    _, first = analyze.collect_records(fake.lm, "wiki", "dev", 2, out)
    assert first["reused"] == 0
    assert (first["model_files_fingerprint"], first["code_fingerprint"]) == ("files0", "code0")
    assert set(first["versions"]) == {"torch", "tokenizers", "transformers"}
    _, again = analyze.collect_records(fake.lm, "wiki", "dev", 2, out)  # nothing changed: every sample reused
    assert again["reused"] == 2 and again["key"] == first["key"]
    assert capsys.readouterr().err.endswith(f"wiki dev: 2 of 2 samples reused from {first['records_file']}\n")

    fake.lm.files_fingerprint = "files1"  # config.json edited, same weights: was "2 of 2 samples reused"
    _, edited = analyze.collect_records(fake.lm, "wiki", "dev", 2, out)
    assert edited["reused"] == 0 and edited["key"] != first["key"]
    fake.lm.files_fingerprint = "files0"
    fake.code = "code1"  # other scoring code
    _, code = analyze.collect_records(fake.lm, "wiki", "dev", 2, out)
    assert code["reused"] == 0 and code["key"] not in (first["key"], edited["key"])
    fake.code = "code0"
    monkeypatch.setattr(analyze, "records_library_versions",
                        lambda: {"torch": "0.1", "tokenizers": "0.1", "transformers": "0.1"})  # an upgrade
    _, libs = analyze.collect_records(fake.lm, "wiki", "dev", 2, out)
    assert libs["reused"] == 0 and libs["key"] not in (first["key"], edited["key"], code["key"])
    assert len(fake.scored) == 2 * 4  # scored fresh each time it changed, reused only when nothing did


def test_records_library_versions_are_the_model_libraries_as_the_leaderboard_reads_them() -> None:
    from leaderboards.keys import library_versions
    from tasks.analyze import records_library_versions

    versions = library_versions()
    assert records_library_versions() == {k: versions[k] for k in ("torch", "tokenizers", "transformers")}
    assert records_library_versions()["torch"]  # installed here


def test_analyze_results_record_the_model_info(fake, tmp_path) -> None:
    from tasks import analyze

    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", str(tmp_path / "o"), "--n", "2",
                         "--bootstrap", "5"]) == 0
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["model_info"] == fake.info
    cfg = res["configs"]["wiki"]
    assert (cfg["model_files_fingerprint"], cfg["code_fingerprint"]) == ("files0", "code0")


def test_a_preset_records_the_model_info_and_is_refused_for_other_model_files(fake, tmp_path) -> None:
    from tokrag_model.methods.tokrag import read_preset, write_preset

    path = tmp_path / "p.json"
    preset = write_preset(path, fake.lm, {"layer": 2}, {})
    assert preset["model"]["files_fingerprint"] == "files0" and preset["model_info"] == fake.info
    assert read_preset(path, "fp0", 4, files_fingerprint="files0")["params"] == {"layer": 2}
    assert read_preset(path, "fp0", 4)["params"] == {"layer": 2}  # not asked: not checked
    with pytest.raises(ConfigError) as exc:
        read_preset(path, "fp0", 4, "smol-copy", files_fingerprint="files1")
    assert str(exc.value) == (
        f"preset={path}: calibrated with other model files (config, generation config, tokenizer, chat template or "
        "remote code: model.files_fingerprint files0), this model's are files1; use a preset calibrated for this model "
        "(tokrag calibrate --model smol-copy --split dev)")


@pytest.mark.parametrize("name", ["tokrag-gemma-3-270m.json", "tokrag-smollm2-135m-instruct.json"])
def test_the_committed_presets_without_a_files_fingerprint_still_load(name) -> None:
    from tokrag_model.methods.tokrag import read_preset

    path = ROOT / "leaderboards/presets" / name
    raw = json.loads(path.read_text())
    assert "files_fingerprint" not in raw["model"]
    got = read_preset(path, raw["model"]["fingerprint"], raw["model"]["n_layers"], files_fingerprint="any")
    assert got["params"] == read_preset(path)["params"]


def test_the_model_refuses_a_preset_made_with_other_model_files(tmp_path, backbone) -> None:
    """At load (``--model tokrag preset=...``): the weights' fingerprint matched, the config's was not checked."""
    from tokrag_model.methods.tokrag import TokRAGLM, write_preset

    lm = TokRAGLM.with_backbone(backbone)
    assert lm.files_fingerprint
    path = tmp_path / "p.json"
    preset = write_preset(path, lm, {"layer": 19}, {})
    assert preset["model"]["files_fingerprint"] == lm.files_fingerprint
    info = preset["model_info"]
    assert info["tokrag_model_files_fingerprint"] == lm.files_fingerprint and info["tokrag_versions"]["torch"]
    assert TokRAGLM.with_backbone(backbone, preset=str(path)).resolved_config["layer"] == 19
    raw = json.loads(path.read_text())
    raw["model"]["files_fingerprint"] = "0" * 16
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"calibrated with other model files .* this model's are "
                       + lm.files_fingerprint):
        TokRAGLM.with_backbone(backbone, preset=str(path))


def test_the_records_code_fingerprint_is_the_scoring_code_only(monkeypatch) -> None:
    """The records key took the fingerprint of all of ``tokrag_model`` and ``tasks``: a new task YAML or a docstring
    in ``tasks/byo.py`` renamed the records file and rescored every sample. It holds ``tokrag_model`` (as the
    leaderboard hashes it) and ``tasks/analyze.py`` only."""
    from pathlib import Path

    import leaderboards.keys as keys
    from tasks import analyze
    from retrieval.io import fingerprint, python_code_sha

    asked = []
    monkeypatch.setattr(keys, "code_fingerprint", lambda module, memo: asked.append(module) or f"fp-{module}")
    analyze.records_code_fingerprint.cache_clear()
    try:
        value = analyze.records_code_fingerprint()
    finally:
        analyze.records_code_fingerprint.cache_clear()
    assert asked == ["tokrag_model"]
    assert value == fingerprint([["tokrag_model", "fp-tokrag_model"],
                                 ["tasks/analyze.py", python_code_sha(Path(analyze.__file__))]])  # its code (s57 r6)
