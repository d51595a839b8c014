"""``run --jobs N`` whose helper failed and left cells unfinished: its "resume with" command is the command given
minus ``--max-cells`` and ``--no-resume`` (s59 r4, r1's leftover), as after Ctrl-C (``interrupted_message``).

It kept only ``--jobs N`` (``leaderboards.runner._helpers_failed`` knows no other option): ``--no-progress``,
``--report``, ``--replace`` and ``--fallback-s-per-question`` were dropped. The runner now raises
``HelpersFailed`` (a TokragError whose own message is as before, for callers of ``run_spec``), and ``tokrag
leaderboard run`` puts ``leaderboards.cli.given_command`` in its place. No process is killed here: the runner's
own ``_helpers_failed`` is called with a helper that ended by SIGKILL (real spec, real runs folder, toy model).
"""

from __future__ import annotations

import shlex
import signal
from types import SimpleNamespace

import pytest
from leaderboard_helpers import write_spec

import leaderboards.runner as runner
from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec
from tokrag_model.cli import main

KILLED = SimpleNamespace(pid=4242, returncode=-signal.SIGKILL)


def _q(*words) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def _fail(spec, runs, jobs):
    """What run_spec does when its helper was killed before any cell finished."""
    runner._helpers_failed(spec, runs, cell_keys(spec, runs), [KILLED], runner.RunSummary(), jobs, started_only=False)


def test_the_runners_own_message_is_unchanged(tmp_path):
    spec = load_spec(write_spec(tmp_path, limit=2)).select(methods=["none"], verb="run")
    runs = tmp_path / "runs"
    with pytest.raises(runner.HelpersFailed) as err:
        _fail(spec, runs, 2)
    cells = [c.cell_id for c, _, _ in cell_keys(spec, runs)]
    what = (f"a helper runner process of --jobs 2 failed (helper process 4242 killed by SIGKILL (out of memory?)); "
            f"{len(cells)} of {len(cells)} cells are unfinished ({', '.join(cells)}), their journals kept")
    assert err.value.what == what
    assert str(err.value) == what + "; resume with: " + _q("tokrag", "leaderboard", "run", spec.path, "--runs-dir", runs,
                                                            "--methods", "none", "--jobs", "2")
    assert isinstance(err.value, runner.TokragError)


def test_the_command_prints_the_command_given(tmp_path, monkeypatch, capsys):
    spec_path = write_spec(tmp_path / "my specs", limit=2)  # a space: quoted
    runs = tmp_path / "my runs"
    monkeypatch.setattr(runner, "run_spec", lambda spec, runs_dir, **kw: _fail(spec, runner.resolve_runs_dir(spec, runs_dir),
                                                                               kw["jobs"]))
    argv = ["run", str(spec_path), "--runs-dir", str(runs), "--max-cells", "3", "--jobs", "2", "--no-resume",
            "--no-progress", "--report", "--replace", "--fallback-s-per-question", "2.5", "--methods", "none"]
    assert main(["leaderboard", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("tokrag leaderboard: error: a helper runner process of --jobs 2 failed (helper process "
                             "4242 killed by SIGKILL (out of memory?)); ")
    assert err[0].endswith("their journals kept; resume with: " + _q(
        "tokrag", "leaderboard", "run", spec_path, "--runs-dir", runs.resolve(), "--methods", "none", "--jobs", "2",
        "--no-progress", "--report", "--replace", "--fallback-s-per-question", "2.5")), err[0]
