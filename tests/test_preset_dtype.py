"""A ``tokrag calibrate`` preset records the dtype it was calibrated in (``model.dtype``), and a run in another
dtype logs one WARNING at load. The dynamic rule's gaps are ~1e-5 nats/V: a reviewer saw them move enough in
bfloat16 that, on SmolLM2, a float32 preset's threshold no longer changed any decision; a GPU run in bfloat16 with a
preset calibrated on a CPU in float32 gave no sign of it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from tokrag_model.methods.tokrag import TokRAGLM, preset_dtype_mismatch, write_preset

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2 = json.loads((ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json").read_text())


def _preset(tmp_path: Path, backbone, **model) -> Path:
    preset = {**SMOLLM2, "model": {**SMOLLM2["model"], "fingerprint": backbone.fingerprint, **model}}
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    return path


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_preset_calibrated_in_another_dtype_warns_at_load(tmp_path, backbone, caplog) -> None:
    path = _preset(tmp_path, backbone, dtype="bfloat16")
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm = TokRAGLM.with_backbone(backbone, preset=str(path))
    assert _warnings(caplog) == [  # the preset's QA format (chat template, instruct prompt) in the command
        f"preset={path}: calibrated in bfloat16, this model runs in float32; its layer was chosen on the other "
        f"precision's log-probs: calibrate in float32 (tokrag calibrate --model {lm.resolved_config['pretrained']} "
        "--split dev --apply-chat-template --prompt instruct --model-args dtype=float32,device=cpu)"]


def test_the_dtype_message_names_the_presets_format_and_what_it_chose() -> None:
    gemma = {"path": "g.json", "params": {"layer": "dynamic", "js_threshold": 1e-6}, "model": {"dtype": "float32"},
             "calibration": {"data": {"nq": {"apply_chat_template": False, "prompt": "base"}}}}
    assert preset_dtype_mismatch(gemma, "bfloat16", "cuda:0", "gemma-3-270m") == (
        "preset=g.json: calibrated in float32, this model runs in bfloat16; its threshold was chosen on the other "
        "precision's log-probs: calibrate in bfloat16 (tokrag calibrate --model gemma-3-270m --split dev --prompt base "
        "--model-args dtype=bfloat16,device=cuda:0)")
    for same in ("torch.float32", "FP32", "float"):  # spellings of float32 are the same dtype
        assert preset_dtype_mismatch({**gemma, "model": {"dtype": same}}, "float32", "cpu") is None


def test_a_preset_in_the_same_dtype_or_without_one_loads_silently(tmp_path, backbone, caplog) -> None:
    for model in ({"dtype": "float32"}, {}):  # {}: the committed presets, written before the dtype was recorded
        path = _preset(tmp_path, backbone, **model)
        if not model:
            assert "dtype" not in json.loads(path.read_text())["model"]
        with caplog.at_level(logging.WARNING, logger="tokrag_model"):
            TokRAGLM.with_backbone(backbone, preset=str(path))
        assert _warnings(caplog) == [], model
        caplog.clear()


def test_write_preset_records_the_dtype(tmp_path, backbone) -> None:
    lm = TokRAGLM.with_backbone(backbone)
    preset = write_preset(tmp_path / "p.json", lm, {"layer": 19}, {})
    assert preset["model"] == {"pretrained": lm.resolved_config["pretrained"], "fingerprint": backbone.fingerprint,
                               "files_fingerprint": lm.files_fingerprint, "n_layers": 30, "dtype": "float32"}
