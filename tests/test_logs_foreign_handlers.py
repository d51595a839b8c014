"""``follow_lm_eval_logging`` shares only lm-eval's own handler with our package loggers, not pytest's capture handlers
(or another handler the root logger has) that sit on ``lm_eval`` when lm-eval runs in-process.

pytest attaches its capture handlers to the root logger and to every non-propagating logger; lm-eval's
``setup_logging`` (run by ``simple_evaluate`` or its CLI in-process) leaves ``lm_eval`` non-propagating. Copied onto
our propagating loggers, pytest's handler got each of our records twice and kept them after the test.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from logging_helpers import saved_loggers

from retrieval.logs import PACKAGES, follow_lm_eval_logging

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def lm_eval_under_pytest():
    """``lm_eval`` as an in-process lm-eval run under pytest leaves it: lm-eval's stream handler, non-propagating,
    and pytest's ``LogCaptureHandler`` on it and on the root logger. Restores every logger touched."""
    from _pytest.logging import LogCaptureHandler

    with saved_loggers(("lm_eval", *PACKAGES)):
        stream, capture = io.StringIO(), LogCaptureHandler()
        src = logging.getLogger("lm_eval")
        src.addHandler(logging.StreamHandler(stream))  # what lm_eval.utils.setup_logging adds
        src.setLevel(logging.INFO)
        src.propagate = False
        src.addHandler(capture)  # what pytest's catching_logs adds to a non-propagating logger, and to the root
        root = logging.getLogger()
        root.addHandler(capture)
        root_level = root.level
        root.setLevel(logging.INFO)
        yield stream, capture
        root.removeHandler(capture)
        root.setLevel(root_level)


def test_our_records_reach_pytests_handler_once_and_lm_evals_once(lm_eval_under_pytest):
    stream, capture = lm_eval_under_pytest
    assert follow_lm_eval_logging() is True
    for name in PACKAGES:
        assert logging.getLogger(name).handlers == [logging.getLogger("lm_eval").handlers[0]]  # lm-eval's only
        assert logging.getLogger(name).level == logging.INFO
    logging.getLogger("tokrag_model.loading").info("converting")
    logging.getLogger("retrieval.bm25").debug("not shown at INFO")
    assert [r.getMessage() for r in capture.records] == ["converting"]  # was twice: copied, and through the root
    assert stream.getvalue().splitlines() == ["converting"]


def test_only_foreign_handlers_on_lm_eval_leave_our_loggers_alone(lm_eval_under_pytest):
    _, capture = lm_eval_under_pytest
    logging.getLogger("lm_eval").handlers[:] = [capture]  # no lm-eval handler: setup_logging has not run
    assert follow_lm_eval_logging() is False
    assert all(logging.getLogger(n).handlers == [] and logging.getLogger(n).level == logging.NOTSET for n in PACKAGES)


def test_a_users_pytest_suite_running_lm_eval_in_process_sees_each_record_once(tmp_path):
    """The whole story in a user's own pytest run (no tokrag conftest): one test runs lm-eval's ``setup_logging``,
    the next loads a model (``follow_lm_eval_logging``) and logs, a third checks that nothing of the second's stayed."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent('''
        import logging

        from retrieval.logs import PACKAGES, follow_lm_eval_logging


        def test_1_lm_eval_runs_in_process():
            from lm_eval.utils import setup_logging

            setup_logging("INFO")
            assert logging.getLogger("lm_eval").propagate is False


        def test_2_a_model_loads(caplog):
            assert follow_lm_eval_logging() is True
            logging.getLogger("tokrag_model.loading").info("converting")
            assert [r.getMessage() for r in caplog.records] == ["converting"]
            for name in PACKAGES:
                assert [type(h).__module__ for h in logging.getLogger(name).handlers] == ["logging"]


        def test_3_nothing_of_the_last_test_stayed(caplog):
            follow_lm_eval_logging()
            logging.getLogger("retrieval.bm25").warning("index built")
            assert [r.getMessage() for r in caplog.records] == ["index built"]
    '''))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("LMEVAL_LOG_LEVEL", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:randomly", "test_user.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout


def test_unittest_assertlogs_handler_is_not_shared(lm_eval_under_pytest):
    """unittest's ``assertLogs("lm_eval")`` puts its ``_CapturingHandler`` on ``lm_eval`` only: a model loaded inside the
    block must not leave it on our loggers (only lm-eval's stream handler is shared)."""
    import unittest

    case = unittest.TestCase()
    lm_eval_handler = logging.getLogger("lm_eval").handlers[0]
    with case.assertLogs("lm_eval", "INFO"):
        logging.getLogger("lm_eval").addHandler(lm_eval_handler)  # assertLogs replaced the handlers; lm-eval's back
        assert follow_lm_eval_logging() is True
        for name in PACKAGES:
            assert logging.getLogger(name).handlers == [lm_eval_handler]
        logging.getLogger("lm_eval").info("inside")
