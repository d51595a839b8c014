"""Bad options of the benchmark scripts (benchmarks/*.py, benchmarks/gpu_check.sh) get one clear
``<script>: error: ...`` line naming the option, exit 2, before any expensive work (model load, sweeps, index
builds): a user trial got tracebacks, some only after minutes of work. Every run here is a subprocess that
must end within seconds; no model is loaded."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 25  # the fixed scripts answer in about a second; the old ones worked for minutes first


def _run(cmd: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    full_env.pop("TOKRAG_TRACEBACK", None)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=full_env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(cmd)} still ran after {TIMEOUT} s: a bad option must be refused before any work")


def _script(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return _run([sys.executable, f"benchmarks/{script}", *args], env)


def _one_line_error(proc: subprocess.CompletedProcess, script: str, *words: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert lines[0].startswith(f"{script}: error: "), lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture
def under_file(tmp_path: Path) -> str:
    (tmp_path / "afile").write_text("x")
    return str(tmp_path / "afile" / "sub")


# ---- 1. decoding.py ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["--max-gen-toks", "0"], "--max-gen-toks"),
    (["--max-gen-toks", "1"], "--max-gen-toks"),  # no decode step: decode_step_ratio_* divided by zero
    (["--batch-methods", "rag-bogus"], "--batch-methods"),
    (["--batch", "0"], "--batch"),
    (["--rounds", "0"], "--rounds"),
    (["--ll-n", "-1"], "--ll-n"),
    (["--n", "0"], "--n"),
    (["--k", "0"], "--k"),
])
def test_decoding_bad_options(args, option):
    line = _one_line_error(_script("decoding.py", *args), "decoding.py", option)
    if option == "--batch-methods":
        assert "rag-bogus" in line and "rag-standard" in line  # names the valid methods


def test_decoding_max_gen_toks_says_why():
    line = _one_line_error(_script("decoding.py", "--max-gen-toks", "1"), "decoding.py", ">= 2")
    assert "decode step" in line


# ---- 2. decoding.py: the documented headline ----------------------------------------------------------------

def _decoding_module():
    spec = importlib.util.spec_from_file_location("_bench_decoding", REPO / "benchmarks" / "decoding.py")
    mod = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        spec.loader.exec_module(mod)  # module level: os/sys/json only, no torch
    finally:
        sys.path[:] = saved
    return mod


def test_decoding_speedup_headline_is_rag_standard_and_tokrag_only():
    """gpu_check.sh passes --batch-methods all: the headline became another method's minimum."""
    mod = _decoding_module()
    by_method = {"rag-standard": 2.0, "tokrag": 1.6, "rag-none": 1.1, "rag-replug": 0.9}
    assert mod.headline(by_method) == 1.6
    assert mod.headline({"rag-none": 1.1}) is None
    assert mod.headline({}) is None
    assert "at ``--batch``" in mod.__doc__ or "at --batch" in mod.__doc__


# ---- 3. retrieval.py ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["--questions", "0"], "--questions"),
    (["--questions", "-2"], "--questions"),
    (["--data-dir", "/nonexistent/tokrag-data"], "--data-dir"),
    (["--threads", "0"], "--threads"),
])
def test_retrieval_bad_options(args, option):
    _one_line_error(_script("retrieval.py", *args), "retrieval.py", option)


def test_retrieval_cache_dir_under_a_file(under_file):
    _one_line_error(_script("retrieval.py", "--cache-dir", under_file), "retrieval.py", "--cache-dir", "afile")


# ---- 4. replug_weights.py -----------------------------------------------------------------------------------

def test_replug_unknown_task():
    _one_line_error(_script("replug_weights.py", "--task", "nope_task"), "replug_weights.py", "--task", "nope_task")


def test_replug_questions_zero_refused():
    _one_line_error(_script("replug_weights.py", "--questions", "0"), "replug_weights.py", "--questions")


# ---- 5. tokrag_analysis.py ----------------------------------------------------------------------------------

def test_analysis_out_under_a_file(under_file):
    _one_line_error(_script("tokrag_analysis.py", "--out", under_file), "tokrag_analysis.py", "--out")


@pytest.mark.parametrize("args, option", [(["--layers", "bogus"], "--layers"), (["--n-dev", "0"], "--n-dev")])
def test_analysis_bad_options(args, option, tmp_path):
    _one_line_error(_script("tokrag_analysis.py", *args, "--out", str(tmp_path / "out")), "tokrag_analysis.py", option)


# ---- 6. leaderboard.py, reference_cells.py ------------------------------------------------------------------

@pytest.mark.parametrize("script", ["leaderboard.py", "reference_cells.py"])
def test_spec_missing(script):
    _one_line_error(_script(script, "--spec", "/nonexistent/tokrag.yaml"), script, "--spec")


@pytest.mark.parametrize("script", ["leaderboard.py", "reference_cells.py"])
def test_runs_dir_under_a_file(script, under_file):
    _one_line_error(_script(script, "--runs-dir", under_file), script, "--runs-dir")


def test_leaderboard_help_description_whole():
    out = " ".join(_script("leaderboard.py", "--help").stdout.split())
    assert "second run over the finished folders" in out and "of the report." in out, out


# ---- 7. gpu_check.sh ----------------------------------------------------------------------------------------

def test_gpu_check_python_missing_folder():
    proc = _run(["bash", "benchmarks/gpu_check.sh", "--dry-run"], env={"GPU_CHECK_PYTHON": "/nonexistent/python"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("gpu_check.sh: ") and "GPU_CHECK_PYTHON=/nonexistent/python" in lines[0], lines[0]


def test_gpu_check_help():
    proc = _run(["bash", "benchmarks/gpu_check.sh", "--help"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("GPU check") and "--dry-run" in proc.stdout and "set -euo" not in proc.stdout


# ---- 8. every option has a help text ----------------------------------------------------------------------

@pytest.mark.parametrize("script", ["decoding.py", "retrieval.py", "replug_weights.py", "tokrag_analysis.py",
                                    "leaderboard.py", "reference_cells.py"])
def test_every_option_has_help(script):
    proc = _script(script, "--help")
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("options:", 1)[1]
    entries = re.split(r"\n(?=  -)", "\n" + section.strip("\n"))
    bare = []
    for entry in entries:
        if not entry.strip():
            continue
        first, *rest = entry.strip("\n").splitlines()
        if not re.search(r"\S {2,}\S", first.strip()) and not any(r.strip() for r in rest):
            bare.append(first.strip())
    assert not bare, f"{script}: options without help: {bare}"
