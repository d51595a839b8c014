"""Plain ``lm_eval`` with a tokrag method whose run meets a full disk, a disk quota or a file-size limit (s53 r2's note on
62cffed / 3ded8ae): ``tokrag ...`` says it in one line (``retrieval.errors.no_room_line``, exit 2), but the start-up
hook's handlers knew only tokrag's own errors, so ``python -m lm_eval`` printed a traceback ending ``OSError: [Errno 27]
File too large``, exit 1. The hook's ``HarnessCLI.execute`` now prints the same line, exit 2; ``TOKRAG_TRACEBACK=1`` and
runs of other models keep the traceback.

The child runs lm-eval's own ``__main__`` (``python -m lm_eval``) under a real ``RLIMIT_FSIZE`` (Python ignores
SIGXFSZ: the write gets EFBIG), with lm-eval's run (``Run._execute``: task set-up, model load, evaluation; ~30 s and
more) replaced by a write of the size of a results file, so that only the command line, the hook and the write run.
Bytecode writing is off in the child: a ``.pyc`` written under the limit would be cut (r2)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

REPO = Path(__file__).resolve().parents[1]
LINE = ("python -m lm_eval: error: [Errno 27] File too large (a full disk, a disk quota or a file-size limit stopped a "
        "write); make room (or raise the limit: ulimit -f) and run the same command again (set TOKRAG_TRACEBACK=1 for "
        "the stack trace)")

CHILD = textwrap.dedent("""
    import runpy, sys
    from pathlib import Path
    from lm_eval._cli import run

    def execute(args):  # lm-eval's run, as far as its results file: a write of 64 KB
        Path(sys.argv[-1], "results.json").write_bytes(b"{" + b" " * 65536 + b"}")

    run.Run._execute = staticmethod(execute)
    sys.argv[-1:] = ["--output_path", sys.argv[-1]]
    runpy.run_module("lm_eval", run_name="__main__", alter_sys=True)
""")


def _run(tmp_path: Path, model: str, traceback: bool = False) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    if traceback:
        env["TOKRAG_TRACEBACK"] = "1"

    def limit():  # in the child only: the results file (64 KB) does not fit
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    # sys.argv[-1] is popped by the child and given back as --output_path (after the run's own arguments)
    return subprocess.run([sys.executable, str(script), "run", "--model", model, "--tasks", "wiki_lm_bm25", "--limit",
                           "1", str(out)], env=env, capture_output=True, text=True, timeout=600, preexec_fn=limit,
                          cwd=tmp_path)


@pytest.mark.parametrize("model", ["tokrag", "rag-standard"])
def test_a_full_disk_under_plain_lm_eval_is_tokrags_one_line(tmp_path, model):
    proc = _run(tmp_path, model)
    assert (proc.returncode, proc.stderr.strip().splitlines()[-1:]) == (2, [LINE]), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr  # was: a traceback ending 'OSError: [Errno 27] File too large', exit 1


@pytest.mark.parametrize("model,traceback", [("tokrag", True), ("hf", False)])
def test_tokrag_traceback_and_other_models_keep_the_traceback(tmp_path, model, traceback):
    proc = _run(tmp_path, model, traceback=traceback)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith(
        "OSError: [Errno 27] File too large"), proc.stderr[-3000:]
