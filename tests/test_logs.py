"""Our INFO lines (a model conversion, a first index build) under lm_eval's logging set-up."""

from __future__ import annotations

import io
import logging

import pytest
from logging_helpers import saved_loggers


@pytest.fixture
def loggers():
    """Save and restore the handlers, level and propagation of lm_eval's and our package loggers."""
    from retrieval.logs import PACKAGES

    with saved_loggers(("lm_eval", *PACKAGES)):
        yield


def test_package_loggers_follow_lm_evals_handler_and_level(loggers):
    from retrieval.logs import follow_lm_eval_logging

    assert follow_lm_eval_logging() is False  # lm-eval's setup_logging has not run: nothing is touched
    assert logging.getLogger("retrieval").handlers == [] and logging.getLogger("retrieval").level == logging.NOTSET

    stream = io.StringIO()
    src = logging.getLogger("lm_eval")
    src.addHandler(logging.StreamHandler(stream))
    src.setLevel(logging.INFO)
    src.propagate = False  # what lm_eval.utils.setup_logging sets
    assert follow_lm_eval_logging() is True and follow_lm_eval_logging() is True  # idempotent: one handler each
    logging.getLogger("retrieval.bm25").info("BM25 index built")
    logging.getLogger("tokrag_model.loading").info("converting")
    logging.getLogger("tasks.data").debug("not shown at INFO")
    assert stream.getvalue().splitlines() == ["BM25 index built", "converting"]
    assert len(logging.getLogger("tasks").handlers) == 1 and logging.getLogger("tasks").propagate is True  # caplog sees them

    src.setLevel(logging.WARNING)  # --verbosity WARNING, applied at the next call
    follow_lm_eval_logging()
    logging.getLogger("retrieval.bm25").info("hidden")
    assert stream.getvalue().splitlines() == ["BM25 index built", "converting"]


def test_retrieval_worker_logs_at_the_parents_level(loggers, monkeypatch):
    """The Java worker (a child process) gets the parent's level for `retrieval`; its INFO line about a
    first index build reaches stderr under lm_eval."""
    import subprocess

    from retrieval import worker

    seen = {}

    class FakePopen:
        def __init__(self, cmd, env, **kw):
            seen["level"] = env[worker.LOG_LEVEL_ENV]
            raise OSError("stop here")

    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    for level, want in ((logging.NOTSET, str(logging.WARNING)), (logging.INFO, str(logging.INFO))):
        logging.getLogger("retrieval").setLevel(level)
        with pytest.raises(OSError, match="stop here"):
            worker.JavaWorker()._start()
        assert seen["level"] == want
