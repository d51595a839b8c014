"""s61 r6 (review of f1's 4369758): the estimate JSON's new ``cell_seconds`` was the int ``0`` where nothing is left
to estimate (every selected cell finished: an empty sum) beside ``"wall_seconds": 0.0`` and ``"cell_hours": 0.0``, so
its JSON type depended on the spec; it is now a float, as ``wall_seconds`` and the hours are. ToyLM spec, one task's
two cells run, then ``run --estimate --tasks`` of that task."""

from __future__ import annotations

import json

from leaderboards.cli import main as lb_main
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


def test_cell_seconds_is_a_float_when_every_cell_is_done(tmp_path, capsys):
    spec = load_spec(write_spec(tmp_path, limit=2, tasks=["toy_qa"]))
    run_spec(spec, tmp_path / "runs", progress=False)
    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--estimate"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1] == ("total: 0 questions, 0.0 cell-seconds (CPU-seconds, one process per cell); about 0.0 s wall "
                        "with --jobs 1 on 1 free core")
    last = lines[-1]
    assert '"cell_seconds": 0.0,' in last and '"wall_seconds": 0.0' in last
    est = json.loads(last)
    assert (est["cells_todo"], est["cell_hours"], est["wall_hours"]) == (0, 0.0, 0.0)
    assert type(est["cell_seconds"]) is float and type(est["wall_seconds"]) is float
