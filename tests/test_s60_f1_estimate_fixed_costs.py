"""``tokrag leaderboard run --estimate`` priced a cell at ``wall_s / n`` of the finished cells like it, so the fixed
seconds of a small finished cell (the task build: retrieval, a BM25 index, the JVM; ``cost.json`` ``wall_s - model_s``)
were multiplied by the new cell's questions (s60 n1, new-user trial: 4-question cells estimated a 20-question grid at
5-6x its time; s60 f1 measured 164 s estimated for 28 s run with ToyLM over nq_oracle_bm25). Now the per-question rate
is ``model_s / n`` and the fixed seconds are counted once per cell: the task's largest for its first cell, its smallest
for the next ones. Finished cells written before ``model_s`` existed keep the wall rate, and the output says so.

The finished cells here are hand-written run folders (``DONE``, ``config.json``, ``cost.json``) of 4 questions with
known fixed and per-question seconds; the spec to estimate is the toy spec at limit 20 (2 methods x 2 tasks)."""

from __future__ import annotations

import json

import pytest

from leaderboards.cli import main as lb_main
from leaderboards.estimate import _wall_seconds, estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import FIX, TOY, write_spec

PRETRAINED = str(FIX / "toy_weights.bin")


def _finished(runs, name, method, task, wall_s, model_s=None, n=4):
    """A finished run folder of the toy spec's ``method`` on ``task`` (4 questions) with this cost."""
    d = runs / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({
        "cell_id": f"{method}/{task}/seed1", "method": method, "model": TOY, "task": task, "limit": n,
        "model_args": {"pretrained": PRETRAINED, "k": 3, "mode": "first" if method == "standard" else "none"}}))
    cost = {"wall_s": wall_s, "n_samples": n, "forward_passes": 2 * n}
    if model_s is not None:
        cost["model_s"] = model_s
    (d / "cost.json").write_text(json.dumps(cost))
    (d / "DONE").write_text("{}")


# (method, task): wall_s, model_s of a 4-question cell; fixed = wall_s - model_s: the first cell of each task built it
SMALL = {("standard", "toy_qa"): (13.0, 1.0),           # fixed 12.0, 0.25 s a question
         ("none", "toy_qa"): (2.0, 0.8),                # fixed 1.2, 0.2 s a question
         ("standard", "toy_qa_noise67"): (15.0, 1.0),   # fixed 14.0
         ("none", "toy_qa_noise67"): (2.6, 0.8)}        # fixed 1.8


@pytest.fixture
def spec_and_runs(tmp_path):
    runs = tmp_path / "runs"
    for i, ((method, task), (wall, model)) in enumerate(SMALL.items()):
        _finished(runs, f"cell{i}", method, task, wall, model)
    return load_spec(write_spec(tmp_path / "s", limit=20)), runs


def test_fixed_seconds_count_once_per_cell_not_per_question(spec_and_runs):
    spec, runs = spec_and_runs
    est = estimate(spec, runs)
    got = {c["cell"]: (c["s_per_question"], c["fixed_s"], c["seconds"], c["time_basis"]) for c in est["cells"]}
    # spec order: standard/toy_qa, standard/toy_qa_noise67 (each task's first cell: its largest fixed seconds), then
    # none/... (the smallest); per question model_s / n. The old estimate: 65, 75, 10 and 13 s (wall_s / 4 x 20).
    assert got == {"standard/toy_qa/seed1": (0.25, 12.0, 17.0, "model"),
                   "standard/toy_qa_noise67/seed1": (0.25, 14.0, 19.0, "model"),
                   "none/toy_qa/seed1": (0.2, 1.2, 5.2, "model"),
                   "none/toy_qa_noise67/seed1": (0.2, 1.8, 5.8, "model")}
    assert (est["questions"], est["cell_hours"], est["fixed_hours"], est["cells_from_wall_rate"]) == (80, 0.01, 0.01, 0)
    assert _wall_seconds(est["cells"], 2) == pytest.approx(24.8)  # A: 17 + 5.2; B: 19 + 5.8
    by = {b["method"]: (b["questions"], b["s_per_question"]) for b in est["by_method"]}
    assert by == {"standard": (40, 0.9), "none": (40, 0.275)}  # (17 + 19) / 40, (5.2 + 5.8) / 40: fixed included
    assert "wall seconds per question" not in render(est)


def test_a_larger_grid_scales_the_questions_only(spec_and_runs, tmp_path):
    """limit 24 (the toy task's size) instead of 20: 4 more questions a cell at 0.25 / 0.2 s, the fixed seconds alike."""
    _, runs = spec_and_runs
    est = estimate(load_spec(write_spec(tmp_path / "s24", limit=24)), runs)
    assert [c["seconds"] for c in est["cells"]] == [18.0, 20.0, 6.0, 6.6]


def test_cells_without_model_s_keep_the_wall_rate_and_say_so(tmp_path, capsys):
    """Folders written before cost.json recorded model_s: no split is known, so wall_s / n as before (no fixed part
    added on top), and a line says these cells are over-estimated when they have more questions."""
    runs = tmp_path / "runs"
    for i, ((method, task), (wall, _)) in enumerate(SMALL.items()):
        _finished(runs, f"cell{i}", method, task, wall)
    spec = load_spec(write_spec(tmp_path / "s", limit=20))
    est = estimate(spec, runs)
    assert [(c["seconds"], c["fixed_s"], c["time_basis"]) for c in est["cells"]] == [
        (65.0, 0.0, "wall"), (75.0, 0.0, "wall"), (10.0, 0.0, "wall"), (13.0, 0.0, "wall")]
    assert (est["cells_from_wall_rate"], est["fixed_hours"]) == (4, 0.0)
    assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[5].startswith("total: 80 questions (at most: ") and ", 2.7 cell-minutes" in lines[5]  # 163 s
    assert lines[6] == (
        "all 4 estimated cells are priced at wall seconds per question: the finished cells they are measured from "
        "record no model_s (cost.json written before it existed), so their fixed seconds (task build, retrieval, "
        "index) are spread over their questions; a cell with more questions than those is over-estimated (a cell run "
        "by this version records both, and the estimate then counts the fixed part once per cell)")
    assert json.loads(lines[-1])["cells_from_wall_rate"] == 4


def test_a_similar_cell_with_model_s_wins_over_one_without(tmp_path):
    """standard/toy_qa measured twice, once by an old folder (no model_s, 40 s for 4) and once now: the new one's rate
    and fixed seconds (the old estimate pooled both: 53 s / 8 x 20 = 132.5 s)."""
    runs = tmp_path / "runs"
    _finished(runs, "old", "standard", "toy_qa", 40.0)
    _finished(runs, "new", "standard", "toy_qa", 13.0, 1.0)
    est = estimate(load_spec(write_spec(tmp_path / "s", limit=20, tasks=["toy_qa"],
                                        methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])),
                   runs)
    assert [(c["seconds"], c["measurements"], c["time_basis"]) for c in est["cells"]] == [(17.0, 1, "model")]
    assert est["cells_from_wall_rate"] == 0


@pytest.mark.parametrize("n_wall, n_est, start", [
    (1, 1, "the estimated cell is priced"), (1, 4, "1 of the 4 estimated cells is priced"),
    (2, 4, "2 of the 4 estimated cells are priced"), (4, 4, "all 4 estimated cells are priced")])
def test_the_wall_rate_line_counts_its_cells(n_wall, n_est, start):
    from leaderboards.estimate import wall_rate_line

    assert wall_rate_line(n_wall, n_est).startswith(start + " at wall seconds per question: ")
