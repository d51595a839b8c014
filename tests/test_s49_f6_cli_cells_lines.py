"""``tokrag leaderboard report --allow-missing`` (and ``run --methods X --report``, ``rescore --allow-missing``) on a
partly run leaderboard printed ``Cells with results: 2 of 4; 2 missing (... their values show as -):`` and nothing
after the colon: the CLI printed only the first of :func:`leaderboards.report.cells_lines`. The missing cells follow
now, indented, one line per task (s49 f6)."""

from __future__ import annotations

from leaderboard_helpers import pin_cell_keys, write_spec

from leaderboards.cli import main as lb_main

HEAD = ("Cells with results: 2 of 4; 2 missing (not finished in the run folders when this report was built; their "
        "values show as -):")
MISSING = [HEAD, "  toy_qa: none", "  toy_qa_noise67: none"]


def test_each_command_prints_the_missing_cells_after_the_colon(tmp_path, monkeypatch, capsys):
    pin_cell_keys(monkeypatch)
    spec, runs = write_spec(tmp_path, limit=2), tmp_path / "runs"
    capsys.readouterr()
    # run one method's cells, with the whole spec's report (the other method's cells missing)
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--no-progress", "--methods", "standard", "--report"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-5:-1] == [f"report: {runs / 'reports' / 'toy'}", *MISSING]
    # report --allow-missing: the whole of stdout
    rep = tmp_path / "rep"
    assert lb_main(["report", str(spec), "--runs-dir", str(runs), "--allow-missing", "--no-timings", "--out", str(rep)]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines() == [
        f"report written to {rep} (leaderboard.md, leaderboard.csv, leaderboard.json, index.html)",
        "n per task: toy_qa 2, toy_qa_noise67 2", *MISSING]
    # rescore --allow-missing: after its "written to" line
    assert lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--allow-missing", "--no-timings", "--out",
                    str(tmp_path / "re")]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(f"re-scored report written to {tmp_path / 're'}")
    assert out[at + 1:at + 4] == MISSING and out[at + 4].startswith("{")
