"""``tokrag leaderboard run --estimate`` names the real reason a cell is not estimated (s59 n3, new-user trial).

A spec without ``limit:`` over a task no finished cell had run (a bring-your-own task, as the README's "Your own
questions and corpus" leads to), estimated with ``--fallback-s-per-question 3.4`` as the first message advises, said
"none of the 2 unfinished cells resembles a finished cell ...; ... or pass --fallback-s-per-question S" and "no
measurement of a similar cell; run one or pass --fallback-s-per-question": the flag just given. The rate was known;
the number of questions was not. The line now says that and what gives it (a whole-number ``shared.limit``, or one
finished cell of the task), and following its command makes the cells estimable.
"""

from __future__ import annotations

import json
import shlex

from leaderboard_helpers import write_spec

from leaderboards import estimate as lb_estimate
from leaderboards.cli import main as lb_main
from leaderboards.spec import load_spec


def _lines(out: str) -> list[str]:
    return [ln for ln in out.strip().splitlines() if not ln.startswith("{")]


def test_fallback_given_and_no_limit_names_the_unknown_count_not_the_fallback(tmp_path, capsys):
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=None)
    runs = tmp_path / "runs"
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--estimate",
                    "--fallback-s-per-question", "3.4"]) == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    cmd = f"tokrag leaderboard run {spec_path} --runs-dir {runs} --methods standard --tasks toy_qa --max-cells 1"
    assert lines[1] == (
        f"total: not estimated: the 2 unfinished cells have an unknown number of questions (no whole-number limit in "
        f"the spec, and no finished cell of the task in {runs} shows how many questions it scores); give the spec a "
        f"whole-number shared.limit, or run one cell of their task first ({cmd}) and estimate again")
    assert lines[2] == (
        "not estimated (2 cells: an unknown number of questions; give the spec a whole-number shared.limit or run one "
        "cell of their task): standard/toy_qa/seed1 (unknown number of questions), none/toy_qa/seed1 (unknown number "
        "of questions)")
    assert "--fallback-s-per-question" not in out.replace("--fallback-s-per-question 3.4", "")
    assert "resembles" not in out and "no measurement" not in out
    last = json.loads(out.strip().splitlines()[-1])
    assert last["unestimated_cells"] == 2 and last["unestimated_unmeasured"] == 0 and last["cell_hours"] is None
    # the advice works: one finished cell of the task gives its count, and the other cell is then estimated
    assert lb_main(shlex.split(cmd)[2:] + ["--no-progress"]) == 0
    capsys.readouterr()
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--estimate",
                    "--fallback-s-per-question", "3.4"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["unestimated_cells"] == 0 and last["cells_todo"] == 1 and last["questions"] == 24


def test_a_whole_number_limit_with_the_fallback_is_estimated(tmp_path):
    """The other half of the advice: with ``limit`` the same cells are estimated from the fallback alone."""
    est = lb_estimate.estimate(load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=5)), tmp_path / "runs",
                               fallback=3.4)
    assert est["unestimated"] == [] and est["questions"] == 10 and est["unestimated_unmeasured"] == 0
    assert [c["seconds"] for c in est["cells"]] == [17.0, 17.0]


def test_no_fallback_and_no_limit_keeps_the_fallback_advice_and_adds_the_limit(tmp_path):
    est = lb_estimate.estimate(load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=None)), tmp_path / "runs")
    assert est["unestimated_unmeasured"] == 2
    lines = lb_estimate.render(est).splitlines()
    assert lines[1].startswith("total: not estimated: none of the 2 unfinished cells resembles a finished cell in ")
    assert "or pass --fallback-s-per-question S (a rough S:" in lines[1]
    assert lines[1].endswith("; 2 cells marked below have an unknown number of questions too: give the spec a "
                             "whole-number shared.limit")
    assert lines[2].startswith("not estimated (2 cells: no measurement of a similar cell; run one or pass "
                               "--fallback-s-per-question; the 2 cells marked (unknown number of questions) need a "
                               "whole-number shared.limit or a finished cell of their task): ")


def test_a_limit_without_fallback_reads_as_before(tmp_path):
    est = lb_estimate.estimate(load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=5)), tmp_path / "runs")
    lines = lb_estimate.render(est).splitlines()
    assert "unknown number of questions" not in "\n".join(lines)
    assert lines[2] == ("not estimated (2 cells: no measurement of a similar cell; run one or pass "
                        "--fallback-s-per-question): standard/toy_qa/seed1, none/toy_qa/seed1")


def _est(n_est: int, unest: list[str], unmeasured: int, first_runs: list[str]) -> dict:
    return {"spec": "toy", "selection": None, "cells_done": 0, "cells_total": n_est + len(unest),
            "cells_todo": n_est + len(unest), "measurements": 0, "runs_dir": "runs", "by_method": [],
            "cells": [{"cell": f"c{i}", "questions": 10, "seconds": 30.0} for i in range(n_est)],
            "unestimated": unest, "unestimated_unmeasured": unmeasured, "first_runs": first_runs,
            "questions": 10 * n_est, "cell_hours": 0.01, "wall_hours": 0.01, "jobs": 1, "unregistered_models": []}


def test_more_than_three_tasks_to_size_are_counted_as_tasks():
    """The command list is cut after three; the rest were called "more methods" also where they are tasks."""
    marked = [f"m/t{i}/seed1 (unknown number of questions)" for i in range(5)]
    out = lb_estimate.render(_est(0, marked, 0, [f"cmd{i}" for i in range(5)]))
    assert "first (cmd0; cmd1; cmd2; ... (2 more tasks)) and estimate again" in out
    assert "more methods" not in out
    unmeasured = lb_estimate.render(_est(0, [f"m{i}/t/seed1" for i in range(5)], 5, [f"cmd{i}" for i in range(5)]))
    assert "(cmd0; cmd1; cmd2; ... (2 more methods))" in unmeasured


def test_some_estimated_and_one_lacking_only_its_count():
    lines = lb_estimate.render(_est(2, ["m/t/seed1 (unknown number of questions)"], 0, ["cmdT"])).splitlines()
    assert lines[1].startswith("total of the 2 estimated cells (a lower bound: 1 cell not estimated): 20 questions")
    assert lines[2] == ("not estimated (1 cell: an unknown number of questions; give the spec a whole-number shared.limit "
                        "or run one cell of its task (cmdT)): m/t/seed1 (unknown number of questions)")
