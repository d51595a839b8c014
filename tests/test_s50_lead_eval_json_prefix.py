"""Under ``tokrag eval``, a ``--metadata`` that is not valid JSON is a ``tokrag eval: error:`` line, as every other
refusal there, not ``lm_eval: error:`` (s50 u1, L2): the hook's argparse action (``_patch_cli_utils``) exited with
lm-eval's prefix whatever the command. Plain ``lm_eval`` keeps its own prefix."""

from __future__ import annotations

import subprocess
import sys

import pytest

from retrieval.errors import ConfigError
from tokrag_model import eval_cli

BAD = "{'questions': 'q.jsonl'}"
LINE = ("--metadata: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)): "
        "{'questions': 'q.jsonl'}; write a JSON object with double-quoted keys and strings, e.g. --metadata "
        "'{\"hits\": 3}', or key=value pairs without braces")


def test_tokrag_eval_names_itself_for_metadata_that_is_not_json():
    proc = subprocess.run([sys.executable, "-m", "tokrag_model.cli", "eval", "--model", "rag-none", "--tasks",
                           "nq_open_bm25", "--metadata", BAD], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr == f"tokrag eval: error: {LINE}\n", proc.stderr[-2000:]


def test_the_error_is_a_config_error_from_main():
    with pytest.raises(ConfigError) as exc:
        eval_cli.main(["--model", "rag-none", "--tasks", "nq_open_bm25", "--metadata", BAD])
    assert str(exc.value) == LINE


def test_plain_lm_eval_keeps_its_prefix():
    code = ("import sys, tokrag_model._lmeval_hook; from lm_eval.__main__ import cli_evaluate; "
            f"sys.argv = ['lm_eval', 'run', '--model', 'rag-none', '--tasks', 'nq_open_bm25', '--metadata', {BAD!r}]; "
            "cli_evaluate()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == f"lm_eval: error: {LINE}", proc.stderr[-2000:]
