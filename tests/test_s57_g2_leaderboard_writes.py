"""The leaderboard programs' own writes that :mod:`retrieval.io` does not make are one line too (s57 g2).

f2 (b908462) made every failed tokrag write one line, exit 2 (``retrieval.errors.mark_write``): the atomic writes,
the journal's appends, the folder locks. The leaderboard's other writes were left unmarked, so ``EACCES``, ``EIO`` or
``ENAMETOOLONG`` there ended ``tokrag leaderboard run/report/rescore`` in a traceback (exit 1): the runs folder's and a
cell folder's ``mkdir``, the journal's removal after ``DONE``, the ``run --jobs N`` folders (``.max-cells-*``,
``.jobs-*``), and in a report build the staging folder's ``mkdir``, the plots' ``savefig``, the ``questions/``
folder's ``mkdir``, the renames moving the new report in, the removal of the earlier report's stale files and of an
interrupted build's staging folder. Now each is marked (``leaderboards.runner.leaderboard_write``) and prints the line
f2's programs print, naming the file, and nothing is lost: the same command resumes or finishes; a report build that
fails leaves the earlier report byte for byte, or, failing while it moves its files in, says what is incomplete.

Every failure is a monkeypatched fake (``Path.mkdir``, ``Path.unlink``, ``Figure.savefig``, ``shutil.rmtree`` or the
report module's ``os.replace`` raising for one path): no device, mount or permission is touched.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.report as report
import leaderboards.rescore as rescore
import leaderboards.runner as runner
from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec

LEADERBOARD = "--runs-dir / --out / --baseline / TOKRAG_CACHE_DIR"
TAIL = "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"
EACCES = ("tokrag leaderboard: error: [Errno 13] Permission denied{note}: '{f}' (a write failed); make the folder "
          f"writable for this user or choose another {LEADERBOARD} {TAIL}")
EIO = ("tokrag leaderboard: error: [Errno 5] Input/output error{note}: '{f}' (a write failed: the disk or its "
       f"connection failed); check the disk (dmesg; a network or removable disk: its connection) or choose another "
       f"{LEADERBOARD} on another disk {TAIL}")
ENAMETOOLONG = ("tokrag leaderboard: error: [Errno 36] File name too long{note}: '{f}' (a write failed); choose "
                f"another, shorter {LEADERBOARD} {TAIL}")


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")


@pytest.fixture(autouse=True)
def pinned_keys(monkeypatch):
    """Each spec's run keys computed once: other work may edit the source they hash between two commands of a test."""
    frozen: dict = {}

    def keys(spec, runs=None):
        if spec.path not in frozen:
            frozen[spec.path] = cell_keys(spec)
        return frozen[spec.path]

    for module in (runner, report, rescore):
        monkeypatch.setattr(module, "cell_keys", keys)


def tokrag(*argv: str) -> int:
    from tokrag_model.cli import main

    return main(["leaderboard", *argv])


def errors(capsys) -> list[str]:
    """The error lines on stderr (not the cells' progress lines or log records)."""
    return [x for x in capsys.readouterr().err.splitlines() if "error" in x or "Traceback" in x]


def fail_path(monkeypatch, owner, name: str, target, code: int, *, pathless: bool = False) -> dict:
    """``owner.name`` (a method or function taking the path first) raises ``OSError(code)`` naming the path (or no
    path) when ``target(path)`` is true; otherwise it works. Returns a counter of the failures."""
    real = getattr(owner, name)
    seen = {"n": 0}

    def fake(path, *args, **kwargs):
        if target(Path(path)):
            seen["n"] += 1
            if pathless:
                raise OSError(code, os.strerror(code))
            raise OSError(code, os.strerror(code), str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(owner, name, fake)
    return seen


def _toy_spec(root: Path, **extra) -> Path:
    return write_spec(root, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1, **extra}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])


def _key(spec_path: Path) -> str:
    (key,) = [k for _, k, _ in runner.cell_keys(load_spec(spec_path))]
    return key


# --- tokrag leaderboard run ------------------------------------------------------------------------------------------

def test_run_whose_runs_folder_cannot_be_created_is_one_line(tmp_path, monkeypatch, capsys):
    """``--runs-dir`` in a folder this user may not write (EACCES at the parent ``mkdir(parents=True)`` creates): was a
    traceback ending ``PermissionError: [Errno 13] Permission denied: '<parent>'``, exit 1."""
    spec_path = _toy_spec(tmp_path)
    runs = tmp_path / "shared" / "runs"
    argv = ["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]
    with monkeypatch.context() as m:
        fail_path(m, Path, "mkdir", lambda p: p == runs.parent, errno.EACCES)
        rc = tokrag(*argv)
    assert (rc, errors(capsys)) == (2, [EACCES.format(note="", f=runs.parent)])
    assert not runs.parent.exists()
    assert tokrag(*argv) == 0  # on a folder it may write: the same command runs the cell
    assert (runs / _key(spec_path) / "DONE").is_file()


def test_run_whose_cell_folder_cannot_be_created_is_one_line(tmp_path, monkeypatch, capsys):
    """EIO at the cell folder's ``mkdir``: was a traceback, exit 1."""
    spec_path = _toy_spec(tmp_path)
    runs = tmp_path / "runs"
    cell = runs / _key(spec_path)
    argv = ["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]
    with monkeypatch.context() as m:
        fail_path(m, Path, "mkdir", lambda p: p == cell, errno.EIO)
        rc = tokrag(*argv)
    assert (rc, errors(capsys)) == (2, [EIO.format(note="", f=cell)])
    assert not cell.exists()
    assert tokrag(*argv) == 0
    assert (cell / "DONE").is_file()


def test_run_whose_runs_folder_name_is_too_long_is_one_line(tmp_path, capsys):
    """ENAMETOOLONG from the kernel itself (``--runs-dir`` whose last name has 300 bytes): the runs folder's lookup
    (``Path.exists`` raises it) was a traceback, exit 1; now one line before any work, naming the option."""
    runs = tmp_path / ("r" * 300)
    spec_path = _toy_spec(tmp_path)
    rc = tokrag("run", str(spec_path), "--runs-dir", str(runs), "--no-progress")
    assert (rc, errors(capsys)) == (2, [f"tokrag leaderboard: error: the runs dir {runs} (--runs-dir) cannot be looked "
                                        "up ([Errno 36] File name too long); give a shorter path"])


def test_run_whose_journal_cannot_be_removed_after_done_is_one_line_and_the_cell_stays_done(tmp_path, monkeypatch,
                                                                                          capsys):
    """The journal's removal after ``DONE`` met EIO: was a traceback, exit 1. The cell is finished (``DONE`` is
    written first), so the same command skips it and its report is the cell's."""
    spec_path = _toy_spec(tmp_path)
    runs = tmp_path / "runs"
    cell = runs / _key(spec_path)
    argv = ["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]
    with monkeypatch.context() as m:
        fail_path(m, Path, "unlink", lambda p: p == cell / "journal.jsonl", errno.EIO)
        rc = tokrag(*argv)
    assert (rc, errors(capsys)) == (2, [EIO.format(note="", f=cell / "journal.jsonl")])
    assert (cell / "DONE").is_file() and (cell / "journal.jsonl").is_file()
    assert tokrag(*argv) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["skipped"] == ["standard/toy_qa/seed1"] and summary["ran"] == [], summary
    assert tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(tmp_path / "rep")) == 0


def _interrupted(tmp_path, monkeypatch, appends: int) -> tuple[list[str], Path]:
    """The toy cell stopped by a read-only disk (EROFS, already one line) at its journal's append ``appends + 1``:
    its folder keeps config.json and the journal's header and first ``appends`` chunks. -> (the run's arguments, the
    cell folder)."""
    import builtins

    spec_path = _toy_spec(tmp_path)
    runs = tmp_path / "runs"
    argv = ["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]
    seen = {"n": 0}

    def fake_open(file, mode="r", *args, **kwargs):
        if Path(file).name == "journal.jsonl" and mode == "ab":
            seen["n"] += 1
            if seen["n"] > appends:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(file))
        return builtins.open(file, mode, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(runner, "open", fake_open, raising=False)
        assert tokrag(*argv) == 2
    cell = runs / _key(spec_path)
    assert len((cell / "journal.jsonl").read_bytes().splitlines()) == 1 + appends
    return argv, cell


def test_resumed_run_whose_earlier_files_cannot_be_removed_is_one_line_and_resumes(tmp_path, monkeypatch, capsys):
    """A resumed cell first removes the files of the attempt before (a kill after its samples, before DONE); that
    removal met EACCES: was a traceback, exit 1. The journal stays, and the same command resumes from it."""
    argv, cell = _interrupted(tmp_path, monkeypatch, 1)
    stray = cell / "samples_toy_qa.jsonl"
    stray.write_text("{}\n")
    capsys.readouterr()
    with monkeypatch.context() as m:
        fail_path(m, Path, "unlink", lambda p: p == stray, errno.EACCES)
        rc = tokrag(*argv)
    assert (rc, errors(capsys)) == (2, [EACCES.format(note="", f=stray)])
    assert len((cell / "journal.jsonl").read_bytes().splitlines()) == 2
    assert tokrag(*argv) == 0
    assert json.loads((cell / "cost.json").read_text())["resumed_requests"] == 1 and (cell / "DONE").is_file()
    assert stray.read_text() != "{}\n"


def test_resumed_run_whose_journal_cannot_be_cut_is_one_line_and_resumes(tmp_path, monkeypatch, capsys):
    """A journal line that fails its checksum is cut off (``_Journal._cut``: the journal opened ``r+b``, truncated,
    fsynced); an EIO of its flush (no path, as a failing disk's buffered write) was a traceback naming no file,
    exit 1. Now the line names the journal,
    and the same command resumes from the chunks before the cut."""
    import builtins

    argv, cell = _interrupted(tmp_path, monkeypatch, 3)
    journal = cell / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    damaged = json.loads(lines[2])
    damaged[runner.CHECKSUM] = "0" * len(str(damaged[runner.CHECKSUM]))
    journal.write_bytes(b"".join([*lines[:2], (json.dumps(damaged) + "\n").encode(), *lines[3:]]))

    class FailingFsync:
        def __init__(self, f):
            self.f = f

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def flush(self):
            self.f.flush()
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    def fake_open(file, mode="r", *args, **kwargs):
        f = builtins.open(file, mode, *args, **kwargs)
        return FailingFsync(f) if Path(file) == journal and mode == "r+b" else f

    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(runner, "open", fake_open, raising=False)
        rc = tokrag(*argv)
    assert (rc, errors(capsys)) == (2, [EIO.format(note="", f=journal)])
    assert tokrag(*argv) == 0
    assert json.loads((cell / "cost.json").read_text())["resumed_requests"] == 1 and (cell / "DONE").is_file()


@pytest.mark.parametrize("prefix,extra", [(".max-cells-", ["--max-cells", "2"]), (".jobs-", [])])
def test_run_jobs_whose_shared_folder_cannot_be_created_is_one_line(tmp_path, monkeypatch, capsys, prefix, extra):
    """``run --jobs 2``: the ``--max-cells`` count folder and the helpers' summaries folder, both made in the runs
    folder before any helper starts, met EACCES: were tracebacks, exit 1. No helper was started, no cell computed.
    (2 cells and --max-cells 2: a run with 1 cell to run, or --max-cells 1, starts no helper and makes neither
    folder, s58 f3.)"""
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1})  # 2 methods: 2 cells
    runs = tmp_path / "runs"
    runs.mkdir()
    with monkeypatch.context() as m:
        failed = fail_path(m, Path, "mkdir", lambda p: p.parent == runs and p.name.startswith(prefix), errno.EACCES)
        rc = tokrag("run", str(spec_path), "--runs-dir", str(runs), "--no-progress", "--jobs", "2", *extra)
    err = errors(capsys)
    assert failed["n"] == 1 and rc == 2 and len(err) == 1, err
    head, tail = EACCES.format(note="", f=str(runs / prefix) + "\0").split("\0")
    assert err[0].startswith(head) and err[0].endswith(tail), err
    assert sorted(p.name for p in runs.iterdir()) == []


# --- tokrag leaderboard report / rescore -----------------------------------------------------------------------------

@pytest.fixture
def finished(tmp_path):
    """The toy spec's cell, run, and its report in ``out`` (the earlier report the tests keep)."""
    spec_path = _toy_spec(tmp_path)
    runs, out = tmp_path / "runs", tmp_path / "report"
    assert tokrag("run", str(spec_path), "--runs-dir", str(runs), "--no-progress") == 0
    assert tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)) == 0
    return spec_path, runs, out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _report(spec_path: Path, runs: Path, out: Path, *more: str) -> int:
    return tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out), *more)


@pytest.mark.parametrize("what", ["staging folder", "plot", "questions folder"])
def test_report_whose_staged_write_fails_is_one_line_and_keeps_the_earlier_report(finished, monkeypatch, capsys, what):
    """The staging folder's ``mkdir`` (EACCES), a plot's ``savefig`` (EIO of its flush, no path) and the
    ``questions/`` folder's ``mkdir`` (EIO): were tracebacks, exit 1. The earlier report is byte for byte as it was
    and no staging folder is left; the same command then writes the report."""
    import matplotlib.figure

    spec_path, runs, out = finished
    before = snapshot(out)
    stage = out / report.STAGING
    capsys.readouterr()
    with monkeypatch.context() as m:
        if what == "staging folder":
            fail_path(m, Path, "mkdir", lambda p: p == stage, errno.EACCES)
            expected = EACCES.format(note="", f=stage)
        elif what == "plot":
            real = matplotlib.figure.Figure.savefig

            def savefig(fig, fname, *a, **kw):
                if Path(fname).name == "cost_accuracy.png":
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
                return real(fig, fname, *a, **kw)

            m.setattr(matplotlib.figure.Figure, "savefig", savefig)
            expected = EIO.format(note="", f=stage / "cost_accuracy.png")
        else:
            fail_path(m, Path, "mkdir", lambda p: p == stage / "questions", errno.EIO)
            expected = EIO.format(note="", f=stage / "questions")
        rc = _report(spec_path, runs, out)
    assert (rc, errors(capsys)) == (2, [expected])
    assert snapshot(out) == before and not stage.exists()
    assert _report(spec_path, runs, out) == 0
    assert not stage.exists()


def test_report_whose_move_in_fails_says_what_is_incomplete_and_the_same_command_finishes_it(finished, monkeypatch,
                                                                                             capsys):
    """A rename moving the new report in (``os.replace``) met EACCES after leaderboard.json and leaderboard.csv were
    in: was a traceback, exit 1, and the folder mixed the two reports without a word. Now the line says how many of
    the new files are in and the first not; the same command finishes the folder, which then equals a clean build."""
    spec_path, runs, out = finished
    lock = {report.REPORT_LOCK}
    files = set(snapshot(out)) - lock  # the new report's files have the same names: moved in leaderboard.json first
    order = ["leaderboard.json", *sorted(files - {"leaderboard.json"})]
    i = order.index("leaderboard.md")
    assert 0 < i < len(order) - 1, order
    (out / "leaderboard.md").write_text("earlier\n")  # tells the earlier report's file from the new one
    stage = out / report.STAGING
    capsys.readouterr()

    class Os:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def replace(src, dst):
            if Path(dst) == out / "leaderboard.md":
                raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(dst))
            return os.replace(src, dst)

    with monkeypatch.context() as m:
        m.setattr(report, "os", Os())
        rc = _report(spec_path, runs, out)
    note = (f" (the report folder {out} is incomplete: {i} of the new report's {len(order)} files are in "
            f"(leaderboard.json first), {len(order) - i} still the earlier report's or missing (first: leaderboard.md) "
            "until the same command finishes it)")
    assert (rc, errors(capsys)) == (2, [EACCES.format(note=note, f=out / "leaderboard.md")])
    assert (out / "leaderboard.md").read_text() == "earlier\n" and (stage / report.SWAP_MANIFEST).is_file()
    assert set(snapshot(out)) == files | lock | {f"{report.STAGING}/{n}" for n in [report.SWAP_MANIFEST, *order[i:]]}
    assert _report(spec_path, runs, out) == 0
    assert not stage.exists() and (out / "leaderboard.md").read_text() != "earlier\n"
    clean = out.parent / "clean"
    assert _report(spec_path, runs, clean) == 0
    assert snapshot(out) == snapshot(clean)


def test_report_whose_first_move_fails_keeps_the_earlier_report_and_says_so(finished, monkeypatch, capsys):
    """The first rename (leaderboard.json) met EIO: nothing of the new report is in, the line says so, the staging
    folder is removed (the next build does not warn of a folder mixing two builds) and the earlier report is as it
    was."""
    spec_path, runs, out = finished
    before = snapshot(out)
    stage = out / report.STAGING
    capsys.readouterr()

    class Os:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def replace(src, dst):
            if Path(dst) == out / "leaderboard.json":
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
            return os.replace(src, dst)

    with monkeypatch.context() as m:
        m.setattr(report, "os", Os())
        rc = _report(spec_path, runs, out)
    note = f" (nothing of the new report was moved in: {out} holds the earlier report, unchanged)"
    assert (rc, errors(capsys)) == (2, [EIO.format(note=note, f=out / "leaderboard.json")])
    assert snapshot(out) == before and not stage.exists()
    assert _report(spec_path, runs, out) == 0
    assert "mixed two builds" not in capsys.readouterr().err


def test_report_whose_stale_file_cannot_be_removed_says_so(finished, monkeypatch, capsys):
    """``report --no-questions`` over a report with question pages removes the earlier pages; that removal met
    EACCES: was a traceback, exit 1. The new report is in; the line says the stale files are not all removed, and the
    same command removes them."""
    spec_path, runs, out = finished
    pages = sorted((out / "questions").iterdir())
    assert pages
    capsys.readouterr()
    with monkeypatch.context() as m:
        fail_path(m, Path, "unlink", lambda p: p == pages[0], errno.EACCES)
        rc = _report(spec_path, runs, out, "--no-questions")
    note = (f" (the new report is in {out}, but files of the earlier report it no longer has are not all removed until "
            "the same command removes them)")
    assert (rc, errors(capsys)) == (2, [EACCES.format(note=note, f=pages[0])])
    assert pages[0].exists()
    assert _report(spec_path, runs, out, "--no-questions") == 0
    assert not (out / "questions").exists()


def test_report_whose_leftover_staging_folder_cannot_be_removed_is_one_line(finished, monkeypatch, capsys):
    """An interrupted build's staging folder, whose removal met EIO: was a traceback, exit 1; the earlier report is
    as it was."""
    spec_path, runs, out = finished
    stage = out / report.STAGING
    stage.mkdir()
    (stage / "leaderboard.md").write_text("half\n")
    before = snapshot(out)
    capsys.readouterr()
    with monkeypatch.context() as m:
        fail_path(m, shutil, "rmtree", lambda p: p == stage, errno.EIO)
        rc = _report(spec_path, runs, out)
    assert (rc, errors(capsys)) == (2, [EIO.format(note="", f=stage)])
    assert snapshot(out) == before
    assert _report(spec_path, runs, out) == 0 and not stage.exists()


def test_rescore_whose_staging_folder_cannot_be_created_is_one_line(finished, monkeypatch, capsys):
    """``tokrag leaderboard rescore`` writes its report as ``report`` does: EACCES at the staging folder was a
    traceback, exit 1."""
    spec_path, runs, out = finished
    rescored = out.parent / "rescored"
    stage = rescored / report.STAGING
    capsys.readouterr()
    with monkeypatch.context() as m:
        fail_path(m, Path, "mkdir", lambda p: p == stage, errno.EACCES)
        rc = tokrag("rescore", str(spec_path), "--runs-dir", str(runs), "--out", str(rescored))
    assert (rc, errors(capsys)) == (2, [EACCES.format(note="", f=stage)])
    assert tokrag("rescore", str(spec_path), "--runs-dir", str(runs), "--out", str(rescored)) == 0


def test_leaderboard_write_marks_only_its_block(tmp_path):
    """The helper: an error naming a file keeps its name, a pathless one names the path, both marked; an OSError
    without errno and other exceptions pass unmarked; an error outside the block is not its business."""
    from retrieval.errors import WRITE_MARK, write_error

    target = tmp_path / "a" / "b"
    with pytest.raises(PermissionError) as named:
        with runner.leaderboard_write(target):
            raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "a"))
    assert str(named.value) == f"[Errno 13] Permission denied: '{tmp_path / 'a'}'" and write_error(named.value)
    with pytest.raises(OSError) as pathless:
        with runner.leaderboard_write(target):
            raise OSError(errno.EIO, "Input/output error")
    assert str(pathless.value) == f"[Errno 5] Input/output error: '{target}'" and write_error(pathless.value)
    with pytest.raises(OSError) as bare:
        with runner.leaderboard_write(target):
            raise OSError("no errno")
    assert not hasattr(bare.value, WRITE_MARK) and write_error(bare.value) is None
    with pytest.raises(ValueError):
        with runner.leaderboard_write(target):
            raise ValueError("x")


def test_a_helpers_cell_claim_that_cannot_be_written_is_a_write_error(tmp_path, monkeypatch, capsys):
    """``run --jobs N --max-cells M``: each process counts a cell by creating ``claim-<i>`` in the shared folder; an
    EIO there (not the claim another process won, not the folder removed) was unmarked, so a helper's traceback;
    now the one line naming the claim file."""
    from retrieval.errors import print_no_room

    class Os:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def open(path, *a, **kw):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    budget = runner._CellBudget(2, tmp_path)
    monkeypatch.setattr(runner, "os", Os())
    with pytest.raises(OSError) as failed:
        budget.take()
    monkeypatch.undo()
    assert print_no_room(failed.value, "tokrag leaderboard")
    assert errors(capsys) == [EIO.format(note="", f=tmp_path / "claim-0")]
