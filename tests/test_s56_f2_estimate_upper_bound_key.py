"""``tokrag leaderboard run --estimate``: the JSON's count of cells whose question count is only their limit has a
name that says it counts cells (s56 f2).

``questions_upper_bound`` is each cell's bool in ``cells`` and, at the top level (the JSON line the command prints), a
count of cells: next to ``questions`` it read as a bound on the number of questions. The top level now also carries
``cells_with_questions_upper_bound``, the same count; ``questions_upper_bound`` stays (the estimate's text and
earlier tests read it), so no reader breaks.
"""

from __future__ import annotations

import json

from leaderboard_helpers import write_spec

from leaderboards.cli import main as lb_main
from leaderboards.estimate import estimate
from leaderboards.spec import load_spec


def test_the_total_names_a_count_of_cells(tmp_path, capsys):
    spec = load_spec(write_spec(tmp_path, limit=10**9))  # toy_qa + toy_qa_noise67, 2 methods: 4 cells, none finished
    est = estimate(spec, tmp_path / "runs", fallback=1.0)
    assert [c["questions_upper_bound"] for c in est["cells"]] == [True] * 4  # per cell: a bool, as before
    assert est["cells_with_questions_upper_bound"] == est["questions_upper_bound"] == 4
    assert est["questions"] == 4 * 10**9

    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--estimate",
                    "--fallback-s-per-question", "1"]) == 0
    out = capsys.readouterr().out
    line = json.loads(out.strip().splitlines()[-1])  # the JSON the command prints (without the per-cell list)
    assert (line["cells_with_questions_upper_bound"], line["questions_upper_bound"], line["questions"]) == (4, 4, 4 * 10**9)
    assert ("(at most: 4 cells count their limit as their number of questions; a task's size is known once a cell of "
            "that task finishes)") in out


def test_nothing_estimated_counts_no_cells(tmp_path):
    spec = load_spec(write_spec(tmp_path, limit=4))
    est = estimate(spec, tmp_path / "runs", fallback=None)  # no measurement, no fallback: no cell estimated
    assert (est["cells"], est["questions"], est["cells_with_questions_upper_bound"], est["questions_upper_bound"]) == (
        [], None, 0, 0)
