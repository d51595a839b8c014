"""``tokrag leaderboard run --max-cells N``'s stderr line (s59 d1): it said ``stopped after 1 cells (--max-cells 1);
1 cells remain: <command>`` and its command dropped every option but the runs folder and the selection (``--jobs``,
``--no-resume``, ``--no-progress``, ``--report``, ``--replace``). Now the counts read ``1 cell`` / ``1 cell remains``
and the command is the one given minus ``--max-cells`` (toy model, fast)."""

from __future__ import annotations

import json
import shlex

from leaderboard_helpers import pin_cell_keys, write_spec

from leaderboards.cli import _parser
from leaderboards.cli import main as lb_main
from leaderboards.spec import load_spec


def _quoted(*words) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def test_the_line_keeps_jobs_no_resume_no_progress_and_following_it_runs_the_rest(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec = write_spec(tmp_path, limit=2)  # 2 methods x 2 tasks; the selection: 2 cells
    runs = tmp_path / "runs"
    # --jobs 2 with --max-cells 1 starts no helper process (at most --max-cells processes): all in this process
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--jobs", "2", "--no-resume", "--no-progress",
                    "--max-cells", "1", "--tasks", "toy_qa"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])
    assert len(summary["ran"]) == 1 and summary["left"] == 1 and summary["stopped_by_max_cells"] is True
    command = _quoted("tokrag", "leaderboard", "run", spec, "--runs-dir", runs.resolve(), "--tasks", "toy_qa",
                      "--jobs", "2", "--no-resume", "--no-progress")
    assert f"stopped after 1 cell (--max-cells 1); 1 cell remains: {command}\n" in err
    assert "1 cells" not in err
    # the printed command, run as given, runs the cell left and nothing more: no such line again
    words = shlex.split(err.split("1 cell remains: ", 1)[1].splitlines()[0])
    assert words[:3] == ["tokrag", "leaderboard", "run"] and "--max-cells" not in words
    assert lb_main(words[2:]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])
    assert len(summary["ran"]) == 1 and len(summary["skipped"]) == 1 and "left" not in summary
    assert "stopped after" not in err


def _message(argv: list[str], left: int) -> str:
    from leaderboards.cli import max_cells_message

    args = _parser().parse_args(argv)
    spec = load_spec(args.spec).select(models=args.models, methods=args.methods, tasks=args.tasks, verb="run")
    return max_cells_message(args, spec, left)


def test_the_command_is_the_one_given_minus_max_cells(tmp_path):
    spec = write_spec(tmp_path / "my specs", limit=2)  # a path with a space: quoted
    runs = tmp_path / "my runs"
    line = _message(["run", str(spec), "--max-cells", "3", "--runs-dir", str(runs), "--report", "--replace",
                     "--jobs", "4", "--methods", "none", "--fallback-s-per-question", "2.5"], 5)
    command = _quoted("tokrag", "leaderboard", "run", spec, "--runs-dir", runs.resolve(), "--methods", "none",
                      "--jobs", "4", "--report", "--replace", "--fallback-s-per-question", "2.5")
    assert line == f"stopped after 3 cells (--max-cells 3); 5 cells remain: {command}"
    assert "'" in command  # the spaces are quoted: the words come back as given
    assert shlex.split(command)[3:] == [str(spec), "--runs-dir", str(runs.resolve()), "--methods", "none", "--jobs",
                                        "4", "--report", "--replace", "--fallback-s-per-question", "2.5"]


def test_one_cell_and_plural_counts_and_the_plain_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)
    spec = write_spec(tmp_path, limit=2)
    # nothing but --max-cells: the runs folder the run used is named (here the default ./runs), no other option
    command = _quoted("tokrag", "leaderboard", "run", spec, "--runs-dir", (tmp_path / "runs").resolve())
    assert _message(["run", str(spec), "--max-cells", "1"], 3) == \
        f"stopped after 1 cell (--max-cells 1); 3 cells remain: {command}"
    assert _message(["run", str(spec), "--max-cells", "2"], 1) == \
        f"stopped after 2 cells (--max-cells 2); 1 cell remains: {command}"
    # --jobs 1 (the default) adds nothing
    assert _message(["run", str(spec), "--max-cells", "2", "--jobs", "1"], 2) == \
        f"stopped after 2 cells (--max-cells 2); 2 cells remain: {command}"
