"""A write that fails with any OSError is one line from every command, not only a full disk (s57 f2).

At s56 the commands' one line (``retrieval.errors.print_no_room``: ``tokrag ...``, ``python -m retrieval.cli``,
``python -m leaderboards.cli``, ``lm_eval`` with a tokrag method through the start-up hook) covered ``ENOSPC``,
``EDQUOT`` and ``EFBIG`` only: a write meeting a read-only file system (``EROFS``), no permission (``EACCES``,
``EPERM``), a failing disk (``EIO``), a name too long (``ENAMETOOLONG``) or a folder at the path (``EISDIR``) ended in a
Python traceback (exit 1). Now tokrag's writes (:mod:`retrieval.io`: the atomic writes, ``no_room_naming``'s in-place
writes, the folder locks and scratch folders; ``tokrag retrieve``'s renames) mark their OSErrors
(``retrieval.errors.mark_write``), and the same line prints for a marked error of any errno and for ``EROFS``
anywhere: the program, the file, the reason and what to do, exit 2. An OSError no tokrag write raised (a read) keeps
its traceback, as does an error met while another was handled.

Every failing disk here is a fake: :mod:`retrieval.io`'s ``os`` whose ``fsync`` raises the errno without a path, as a
failing or read-only disk reports a buffered write's flush or fsync; a monkeypatched ``open`` of the journal; or a real
error of the kernel that changes nothing (a name too long, a folder where a file is renamed). No device, mount or
permission is changed.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.runner as runner
import retrieval.io as rio
from leaderboards.keys import cell_keys
from retrieval.errors import print_no_room

REPO = Path(__file__).resolve().parents[1]
TAIL = "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"
TEXT = " It is described at length in many encyclopedias, guides and histories of the period." * 4
PASSAGES = [{"id": f"p{i}", "title": f"T{i}", "text": f"Passage {i} about Hamlet, Paris and the Louvre." + TEXT}
            for i in range(6)]
TOPICS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
          {"id": "q2", "question": "where is the louvre", "answers": ["Paris"]}]


@pytest.fixture(autouse=True)
def _no_traceback_env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")


class _FailingFsyncOs:
    """``os`` for :mod:`retrieval.io`, except that ``fsync`` raises ``OSError(code)`` without a path."""

    def __init__(self, code: int) -> None:
        self.code = code

    def __getattr__(self, name):
        return getattr(os, name)

    def fsync(self, fd: int) -> None:
        raise OSError(self.code, os.strerror(self.code))


def _fail_writes_of(monkeypatch, name: str, code: int) -> None:
    """Every :func:`retrieval.io.write_beside` of a file called ``name`` meets a disk whose fsync fails with ``code``."""
    real = rio.write_beside

    def write_beside(path, data):
        if Path(path).name != name:
            return real(path, data)
        with monkeypatch.context() as m:
            m.setattr(rio, "os", _FailingFsyncOs(code))
            return real(path, data)

    monkeypatch.setattr(rio, "write_beside", write_beside)


# --- tokrag retrieve (tokrag_model.cli) and python -m retrieval.cli ---------------------------------------------------

RETRIEVE = "--output / --output-ctxs / --cache-dir (TOKRAG_CACHE_DIR)"
RETRIEVE_LINES = {
    errno.EIO: ("[Errno 5] Input/output error: '{f}' (a write failed: the disk or its connection failed); check the "
                f"disk (dmesg; a network or removable disk: its connection) or choose another {RETRIEVE} on another "
                f"disk {TAIL}"),
    errno.EROFS: f"[Errno 30] Read-only file system: '{{f}}' (a write failed); choose another {RETRIEVE} on a writable "
                 f"disk {TAIL}",
    errno.EACCES: ("[Errno 13] Permission denied: '{f}' (a write failed); make the folder writable for this user or "
                   f"choose another {RETRIEVE} {TAIL}"),
}


def _retrieve_args(root: Path, out: Path, hits: int) -> list[str]:
    return ["retrieve", "--corpus", str(root / "passages.jsonl"), "--bm25", "--topics", str(root / "topics.jsonl"),
            "--hits", str(hits), "--output", str(out), "--cache-dir", str(root / "cache")]


@pytest.fixture
def retrieved(tmp_path):
    """A corpus, topics, an earlier ``tokrag retrieve`` output (3 hits) and the run cache holding the 2-hit search."""
    from tokrag_model.cli import main

    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    assert main(_retrieve_args(tmp_path, tmp_path / "out" / "run.trec", 3)) == 0
    assert main(_retrieve_args(tmp_path, tmp_path / "warm" / "run.trec", 2)) == 0
    return tmp_path


@pytest.mark.parametrize("code", [errno.EIO, errno.EROFS, errno.EACCES])
def test_tokrag_retrieve_whose_output_cannot_be_written_is_one_line(retrieved, monkeypatch, capsys, code):
    """Was: a traceback ending ``OSError: [Errno 5] Input/output error: '.../run.ctxs.jsonl'`` (or 30, 13), exit 1."""
    from tokrag_model.cli import main

    out = retrieved / "out" / "run.trec"
    earlier = {p.name: p.read_bytes() for p in out.parent.iterdir()}
    capsys.readouterr()
    with monkeypatch.context() as m:
        _fail_writes_of(m, "run.ctxs.jsonl", code)
        rc = main(_retrieve_args(retrieved, out, 2))
    err = capsys.readouterr().err
    line = RETRIEVE_LINES[code].format(f=out.parent / "run.ctxs.jsonl")
    assert (rc, err) == (2, f"tokrag retrieve: error: {line}\n")
    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == earlier  # the earlier run kept, no temporary file
    assert main(_retrieve_args(retrieved, out, 2)) == 0  # on a disk that writes, the same command completes
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4


def test_python_m_retrieval_cli_whose_rename_fails_is_one_line(retrieved, monkeypatch, capsys):
    """``python -m retrieval.cli`` (in-process: its ``_module_main``); the outputs' renames (``os.replace`` in
    ``retrieval.cli._write_run_files``), not only their writes, are a write's: an EPERM there named the files in a
    traceback."""
    import retrieval.cli

    out = retrieved / "out" / "run.trec"
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst) == out:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(src), None, str(dst))  # as os.replace's
        return real(src, dst, *args, **kwargs)

    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(retrieval.cli.os, "replace", replace)
        rc = retrieval.cli._module_main(_retrieve_args(retrieved, out, 2)[1:])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith("tokrag retrieve: error: [Errno 1] Operation not permitted: '")
    assert err[0].endswith(f".tmp' -> '{out}' (a write failed); make the folder writable for this user or choose "
                           f"another {RETRIEVE} {TAIL}")
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


TMP = "whose temporary file (.<name>.<8 hex>.tmp, renamed over it once written) has"


@pytest.mark.parametrize("stem_len,beside,size", [
    (252, "", "257 bytes,"),
    (240, "", f"245 bytes, {TMP} 259,"),
    (235, " ({stem}.ctxs.jsonl, written beside it)", f"246 bytes, {TMP} 260,")], ids=["output", "output-tmp", "ctxs-tmp"])
def test_tokrag_retrieve_output_name_too_long_is_one_line_before_the_search(tmp_path, capsys, stem_len, beside, size):
    """A name the kernel refuses (ENAMETOOLONG; nothing is created): ``--output`` itself over 255 bytes, the ctxs file
    named beside it (``<stem>.ctxs.jsonl``), or the temporary file of its atomic write (``.<name>.<8 hex>.tmp``), in a
    folder not yet created. Was: a traceback from the output checks (``retrieval.cli._output_paths``:
    ``Path.is_dir``) or from the write, after the search, exit 1."""
    from tokrag_model.cli import main

    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    stem = "r" * stem_len
    out = tmp_path / "out" / f"{stem}.trec"
    capsys.readouterr()
    assert main(_retrieve_args(tmp_path, out, 2)) == 2
    assert capsys.readouterr().err == (f"tokrag retrieve: error: --output {out}{beside.format(stem=stem)}: a name of "
                                       f"{size} more than the 255 its file system allows ([Errno 36] File name "
                                       "too long); give a shorter path\n")
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()  # refused before the search


def test_tokrag_index_build_whose_scratch_folder_cannot_be_made_is_one_line(tmp_path, monkeypatch, capsys):
    """``tokrag index build``: the build's scratch folder beside the index (``retrieval.io.scratch_dir``) meets a
    failing disk (EIO from ``mkdir``); nothing is built or left, and the same command builds the index on a disk that
    writes. Was: a traceback ending ``OSError: [Errno 5] Input/output error: '<folder>/.idx.<8 hex>'``, exit 1."""
    from tokrag_model.cli import main

    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    folder = tmp_path / "indexes"
    folder.mkdir()
    argv = ["index", "build", "--corpus", str(tmp_path / "passages.jsonl"), "--index", str(folder / "idx"),
            "--cache-dir", str(tmp_path / "cache")]

    class FailingMkdirOs(_FailingFsyncOs):
        def fsync(self, fd: int) -> None:
            os.fsync(fd)

        def mkdir(self, path, mode=0o777):
            if Path(path).name.startswith(".idx."):
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
            return os.mkdir(path, mode)

    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(rio, "os", FailingMkdirOs(errno.EIO))
        rc = main(argv)
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"tokrag index: error: [Errno 5] Input/output error: '{folder / '.idx.'}"), err
    assert err[0].endswith("' (a write failed: the disk or its connection failed); check the disk (dmesg; a network or "
                           "removable disk: its connection) or choose another --index / --cache-dir (TOKRAG_CACHE_DIR) "
                           f"on another disk {TAIL}"), err
    assert [p.name for p in folder.iterdir() if not p.name.endswith(".lock")] == []
    assert main(argv) == 0 and (folder / "idx").is_dir()


# --- tokrag leaderboard run / report / check ----------------------------------------------------------------------

LEADERBOARD = "--runs-dir / --out / --baseline / TOKRAG_CACHE_DIR"


@pytest.fixture
def pinned_keys(monkeypatch):
    """The spec's run keys computed once: other work may edit the source they hash between two runs of a test."""
    frozen: dict = {}

    def keys(spec, runs=None):
        if spec.path not in frozen:
            frozen[spec.path] = cell_keys(spec)
        return frozen[spec.path]

    monkeypatch.setattr(runner, "cell_keys", keys)


class _FailingFlush:
    """A journal opened for appending on a disk whose flush fails: ``OSError(code)`` without a path, nothing written."""

    def __init__(self, real, code: int) -> None:
        self.real, self.code = real, code

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        raise OSError(self.code, os.strerror(self.code))

    def fileno(self) -> int:
        return self.real.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.real.close()


def _journal_fails_at_append(monkeypatch, n: int, code: int, *, at_open: bool) -> None:
    """The runner's ``n``-th append to a cell's journal fails with ``code``: at its ``open`` (naming the journal, as
    the kernel's error does) or at its flush (no path)."""
    seen = {"appends": 0}

    def fake_open(file, mode="r", *args, **kwargs):
        if Path(file).name == "journal.jsonl" and mode == "ab":
            seen["appends"] += 1
            if seen["appends"] == n:
                if at_open:
                    raise OSError(code, os.strerror(code), str(file))
                return _FailingFlush(builtins.open(file, mode, *args, **kwargs), code)
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(runner, "open", fake_open, raising=False)


def _toy_spec(root: Path) -> Path:
    return write_spec(root, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])


@pytest.mark.parametrize("code,at_open,line", [
    (errno.EROFS, False, f"[Errno 30] Read-only file system: '{{f}}' (a write failed); choose another {LEADERBOARD} "
                         f"on a writable disk {TAIL}"),
    (errno.EACCES, True, f"[Errno 13] Permission denied: '{{f}}' (a write failed); make the folder writable for this "
                         f"user or choose another {LEADERBOARD} {TAIL}"),
])
def test_tokrag_leaderboard_run_whose_journal_cannot_be_written_is_one_line_and_resumes(tmp_path, monkeypatch, capsys,
                                                                                       pinned_keys, code, at_open, line):
    """Was: a traceback ending ``OSError: [Errno 30] Read-only file system: '<cell>/journal.jsonl'`` (13: the
    journal's open), exit 1. The whole chunk journaled before is kept and reused by the same command."""
    from leaderboards.spec import load_spec
    from tokrag_model.cli import main

    spec_path = _toy_spec(tmp_path)
    runs = tmp_path / "runs"
    argv = ["leaderboard", "run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]
    capsys.readouterr()
    with monkeypatch.context() as m:
        _journal_fails_at_append(m, 2, code, at_open=at_open)
        rc = main(argv)
    err = [x for x in capsys.readouterr().err.splitlines() if "rror" in x]  # not the cell's progress lines
    (key,) = [k for _, k, _ in runner.cell_keys(load_spec(spec_path))]
    journal = runs / key / "journal.jsonl"
    assert (rc, err) == (2, [f"tokrag leaderboard: error: {line.format(f=journal)}"])
    assert len(journal.read_bytes().splitlines()) == 2  # the header and the first chunk, whole
    assert main(argv) == 0  # on a disk that writes: the same command resumes from the journaled chunk
    assert json.loads((runs / key / "cost.json").read_text())["resumed_requests"] == 1
    assert (runs / key / "DONE").exists()


@pytest.fixture
def finished(tmp_path, pinned_keys):
    """The toy spec's one cell, run."""
    from tokrag_model.cli import main

    spec_path = _toy_spec(tmp_path)
    assert main(["leaderboard", "run", str(spec_path), "--runs-dir", str(tmp_path / "runs"), "--no-progress"]) == 0
    return spec_path, tmp_path / "runs"


def test_tokrag_leaderboard_report_and_check_whose_output_cannot_be_written_are_one_line(finished, tmp_path,
                                                                                         monkeypatch, capsys):
    """``report``: EIO on the report's markdown (written in a staging folder beside ``--out``, renamed in when whole);
    ``check --write``: EPERM on the baseline. Was: tracebacks, exit 1; nothing of an earlier output is lost."""
    from tokrag_model.cli import main

    spec_path, runs = finished
    out = tmp_path / "report"
    capsys.readouterr()
    with monkeypatch.context() as m:
        _fail_writes_of(m, "leaderboard.md", errno.EIO)
        rc = main(["leaderboard", "report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1, err
    head, tail = "tokrag leaderboard: error: [Errno 5] Input/output error: '", (
        "leaderboard.md' (a write failed: the disk or its connection failed); check the disk (dmesg; a network or "
        f"removable disk: its connection) or choose another {LEADERBOARD} on another disk {TAIL}")
    assert err[0].startswith(head) and err[0].endswith(tail), err
    assert Path(err[0][len(head):-len(tail)]).is_relative_to(tmp_path)  # in the staging folder of --out
    assert not (out / "leaderboard.md").exists()
    assert main(["leaderboard", "report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)]) == 0
    assert (out / "leaderboard.md").is_file()

    baseline = tmp_path / "check" / "baseline.json"
    baseline.parent.mkdir()
    capsys.readouterr()
    with monkeypatch.context() as m:
        _fail_writes_of(m, "baseline.json", errno.EPERM)
        rc = main(["leaderboard", "check", str(spec_path), "--runs-dir", str(runs), "--baseline", str(baseline),
                   "--write"])
    err = capsys.readouterr().err.splitlines()
    assert (rc, err) == (2, [f"tokrag leaderboard: error: [Errno 1] Operation not permitted: '{baseline}' (a write "
                             f"failed); make the folder writable for this user or choose another {LEADERBOARD} {TAIL}"])
    assert list(baseline.parent.iterdir()) == []  # no baseline, no temporary file


# --- tokrag analyze, tokrag calibrate (their top-level handler: tokrag_model.cli) ------------------------------------

def test_tokrag_analyze_whose_output_name_is_too_long_is_one_line(tmp_path, monkeypatch, capsys):
    """analyze's outputs are retrieval.io atomic writes under ``--out`` (results.json, records, the plot); a real
    ENAMETOOLONG of one (the kernel refuses the name; nothing is created). Was: a traceback, exit 1."""
    import tasks.analyze
    from tokrag_model.cli import main

    target = tmp_path / "out" / ("results_" + "x" * 300 + ".json")
    target.parent.mkdir()

    def analyze(argv):
        rio.atomic_write_json(target, {"auc": 0.5})
        return 0

    monkeypatch.setattr(tasks.analyze, "main", analyze)
    capsys.readouterr()
    assert main(["analyze", "--out", str(target.parent)]) == 2
    assert capsys.readouterr().err == (f"tokrag analyze: error: [Errno 36] File name too long: '{target}' (a write "
                                       f"failed); choose another, shorter --out / TOKRAG_CACHE_DIR {TAIL}\n")
    assert list(target.parent.iterdir()) == []


def test_tokrag_calibrate_whose_preset_path_is_a_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """A real EISDIR: the preset's atomic write renames its temporary file over a folder at the path (the folder is
    kept, the temporary file removed). Was: a traceback ending ``IsADirectoryError: [Errno 21] Is a directory``."""
    import tasks.calibrate
    from tokrag_model.cli import main

    preset = tmp_path / "out" / "tokrag_preset.json"
    (preset / "kept").mkdir(parents=True)

    def calibrate(argv):
        rio.atomic_write_json(preset, {"layer": 3})
        return 0

    monkeypatch.setattr(tasks.calibrate, "main", calibrate)
    capsys.readouterr()
    assert main(["calibrate", "--preset-out", str(preset)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("tokrag calibrate: error: [Errno 21] Is a directory: '"), err
    assert err[0].endswith(f".tmp' -> '{preset}' (a write failed: a folder is where the file is written); move the "
                           f"folder away or choose another --out / --preset-out / TOKRAG_CACHE_DIR {TAIL}")
    assert sorted(p.name for p in preset.parent.iterdir()) == ["tokrag_preset.json"]  # no temporary file left
    assert [p.name for p in preset.iterdir()] == ["kept"]


# --- lm_eval --model <tokrag method> (the start-up hook) ------------------------------------------------------------

CHILD = textwrap.dedent("""
    import errno, os, runpy, sys
    from pathlib import Path
    from lm_eval._cli import run
    import retrieval.io as rio

    class FailingFsyncOs:
        def __getattr__(self, name):
            return getattr(os, name)

        def fsync(self, fd):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    def execute(args):  # lm-eval's run, as far as a tokrag write into the output folder
        rio.os = FailingFsyncOs()
        rio.atomic_write_bytes(Path(sys.argv[-1], "results.json"), b"{}")

    run.Run._execute = staticmethod(execute)
    sys.argv[-1:] = ["--output_path", sys.argv[-1]]
    runpy.run_module("lm_eval", run_name="__main__", alter_sys=True)
""")


def test_lm_eval_with_a_tokrag_method_whose_write_is_refused_is_one_line(tmp_path):
    """``python -m lm_eval --model tokrag`` (lm-eval's own ``__main__``; its run replaced by one tokrag write, as
    test_s53_f7_lmeval_no_room does). Was: a traceback ending ``PermissionError: [Errno 13] Permission denied``,
    exit 1."""
    pytest.importorskip("lm_eval")
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([sys.executable, str(script), "run", "--model", "tokrag", "--tasks", "wiki_lm_bm25",
                           "--limit", "1", str(out)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1:] == [
        f"python -m lm_eval: error: [Errno 13] Permission denied: '{out / 'results.json'}' (a write failed); make the "
        "folder writable for this user or choose another output path (lm_eval: --output_path) or TOKRAG_CACHE_DIR "
        f"(tokrag's caches) {TAIL}"], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert list(out.iterdir()) == []


def test_tokrag_eval_whose_write_fails_is_one_line(tmp_path, monkeypatch, capsys):
    """``tokrag eval`` (lm-eval's CLI in-process: the hook leaves the error to ``tokrag_model.cli``), its run replaced
    by one tokrag write into ``--output_path`` on a disk whose fsync fails (EIO). Was: the OSError raised out of
    ``main`` (a traceback, exit 1)."""
    pytest.importorskip("lm_eval")
    from lm_eval._cli import run

    from tokrag_model.cli import main

    out = tmp_path / "out"
    out.mkdir()

    def execute(args):
        monkeypatch.setattr(rio, "os", _FailingFsyncOs(errno.EIO))
        rio.atomic_write_bytes(out / "results.json", b"{}")

    monkeypatch.setattr(run.Run, "_execute", staticmethod(execute))
    capsys.readouterr()
    rc = main(["eval", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--limit", "1", "--output_path", str(out)])
    assert (rc, capsys.readouterr().err.splitlines()[-1:]) == (2, [
        f"tokrag eval: error: [Errno 5] Input/output error: '{out / 'results.json'}' (a write failed: the disk or its "
        "connection failed); check the disk (dmesg; a network or removable disk: its connection) or choose another "
        f"--output_path / TOKRAG_CACHE_DIR on another disk {TAIL}"])
    assert list(out.iterdir()) == []


# --- the io helpers mark their own errors only; other OSErrors keep their traceback ---------------------------------

def test_folder_locks_and_scratch_folders_mark_their_errors(tmp_path, monkeypatch, capsys):
    """Two writes outside the atomic ones: a lock file that cannot be created (EACCES) and a scratch folder (EIO)."""
    class Refused:
        def __init__(self, lock_file, timeout=-1):
            self.lock_file = lock_file

        def acquire(self):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), self.lock_file)

        def __enter__(self):
            self.acquire()

        def __exit__(self, *exc):
            pass

    with monkeypatch.context() as m:
        m.setattr(rio, "FileLock", Refused)
        with pytest.raises(PermissionError) as caught, rio.file_lock(tmp_path / "idx"):
            pass
    capsys.readouterr()
    assert print_no_room(caught.value, "tokrag index") is True
    assert capsys.readouterr().err == (
        f"tokrag index: error: [Errno 13] Permission denied: '{tmp_path / 'idx.lock'}' (a write failed); make the "
        f"folder writable for this user or choose another --index / --cache-dir (TOKRAG_CACHE_DIR) {TAIL}\n")

    class FailingMkdirOs(_FailingFsyncOs):
        def mkdir(self, path, mode=0o777):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    parent = tmp_path / "indexes"
    parent.mkdir()
    with monkeypatch.context() as m:
        m.setattr(rio, "os", FailingMkdirOs(errno.EIO))
        with pytest.raises(OSError) as caught:
            rio.scratch_dir(parent, ".build-")
    assert print_no_room(caught.value, "tokrag index") is True
    err = capsys.readouterr().err
    assert err.startswith(f"tokrag index: error: [Errno 5] Input/output error: '{parent / '.build-'}")
    assert err.endswith(f"' (a write failed: the disk or its connection failed); check the disk (dmesg; a network or "
                        "removable disk: its connection) or choose another --index / --cache-dir (TOKRAG_CACHE_DIR) on "
                        f"another disk {TAIL}\n")
    assert list(parent.iterdir()) == []


def test_other_os_errors_keep_their_traceback(tmp_path, monkeypatch, capsys):
    """A read's error (not marked), a marked error that was handled before another error (its ``__context__`` only:
    the other error, maybe a bug, is what the user must see), an in-place write block's read of another file, and
    ``TOKRAG_TRACEBACK=1``: no line, the caller re-raises."""
    import retrieval.cli
    from tokrag_model.cli import main

    def unreadable(argv):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "topics.jsonl"))

    monkeypatch.setattr(retrieval.cli, "main", unreadable)
    with pytest.raises(PermissionError):
        main(["retrieve", "--topics", str(tmp_path / "topics.jsonl")])

    try:
        try:
            rio.atomic_write_json(tmp_path / ("x" * 300), {})
        except OSError:
            {}["missing"]  # a bug in the handler
    except KeyError as exc:
        bug = exc
    assert isinstance(bug.__context__, OSError) and bug.__context__.errno == errno.ENAMETOOLONG
    assert print_no_room(bug, "tokrag retrieve") is False

    with pytest.raises(PermissionError) as caught, rio.no_room_naming(tmp_path / "records.jsonl"):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "corpus.jsonl"))
    assert print_no_room(caught.value, "tokrag analyze") is False

    with pytest.raises(OSError) as caught:
        rio.atomic_write_json(tmp_path / ("x" * 300), {})
    monkeypatch.setenv("TOKRAG_TRACEBACK", "1")
    assert print_no_room(caught.value, "tokrag retrieve") is False
    assert capsys.readouterr().err == ""
