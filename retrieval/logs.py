"""tokrag's own log lines (a GGUF conversion, a first BM25 index build) under lm-eval's CLI.

lm-eval 0.4.13 configures only its ``lm_eval`` logger (``lm_eval.utils.setup_logging``: one stream handler,
``propagate=False``). The loggers of our packages sit outside that tree, so under ``lm_eval`` their INFO lines
were dropped (the root logger's WARNING level) and a two-minute model conversion ran silently.
"""

from __future__ import annotations

import logging

PACKAGES = ("tokrag_model", "retrieval", "tasks", "leaderboards")


def follow_lm_eval_logging() -> bool:
    """Give our package loggers lm-eval's handlers and level, once lm-eval's ``setup_logging`` has run.

    Idempotent and cheap: call it where a long step may start (model load, retrieval). A program that set up
    logging itself (no handler on ``lm_eval``) is left alone. The level is lm-eval's at the call (``--verbosity``,
    ``LMEVAL_LOG_LEVEL``). Records still propagate to the root logger (unconfigured under the ``lm_eval`` CLI;
    pytest's caplog and a program's own handlers keep seeing them).

    Returns:
        True when the loggers now follow lm-eval's.
    """
    src = logging.getLogger("lm_eval")
    if not src.handlers:
        return False
    for name in PACKAGES:
        logger = logging.getLogger(name)
        logger.setLevel(src.getEffectiveLevel())
        for handler in src.handlers:
            if handler not in logger.handlers:
                logger.addHandler(handler)
    return True
