"""A spec's seeds draw a noise task's passages (a new-user trial: seeds [1234, 5678] gave byte-identical samples,
because the noise draw used the task YAML's metadata seed 1234 whatever the cell's seed, while the report averaged
the two as replicates)."""

from __future__ import annotations

import json
import logging

from leaderboard_helpers import FIX, REPO, TOY, pin_cell_keys, write_spec

from leaderboards.runner import run_spec, seed_notes
from leaderboards.spec import load_spec

NOISE = "nq_oracle_bm25_noise60"


def _passages(runs, cell_id: str) -> list[list[str]]:
    """Each question's passage docids in the finished run of ``cell_id`` under ``runs``."""
    for d in runs.iterdir():
        cfg = d / "config.json"
        if cfg.is_file() and json.loads(cfg.read_text())["cell_id"] == cell_id:
            rows = [json.loads(line) for line in (d / f"samples_{NOISE}.jsonl").read_text().splitlines()]
            return [[c["docid"] for c in r["doc"]["ctxs"]] for r in rows]
    raise AssertionError(f"no run of {cell_id} in {runs}")


def _default_draw(limit: int) -> list[list[str]]:
    """The passages of the task as plain lm-eval builds it (its YAML's seed 1234, no --metadata)."""
    from lm_eval.tasks import TaskManager

    from tasks import add_include_path

    tm = TaskManager(include_path=add_include_path([str(REPO / "tasks")]), include_defaults=False)
    task = tm.load([NOISE])["tasks"][NOISE]
    docs = list(task.test_docs())[:limit]
    return [[c["docid"] for c in d["ctxs"]] for d in docs]


def test_two_seeds_draw_two_noise_samples(tmp_path, monkeypatch, caplog):
    pin_cell_keys(monkeypatch)
    spec = load_spec(write_spec(tmp_path, tasks=[NOISE], include=REPO / "tasks", limit=6,
                                seeds=(1234, 5678), methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}],
                                extra={"shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 5},
                                                  "gen_kwargs": {"max_gen_toks": 8}, "limit": 6}}))  # k 5: the task's hits
    metas = {(c.task.task, c.seed): c.lm_eval_metadata() for c in spec.cells()}
    assert metas[(NOISE, 1234)]["seed"] == 1234 and metas[(NOISE, 5678)]["seed"] == 5678
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        run_spec(spec, tmp_path / "runs", progress=False)
    a, b = _passages(tmp_path / "runs", f"standard/{NOISE}/seed1234"), _passages(tmp_path / "runs", f"standard/{NOISE}/seed5678")
    assert len(a) == len(b) == 6
    assert a != b  # the old code drew both with the YAML's seed 1234: identical passages
    assert a == _default_draw(6)  # seed 1234 is the default draw: the committed specs' numbers do not change
    said = [r.getMessage() for r in caplog.records if "drawn with each cell's seed" in r.getMessage()]
    assert len(said) == 1 and f"task {NOISE}" in said[0] and "(5678), not its YAML's metadata seed 1234" in said[0]


def test_model_args_seed_goes_to_the_model_only(tmp_path):
    spec = load_spec(write_spec(tmp_path, tasks=[NOISE], include=REPO / "tasks", limit=2, seeds=(7,),
                                methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first", "seed": 99}}]))
    (cell,) = spec.cells()
    assert cell.lm_eval_metadata()["seed"] == 7
    assert seed_notes(spec, [cell])[1].startswith("method standard: model_args seed=99 goes to the model only")


def test_committed_ci_spec_keeps_the_default_draw():
    """The committed specs use seeds [1234]: every noise cell's draw seed is the YAML's, so its passages are unchanged."""
    spec = load_spec(REPO / "leaderboards" / "specs" / "ci.yaml")
    noisy = [c for c in spec.cells() if c.task.task == NOISE]
    assert noisy and {c.lm_eval_metadata()["seed"] for c in noisy} == {1234}
    assert seed_notes(spec, spec.cells()) == []
    clean = [c for c in spec.cells() if c.task.task == "nq_oracle_bm25"]
    assert clean and all("seed" not in c.lm_eval_metadata() for c in clean)  # no draw: metadata as before


def test_the_draw_seed_is_in_the_run_key(tmp_path, monkeypatch):
    """Before 1cc1820 a seed-5678 cell of a noise task was drawn with the YAML's seed 1234 under the same key as now:
    without the draw's seed in the key, such a finished (stale) run was served as done. A clean task's key has none."""
    from leaderboards.keys import cell_keys
    from leaderboards.spec import Cell

    spec = load_spec(write_spec(tmp_path, tasks=[NOISE, "nq_oracle_bm25"], include=REPO / "tasks", limit=2,
                                seeds=(1234, 5678), methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]))
    mats = {(c.task.task, c.seed): (k, m) for c, k, m in cell_keys(spec)}
    assert mats[(NOISE, 1234)][1]["task_draw_seed"] == 1234 and mats[(NOISE, 5678)][1]["task_draw_seed"] == 5678
    assert "task_draw_seed" not in mats[("nq_oracle_bm25", 5678)][1]
    stale = mats[(NOISE, 5678)][0]
    monkeypatch.setattr(Cell, "lm_eval_metadata", Cell.task_metadata)  # the old draw: no seed for lm-eval
    assert {(c.task.task, c.seed): k for c, k, _ in cell_keys(spec)}[(NOISE, 5678)] != stale
