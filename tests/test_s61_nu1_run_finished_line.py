"""``tokrag leaderboard run`` ends with one stderr line saying where the run folders are and the report command
(s61 nu1, new-user trial of the README's "Leaderboards").

Measured on 44eac06: ``tokrag leaderboard run tiny.yaml`` (two methods, three questions) printed its progress bars and
then only the summary, one JSON object on stdout (``{"by_other": [], "forward_passes": 119, "ran": [...], ...}``):
nothing said where the cells went or that ``tokrag leaderboard report`` reads them. Now one line follows on stderr,
``tokrag leaderboard: 2 cells ran, 0 were finished already; the run folders are in <runs>; build the report with:
tokrag leaderboard report <spec> --runs-dir <runs>``; stdout is still the one JSON object. Toy model, fast.
"""
from __future__ import annotations

import json
import shlex

from leaderboard_helpers import pin_cell_keys, write_spec

from leaderboards.cli import main as lb_main


def _q(*words) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def test_a_finished_run_names_its_runs_folder_and_the_report_command(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec_path = write_spec(tmp_path / "my specs", tasks=["toy_qa"], limit=2)  # 2 cells; a space: quoted
    runs = tmp_path / "runs"
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)  # stdout: the one JSON object, as before
    assert len(summary["ran"]) == 2 and summary["skipped"] == []
    report = _q("tokrag", "leaderboard", "report", spec_path, "--runs-dir", runs.resolve())
    assert err.strip().splitlines()[-1] == (
        f"tokrag leaderboard: 2 cells ran, 0 were finished already; the run folders are in {runs.resolve()}; "
        f"build the report with: {report}")
    # the command works as printed: it builds the report from those folders
    assert lb_main(shlex.split(report)[2:]) == 0
    assert (runs / "reports" / "toy" / "leaderboard.md").is_file()

    # again: nothing to run, the same advice
    capsys.readouterr()
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["ran"] == []
    assert err.strip().splitlines()[-1] == (
        f"tokrag leaderboard: 0 cells ran, 2 were finished already; the run folders are in {runs.resolve()}; "
        f"build the report with: {report}")


def test_a_selection_adds_allow_missing_and_report_or_max_cells_print_no_such_line(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=2)
    runs = tmp_path / "runs"
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress", "--methods", "none"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)["ran"]) == 1
    assert err.strip().splitlines()[-1] == (
        f"tokrag leaderboard: 1 cell ran, 0 were finished already; the run folders are in {runs.resolve()}; build the "
        "report with: " + _q("tokrag", "leaderboard", "report", spec_path, "--runs-dir", runs.resolve(),
                             "--allow-missing"))

    # --max-cells with a cell left keeps its own line (how to go on), not this one
    other = tmp_path / "runs2"
    assert lb_main(["run", str(spec_path), "--runs-dir", str(other), "--no-progress", "--max-cells", "1"]) == 0
    err = capsys.readouterr().err
    assert "1 cell remains: " in err and "build the report with" not in err

    # --report builds the report itself and says so ('report: <folder>'), no advice line
    assert lb_main(["run", str(spec_path), "--runs-dir", str(other), "--no-progress", "--report"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("report: ") and "build the report with" not in err
