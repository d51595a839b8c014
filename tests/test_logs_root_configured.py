"""A program that configures the root logger (``logging.basicConfig``) and runs lm-eval in-process sees each of our
records once: ``follow_lm_eval_logging`` gave our loggers lm-eval's stream handler, and the records propagated to
the program's root handler as well, so each showed twice (in lm-eval's format and the program's). Under the
``lm_eval`` CLI (no root handler) our INFO lines still show in lm-eval's format (tests/test_logs.py), and under
pytest's capture (tests/test_logs_foreign_handlers.py) as before."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from logging_helpers import saved_loggers

from retrieval.logs import PACKAGES, follow_lm_eval_logging

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def program_logging():
    """lm-eval's set-up in-process (its stream handler on ``lm_eval``, non-propagating) under pytest (its capture
    handler on the root); the program's own root handler is added by the test. Restores every logger touched."""
    from _pytest.logging import LogCaptureHandler

    with saved_loggers(("lm_eval", *PACKAGES)):
        lm_eval_stream, program_stream, capture = io.StringIO(), io.StringIO(), LogCaptureHandler()
        src = logging.getLogger("lm_eval")
        src.addHandler(logging.StreamHandler(lm_eval_stream))  # what lm_eval.utils.setup_logging adds
        src.setLevel(logging.INFO)
        src.propagate = False
        root = logging.getLogger()
        program = logging.StreamHandler(program_stream)  # what logging.basicConfig() puts on the root
        program.setFormatter(logging.Formatter("ROOT %(name)s: %(message)s"))
        root.addHandler(capture)
        root_level = root.level
        yield lm_eval_stream, program_stream, program, capture
        root.removeHandler(capture)
        root.removeHandler(program)
        root.setLevel(root_level)


def test_a_programs_root_handler_shows_our_records_once(program_logging):
    lm_eval_stream, program_stream, program, capture = program_logging
    logging.getLogger().addHandler(program)
    assert follow_lm_eval_logging() is True
    for name in PACKAGES:  # lm-eval's level, not its handler: the root's shows our records
        assert logging.getLogger(name).handlers == [] and logging.getLogger(name).level == logging.INFO
    logging.getLogger("tokrag_model.loading").info("converting")
    logging.getLogger("retrieval.bm25").debug("not shown at INFO")
    logging.getLogger("lm_eval.evaluator").info("lm-eval's own")
    assert program_stream.getvalue().splitlines() == ["ROOT tokrag_model.loading: converting"]  # was also in lm-eval's
    assert lm_eval_stream.getvalue().splitlines() == ["lm-eval's own"]
    assert [r.getMessage() for r in capture.records] == ["converting"]


def test_a_root_handler_added_after_the_first_call_takes_lm_evals_off_again(program_logging):
    lm_eval_stream, program_stream, program, _ = program_logging
    assert follow_lm_eval_logging() is True  # no program handler yet: lm-eval's is shared, as under the CLI
    logging.getLogger("tokrag_model.loading").info("first")
    logging.getLogger().addHandler(program)
    assert follow_lm_eval_logging() is True and follow_lm_eval_logging() is True
    assert all(logging.getLogger(n).handlers == [] for n in PACKAGES)
    logging.getLogger("tokrag_model.loading").info("second")
    assert lm_eval_stream.getvalue().splitlines() == ["first"]
    assert program_stream.getvalue().splitlines() == ["ROOT tokrag_model.loading: second"]


def test_a_null_handler_on_the_root_shows_nothing_so_lm_evals_is_shared(program_logging):
    lm_eval_stream, program_stream, _, _ = program_logging
    null = logging.NullHandler()
    logging.getLogger().addHandler(null)
    try:
        assert follow_lm_eval_logging() is True
        logging.getLogger("retrieval.bm25").info("index built")
    finally:
        logging.getLogger().removeHandler(null)
    assert lm_eval_stream.getvalue().splitlines() == ["index built"]


SCRIPT = textwrap.dedent('''
    import logging, sys

    if sys.argv[1] == "basicConfig":
        logging.basicConfig(level=logging.INFO, format="ROOT %(name)s: %(message)s")
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", "--model", "tokrag", "--model_args", f"pretrained={sys.argv[2]},layer=9",
                "--tasks", "wiki_lm_bm25", "--device", "cpu"]
    try:
        cli_evaluate()  # lm-eval's CLI entry in-process: its setup_logging, then the model (refused: 4 layers)
    except Exception as exc:
        print(type(exc).__name__, exc)
    logging.getLogger("tokrag_model.loading").info("converting")
    logging.getLogger("retrieval.bm25").warning("index built")
''')


@pytest.mark.parametrize("setup", ["basicConfig", "cli"])
def test_lm_evals_cli_entry_in_process_shows_each_of_our_records_once(tmp_path, setup):
    """The whole story in a program of its own: lm-eval's CLI entry run in-process (its ``setup_logging``, then the
    tokrag constructor, which calls ``follow_lm_eval_logging``), with and without ``logging.basicConfig``."""
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "llama", "num_hidden_layers": 4, "vocab_size": 100}')
    (tmp_path / "program.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("LMEVAL_LOG_LEVEL", None)
    done = subprocess.run([sys.executable, "program.py", setup, str(model)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "ConfigError --model tokrag: layer=9 is outside the model's 4 layers (0..3)" in done.stdout
    lines = done.stderr.splitlines()
    ours = [line for line in lines if line.endswith(("converting", "index built"))]
    if setup == "basicConfig":  # was also each in lm-eval's format
        assert ours == ["ROOT tokrag_model.loading: converting", "ROOT retrieval.bm25: index built"]
    else:  # the lm_eval CLI: lm-eval's format, once
        assert len(ours) == 2, ours
        assert re.fullmatch(r"\S+ INFO +\[tokrag_model\.loading:\d+\] converting", ours[0]), ours
        assert re.fullmatch(r"\S+ WARNING +\[retrieval\.bm25:\d+\] index built", ours[1]), ours
    assert any("Initializing tokrag model" in line for line in lines)  # lm-eval's own lines as before
