"""s51 u2 L4: ``tokrag analyze --preset P`` (P calibrated with the chat template) on plain prompts warned in lm_eval's
flags: ``this run's prompts are plain (lm_eval without --apply_chat_template); ... run with --apply_chat_template``;
analyze's flag is ``--apply-chat-template`` (and its prompt format is ``--prompt``, not a task's metadata). Now the
line names the flags of the command run; lm_eval's line is unchanged."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tokrag_model.methods.tokrag import preset_prompt_mismatch

ROOT = Path(__file__).resolve().parents[1]
GEMMA = {**json.loads((ROOT / "leaderboards/presets/tokrag-gemma-3-270m.json").read_text()), "path": "gemma.json"}


def test_analyze_names_its_own_flags() -> None:
    assert preset_prompt_mismatch(GEMMA, True, ["instruct"], "gemma-3-270m", cli="analyze") == (
        "preset=gemma.json: it was calibrated on plain prompts (tokrag calibrate without --apply-chat-template), this "
        "run renders them with the chat template (--apply-chat-template); its QA prompt format is 'base' "
        "(tokrag calibrate --prompt base), this run's is 'instruct' (--prompt instruct); its calibrated params "
        "{'layer': 5} were chosen for the other prompt format: run with no --apply-chat-template and --prompt base, "
        "or calibrate a preset for this run's format (tokrag calibrate --model gemma-3-270m --split dev "
        "--apply-chat-template --prompt instruct)")
    lm_eval = preset_prompt_mismatch(GEMMA, True, ["instruct"], "gemma-3-270m")  # the default: lm_eval's, as before
    assert "(lm_eval --apply_chat_template)" in lm_eval and "(task metadata prompt)" in lm_eval
    assert "run with no --apply_chat_template and task metadata prompt=base," in lm_eval
    with pytest.raises(ValueError, match="cli='tokrag': expected 'lm_eval' or 'analyze'"):
        preset_prompt_mismatch(GEMMA, True, ["instruct"], cli="tokrag")


def _record(i, sid):
    from tasks import analyze

    tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, [0.1, 0.2, 0.3, 0.4],
                                [None, None, 1e-6, 2e-6], (0.3, 0.2))]


def test_tokrag_analyze_warns_in_its_own_flags(monkeypatch, tmp_path, caplog) -> None:
    """u2's case: a preset calibrated with --apply-chat-template, analyze run on plain nq prompts."""
    from tasks import analyze
    from tests.analyze_fakes import install_fake
    from tokrag_model.methods.tokrag import write_preset

    fake = install_fake(monkeypatch, _record, device="cpu")
    path = tmp_path / "chat.json"
    write_preset(path, fake.lm, {"layer": 2},
                 {"data": {"nq": {"data": "nq", "prompt": "instruct", "apply_chat_template": True}}})
    with caplog.at_level(logging.WARNING):
        assert analyze.main(["--split", "dev", "--data", "nq", "--out", str(tmp_path / "o"), "--n", "2",
                             "--bootstrap", "5", "--preset", str(path)]) == 0
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"preset={path}: it was calibrated with the chat template (tokrag calibrate --apply-chat-template), this run's "
        "prompts are plain (without --apply-chat-template); its calibrated params {'layer': 2} were chosen for the "
        "other prompt format: run with --apply-chat-template, or calibrate a preset for this run's format (tokrag "
        "calibrate --model fake-lm --split dev)"]
