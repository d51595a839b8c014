"""A fake 4-layer TokRAGLM and data for ``tokrag calibrate`` / ``tokrag analyze`` tests (no model): ``pool`` samples
``q0…`` per data set; ``scored`` lists the samples scored; ``interrupt_at`` raises KeyboardInterrupt when that many
samples were scored; each sample is scored in ``delay`` seconds into the records ``record(i, sid)`` returns."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any


def install_fake(monkeypatch: Any, record: Callable[[int, Any], list], **backbone: Any) -> SimpleNamespace:
    """Patch :mod:`tasks.analyze` / :mod:`tasks.calibrate` to the fake; returns its state (``lm``, ``pool``,
    ``scored``, ``interrupt_at``, ``delay``). ``backbone``: extra attributes of ``lm.backbone`` (dtype float32)."""
    from tasks import analyze, calibrate
    from tokrag_model.methods.tokrag import TokRAGParams

    state = SimpleNamespace(pool=6, scored=[], interrupt_at=None, delay=0.0)
    state.lm = SimpleNamespace(params=TokRAGParams(), resolved_config={"pretrained": "fake-lm", "dtype": "float32"},
                               fingerprint="fp0", decoder=SimpleNamespace(n_layers=4, windows=None), tokenizer=None,
                               backbone=SimpleNamespace(dtype="float32", **backbone), apply_chat_template=None)

    def samples_for(name, split, n, *a, **k):
        return [({"qid": f"q{i}", "run_fingerprint": "run0"}, "ctx", " cont") for i in range(min(n, state.pool))]

    def encode_sample(lm_, doc, *a, **k):
        return SimpleNamespace(fingerprint=lambda: f"in-{doc['qid']}")

    def score_sample(lm_, doc, context, cont, sid, *a, **k):
        if state.interrupt_at is not None and len(state.scored) == state.interrupt_at:
            raise KeyboardInterrupt
        state.scored.append(sid)
        time.sleep(state.delay)
        return record(int(doc["qid"][1:]), sid)

    monkeypatch.setattr(analyze, "samples_for", samples_for)
    monkeypatch.setattr(analyze, "encode_sample", encode_sample)
    monkeypatch.setattr(analyze, "score_sample", score_sample)
    monkeypatch.setattr(analyze, "load_lm", lambda args: state.lm)
    monkeypatch.setattr(calibrate, "load_lm", lambda args: state.lm)
    return state


def strict_record(i: int, sid: Any) -> list:
    """The records of sample ``i``: one strict token (even samples: the RAG branch's top-1 is the gold, a benefit;
    odd samples: the pure branch's, a detriment) with S_R rising over the 4 layers and gap values at layers 2-3."""
    from tasks import analyze

    tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
    s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]
