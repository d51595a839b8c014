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


def test_a_script_that_imports_lm_eval_names_itself_in_the_error_line(tmp_path):
    """``python benchmarks/reference_cells.py --no-run`` printed 'lm_eval: error: 4 of 4 cells are not finished ...'
    (the hook is installed by any import of lm-eval's registry): the user ran the script, not lm_eval (found by a
    new-user trial). The line now names the script; ``python -m`` names the module."""
    script = tmp_path / "reference_cells.py"
    script.write_text(CODE, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("reference_cells.py: error: --model tokrag: unknown model argument(s) layr\n"), proc.stderr
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "tool.py").write_text(CODE, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pkg.tool"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.stderr.startswith("python -m pkg.tool: error: --model tokrag"), proc.stderr
