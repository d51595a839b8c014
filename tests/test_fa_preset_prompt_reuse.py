"""Tok-RAG's preset prompt-format WARNING (:meth:`TokRAGLM.check_preset_prompt`) was decided once per model object:
a model reused for a second evaluation (a notebook's second ``lm_eval.evaluate``, a leaderboard's cells of one model)
whose prompts are in the other format than the preset's got no warning when its first evaluation matched. Each
evaluation (``start_evaluation``) is now checked on its own."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lm_eval.api.instance import Instance

from tokrag_model.methods.tokrag import TokRAGLM

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2 = json.loads((ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json").read_text())  # chat, instruct
DOC = {"question": "What is the capital of France?", "answers": ["Paris"], "prompt": "instruct",
       "ctxs": [{"title": "France", "text": "Paris is the capital and largest city of France."}]}
GEN = {"until": ["\n"], "max_gen_toks": 1}


def test_a_reused_model_warns_on_a_later_evaluation_in_the_other_format(tmp_path, backbone, caplog) -> None:
    path = tmp_path / "preset.json"
    path.write_text(json.dumps({**SMOLLM2, "model": {**SMOLLM2["model"], "fingerprint": backbone.fingerprint}}))
    lm = TokRAGLM.with_backbone(backbone, preset=str(path))
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.start_evaluation(apply_chat_template=True)  # the preset's format: no warning
        chat = lm.apply_chat_template([{"role": "user", "content": DOC["question"]}])
        lm.generate_until([Instance("generate_until", DOC, (chat, GEN), 0)], disable_tqdm=True)
        assert not [r for r in caplog.records if r.levelno == logging.WARNING]
        lm.start_evaluation(apply_chat_template=False)  # plain prompts: the other format
        plain = f"Question: {DOC['question']}\nAnswer:"
        lm.generate_until([Instance("generate_until", DOC, (plain, GEN), 0)], disable_tqdm=True)
        lm.generate_until([Instance("generate_until", DOC, (plain, GEN), 0)], disable_tqdm=True)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1, warned  # once for the second evaluation, not per call
    assert warned[0].startswith(f"preset={path}: it was calibrated with the chat template (tokrag calibrate "
                                "--apply-chat-template), this run's prompts are plain (lm_eval without "
                                "--apply_chat_template)")
