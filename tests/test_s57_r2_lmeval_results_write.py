"""lm-eval's own write of the results, failing, ends a tokrag method's run with the one line, exit 2 (s57 r2).

f2 (b908462) made a failed write of any errno one line for every command, and noted one left: lm-eval's
``EvaluationTracker.save_results_aggregated`` (and ``save_results_samples``) catches every exception of its
``mkdir`` and ``write_text``, logs ``Could not save results aggregated`` and goes on, so ``lm_eval --model <tokrag
method> --output_path ...`` whose disk turned full, read-only or failing during the run exited 0 without its results
file. The start-up hook (``tokrag_model._lmeval_hook``) now raises that OSError once the run ends, marked as a
write's: ``python -m lm_eval: error: [Errno 5] Input/output error: '<output_path>/.../results_<date>.json' (a write
failed: ...)``, exit 2. Another model's run keeps lm-eval's WARNING and exit 0.

lm-eval's run is replaced by the tracker's real save of a small result (as test_s57_f2_write_errors replaces it by
one tokrag write); the failing disk is ``Path.write_text`` of the results file raising EIO, naming it as the kernel's
error does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TAIL = "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"

CHILD = textwrap.dedent("""
    import errno, os, pathlib, runpy, sys
    from lm_eval._cli import run
    from lm_eval.loggers import EvaluationTracker

    real = pathlib.Path.write_text

    def write_text(self, *a, **k):
        if self.name.startswith("results_"):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return real(self, *a, **k)

    def execute(args):  # lm-eval's run, as far as its save of the results
        pathlib.Path.write_text = write_text
        EvaluationTracker(output_path=sys.argv[-1]).save_results_aggregated(results={"results": {}}, samples=None)
        print("the run went on")

    run.Run._execute = staticmethod(execute)
    sys.argv[-1:] = ["--output_path", sys.argv[-1]]
    runpy.run_module("lm_eval", run_name="__main__", alter_sys=True)
""")


def _run(tmp_path: Path, model: str) -> tuple[subprocess.CompletedProcess, Path]:
    pytest.importorskip("lm_eval")
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([sys.executable, str(script), "run", "--model", model, "--tasks", "wiki_lm_bm25",
                           "--limit", "1", str(out)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return proc, out


def test_lm_eval_with_a_tokrag_method_whose_results_write_fails_is_one_line(tmp_path):
    """Was: exit 0, a WARNING 'Could not save results aggregated', no results file."""
    proc, out = _run(tmp_path, "tokrag")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "the run went on" in proc.stdout  # lm-eval's own steps after the save ran (its table is printed)
    last = proc.stderr.strip().splitlines()[-1]
    (folder,) = out.iterdir()  # lm-eval's folder named after the model
    (name,) = {x.split("'")[1] for x in [last]}
    assert Path(name).parent == folder and Path(name).name.startswith("results_") and name.endswith(".json")
    assert last == (f"python -m lm_eval: error: [Errno 5] Input/output error: '{name}' (a write failed: the disk or its "
                    "connection failed); check the disk (dmesg; a network or removable disk: its connection) or "
                    "choose another output path (lm_eval: --output_path) or TOKRAG_CACHE_DIR (tokrag's caches) on "
                    f"another disk {TAIL}"), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert list(folder.iterdir()) == []
    import lm_eval.loggers.evaluation_tracker as tracker

    source = Path(tracker.__file__).read_text(encoding="utf-8").splitlines()
    (lineno,) = [i for i, x in enumerate(source, 1) if 'eval_logger.warning("Could not save results aggregated")' in x]
    warned = [x for x in proc.stderr.splitlines() if "Could not save results aggregated" in x]
    assert len(warned) == 1 and f"[loggers.evaluation_tracker:{lineno}]" in warned[0], warned  # lm-eval's line


def test_another_models_run_keeps_lm_evals_warning(tmp_path):
    """``--model hf``: lm-eval's behaviour is not changed by tokrag's hook (a WARNING, exit 0)."""
    proc, out = _run(tmp_path, "hf")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Could not save results aggregated" in proc.stderr and "the run went on" in proc.stdout
    assert "error:" not in proc.stderr


def test_tokrag_eval_whose_results_write_fails_is_one_line(tmp_path, monkeypatch, capsys):
    """``tokrag eval`` (lm-eval's CLI in-process; the hook raises, ``tokrag_model.cli`` prints): an EACCES on the
    results folder's creation. Was: exit 0 and lm-eval's WARNING."""
    import errno
    import pathlib

    pytest.importorskip("lm_eval")
    from lm_eval._cli import run
    from lm_eval.loggers import EvaluationTracker

    from tokrag_model.cli import main

    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    out = tmp_path / "out"
    real = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.parent == out:  # lm-eval's <output_path>/<model name> folder ('None': the replaced run names none)
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self, *args, **kwargs)

    def execute(args):
        monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
        EvaluationTracker(output_path=str(out)).save_results_aggregated(results={"results": {}}, samples=None)

    monkeypatch.setattr(run.Run, "_execute", staticmethod(execute))
    capsys.readouterr()
    rc = main(["eval", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--limit", "1", "--output_path", str(out)])
    assert (rc, capsys.readouterr().err.splitlines()[-1:]) == (2, [
        f"tokrag eval: error: [Errno 13] Permission denied: '{out / 'None'}' (a write failed); make the folder writable "
        f"for this user or choose another --output_path / TOKRAG_CACHE_DIR {TAIL}"])
