"""tokrag's own log lines (a GGUF conversion, a first BM25 index build) under lm-eval's CLI.

lm-eval 0.4.13 configures only its ``lm_eval`` logger (``lm_eval.utils.setup_logging``: one stream handler,
``propagate=False``). The loggers of our packages sit outside that tree, so under ``lm_eval`` their INFO lines
were dropped (the root logger's WARNING level) and a two-minute model conversion ran silently.
"""

from __future__ import annotations

import logging

PACKAGES = ("tokrag_model", "retrieval", "tasks", "leaderboards")
# test frameworks' capture handlers (pytest's, unittest's assertLogs ``_CapturingHandler``): never shared
_CAPTURE_MODULES = ("_pytest", "unittest")


def _lm_evals_handlers(src: logging.Logger) -> list[logging.Handler]:
    """The handlers of ``lm_eval``'s logger that our loggers may share: lm-eval's own stream handler (or a program's
    handler put on ``lm_eval`` only), not another tool's that is also on the root logger, nor a test framework's capture handler (pytest's,
    unittest's ``assertLogs``).

    pytest attaches its capture handlers (``LogCaptureHandler``, ``_LiveLoggingNullHandler``, its ``--log-file``
    handler) to the root logger and to every logger that does not propagate, ``lm_eval`` included once lm-eval's
    ``setup_logging`` has run in-process. Copied onto our propagating loggers, such a handler got each of our records
    twice (directly and through the root) and stayed on them after pytest took it off ``lm_eval`` and the root.
    A handler the root logger has gets our records by propagation anyway.
    """
    root = logging.getLogger().handlers
    return [h for h in src.handlers if h not in root and not type(h).__module__.startswith(_CAPTURE_MODULES)]


def _root_prints() -> bool:
    """Whether the root logger holds a handler that shows records: a program's own logging set-up
    (``logging.basicConfig``, a ``dictConfig``), not a test framework's capture handler nor a ``NullHandler``. Our
    loggers propagate, so such a handler already shows each of our records.

    Any such handler counts, whatever it writes to: a root logger with only a ``FileHandler`` sends our INFO lines to
    that file and no longer to the terminal, while lm-eval's own lines still reach the terminal through its stream
    handler. That is intended: the program's root handler decides where our records go."""
    return any(not isinstance(h, logging.NullHandler) and not type(h).__module__.startswith(_CAPTURE_MODULES)
               for h in logging.getLogger().handlers)


def follow_lm_eval_logging() -> bool:
    """Give our package loggers lm-eval's handler and level, once lm-eval's ``setup_logging`` has run.

    Idempotent and cheap: call it where a long step may start (model load, retrieval). A program that set up
    logging itself (no handler on ``lm_eval``) is left alone. The level is lm-eval's at the call (``--verbosity``,
    ``LMEVAL_LOG_LEVEL``). Records still propagate to the root logger (unconfigured under the ``lm_eval`` CLI;
    pytest's caplog and a program's own handlers keep seeing them). Only lm-eval's own handlers are shared
    (:func:`_lm_evals_handlers`): a handler of pytest's or one the root logger also has, which ``lm_eval`` holds when
    lm-eval runs in-process under pytest or a program's logging set-up, is not copied (each record showed twice);
    with no handler left (only such ones on ``lm_eval``) nothing is touched.

    A program that configured the root logger (``logging.basicConfig``) and runs lm-eval in-process
    (``simple_evaluate``, lm-eval's CLI entry) shows our records through its root handler already: there our loggers
    take lm-eval's level only, not its handler (each record showed twice, in lm-eval's format and the program's), and
    a handler an earlier call shared before the root was configured is taken off again. That holds whatever the root
    handler writes to (:func:`_root_prints`): with only a ``FileHandler`` on the root, our records go to its file and
    not to the terminal, where lm-eval's own lines still show; the program's root handler decides where ours go.

    Returns:
        True when the loggers now follow lm-eval's (its level; its handler too unless the root logger shows our records).
    """
    src = logging.getLogger("lm_eval")
    handlers = _lm_evals_handlers(src)
    if not handlers:
        return False
    shared = not _root_prints()
    for name in PACKAGES:
        logger = logging.getLogger(name)
        logger.setLevel(src.getEffectiveLevel())
        for handler in handlers:
            if shared and handler not in logger.handlers:
                logger.addHandler(handler)
            elif not shared and handler in logger.handlers:
                logger.removeHandler(handler)
    return True


QUIET_FOREIGN_LOGGERS = ("faiss.loader",)
"""Other libraries' loggers whose INFO lines read as errors: ``faiss.loader`` logs each SIMD build it could not
load (``Could not load library with AVX512 support due to: ModuleNotFoundError(...)``) at INFO, then loads the
generic build, which is how faiss-cpu wheels work; a ``logging.basicConfig(level=INFO)`` (``tokrag leaderboard``,
``tokrag ... -v``) printed them in the user's terminal."""


def quiet_foreign_loggers() -> None:
    """Set the loggers of :data:`QUIET_FOREIGN_LOGGERS` to WARNING, each unless it has a level already (the user
    configured it: ``logging.getLogger("faiss.loader").setLevel(logging.INFO)`` keeps its lines). Idempotent and
    cheap: called where the modules that import faiss are imported (:mod:`retrieval.dense`, :mod:`retrieval.prebuilt`)."""
    for name in QUIET_FOREIGN_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
