"""The runs-elsewhere note (s55 f3, runner.runs_elsewhere_note) is a guess: a candidate folder it cannot look at must
not stop the command (s55 r3, review of f3 614b20c).

f3's note looks at a few likely runs folders (``runs/`` beside the spec and beside its folder, ./runs, ...). On
Python 3.11 ``Path.resolve`` raises RuntimeError on a symbolic-link loop and ``Path.is_file`` raises PermissionError
in a folder one may not search (a shared project's ``runs/`` of another user), so ``tokrag leaderboard report`` and
``run`` died with a traceback where they worked before the note existed. Now such a folder is left out, the note
still names a readable one (its --runs-dir shell-quoted where the path has a space), and with none the command says
what it said before (fast: the toy model)."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest
from leaderboard_helpers import pin_cell_keys, run_toy_spec, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import IncompleteRunError, run_command
from leaderboards.spec import load_spec


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Each spec's run keys computed once per spec file; no $TOKRAG_RUNS_DIR from the environment."""
    pin_cell_keys(monkeypatch)
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The toy spec (4 cells) run into ``<root>/runs``: that runs folder."""
    root = tmp_path_factory.mktemp("r3_elsewhere")
    run_toy_spec(root, limit=3)
    return root / "runs"


@pytest.fixture
def work(finished, tmp_path, monkeypatch):
    """``<tmp>/my lb/sub/toy.yaml`` (the same spec), its cells finished in ``<tmp>/my lb/runs`` (beside the spec's
    folder), ``<tmp>/my lb/sub/runs`` a symbolic-link loop, the working directory ``<tmp>`` (./runs absent)."""
    sub = tmp_path / "my lb" / "sub"
    write_spec(sub, limit=3)
    shutil.copytree(finished, tmp_path / "my lb" / "runs")
    os.symlink("runs2", sub / "runs")
    os.symlink("runs", sub / "runs2")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _line(root: pathlib.Path) -> str:
    here, there = root.resolve() / "runs", root.resolve() / "my lb" / "runs"
    return (f"none of the 4 cells of spec 'toy' is finished in {here} (the default, ./runs of the working directory); "
            f"{there} holds 4 of 4 finished: add --runs-dir '{there}'")


def test_a_link_loop_beside_the_spec_is_left_out(work, capsys):
    spec = "my lb/sub/toy.yaml"
    with pytest.raises(IncompleteRunError) as err:  # f3's code: RuntimeError('Symlink loop from ...')
        lb_main(["report", spec])
    here = work.resolve() / "runs"
    assert str(err.value) == f"{_line(work)}; or, to compute them anew in {here}: {run_command(load_spec(spec), here)}"
    assert lb_main(["run", spec, "--estimate", "--fallback-s-per-question", "2"]) == 0
    assert f"note: {_line(work)} to use them; this estimate counts them as to do in {here}" in capsys.readouterr().err
    # no other folder holds them: the report's usual list of cells, not a traceback
    shutil.rmtree(work / "my lb" / "runs")
    with pytest.raises(IncompleteRunError, match=r"(?s)^4 of 4 cells are not finished in .*not run yet .*\nrun: "):
        lb_main(["report", spec])


def test_a_folder_one_may_not_search_is_left_out(work, monkeypatch, capsys):
    sub = work / "my lb" / "sub"
    os.remove(sub / "runs")
    os.remove(sub / "runs2")
    shutil.copytree(work / "my lb" / "runs", sub / "runs")  # the first candidate, holding the cells, but unsearchable
    closed = str((sub / "runs").resolve()) + os.sep
    real_stat = pathlib.Path.stat

    def stat(self, *args, **kwargs):  # what a user who is not root meets in a folder of mode 0700 of another user
        if str(self).startswith(closed):
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    spec = "my lb/sub/toy.yaml"
    with pytest.raises(IncompleteRunError) as err:  # f3's code: PermissionError on <sub>/runs/<key>/DONE
        lb_main(["report", spec])
    assert str(err.value).startswith(_line(work) + "; or, to compute them anew in ")
    assert lb_main(["run", spec, "--estimate", "--fallback-s-per-question", "2"]) == 0
    assert f"note: {_line(work)} to use them; " in capsys.readouterr().err
