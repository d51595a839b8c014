"""Ctrl-C (SIGINT) of ``tokrag index build`` and ``tokrag retrieve``: one line on stderr saying what was kept, then
death by SIGINT (the command; an in-process caller gets 130), no traceback, no JVM crash report (found by a breaker,
s44 b6; exit status 130 let a shell loop go on: s44 f7). Before, the JVM that Pyserini starts
in-process took SIGINT and ran its own exit: a dense build died with a JVM fatal-error report in libtorch (an
``hs_err_pid*.log`` left in the working folder) or an abort, a BM25 build exited 130 silently, and ``tokrag retrieve``
printed a KeyboardInterrupt traceback. Now the JVM runs with ``-Xrs`` (``retrieval/java.py``), the retrieval
worker ignores SIGINT and is killed by its interrupted parent, and ``retrieval/cli.py`` reports the interrupt.

Each test runs the command in a subprocess (its own session, as a terminal's foreground job), waits for a marker
file that the slow step writes (no fixed sleeps), then sends SIGINT. The scripts run ``main()`` as the console script
``tokrag`` does (``sys.argv``, no argv).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WAIT = 300  # seconds: generous, the machine may be loaded


def _corpus(tmp_path: Path, n: int = 10) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "title": f"Title {i}", "text": f"passage number {i} about topic "
                                        f"{i % 3} and some words"}) + "\n" for i in range(n)), encoding="utf-8")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TOKRAG_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), TQDM_DISABLE="1", HF_HUB_OFFLINE="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", TRANSFORMERS_VERBOSITY="error", OMP_NUM_THREADS="1")
    return env


def _start(script: str, tmp_path: Path) -> subprocess.Popen:
    """``python -c script`` in ``tmp_path/work`` in a new session (process group), stderr to a pipe."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], cwd=work, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(marker: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT
    while not marker.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended (rc {proc.returncode}) before {marker.name} appeared:\n{err[-3000:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"{marker.name} did not appear within {WAIT} s")
        time.sleep(0.1)


def _interrupt(proc: subprocess.Popen, group: bool = False) -> tuple[int, str]:
    """SIGINT to the process (``group``: to its whole process group, as a terminal's Ctrl-C); -> (rc, stderr)."""
    (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"still running {WAIT} s after SIGINT:\n{err[-3000:]}")
    return proc.returncode, err


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def test_dense_build_ctrl_c_is_one_line_and_the_rerun_resumes(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    marker = tmp_path / "encoding-part-1"
    calls = tmp_path / "calls.txt"
    script = f"""
        import sys
        from pathlib import Path
        import retrieval.dense as dense
        from tokrag_model.cli import main

        dense.PART_SIZE = 4  # 10 passages: 3 parts
        real = dense._encode_passages
        state = {{"n": 0}}

        def encode(enc, p, passages):
            state["n"] += 1
            with open({str(calls)!r}, "a") as f:
                f.write(f"{{len(passages)}}\\n")
            if {str(marker)!r} and state["n"] == 3:  # batch 1 of part 1 (batch size 2)
                Path({str(marker)!r}).touch()
                while True:  # torch keeps encoding until Ctrl-C: the signal lands in torch work
                    real(enc, p, passages)
            return real(enc, p, passages)

        dense._encode_passages = encode
        sys.argv = ["tokrag", "index", "build", "--corpus", {str(corpus)!r}, "--dense", "--batch-size", "2"]
        sys.exit(main())
    """
    proc = _start(script, tmp_path)
    _wait_for(marker, proc)
    rc, err = _interrupt(proc)
    parts = next((tmp_path / "cache" / "dense").glob("*.partial"))
    assert rc == -signal.SIGINT, err[-3000:]  # died of SIGINT: a shell loop or script stops too
    assert "Traceback" not in err and "fatal error" not in err
    assert err == (f"tokrag index build: interrupted; 1 of 3 encoded 4-passage parts are kept in {parts}; run the same "
                   "command again to resume from them\n")
    assert sorted(f.name for f in parts.glob("part-*.npy")) == ["part-00000.npy"]
    assert not list((tmp_path / "work").glob("hs_err_pid*.log"))
    # the rerun (no slow step) encodes only parts 1 and 2: 6 passages
    calls.write_text("")
    marker_off = script.replace(f"if {str(marker)!r} and", "if False and")
    rerun = subprocess.run([sys.executable, "-c", textwrap.dedent(marker_off)], cwd=tmp_path / "work",
                           env=_env(tmp_path), capture_output=True, text=True, timeout=WAIT)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert sum(int(x) for x in calls.read_text().split()) == 6
    assert "dense index of corpus.jsonl: 10 passages" in rerun.stderr


def test_bm25_build_ctrl_c_during_the_java_indexing_is_one_line(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    marker = tmp_path / "in-java"
    script = f"""
        import sys
        from pathlib import Path
        import retrieval.bm25 as bm25
        from tokrag_model.cli import main

        def build(*args, run_java, **kwargs):  # one long Java call, as Lucene's IndexCollection.main on a large corpus
            from retrieval.java import start_jvm
            thread = start_jvm().autoclass("java.lang.Thread")

            def index():
                Path({str(marker)!r}).touch()
                thread.sleep(600000)

            run_java(index)

        bm25.build_bm25_index = build
        sys.argv = ["tokrag", "index", "build", "--corpus", {str(corpus)!r}]
        sys.exit(main())
    """
    proc = _start(script, tmp_path)
    _wait_for(marker, proc)
    t0 = time.monotonic()
    rc, err = _interrupt(proc, group=True)
    assert rc == -signal.SIGINT, err[-3000:]  # died of SIGINT: a shell loop or script stops too
    assert err == ("tokrag index build: interrupted; a BM25 index is kept only when complete, so nothing was kept: "
                   "run the same command again\n")
    assert time.monotonic() - t0 < 120  # at once, not after the Java call returns (10 minutes)
    assert not list((tmp_path / "work").glob("hs_err_pid*.log"))


def test_retrieve_ctrl_c_is_one_line_and_kills_the_worker(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tpassage about topic 1\nq2\ttopic 2 words\n", encoding="utf-8")
    marker = tmp_path / "worker-pid"
    # the worker (a child process) runs a slow retrieve: it writes its pid, then waits in one Java call
    worker_patch = f"""
        import retrieval.worker as w
        def slow(*args, **kwargs):
            import os
            from pathlib import Path
            from retrieval.java import start_jvm
            thread = start_jvm().autoclass("java.lang.Thread")
            Path({str(marker)!r} + ".tmp").write_text(str(os.getpid()))
            os.replace({str(marker)!r} + ".tmp", {str(marker)!r})
            thread.sleep(600000)
        w.FUNCTIONS["retrieve"] = slow
    """
    script = f"""
        import sys
        import retrieval.worker as worker
        from tokrag_model.cli import main

        start = worker.JavaWorker._start

        def patched(self):
            proc_args = {textwrap.dedent(worker_patch)!r}
            import subprocess as sp
            real_popen = sp.Popen

            def popen(cmd, *a, **k):  # the worker's boot line, then the slow retrieve before main() runs
                head, tail = cmd[2].split("from retrieval.worker import main; main()")
                return real_popen([cmd[0], "-c", head + "\\n" + proc_args + "\\nw.main()"], *a, **k)

            sp.Popen = popen
            try:
                return start(self)
            finally:
                sp.Popen = real_popen

        worker.JavaWorker._start = patched
        sys.argv = ["tokrag", "retrieve", "--corpus", {str(corpus)!r}, "--topics", {str(topics)!r}, "--hits", "2",
                    "--output", "run.trec"]
        sys.exit(main())
    """
    proc = _start(script, tmp_path)
    _wait_for(marker, proc)
    worker_pid = int(marker.read_text())
    rc, err = _interrupt(proc, group=True)  # parent and worker, as a terminal's Ctrl-C
    assert rc == -signal.SIGINT, err[-3000:]  # died of SIGINT: a shell loop or script stops too
    assert err == ("tokrag retrieve: interrupted; a run is cached only when its search is complete (a finished search "
                   "is kept, and the same command writes the outputs from it): run the same command again\n")
    deadline = time.monotonic() + 60
    while not _gone(worker_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(worker_pid), f"the retrieval worker {worker_pid} outlived its interrupted parent"
    assert not (tmp_path / "work" / "run.trec").exists()


def test_dispatcher_reports_an_unreported_ctrl_c_in_one_line(monkeypatch, capsys) -> None:
    """A command that lets KeyboardInterrupt through gets one line from ``tokrag`` and exit 130, not a traceback."""
    import tasks.analyze

    from tokrag_model import cli

    def interrupted(argv) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(tasks.analyze, "main", interrupted)
    assert cli.main(["analyze", "--help-not-parsed"]) == 130
    assert capsys.readouterr().err == "tokrag analyze: interrupted; run the same command again\n"
