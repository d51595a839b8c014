"""Shared helper of the tests that run ``tokrag eval`` / lm-eval's CLI in-process up to the model load."""

from __future__ import annotations

from typing import Any, Callable


def stop_at_model_load(monkeypatch, reached: Callable[..., Any]) -> None:
    """Replace ``lm_eval.simple_evaluate`` (where lm-eval's CLI builds the model) by ``reached`` (called with its
    arguments: it raises, so a run that got past every pre-load check ends there), index only our tasks (lm-eval's
    own ~10k task files cost ~10 s a run and none is used), show tokrag's one-line errors (no traceback) and stay
    offline."""
    import lm_eval
    import lm_eval.tasks

    monkeypatch.setattr(lm_eval, "simple_evaluate", reached)
    init = lm_eval.tasks.TaskManager.__init__

    def ours_only(self, *args, **kwargs):
        kwargs["include_defaults"] = False
        return init(self, *args, **kwargs)

    monkeypatch.setattr(lm_eval.tasks.TaskManager, "__init__", ours_only)
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
