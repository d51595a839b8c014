"""Two report builds of one folder at the same time (two runners' ``run --report`` on one runs folder, which the
README allows, or two ``report --out D``) both succeed and leave the report a single build writes. Before, the
second one read the folder before the slow work, found no report, then found the first one's leaderboard.json and
exited 2 with a false "holds no tokrag report but has 1 file(s) the report would overwrite" (3 of 3 tries of two
``report`` processes). A cell a runner is computing now is said to be so, not "started but did not finish". Fast: toy
spec, no model; the lock is the real cross-process one (flock conflicts between two descriptors of one process too)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from leaderboard_helpers import run_toy_spec, subprocess_env

import leaderboards.plots as plots
import leaderboards.report as report
from leaderboards.keys import cell_keys
from leaderboards.report import build_report, collect
from retrieval.io import file_lock


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy spec (2 methods x toy_qa + its noise twin, 4 cells) run once, and its report built alone."""
    root = tmp_path_factory.mktemp("lbc")
    spec, runs = run_toy_spec(root)
    return spec, runs, _tree(build_report(spec, runs, root / "alone", timings=False))


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _in_thread(fn) -> tuple[threading.Thread, dict]:
    got: dict = {}

    def body():
        try:
            got["out"] = fn()
        except BaseException as exc:  # noqa: BLE001 (handed to the test)
            got["exc"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, got


def test_a_build_that_finds_the_folder_written_meanwhile_takes_it_as_the_report(toy, tmp_path, monkeypatch):
    """The proven race: B reads the empty folder, computes; A writes the whole report; B then writes. Before, B was
    refused as over a folder of foreign files."""
    spec, runs, alone = toy
    out = tmp_path / "report"
    a_done, b_computed = threading.Event(), threading.Event()
    real = report._compute

    def slow(*args, **kw):  # B's compute ends only after A's whole build
        data = real(*args, **kw)
        if threading.current_thread().name != "MainThread":
            b_computed.set()
            assert a_done.wait(60)
        return data

    monkeypatch.setattr(report, "_compute", slow)
    b, got = _in_thread(lambda: build_report(spec, runs, out, timings=False))
    assert b_computed.wait(60)
    assert build_report(spec, runs, out, timings=False) == out  # A
    a_done.set()
    b.join(60)
    assert not b.is_alive()
    assert "exc" not in got, got.get("exc")
    assert got["out"] == out
    assert _tree(out) == alone


def test_a_second_build_waits_for_the_first_ones_writes(toy, tmp_path, monkeypatch, caplog):
    """A is stopped in its plots (once after its leaderboard.json; since s50 f9 in its staging folder, before it
    moves any file in); B must not write until A is done (before, it wrote into the half-written folder at once)."""
    spec, runs, alone = toy
    out = tmp_path / "report"
    in_plots, go_on = threading.Event(), threading.Event()
    real = plots.make_plots

    def paused(data, folder):  # A's plots only: the first call
        if not in_plots.is_set():
            in_plots.set()
            assert go_on.wait(60)
        return real(data, folder)

    monkeypatch.setattr(plots, "make_plots", paused)
    a, got_a = _in_thread(lambda: build_report(spec, runs, out, timings=False))
    assert in_plots.wait(60) and (out / report.STAGING).is_dir()  # A writes into its staging folder (s50 f9)
    with caplog.at_level("INFO", logger="leaderboards.report"):
        b, got_b = _in_thread(lambda: build_report(spec, runs, out, timings=False))
        deadline = time.monotonic() + 60
        while "waiting for another report build" not in caplog.text and b.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b.is_alive(), got_b  # B waits on A's lock
        assert f"waiting for another report build of {out} to finish" in caplog.text
        go_on.set()
        a.join(60)
        b.join(60)
    assert not a.is_alive() and not b.is_alive()
    assert "exc" not in got_a and "exc" not in got_b, (got_a.get("exc"), got_b.get("exc"))
    assert _tree(out) == alone


def test_report_command_waits_for_a_lock_held_by_another_process(toy, tmp_path):
    """The lock is cross-process: a ``report`` command started while this process holds the folder's lock waits
    (one log line), then writes the report a single build writes and exits 0."""
    spec, runs, alone = toy
    out = tmp_path / "report"
    with file_lock(out / report.REPORT_LOCK.removesuffix(".lock")):
        proc = subprocess.Popen([sys.executable, "-m", "leaderboards.cli", "report", str(spec.path), "--runs-dir", str(runs),
                                 "--out", str(out), "--no-timings"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=subprocess_env(tmp_path / "cache"))
        err = ""
        deadline = time.monotonic() + 120
        while "waiting for another report build" not in err and proc.poll() is None and time.monotonic() < deadline:
            err += proc.stderr.readline()
        assert proc.poll() is None, err  # still waiting
        assert f"waiting for another report build of {out} to finish" in err
        assert not (out / "leaderboard.json").exists()
    _, rest = proc.communicate(timeout=300)
    assert proc.returncode == 0, err + rest
    assert _tree(out) == alone


def test_an_unfinished_cell_whose_lock_is_held_is_said_to_be_computed_now(toy, tmp_path):
    spec, runs, _ = toy
    part = tmp_path / "runs"
    shutil.copytree(runs, part)
    key = {c.cell_id: k for c, k, _ in cell_keys(spec, part)}["none/toy_qa/seed1"]
    (part / key / "DONE").unlink()  # started, not finished
    reasons: dict[str, str] = {}
    collect(spec, part, allow_missing=True, reasons=reasons)
    assert "the cell started but did not finish" in reasons["none/toy_qa/seed1"]  # no runner holds it
    with file_lock(part / key):  # a runner computing it now
        reasons = {}
        collect(spec, part, allow_missing=True, reasons=reasons)
    why = reasons["none/toy_qa/seed1"]
    assert why.startswith(f"{part / key}: being computed by another process now (it holds {part / key}.lock)"), why
    assert "did not finish" not in why
