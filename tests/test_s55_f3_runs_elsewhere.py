"""A spec run inside its own folder, then read from the folder above (s55 u1 F3, fixed by s55 f3).

``cd lb && tokrag leaderboard run toy.yaml`` writes ``lb/runs`` (the default runs folder is ./runs of the working
directory); ``tokrag leaderboard report lb/toy.yaml`` from ``lb``'s parent then said "4 of 4 cells are not finished
in <cwd>/runs: ... not run yet (no run folder)" and "run: tokrag leaderboard run ... --runs-dir <cwd>/runs", i.e. to
compute again every cell that sits finished in ``lb/runs``. Now report, rescore and check --write are refused with
one line naming the folder that holds them and the --runs-dir to add, check prints that line first, and run and
run --estimate print it and go on (fast: the toy model)."""

from __future__ import annotations

import os
import shutil

import pytest
from leaderboard_helpers import pin_cell_keys, run_toy_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import IncompleteRunError
from leaderboards.spec import load_spec


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Each spec's run keys computed once per spec file; no $TOKRAG_RUNS_DIR from the environment."""
    pin_cell_keys(monkeypatch)
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The toy spec (4 cells) written into ``<root>/lb`` and run into ``<root>/lb/runs``: ``root``."""
    root = tmp_path_factory.mktemp("elsewhere")
    run_toy_spec(root / "lb", limit=3)
    return root


@pytest.fixture
def work(finished, tmp_path, monkeypatch):
    """A copy of ``finished`` in ``tmp_path``, the working directory its parent of ``lb`` (runs/ there absent)."""
    shutil.copytree(finished / "lb", tmp_path / "lb")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _line(root) -> str:
    here, lb = root.resolve() / "runs", root.resolve() / "lb" / "runs"
    return (f"none of the 4 cells of spec 'toy' is finished in {here} (the default, ./runs of the working directory); "
            f"{lb} holds 4 of 4 finished: add --runs-dir {lb}")


def test_report_from_the_parent_folder_names_the_spec_s_runs_folder(work, capsys):
    with pytest.raises(IncompleteRunError) as err:
        lb_main(["report", "lb/toy.yaml"])
    msg = str(err.value)
    assert msg.startswith(_line(work) + "; or, to compute them anew in ")
    assert "\n" not in msg and "not run yet" not in msg  # one line, not one per cell
    assert not (work / "runs").exists()  # nothing written
    # the advice works: with --runs-dir the report is written
    assert lb_main(["report", "lb/toy.yaml", "--runs-dir", str(work / "lb" / "runs"), "--out", str(work / "rep")]) == 0
    assert (work / "rep" / "leaderboard.json").is_file()


def test_rescore_and_check_write_are_refused_with_the_same_line(work):
    for argv in (["rescore", "lb/toy.yaml", "--out", str(work / "rep")],
                 ["check", "lb/toy.yaml", "--baseline", str(work / "b.json"), "--write"]):
        with pytest.raises(IncompleteRunError) as err:
            lb_main(argv)
        assert str(err.value).startswith(_line(work) + "; or"), argv
    assert not (work / "b.json").exists() and not (work / "rep").exists()


def test_check_prints_the_line_before_the_cells_fail_lines(work, capsys):
    base = work / "b.json"
    assert lb_main(["check", "lb/toy.yaml", "--baseline", str(base), "--write",
                    "--runs-dir", str(work / "lb" / "runs")]) == 0
    capsys.readouterr()
    assert lb_main(["check", "lb/toy.yaml", "--baseline", str(base)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("note: " + _line(work) + "; or, to compute them anew in ")
    assert sum(line.startswith("FAIL ") for line in out) == 4
    # with the folder that holds them: all OK, no note
    assert lb_main(["check", "lb/toy.yaml", "--baseline", str(base), "--runs-dir", str(work / "lb" / "runs")]) == 0
    assert not any(line.startswith("note: none of") for line in capsys.readouterr().out.splitlines())


def test_run_and_estimate_say_it_and_go_on(work, capsys):
    assert lb_main(["run", "lb/toy.yaml", "--estimate", "--fallback-s-per-question", "2"]) == 0
    err = capsys.readouterr().err
    assert f"note: {_line(work)} to use them; this estimate counts them as to do in {work.resolve() / 'runs'}" in err
    assert lb_main(["run", "lb/toy.yaml", "--no-progress", "--max-cells", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    want = (f"note: {_line(work)} to use them (stop this run: Ctrl-C); this run computes them anew in "
            f"{work.resolve() / 'runs'}")
    assert want in err
    assert len(os.listdir(work / "runs")) >= 1  # not refused: one cell ran into ./runs
    # once ./runs holds one of the spec's cells, nothing more is said
    from leaderboards.runner import runs_elsewhere_note

    assert runs_elsewhere_note(load_spec("lb/toy.yaml")) is None


def test_no_note_where_the_runs_folder_in_use_holds_the_cells(work):
    from leaderboards.runner import runs_elsewhere_note

    spec = load_spec(work / "lb" / "toy.yaml")
    assert runs_elsewhere_note(spec, work / "lb" / "runs") is None
    os.chdir(work / "lb")  # the folder it was run in (monkeypatch.chdir restores the working directory)
    assert runs_elsewhere_note(spec) is None
    os.chdir(work)
    shutil.rmtree(work / "lb" / "runs")  # nothing finished anywhere: the usual list, no note
    assert runs_elsewhere_note(spec) is None
    with pytest.raises(IncompleteRunError, match=r"(?s)^4 of 4 cells are not finished in .*not run yet .*\nrun: "):
        lb_main(["report", "lb/toy.yaml"])
