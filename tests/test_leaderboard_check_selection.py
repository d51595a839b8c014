"""``tokrag leaderboard check`` had no ``--models/--methods/--tasks``, which ``run`` has: a run made in parts could
only be checked whole, every cell not yet run one FAIL line (exit 1). ``check`` now takes the same selection, read and
refused as ``run`` reads it (names in one line with a did-you-mean), and compares the selected cells only."""

from __future__ import annotations

import pytest

from leaderboards.cli import main as lb_main
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import run_toy_spec, runs_without

NONE = "none/toy_qa/seed1"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Both toy methods on toy_qa at limit 3, run once, and their baseline (read-only: tests copy the runs)."""
    root = tmp_path_factory.mktemp("check_selection")
    spec, runs = run_toy_spec(root, tasks=["toy_qa"], limit=3)
    baseline = root / "baseline.json"
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(baseline), "--write"]) == 0
    return spec.path, runs, baseline


def test_a_part_of_the_run_is_checked_for_the_cells_selected(finished, tmp_path, capsys):
    path, runs, baseline = finished
    part = runs_without(runs, tmp_path / "runs", NONE)  # run --methods standard so far
    args = ["check", str(path), "--runs-dir", str(part), "--baseline", str(baseline)]
    capsys.readouterr()
    assert lb_main(args) == 1  # the whole spec: the unrun cell fails
    out = capsys.readouterr().out
    assert f"FAIL {NONE}  not finished" in out
    assert lb_main([*args, "--methods", "standard"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out and all(line.startswith("OK   standard/toy_qa/seed1 ") for line in out[:-1])
    assert NONE not in "\n".join(out) and out[-1] == f"{len(out) - 1} checks: {len(out) - 1} OK, 0 FAIL"
    assert lb_main([*args, "--tasks", "toy_qa"]) == 1  # the selection of both methods still has the unrun cell


def test_the_selection_is_read_and_refused_as_run_reads_it(finished, capsys):
    path, runs, baseline = finished
    args = ["check", str(path), "--runs-dir", str(runs), "--baseline", str(baseline)]
    assert lb_main([*args, "--methods", "standard,none", "--methods", "none"]) == 0  # repeats add up, once each
    assert capsys.readouterr().out.count("OK   none/toy_qa/seed1 ") >= 1
    with pytest.raises(ConfigError, match=r"^leaderboard check --methods: 'non' is not in the spec .*toy\.yaml \(did you "
                                          r"mean 'none'\?\); have \['standard', 'none'\]$"):
        lb_main([*args, "--methods", "non"])
    with pytest.raises(ConfigError, match=r"^leaderboard check --models: the spec .*toy\.yaml has no models: list"):
        lb_main([*args, "--models", "smollm2"])
    with pytest.raises(SystemExit):  # an empty name: argparse's usage error, as run gives it
        lb_main([*args, "--tasks", "toy_qa,"])
    assert "expected comma-separated names, got 'toy_qa,'" in capsys.readouterr().err


def test_write_with_a_selection_is_refused(finished, tmp_path):
    path, runs, baseline = finished
    with pytest.raises(ConfigError, match=r"^check --write writes the whole spec's baseline: drop --methods"):
        lb_main(["check", str(path), "--runs-dir", str(runs), "--baseline", str(tmp_path / "b.json"), "--write",
                 "--methods", "standard"])
    assert not (tmp_path / "b.json").exists()
