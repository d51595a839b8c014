"""Leaderboard reliability (``pytest -m reliability``): SIGKILL-and-resume, two runners on one run
folder, and run-to-run determinism. Runner processes are real subprocesses (``python -m leaderboards.cli``)
driving the deterministic toy model with a per-request delay, so kills land inside cells.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, report_bytes, runner_cmd, subprocess_env, write_spec

import leaderboards.runner
from leaderboards.keys import cell_keys
from leaderboards.report import build_report
from leaderboards.runner import IncompleteRunError, cell_is_done, run_spec, verify_cell_dir
from leaderboards.spec import load_spec

pytestmark = pytest.mark.reliability

METHODS = [
    {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
    {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
    {"name": "sample", "model": TOY, "model_args": {"mode": "sample"}},
]


def _spec(root: Path, delay: float = 0.01) -> Path:
    return write_spec(root, methods=METHODS, seeds=(1, 2), limit=12, delay=delay)  # 3 x 2 x 2 = 12 cells


@pytest.fixture(autouse=True)
def _pinned_commit(monkeypatch):
    """Pin the provenance commit: other work may commit to the repository while these tests run."""
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")


class _NoSleep:
    """Stands in for the toy model's ``time`` module: its per-request ``delay`` only makes kills land inside cells."""

    @staticmethod
    def sleep(_seconds: float) -> None:
        return None


def _reference(root: Path, delay: float = 0.01):
    """An uninterrupted in-process run and its report without timings (made just before comparing, so
    that the code fingerprints in the keys are those of the run under test). The spec has the same ``delay``
    (so the same keys and bytes), but the toy model does not sleep it here: nothing is killed in this run."""
    from unittest import mock

    spec = load_spec(_spec(root, delay=delay))
    with mock.patch.object(importlib.import_module(TOY.split(":")[0]), "time", _NoSleep):
        run_spec(spec, root / "runs", progress=False)
    out = build_report(spec, root / "runs", root / "report", timings=False)
    return spec, root / "runs", report_bytes(out)


def _assert_no_partial_cell_is_readable(spec, runs: Path) -> int:
    """Every cell folder is either complete (manifest + checksums) or refused; returns the complete count."""
    done = 0
    for _cell, key, _ in cell_keys(spec):
        d = runs / key
        if not d.exists():
            continue
        if (d / "DONE").exists():
            verify_cell_dir(d)  # raises on any partial file listed in the manifest
            done += 1
        else:
            with pytest.raises(IncompleteRunError):
                verify_cell_dir(d)
    return done


def test_sigkill_at_random_points_then_resume_gives_the_uninterrupted_report(tmp_path):
    spec_path = _spec(tmp_path, delay=0.05)  # ~0.6 s of model time per cell: kills land inside cells
    spec = load_spec(spec_path)
    runs = tmp_path / "runs"
    env = subprocess_env(tmp_path / "cache")
    rng = random.Random(20261129)
    kills = 0
    for _ in range(5):
        proc = subprocess.Popen(runner_cmd(spec_path, runs), env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:  # kill at a random point; a runner that finishes first is not waited for any longer
            proc.wait(timeout=rng.uniform(4.0, 9.0))  # imports take ~3-4 s; cells ~0.5 s each
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        _assert_no_partial_cell_is_readable(spec, runs)
        if all(cell_is_done(runs / k) for _, k, _ in cell_keys(spec)):
            break
        with pytest.raises(IncompleteRunError):
            build_report(spec, runs, tmp_path / "partial", timings=False)
    assert kills >= 2, "the runner finished before it could be killed twice: raise the delay"
    final = subprocess.run(runner_cmd(spec_path, runs), env=env, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-3000:]
    assert _assert_no_partial_cell_is_readable(spec, runs) == len(spec.cells())
    out = build_report(spec, runs, tmp_path / "report", timings=False)
    mine = report_bytes(out)
    _, _, ref_report = _reference(tmp_path / "ref", delay=0.05)
    # the spec file lives elsewhere but has the same content, so every byte must agree
    assert mine.keys() == ref_report.keys()
    for name in mine:
        assert mine[name] == ref_report[name], name


def test_two_runners_on_one_folder_share_the_work_without_corruption(tmp_path):
    spec_path = _spec(tmp_path)
    spec = load_spec(spec_path)
    runs = tmp_path / "runs"
    # each runner answers one request, then waits for the gate (ToyLM's TOYLM_HOLD): both are inside a cell before
    # either goes on, so neither can run every cell before the other is up (a runner's imports may end ~10 s after
    # the other's on a loaded machine, and the 12 cells take a few seconds)
    gate = tmp_path / "gate"
    env = subprocess_env(tmp_path / "cache") | {"TOYLM_HOLD": str(gate)}
    procs = [subprocess.Popen(runner_cmd(spec_path, runs), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    try:
        deadline = time.monotonic() + 300
        while (len(list(tmp_path.glob("gate.waiting-*"))) < 2 and all(p.poll() is None for p in procs)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert len(list(tmp_path.glob("gate.waiting-*"))) == 2, [p.poll() for p in procs]
        gate.touch()
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        gate.touch()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    summaries = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    ran = [set(s["ran"]) for s in summaries]
    all_cells = {c.cell_id for c in spec.cells()}
    assert ran[0] | ran[1] == all_cells
    assert len(ran[0] & ran[1]) <= 1  # at most one cell computed twice (none, with per-cell locks)
    assert ran[0] and ran[1], f"one runner did all the work: {summaries}"
    assert _assert_no_partial_cell_is_readable(spec, runs) == len(all_cells)
    _, _, ref_report = _reference(tmp_path / "ref")
    assert report_bytes(build_report(spec, runs, tmp_path / "report", timings=False)) == ref_report


def test_same_spec_and_seed_give_byte_identical_results_across_runs(tmp_path):
    spec = load_spec(_spec(tmp_path, delay=0.01))
    runs = tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    ref_spec, ref_runs, ref_report = _reference(tmp_path / "ref")
    for (cell, key, _), (_, ref_key, _) in zip(cell_keys(spec), cell_keys(ref_spec)):
        assert key == ref_key
        sample_file = f"samples_{cell.task.task}.jsonl"
        assert (runs / key / sample_file).read_bytes() == (ref_runs / key / sample_file).read_bytes(), cell.cell_id
        a = json.loads((runs / key / "results.json").read_text())["results"]
        b = json.loads((ref_runs / key / "results.json").read_text())["results"]
        assert a == b
        ca, cb = (json.loads((r / key / "cost.json").read_text()) for r in (runs, ref_runs))
        assert (ca["forward_passes"], ca["generated_tokens"]) == (cb["forward_passes"], cb["generated_tokens"])
    assert report_bytes(build_report(spec, runs, tmp_path / "report", timings=False)) == ref_report
    # the seed reaches the model: the sampling method's two seeds give different answers
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    s1, s2 = ((runs / keys[f"sample/toy_qa/seed{i}"] / "samples_toy_qa.jsonl").read_bytes() for i in (1, 2))
    assert s1 != s2


def test_jobs_2_gives_the_numbers_of_one_process(tmp_path, monkeypatch):
    """Scale-out across cells: ``run --jobs 2`` (this process + one helper) = a single process.

    Both processes are held inside a cell (``TOYLM_HOLD``: a ToyLM waits before its second request of a cell until the
    gate file exists) until the helper is inside one of its own: on a loaded machine this process finished all 12 toy
    cells before the helper had started (s56 t2 saw ``0 < 0`` under load 6-10), so "the helper took some cells" hung
    on the machine's load, not on the runner."""
    import threading

    spec = load_spec(_spec(tmp_path))
    gate = tmp_path / "gate"
    monkeypatch.setenv("PYTHONPATH", subprocess_env(tmp_path / "cache")["PYTHONPATH"])
    monkeypatch.setenv("TOYLM_HOLD", str(gate))
    merge, parts = leaderboards.runner._add_helper_summaries, []
    monkeypatch.setattr(leaderboards.runner, "_add_helper_summaries", lambda s, p, o: (parts.extend(p), merge(s, p, o)))
    stop = threading.Event()

    def open_gate_once_the_helper_waits() -> None:  # a waiting-<pid> file of another process: the helper is in a cell
        mine = f"{gate.name}.waiting-{os.getpid()}"
        while not stop.is_set() and not any(f.name != mine for f in tmp_path.glob(f"{gate.name}.waiting-*")):
            stop.wait(0.05)
        gate.touch()

    watcher = threading.Thread(target=open_gate_once_the_helper_waits, daemon=True)
    watcher.start()
    try:
        summary = run_spec(spec, tmp_path / "runs", progress=False, jobs=2)
    finally:
        stop.set()
        watcher.join(60)
        monkeypatch.delenv("TOYLM_HOLD")  # the reference run below holds nothing
    assert [f.name for f in tmp_path.glob("gate.waiting-*") if f.name != f"gate.waiting-{os.getpid()}"]  # it was held
    assert summary.ran == [c.cell_id for c in spec.cells()]  # the run's summary: both processes' cells
    assert 0 < len(parts[0]["ran"]) < len(spec.cells())  # the helper took some cells
    _, _, ref_report = _reference(tmp_path / "ref")
    assert report_bytes(build_report(spec, tmp_path / "runs", tmp_path / "report", timings=False)) == ref_report
