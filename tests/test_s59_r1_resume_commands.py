"""The commands an ``tokrag leaderboard run`` prints to go on follow one rule (s59 r1, review of d1's 7536a8b):
``leaderboards.cli.given_command``, the command given minus what it must not repeat. After ``--max-cells N``
(``M cells remain: <command>``) it drops ``--max-cells`` and keeps ``--no-resume`` (every cell that run started is
finished, and a finished cell is skipped with or without it: measured below); after Ctrl-C / SIGTERM (``resume with:
<command>``) it drops ``--max-cells`` and ``--no-resume`` (the journals it names are what resumes). The Ctrl-C command
dropped ``--no-progress``, ``--fallback-s-per-question`` and ``--replace`` without ``--report``, which the
``--max-cells`` one kept; and interrupted before any cell started, its "run again with" command was not the one
given (``--max-cells`` and ``--no-resume`` gone). Toy model, fast."""

from __future__ import annotations

import json
import shlex

import pytest
from leaderboard_helpers import TOY, pin_cell_keys, write_spec

import leaderboards.runner
from leaderboards.cli import _parser, interrupted_message, max_cells_message
from leaderboards.cli import main as lb_main
from leaderboards.runner import RunInterrupted
from leaderboards.spec import load_spec

ALL = ["--max-cells", "2", "--jobs", "3", "--no-resume", "--no-progress", "--report", "--replace",
       "--fallback-s-per-question", "2.5", "--methods", "none"]


def _q(*words) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def _parsed(spec_path, argv):
    args = _parser().parse_args(["run", str(spec_path), *argv])
    spec = load_spec(args.spec)
    return args, spec.select(models=args.models, methods=args.methods, tasks=args.tasks, verb="run"), spec


def test_the_two_commands_are_the_command_given_by_one_rule(tmp_path):
    spec_path = write_spec(tmp_path / "my specs", limit=2)  # a space: quoted
    runs = tmp_path / "my runs"
    args, spec, whole = _parsed(spec_path, [*ALL, "--runs-dir", str(runs)])
    head = ("tokrag", "leaderboard", "run", spec_path, "--runs-dir", runs.resolve(), "--methods", "none")
    # --max-cells: the command given minus --max-cells (--no-resume kept)
    assert max_cells_message(args, spec, 3) == (
        "stopped after 2 cells (--max-cells 2); 3 cells remain: "
        + _q(*head, "--jobs", "3", "--no-resume", "--no-progress", "--report", "--replace", "--fallback-s-per-question",
             "2.5"))
    # Ctrl-C in the cells: the same command minus --no-resume; --no-progress, --replace and the fallback kept now
    exc = RunInterrupted(spec, runs, 2, 0, 1, {}, [])
    line = interrupted_message(args, spec, whole, exc, "run")
    assert line.endswith("; resume with: " + _q(*head, "--jobs", "3", "--no-progress", "--report", "--replace",
                                                 "--fallback-s-per-question", "2.5"))
    # interrupted before any cell started: nothing ran, so the command given, word for word
    line = interrupted_message(args, spec, whole, KeyboardInterrupt(), "run")
    assert line.endswith("nothing was computed; run again with: "
                         + _q(*head, "--max-cells", "2", "--jobs", "3", "--no-resume", "--no-progress", "--report",
                              "--replace", "--fallback-s-per-question", "2.5"))
    # --replace without --report is kept too (it was kept only with --report after Ctrl-C)
    args, spec, whole = _parsed(spec_path, ["--runs-dir", str(runs), "--replace", "--no-progress"])
    assert interrupted_message(args, spec, whole, RunInterrupted(spec, runs, 2, 0, 1, {}, []), "run").endswith(
        "; resume with: " + _q("tokrag", "leaderboard", "run", spec_path, "--runs-dir", runs.resolve(), "--no-progress",
                               "--replace"))


def test_given_command_refuses_an_unknown_option_to_drop(tmp_path):
    from leaderboards.cli import given_command

    args, spec, _ = _parsed(write_spec(tmp_path, limit=2), ["--runs-dir", str(tmp_path / "runs")])
    with pytest.raises(ValueError, match="no option --max-cell to drop"):
        given_command(args, spec, drop=("--max-cell",))


def _interrupt_third_call(monkeypatch) -> None:
    """ToyLM's generate_until raises KeyboardInterrupt on its 3rd call (one request per chunk: 2 journaled)."""
    toy = leaderboards.runner._model_class(TOY)
    orig, n = toy.generate_until, [0]

    def method(lm, requests, *a, **kw):
        n[0] += 1
        if n[0] == 3:
            raise KeyboardInterrupt
        return orig(lm, requests, *a, **kw)

    monkeypatch.setattr(toy, "generate_until", method)


def test_ctrl_c_resume_command_keeps_no_progress_and_resumes_as_printed(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1})
    runs = tmp_path / "runs"
    _interrupt_third_call(monkeypatch)
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress", "--no-resume",
                    "--max-cells", "2"]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("tokrag leaderboard: interrupted (Ctrl-C): 0 of 2 cells are finished and kept in ")
    assert "kept 2 requests in its journal" in last
    command = last.split("; resume with: ", 1)[1]
    assert command == _q("tokrag", "leaderboard", "run", spec_path, "--runs-dir", runs.resolve(), "--no-progress")
    monkeypatch.undo()  # the real generate_until again
    pin_cell_keys(monkeypatch)
    # run as printed (no option added): the journal is replayed, both cells finish
    assert lb_main(shlex.split(command)[2:]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["replayed_requests"] == 2 and len(summary["ran"]) == 2


def test_after_max_cells_the_kept_no_resume_leaves_the_finished_cell_alone(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=2)  # 2 cells
    runs = tmp_path / "runs"
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress", "--no-resume",
                    "--max-cells", "1"]) == 0
    out, err = capsys.readouterr()
    (first,) = json.loads(out.strip().splitlines()[-1])["ran"]
    command = err.split("1 cell remains: ", 1)[1].splitlines()[0]
    assert command == _q("tokrag", "leaderboard", "run", spec_path, "--runs-dir", runs.resolve(), "--no-resume",
                         "--no-progress")
    spec = load_spec(spec_path)
    folder = {c.cell_id: runs / k for c, k, _ in leaderboards.runner.cell_keys(spec, runs)}[first]
    done = (folder / "DONE").stat()
    results = (folder / "results.json").read_bytes()
    assert lb_main(shlex.split(command)[2:]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["skipped"] == [first] and len(summary["ran"]) == 1 and summary["ran"] != [first]
    assert "stopped after" not in err
    # the finished cell's folder was not deleted and redone: the same DONE file (inode, bytes) and results
    after = (folder / "DONE").stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (done.st_ino, done.st_size, done.st_mtime_ns)
    assert (folder / "results.json").read_bytes() == results
