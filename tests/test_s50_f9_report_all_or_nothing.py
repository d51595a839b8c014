"""A report build is all or nothing as a reader sees the folder (s50 b2 D1): a build stopped after it wrote its new
leaderboard.json (a kill 3.3 s into ``tokrag leaderboard report``, or an error in a plot) left that JSON beside the
earlier build's leaderboard.md, leaderboard.csv and index.html, with nothing marking the mix. Now every file is
written into a staging folder and moved in by renames at the end: a build stopped before that leaves the earlier
report byte for byte. Fast: toy spec, no model."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest
from leaderboard_helpers import pin_cell_keys, run_toy_spec

import leaderboards.plots as plots
import leaderboards.report as report
from leaderboards.report import build_report


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # the run keys pinned: other work may edit the source they hash
        pin_cell_keys(mp)
        yield run_toy_spec(tmp_path_factory.mktemp("lb"), limit=6)


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("where", ["plots", "csv"])
def test_a_build_that_fails_after_the_json_leaves_the_earlier_report_byte_for_byte(toy, tmp_path, monkeypatch, where):
    spec, runs = toy
    out = tmp_path / "report"
    build_report(spec, runs, out, timings=False)  # the earlier report
    earlier = _tree(out)
    assert "leaderboard.json" in earlier and "index.html" in earlier and any(k.endswith(".png") for k in earlier)

    def fail(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(*((plots, "make_plots", fail) if where == "plots" else (report, "render_csv", fail)))
    with pytest.raises(RuntimeError, match="disk full"):
        build_report(spec, runs, out, timings=True)  # its leaderboard.json differs: it carries the timings
    assert _tree(out) == earlier  # the old build, every file (the old code: a new leaderboard.json beside old md/html)
    assert not (out / report.STAGING).exists()


def test_a_build_killed_while_moving_its_files_in_is_said_and_cleaned_up_by_the_next(toy, tmp_path, monkeypatch, caplog):
    """A kill in the renames (simulated: the second move raises, and nothing cleans up, as after a SIGKILL) leaves
    the staging folder with its SWAPPING.json; the next build says the folder mixed two builds and writes exactly
    what a build into an empty folder writes, removing the earlier build's question pages it no longer has."""
    spec, runs = toy
    fresh = build_report(spec, runs, tmp_path / "fresh", timings=True, questions=False)
    out = tmp_path / "report"
    build_report(spec, runs, out, timings=False)  # with its questions/ pages
    (out / "my_notes.txt").write_text("mine")
    real, moved = report._move_in, []

    def killed(src, dst):
        if moved:
            raise SystemExit(137)
        real(src, dst)
        moved.append(dst.name)

    monkeypatch.setattr(report, "_move_in", killed)
    with pytest.raises(SystemExit):
        build_report(spec, runs, out, timings=True)
    assert moved == ["leaderboard.json"] and (out / report.STAGING / report.SWAP_MANIFEST).is_file()
    monkeypatch.setattr(report, "_move_in", real)
    with caplog.at_level(logging.WARNING, logger="leaderboards.report"):
        build_report(spec, runs, out, timings=True, questions=False)
    assert [r.getMessage() for r in caplog.records] == [
        f"report folder {out}: an earlier report build was stopped while it moved its files in "
        f"({out / report.STAGING} was left): the folder mixed two builds; this build replaces it"]
    mine = _tree(out)
    assert mine.pop("my_notes.txt") == hashlib.sha256(b"mine").hexdigest()  # a user's file is kept
    assert mine == _tree(fresh) and not (out / "questions").exists()
