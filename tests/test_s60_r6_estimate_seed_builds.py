"""``tokrag leaderboard run --estimate`` counts the first-cell fixed seconds once per seed of a task that draws passages
at random (s60 r6, review of f1's c7a8ac7).

f1's estimate added the task's largest ``wall_s - model_s`` to the first unfinished cell of each task and the smallest
to the others. A noise or counterfactual task (:func:`leaderboards.spec.task_draws`) draws and scores its passages
once per seed, so each seed's first cell pays a build: measured with ToyLM (0.25 s a request, 4 questions) over
``nq_oracle_bm25_noise60``, seeds 1237-1239 ran in 13.8, 8.2 and 7.3 s of cell wall (29.3 s) where the estimate said
18.1, 2.1 and 2.1 s (22.3 s): an under-estimate. Now each seed's first cell of such a task gets the first figure.

The finished cells are hand-written run folders (``DONE``, ``config.json``, ``cost.json``) of 4 questions with known
fixed and per-question seconds; the toy noise task is copied with ``noise`` in its metadata (a task that draws)."""

from __future__ import annotations

import json
import shutil

from leaderboards.estimate import estimate
from leaderboards.spec import load_spec, task_draws
from tests.leaderboard_helpers import FIX, TOY, write_spec

PRETRAINED = str(FIX / "toy_weights.bin")
STANDARD = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]


def _finished(runs, name, method, task, wall_s, model_s, n=4):
    """A finished run folder of the toy spec's ``method`` on ``task`` (``n`` questions) with this cost."""
    d = runs / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({
        "cell_id": f"{method}/{task}/seed1", "method": method, "model": TOY, "task": task, "limit": n,
        "model_args": {"pretrained": PRETRAINED, "k": 3, "mode": "first" if method == "standard" else "none"}}))
    (d / "cost.json").write_text(json.dumps({"wall_s": wall_s, "model_s": model_s, "n_samples": n,
                                             "forward_passes": 2 * n}))
    (d / "DONE").write_text("{}")


def _setup(tmp_path):
    """The toy tasks with toy_qa_noise67 declaring ``noise`` (so it draws per seed), and 4 finished cells: toy_qa
    fixed 12.0 (first) and 1.2 s, toy_qa_noise67 fixed 14.0 and 1.8 s, 0.25 s a question for standard."""
    tasks = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", tasks, ignore=shutil.ignore_patterns("__pycache__"))
    y = tasks / "toy_qa" / "toy_qa_noise67.yaml"
    y.write_text(y.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, noise: 0.67}"))
    runs = tmp_path / "runs"
    for i, (method, task, wall, model) in enumerate([("standard", "toy_qa", 13.0, 1.0), ("none", "toy_qa", 2.0, 0.8),
                                                     ("standard", "toy_qa_noise67", 15.0, 1.0),
                                                     ("none", "toy_qa_noise67", 2.6, 0.8)]):
        _finished(runs, f"cell{i}", method, task, wall, model)
    return tasks, runs


def test_each_seed_of_a_drawing_task_gets_the_first_cell_build(tmp_path):
    tasks, runs = _setup(tmp_path)
    assert task_draws("toy_qa_noise67", [tasks]) and not task_draws("toy_qa", [tasks])
    spec = load_spec(write_spec(tmp_path / "s", limit=4, seeds=(1, 2, 3), methods=STANDARD, include=tasks))
    est = estimate(spec, runs)
    got = {c["cell"]: (c["fixed_s"], c["seconds"]) for c in est["cells"]}
    # toy_qa draws nothing: its first cell builds it, the other seeds reuse it (1.2 s); toy_qa_noise67 draws per seed:
    # each seed's cell builds its passages (f1's estimate gave seeds 2 and 3 the next figure, 1.8 s: 2.8 s each)
    assert got == {"standard/toy_qa/seed1": (12.0, 13.0), "standard/toy_qa/seed2": (1.2, 2.2),
                   "standard/toy_qa/seed3": (1.2, 2.2), "standard/toy_qa_noise67/seed1": (14.0, 15.0),
                   "standard/toy_qa_noise67/seed2": (14.0, 15.0), "standard/toy_qa_noise67/seed3": (14.0, 15.0)}
    assert est["fixed_hours"] == round((12.0 + 1.2 + 1.2 + 3 * 14.0) / 3600, 2)


def test_other_methods_of_a_seed_already_priced_get_the_next_figure(tmp_path):
    """Two methods over one seed: the seed's build is counted once (the first method's cell), not per method."""
    tasks, runs = _setup(tmp_path)
    methods = STANDARD + [{"name": "none", "model": TOY, "model_args": {"mode": "none"}}]
    est = estimate(load_spec(write_spec(tmp_path / "s", limit=4, seeds=(1,), methods=methods, include=tasks)), runs)
    assert [(c["cell"], c["fixed_s"]) for c in est["cells"]] == [
        ("standard/toy_qa/seed1", 12.0), ("standard/toy_qa_noise67/seed1", 14.0),
        ("none/toy_qa/seed1", 1.2), ("none/toy_qa_noise67/seed1", 1.8)]
