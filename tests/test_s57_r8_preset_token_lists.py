"""A Tok-RAG preset records the ``token_lists`` it was calibrated under (s57 r8, review of a2's 4fdb755).

``token_lists`` changes the tokens tested (bypass) and the anchors (skip list), as ``bypass`` and ``n_anchors`` do,
but it was not one of :data:`~tokrag_model.methods.tokrag.PRESET_SETTINGS`: ``tokrag calibrate`` did not write it, a
preset could not set it (``unknown params``), a run with another value than the preset's was not warned, ``tokrag
analyze --preset`` did not refuse records scored under other lists, and the records key did not hold it (records
scored under one list were reused under the other). Presets without it read as ``generalised``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from retrieval.errors import ConfigError

from tests.analyze_fakes import strict_record as _record  # one strict token per sample (the shared toy records)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


def _preset(path: Path, **params) -> Path:
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                "model": {"n_layers": 4, "fingerprint": "fp0"}, "params": {"layer": 2, **params}}))
    return path


def test_calibrate_writes_the_token_lists_and_a_preset_run_applies_them(fake, tmp_path):
    from tasks import calibrate
    from tokrag_model.methods.tokrag import TokRAGLM, TokRAGParams, read_preset

    fake.lm.params = TokRAGParams(token_lists="authors")
    assert calibrate.main(["--data", "wiki", "--out", str(tmp_path / "cal"), "--n", "4", "--policy", "fixed"]) == 0
    path = tmp_path / "cal" / "tokrag_preset.json"
    assert json.loads(path.read_text())["params"]["token_lists"] == "authors"
    preset = read_preset(path)
    cfg = {k: a.default for k, a in TokRAGLM.EXTRA_ARGS.items()} | {"preset": str(path)}
    got = TokRAGLM.resolve_args(cfg, {"preset": str(path)}, preset)
    assert got["token_lists"] == "authors" and "token_lists" in got.from_preset


def test_another_token_lists_than_the_presets_is_warned_in_one_line(tmp_path):
    from tokrag_model.methods.tokrag import TokRAGLM, preset_override_warning, preset_settings, read_preset

    path = _preset(tmp_path / "p.json", token_lists="authors")
    preset = read_preset(path)
    assert preset_settings(preset)["token_lists"] == "authors"
    cfg = {k: a.default for k, a in TokRAGLM.EXTRA_ARGS.items()} | {"preset": str(path), "pretrained": "smol"}
    given = {"preset": str(path), "token_lists": "Generalised"}
    got = TokRAGLM.resolve_args(cfg, given, preset)
    assert got["token_lists"] == "generalised"  # explicit over the preset's
    assert preset_override_warning(preset, got, given) == (
        f"preset={path}: calibrated with token_lists='authors' (this run: 'generalised'); its params {{'layer': 2}} "
        "were chosen under those settings, so they may not suit this run's: drop token_lists from the model "
        "arguments (the preset applies its own), or calibrate a preset with them (tokrag calibrate --model smol "
        "--split dev --model-args token_lists=Generalised)")


def test_a_preset_without_token_lists_reads_as_generalised():
    from tokrag_model.methods.tokrag import TokRAGLM, preset_override_warning, preset_settings, read_preset

    committed = read_preset(ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json")
    assert "token_lists" not in committed["params"]
    assert preset_settings(committed)["token_lists"] == "generalised"
    cfg = {k: a.default for k, a in TokRAGLM.EXTRA_ARGS.items()} | {"preset": committed["path"]}
    same = TokRAGLM.resolve_args(cfg, {"token_lists": "generalised"}, committed)
    assert same["token_lists"] == "generalised" and preset_override_warning(committed, same, {"token_lists": "generalised"}) is None
    other = TokRAGLM.resolve_args(cfg | {"token_lists": "authors"}, {"token_lists": "authors"}, committed)
    assert "calibrated with token_lists='generalised' (this run: 'authors'; a setting its params lack: the default)" in (
        preset_override_warning(committed, other, {"token_lists": "authors"}) or "")


def test_analyze_refuses_a_preset_calibrated_under_other_token_lists(fake, tmp_path):
    from tasks import analyze

    path = _preset(tmp_path / "p.json", token_lists="authors")
    with pytest.raises(ConfigError) as exc:
        analyze.main(["--data", "wiki", "--split", "dev", "--out", str(tmp_path / "an"), "--n", "4", "--bootstrap", "5",
                      "--preset", str(path)])
    assert str(exc.value) == (
        f"--preset {path} was calibrated with token_lists='authors' (this run: 'generalised'), and its layer was "
        f"chosen under those settings: give them in --model-args (or --model-args preset={path}), or calibrate a "
        "preset with this run's")
    assert fake.scored == []


def test_the_records_key_holds_the_token_lists():
    from tasks.analyze import records_config
    from tokrag_model.methods.tokrag import TokRAGParams

    def key(params):
        lm = SimpleNamespace(params=params, resolved_config={"pretrained": "m", "dtype": "float32"}, fingerprint="fp0",
                             decoder=SimpleNamespace(n_layers=4, windows=None))
        config, k = records_config(lm, "wiki", "dev", 64)
        return config["tokrag"]["token_lists"], k

    (g, kg), (g2, kg2), (a, ka) = (key(TokRAGParams()), key(TokRAGParams(token_lists="generalised")),
                                   key(TokRAGParams(token_lists="authors")))
    assert (g, g2, a) == ("generalised", "generalised", "authors")
    assert kg == kg2 != ka


@pytest.mark.slow
def test_smollm2_run_with_an_authors_preset_decodes_with_its_lists(backbone, tmp_path, caplog):
    """The real model: a preset's token_lists builds the token classes; an explicit other value logs one WARNING."""
    from tokrag_model.methods import MODELS

    lm = MODELS["tokrag"].with_backbone(backbone)
    assert (lm.params.token_lists, lm.token_classes.lists) == ("generalised", "generalised")
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "params": {"layer": 12, "token_lists": "authors"},
                                "model": {"n_layers": lm.decoder.n_layers, "fingerprint": lm.fingerprint}}))
    with caplog.at_level(logging.WARNING):
        run = MODELS["tokrag"].with_backbone(backbone, preset=str(path))
    assert (run.params.token_lists, run.token_classes.lists, run.resolved_config["token_lists"]) == ("authors",) * 3
    comma = backbone.tokenizer.encode(",")[0]
    assert (run.is_function(comma), lm.is_function(comma)) == (False, True)
    assert not [r for r in caplog.records if "calibrated with" in r.getMessage()]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        over = MODELS["tokrag"].with_backbone(backbone, preset=str(path), token_lists="generalised")
    assert over.token_classes.lists == "generalised"
    lines = [r.getMessage() for r in caplog.records if "calibrated with" in r.getMessage()]
    assert len(lines) == 1 and "token_lists='authors' (this run: 'generalised')" in lines[0]
