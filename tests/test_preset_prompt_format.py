"""A ``tokrag calibrate`` preset records the QA prompt format it was calibrated on (``calibration.data.nq``:
``apply_chat_template``, ``prompt``); its layer / threshold were chosen for that format. A run in the other format
(``lm_eval ... preset=FILE`` without ``--apply_chat_template`` for a preset calibrated with it, or the other way
round, or another task metadata ``prompt``) ran without a word; now it logs one WARNING per run."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from tokrag_model.methods.tokrag import TokRAGLM, preset_prompt_mismatch

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2 = json.loads((ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json").read_text())  # chat, instruct
GEMMA = json.loads((ROOT / "leaderboards/presets/tokrag-gemma-3-270m.json").read_text())  # plain, base
DOC = {"question": "What is the capital of France?", "answers": ["Paris"], "prompt": "instruct",
       "ctxs": [{"title": "France", "text": "Paris is the capital and largest city of France."}]}


def test_the_committed_presets_format_against_the_runs() -> None:
    smollm2 = {**SMOLLM2, "path": "smollm2.json"}
    gemma = {**GEMMA, "path": "gemma.json"}
    assert preset_prompt_mismatch(smollm2, True, ["instruct"]) is None  # the v2 leaderboard's contracts
    assert preset_prompt_mismatch(gemma, False, ["base", "base"]) is None
    assert preset_prompt_mismatch(smollm2, False, []) is None  # no QA request (wiki_lm): nothing to compare
    assert preset_prompt_mismatch({"path": "p.json", "params": {"layer": 3}, "calibration": {}}, False, ["base"]) is None
    for calibration in (None, {"data": None}, {"data": []}, {"data": "x"}, {"data": {"nq": "x"}}):  # hand-edited: no
        assert preset_prompt_mismatch({"path": "p.json", "params": {"layer": 3}, "calibration": calibration},  # traceback
                                      False, ["base"]) is None
    assert preset_prompt_mismatch(smollm2, False, ["instruct"], "smollm2-135m-instruct") == (
        "preset=smollm2.json: it was calibrated with the chat template (tokrag calibrate --apply-chat-template), this "
        "run's prompts are plain (lm_eval without --apply_chat_template); its calibrated params {'layer': 14} were "
        "chosen for the other prompt format: run with --apply_chat_template, or calibrate a preset for this run's "
        "format (tokrag calibrate --model smollm2-135m-instruct --split dev)")
    assert preset_prompt_mismatch(gemma, True, ["instruct"], "gemma-3-270m") == (
        "preset=gemma.json: it was calibrated on plain prompts (tokrag calibrate without --apply-chat-template), this "
        "run renders them with the chat template (lm_eval --apply_chat_template); its QA prompt format is 'base' "
        "(tokrag calibrate --prompt base), this run's is 'instruct' (task metadata prompt); its calibrated params "
        "{'layer': 5} were chosen for the other prompt format: run with no --apply_chat_template and task metadata "
        "prompt=base, or calibrate a preset for this run's format (tokrag calibrate --model gemma-3-270m --split dev "
        "--apply-chat-template --prompt instruct)")
    message = preset_prompt_mismatch(gemma, False, ["instruct", "base"])
    assert message.startswith("preset=gemma.json: its QA prompt format is 'base' (tokrag calibrate --prompt base), "
                              "this run's is 'instruct' (task metadata prompt);")


def test_a_run_in_the_other_format_warns_once(tmp_path, backbone, caplog) -> None:
    """The real SmolLM2 with a preset calibrated with the chat template: plain requests (no ``apply_chat_template``
    call by lm-eval) warn once, however many calls; rendered with the chat template, no warning."""
    from lm_eval.api.instance import Instance

    preset = {**SMOLLM2, "model": {**SMOLLM2["model"], "fingerprint": backbone.fingerprint}}
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    gen = {"until": ["\n"], "max_gen_toks": 1}

    def requests(lm, chat):
        ctx = lm.apply_chat_template([{"role": "user", "content": DOC["question"]}]) if chat else \
            f"Question: {DOC['question']}\nAnswer:"
        return [Instance("generate_until", DOC, (ctx, gen), 0)]

    lm = TokRAGLM.with_backbone(backbone, preset=str(path))
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.generate_until(requests(lm, False), disable_tqdm=True)
        lm.generate_until(requests(lm, False), disable_tqdm=True)
        lm.loglikelihood([Instance("loglikelihood", DOC, ("Question: x\nAnswer:", " Paris"), 0)], disable_tqdm=True)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"preset={path}: it was calibrated with the chat template (tokrag calibrate "
                                "--apply-chat-template), this run's prompts are plain (lm_eval without "
                                "--apply_chat_template)")
    caplog.clear()
    lm = TokRAGLM.with_backbone(backbone, preset=str(path))
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.generate_until(requests(lm, True), disable_tqdm=True)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
