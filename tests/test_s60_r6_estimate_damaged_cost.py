"""``tokrag leaderboard run --estimate`` leaves out a finished cell whose ``cost.json`` holds a damaged count or wall
time (s60 r6, review of f1's c7a8ac7, which reads ``wall_s - model_s`` as a cell's fixed seconds).

Measured on a copy of a real ToyLM runs folder (4 cells of 4 questions over nq_oracle_bm25 and its noise60 variant,
0.25 s a request) with every ``cost.json`` edited, estimating the same grid at 20 questions: ``wall_s`` NaN gave each
cell 0 fixed seconds (``max(0.0, nan - model_s)`` is 0.0: 5.0 s a cell where the cells ran in 5.8-7.6 s);
``Infinity`` ended in "run --fallback-s-per-question None: the estimate of big overflows" (no such flag was given);
``"12.5 s"`` or an ``n_samples`` of ``"four"`` in a ValueError traceback. Now such a folder is left out, as a
malformed ``cost.json`` is, and the estimate stands on the cells that are readable.

The finished cells are hand-written run folders (``DONE``, ``config.json``, ``cost.json``) of the toy spec."""

from __future__ import annotations

import json
import math

import pytest

from leaderboards.cli import main as lb_main
from leaderboards.estimate import estimate, measurements
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import FIX, TOY, write_spec

PRETRAINED = str(FIX / "toy_weights.bin")
METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
           {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]


def _finished(runs, name, cost: str):
    """A finished run folder of standard/toy_qa/seed1 (4 questions) whose ``cost.json`` holds the text ``cost``."""
    d = runs / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({
        "cell_id": "standard/toy_qa/seed1", "method": "standard", "model": TOY, "task": "toy_qa", "limit": 4,
        "model_args": {"pretrained": PRETRAINED, "k": 3, "mode": "first"}}))
    (d / "cost.json").write_text(cost)
    (d / "DONE").write_text("{}")


GOOD = '{"wall_s": 13.0, "model_s": 1.0, "n_samples": 4}'  # fixed 12.0 s, 0.25 s a question


@pytest.mark.parametrize("damaged", [
    '{"wall_s": NaN, "model_s": 1.0, "n_samples": 4}',
    '{"wall_s": Infinity, "model_s": 1.0, "n_samples": 4}',
    '{"wall_s": Infinity, "n_samples": 4}',
    '{"wall_s": "12.5 s", "model_s": 1.0, "n_samples": 4}',
    '{"wall_s": 13.0, "model_s": 1.0, "n_samples": "four"}',
    '{"wall_s": 13.0, "model_s": 1.0, "n_samples": 1' + "0" * 400 + "}",
], ids=["wall-nan", "wall-inf", "wall-inf-no-model", "wall-text", "n-text", "n-huge"])
def test_a_damaged_cost_is_left_out(tmp_path, damaged, capsys):
    runs = tmp_path / "runs"
    _finished(runs, "good", GOOD)
    _finished(runs, "damaged", damaged)
    spec = load_spec(write_spec(tmp_path / "s", limit=20, tasks=["toy_qa"], methods=METHODS))
    assert [(m.wall_s, m.model_s, m.n) for m in measurements(runs, spec.include_path)] == [(13.0, 1.0, 4)]
    est = estimate(spec, runs)
    # the good folder alone: standard/toy_qa 0.25 x 20 + 12.0 (the task's first cell); none/toy_qa (model+kind)
    # 0.25 x 20 + 12.0 (the only fixed figure of the task is also its smallest)
    assert [(c["cell"], c["seconds"], c["fixed_s"]) for c in est["cells"]] == [
        ("standard/toy_qa/seed1", 17.0, 12.0), ("none/toy_qa/seed1", 17.0, 12.0)]
    assert est["measurements"] == 1 and math.isclose(est["cell_hours"], round(34.0 / 3600, 2))
    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "estimating 2 from 1 finished cell" in out and json.loads(out.strip().splitlines()[-1])["cell_hours"] == 0.01


def test_model_s_of_a_readable_cost_is_read_as_before(tmp_path):
    """0 is a model_s (a very fast model); text, negative, NaN or an integer past float's range (was an OverflowError
    traceback) is none (the folder is a wall-rate measurement); above wall_s it is capped."""
    runs = tmp_path / "runs"
    for i, model_s in enumerate(["0", '"1.0"', "-1.0", "NaN", "40.0", "1" + "0" * 400]):
        _finished(runs, f"c{i}", '{"wall_s": 13.0, "model_s": %s, "n_samples": 4}' % model_s)
    spec = load_spec(write_spec(tmp_path / "s", limit=20, tasks=["toy_qa"], methods=METHODS))
    assert sorted((m.model_s is None, m.model_s) for m in measurements(runs, spec.include_path)) == [
        (False, 0.0), (False, 13.0), (True, None), (True, None), (True, None), (True, None)]
