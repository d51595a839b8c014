"""Review of s57 g2's leaderboard writes (s57 r7).

g2 (4050457) marked the leaderboard programs' own writes (``leaderboards.runner.leaderboard_write``) so that any errno
there is the one line of a failed write: ``... (a write failed); check the folder and the disk or choose another
--runs-dir / --out / ... and run the same command again``, exit 2. That also covered ``ENOENT``, which no disk gives a
write in those blocks: there a file or folder the command made itself is gone (a staged report file missing when it
is moved in is a bug of the report build), and the line hid it as a disk's failure. ``ENOENT`` keeps its traceback.

Every failure is a monkeypatched fake: no device, mount or permission is touched.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.report as report
import leaderboards.runner as runner
from leaderboards.keys import cell_keys
from retrieval.errors import WRITE_MARK, print_no_room, write_error


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

    for module in (runner, report):
        monkeypatch.setattr(module, "cell_keys", keys)


def tokrag(*argv: str) -> int:
    from tokrag_model.cli import main

    return main(["leaderboard", *argv])


def test_leaderboard_write_leaves_enoent_unmarked(tmp_path):
    """An ENOENT naming the written path (which ``no_room_naming`` marks), naming another file, or naming none is
    raised unmarked: no write error, so no 'check the disk and run again' line; EACCES beside it is still marked."""
    target = tmp_path / "stage" / "leaderboard.md"
    for filename in (str(target), str(tmp_path / "other"), None):
        with pytest.raises(FileNotFoundError) as caught:
            with runner.leaderboard_write(target):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), *([filename] if filename else []))
        assert not hasattr(caught.value, WRITE_MARK) and write_error(caught.value) is None, filename
        assert print_no_room(caught.value, "tokrag leaderboard") is False
    with pytest.raises(PermissionError) as denied:
        with runner.leaderboard_write(target):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))
    assert getattr(denied.value, WRITE_MARK) == str(target)


def test_a_staged_report_file_missing_at_its_move_is_no_write_error(tmp_path):
    """``_move_in`` of a staged file that is not there (the real ``os.replace``): FileNotFoundError, unmarked. Before,
    the line read '[Errno 2] No such file or directory: <stage>/leaderboard.md -> <out>/leaderboard.md (a write
    failed); check the folder and the disk ... and run the same command again'."""
    (tmp_path / "out").mkdir()
    (tmp_path / "stage").mkdir()
    with pytest.raises(FileNotFoundError) as caught:
        report._move_in(tmp_path / "stage" / "leaderboard.md", tmp_path / "out" / "leaderboard.md")
    assert caught.value.filename == str(tmp_path / "stage" / "leaderboard.md")
    assert write_error(caught.value) is None
    assert sorted(os.listdir(tmp_path / "out")) == []


def test_report_build_whose_staged_file_went_missing_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    """Through ``tokrag leaderboard report``: a build that stages no leaderboard.md (a simulated bug of the build)
    raises FileNotFoundError with the note of what the folder holds, instead of printing the disk's line, exit 2."""
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    runs, out = tmp_path / "runs", tmp_path / "report"
    assert tokrag("run", str(spec_path), "--runs-dir", str(runs), "--no-progress") == 0
    real = report.atomic_write_text

    def skip_md(path, text, *args, **kwargs):
        if Path(path).name == "leaderboard.md":
            return None  # the bug: listed as written, never staged
        return real(path, text, *args, **kwargs)

    monkeypatch.setattr(report, "atomic_write_text", skip_md)
    capsys.readouterr()
    with pytest.raises(FileNotFoundError) as caught:
        tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out))
    assert caught.value.filename == str(out / report.STAGING / "leaderboard.md")
    assert "(the report folder " in caught.value.strerror and "(first: leaderboard.md)" in caught.value.strerror
    assert "a write failed" not in capsys.readouterr().err


class _FailingOs:
    """``report.os`` whose ``os.replace`` into ``dst`` meets EIO (a pathless-free fake naming ``dst``)."""

    def __init__(self, dst: Path) -> None:
        self.dst = dst

    def __getattr__(self, name):
        return getattr(os, name)

    def replace(self, src, dst):
        if Path(dst) == self.dst:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
        return os.replace(src, dst)


def test_first_move_failing_after_a_stopped_swap_keeps_its_manifest_and_says_the_folder_is_mixed(tmp_path,
                                                                                                 monkeypatch, capsys,
                                                                                                 caplog):
    """An earlier build was stopped while it moved its files in (its staging folder's SWAPPING.json lists the names
    it was moving in or removing: here ``stale.png``, a plot of a report before it); this build's first rename fails
    (EIO). g2's note said '<out> holds the earlier report, unchanged' and removed the staging folder, so the next
    build neither warned of the mixed folder nor removed ``stale.png`` (kept for good). Now the note says the folder
    still mixes two builds, the manifest stays listing ``stale.png``, and the same command warns and removes it."""
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    runs, out = tmp_path / "runs", tmp_path / "report"
    assert tokrag("run", str(spec_path), "--runs-dir", str(runs), "--no-progress") == 0
    assert tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)) == 0
    (out / "stale.png").write_bytes(b"a plot of the report before the stopped build")
    stage = out / report.STAGING
    stage.mkdir()
    (stage / report.SWAP_MANIFEST).write_text(json.dumps({"names": ["leaderboard.json", "stale.png"]}))
    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(report, "os", _FailingOs(out / "leaderboard.json"))
        rc = tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out))
    err = capsys.readouterr().err
    note = (f" (nothing of the new report was moved in: {out} still mixes two earlier builds (one was stopped while "
            "it moved its files in) until the same command finishes it)")
    line = next(x for x in err.splitlines() if x.startswith("tokrag leaderboard: error:"))
    assert rc == 2 and line.startswith(f"tokrag leaderboard: error: [Errno 5] Input/output error{note}: "
                                       f"'{out / 'leaderboard.json'}' (a write failed")
    assert "stale.png" in json.loads((stage / report.SWAP_MANIFEST).read_text())["names"]
    assert (out / "stale.png").is_file()
    caplog.clear()
    with caplog.at_level("WARNING", logger="leaderboards.report"):
        assert tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)) == 0
    assert "the folder mixed two builds; this build replaces it" in caplog.text
    assert not (out / "stale.png").exists() and not stage.exists()


def test_a_file_named_questions_in_the_report_folder_is_refused_before_anything_moves_in(tmp_path, capsys):
    """A file (not a folder) named ``questions`` in the report folder: the swap met it only at the first question
    page, its ``mkdir`` raising EEXIST, with every other new file already in ('[Errno 17] File exists ... the report
    folder is incomplete: 9 of the new report's 10 files are in ...; check the folder and the disk ... and run the
    same command again', which failed the same way). Now refused before the first move: the earlier report stays as
    it was, and the line says a file is where the folder goes; with the file moved away the same command writes it."""
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    runs, out = tmp_path / "runs", tmp_path / "report"
    assert tokrag("run", str(spec_path), "--runs-dir", str(runs), "--no-progress") == 0
    assert tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)) == 0
    for page in (out / "questions").iterdir():
        page.unlink()
    (out / "questions").rmdir()
    (out / "questions").write_text("a file of the user's\n")
    (out / "leaderboard.md").write_text("earlier\n")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    rc = tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out))
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("tokrag leaderboard: error:")]
    assert (rc, lines) == (2, [
        f"tokrag leaderboard: error: [Errno 20] Not a directory (nothing of the new report was moved in: {out} holds "
        f"the earlier report, unchanged): '{out / 'questions'}' (a write failed: a file is where a folder of the path "
        "should be); move the file away or choose another --runs-dir / --out / --baseline / TOKRAG_CACHE_DIR and run "
        "the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"])
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not (out / report.STAGING).exists()
    (out / "questions").unlink()
    assert tokrag("report", str(spec_path), "--runs-dir", str(runs), "--out", str(out)) == 0
    assert (out / "questions").is_dir() and (out / "leaderboard.md").read_text() != "earlier\n"
