"""s59 r3, review of g1's d23f140: build_report checks who wrote the report folder twice (before the slow work and
again under the folder's lock), and each check logged its warning, so ``tokrag leaderboard report b.yaml --replace``
over a.yaml's report printed the same 'written by another spec file ... (--replace)' WARNING twice (so did 'which no
longer exists' and 'unreadable record'); the commit and its docstring promise one. Now the check before the slow work
only refuses; the one under the lock warns. Fast: toy spec, no model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import edit, run_toy_spec

import leaderboards.report as report_mod
from leaderboards.report import build_report
from leaderboards.spec import load_spec
from tokrag_model.cli import main as tokrag


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("r3-spec-warnings")
    spec, runs = run_toy_spec(root / "lb", limit=4, tasks=["toy_qa"])
    return Path(spec.path), runs


@pytest.fixture()
def setup(finished, tmp_path):
    """(spec a; spec b: a copy in another folder keeping name: toy, another bootstrap seed; a runs folder holding
    a's report)."""
    spec_path, runs = finished
    a, b = tmp_path / "a" / "toy.yaml", tmp_path / "b" / "toy.yaml"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(spec_path, p)
    edit(b, "seed: 7", "seed: 8")
    shutil.copytree(runs, tmp_path / "runs")
    build_report(load_spec(a), tmp_path / "runs", timings=False)
    return a, b, tmp_path / "runs"


def _warnings(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and text in r.getMessage()]


def test_replace_over_another_spec_files_report_warns_once(setup, caplog):
    a, b, runs = setup
    with caplog.at_level("WARNING"):
        assert tokrag(["leaderboard", "report", str(b), "--runs-dir", str(runs), "--no-timings", "--replace"]) == 0
    assert _warnings(caplog, "written by another spec file") == [
        f"report folder {runs / 'reports' / 'toy'}: written by another spec file, {a.resolve()}; replaced by the "
        f"report of {b.resolve()} (--replace)"]


def test_a_moved_spec_file_warns_once(setup, caplog):
    a, _b, runs = setup
    moved = a.parent.parent / "moved.yaml"
    shutil.move(a, moved)
    edit(moved, "seed: 7", "seed: 9")
    with caplog.at_level("WARNING"):
        build_report(load_spec(moved), runs, timings=False)
    assert len(_warnings(caplog, f"written by the spec file {a.resolve()}, which no longer exists")) == 1


def test_an_unreadable_record_warns_once(setup, caplog):
    _a, b, runs = setup
    rec = report_mod.report_record_path(runs, runs / "reports" / "toy")
    rec.write_text("{not json")
    with caplog.at_level("WARNING"):
        build_report(load_spec(b), runs, timings=False)
    assert len(_warnings(caplog, f"unreadable record {rec}")) == 1


def test_a_refusal_is_still_made_before_the_slow_work(setup, monkeypatch):
    """The first check still refuses (before the invariants and the statistics are computed), warn or not."""
    _a, b, runs = setup

    def no_verify(*args, **kw):
        raise AssertionError("the slow work started before the refusal")

    monkeypatch.setattr(report_mod, "verify", no_verify)
    with pytest.raises(report_mod.ReportOverwriteError, match="holds the report of another spec file"):
        build_report(load_spec(b), runs, timings=False)
