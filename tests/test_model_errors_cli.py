"""Under plain ``lm_eval`` (the .pth hook), a tokrag error is one clear line, not a stack trace."""

from __future__ import annotations

import subprocess
import sys

CODE = (
    "import lm_eval.api.registry\n"
    "from retrieval.errors import ConfigError\n"
    "try:\n"
    "    raise ValueError('inner')\n"
    "except ValueError as exc:\n"
    "    raise RuntimeError('wrapped by lm-eval') from ConfigError('--model tokrag: unknown model argument(s) layr')\n"
)


def test_tokrag_error_prints_one_line_under_lm_eval():
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "lm_eval: error: --model tokrag: unknown model argument(s) layr" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_other_errors_keep_their_traceback():
    proc = subprocess.run([sys.executable, "-c", "import lm_eval.api.registry\nraise KeyError('x')"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "KeyError" in proc.stderr
