"""A ``check`` that FAILs because a value moved said what moved but not what to do (s52 u1 P8): it now ends, once,
after the summary, with where to look (the report's per-question page of the cell, and the ``report`` command that
writes it) and the exact ``check --write`` command that accepts the change. Not when nothing moved, nor for a cell
that is only missing (its own line names the fix)."""

from __future__ import annotations

import json
import shutil

import pytest
from leaderboard_helpers import run_toy_spec

from leaderboards.check import write_baseline
from leaderboards.cli import main as lb_main

CELL = "standard/toy_qa/seed1"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return run_toy_spec(tmp_path_factory.mktemp("lb"), tasks=["toy_qa"], limit=8)


def _check(spec, runs, base, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    rc = lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base)])
    return rc, capsys.readouterr().out.splitlines()


def test_a_moved_value_ends_with_the_page_to_look_at_and_the_write_command(toy, tmp_path, capsys):
    spec, runs = toy
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 0 and not any(x.startswith("next:") for x in out)  # nothing moved: no next steps
    b = json.loads(base.read_text())
    b["cells"][CELL]["em"] = round(b["cells"][CELL]["em"] - 0.5, 6)  # the runs now look 0.5 better than accepted
    b["questions"][CELL]["em"] = []
    base.write_text(json.dumps(b))
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 1
    summary = next(i for i, x in enumerate(out) if " checks: " in x)
    assert [x.split(":")[0] for x in out[summary + 1:]] == ["next", "next"]  # once, after the summary
    page = runs / "reports" / "toy" / "questions" / "toy_qa.html"
    assert out[summary + 1] == (f"next: to read these runs' answers question by question, write the report (tokrag "
                                f"leaderboard report {spec.path} --runs-dir {runs}) and open its per-question page "
                                f"{page} (the page shows no baseline: the questions that changed are named above, in "
                                "the per-question lines, where the baseline has per-question values)")
    assert out[summary + 2].endswith(f": tokrag leaderboard check {spec.path} --runs-dir {runs} --baseline {base} --write")
    # following it accepts the change: the check passes and says nothing more
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 0 and not any(x.startswith("next:") for x in out)


def test_a_cell_missing_from_the_runs_gives_no_next_steps(toy, tmp_path, capsys):
    spec, runs = toy
    mine = tmp_path / "runs"
    shutil.copytree(runs, mine)
    base = tmp_path / "baseline.json"
    write_baseline(spec, mine, base)
    for d in mine.iterdir():
        if (d / "config.json").is_file() and json.loads((d / "config.json").read_text()).get("method") == "standard":
            shutil.rmtree(d)
    rc, out = _check(spec, mine, base, capsys)
    assert rc == 1 and any("missing from the runs" in x for x in out)
    assert not any(x.startswith("next:") for x in out)
