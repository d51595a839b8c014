"""A write stopped by a full disk, a quota or a file-size limit is one line from every command entry point (s53 r2,
review of 62cffed; /work/scratch/s53/r2/probe_jobs_no_room.sh). 62cffed gave the line to ``tokrag ...``
(``tokrag_model.cli._dispatch``) only, but ``tokrag leaderboard run --jobs 2`` starts its helper runners as ``python
-m leaderboards.cli run ...``: a helper whose cell journal met ``ulimit -f`` printed a 60-line traceback ending
``OSError: [Errno 27] File too large`` before the main process's one line; ``python -m retrieval.cli``, documented as
the same command as ``tokrag retrieve`` (retrieval/README.md), printed one too. Both now print the line
(``retrieval.errors.no_room_line``), exit status 2, and the same command completes once there is room."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from leaderboard_helpers import TOY, runner_cmd, subprocess_env, write_spec

LINE = ("error: [Errno 27] File too large (a full disk, a disk quota or a file-size limit stopped a write); make room "
        "(or raise the limit: ulimit -f) and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)")


def _line(path: Path) -> str:
    """:data:`LINE` naming the file that met the limit, as the atomic writes name it (s55 f4)."""
    head, tail = LINE.split(" (a full disk", 1)
    return f"{head}: '{path}' (a full disk{tail}"


def _named_file(errors: list[str], program: str, root: Path) -> Path | None:
    """The file the one line ``errors`` names (``program`` + :func:`_line`), when it is under ``root``; else None."""
    head, tail = LINE.split(" (a full disk", 1)
    prefix, suffix = f"{program}{head}: '", f"' (a full disk{tail}"
    if len(errors) != 1 or not errors[0].startswith(prefix) or not errors[0].endswith(suffix):
        return None
    path = Path(errors[0][len(prefix):-len(suffix)])
    return path if path.is_relative_to(root) else None


def _limited(size: int):
    def preexec():  # in the child only: RLIMIT_FSIZE below what the command writes (EFBIG, as a full disk's ENOSPC)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return preexec


def _env(tmp_path: Path, limited: bool = False) -> dict[str, str]:
    env = subprocess_env(tmp_path / "cache") | {"TOKRAG_GIT_COMMIT": "test-commit"}
    env.pop("TOKRAG_TRACEBACK", None)
    if limited:  # Python writes a .pyc in one write() and does not check for a short one: under the limit it would
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave a truncated .pyc of a module changed since its last compile
    return env


def test_the_leaderboard_module_a_jobs_helper_runs_is_one_line(tmp_path):
    spec = write_spec(tmp_path, methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}],
                      tasks=["toy_qa"], limit=6, extra={"progress_chunk": 1})
    runs = tmp_path / "runs"
    proc = subprocess.run(runner_cmd(spec, runs), env=_env(tmp_path, limited=True), capture_output=True, text=True, timeout=600,
                          preexec_fn=_limited(4096))  # the cell's journal is larger
    errors = [line for line in proc.stderr.splitlines() if "rror" in line]
    assert proc.returncode == 2, proc.stderr[-3000:]  # was: rc 1, a traceback
    # the line names the file that met the limit (s55 f4; the first write over 4096 bytes: the cache's file-hash record)
    assert _named_file(errors, "tokrag leaderboard: ", tmp_path) is not None, proc.stderr[-3000:]
    again = subprocess.run(runner_cmd(spec, runs), env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]  # the same command, with room, completes the cell
    assert json.loads(again.stdout)["ran"] == ["standard/toy_qa/seed1"]


TEXT = " It is described at length in many encyclopedias, guides and histories of the period." * 4
PASSAGES = [{"id": f"p{i}", "title": f"T{i}", "text": f"Passage {i} about Hamlet, Paris and the Louvre." + TEXT}
            for i in range(6)]
TOPICS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "where is the louvre", "answers": ["Paris"]}]


def test_python_m_retrieval_cli_is_one_line(tmp_path):
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")

    def cmd(out: Path) -> list[str]:
        return [sys.executable, "-m", "retrieval.cli", "retrieve", "--corpus", str(tmp_path / "passages.jsonl"),
                "--bm25", "--topics", str(tmp_path / "topics.jsonl"), "--hits", "3", "--output", str(out),
                "--cache-dir", str(tmp_path / "cache")]

    warm = subprocess.run(cmd(tmp_path / "warm" / "run.trec"), env=_env(tmp_path), capture_output=True, text=True,
                          timeout=600)  # the run cache now holds the search
    assert warm.returncode == 0, warm.stderr[-3000:]
    proc = subprocess.run(cmd(tmp_path / "out" / "run.trec"), env=_env(tmp_path, limited=True), capture_output=True, text=True,
                          timeout=600, preexec_fn=_limited(600))  # run.trec (~200 bytes) fits, its ctxs (~3 KB) not
    errors = [line for line in proc.stderr.splitlines() if "rror" in line]
    assert (proc.returncode, errors) == (2, ["tokrag retrieve: " + _line(tmp_path / "out" / "run.ctxs.jsonl")]), \
        proc.stderr[-3000:]  # was: rc 1, a traceback; the file named since s55 f4
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())  # nothing half-written
