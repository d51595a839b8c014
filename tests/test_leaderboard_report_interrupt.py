"""A report stopped while it writes its files (Ctrl-C during the plots) is finished by the same command (it was:
the folder already held leaderboard.json, which marks it as a report). Before, the plots came first, and the command
that the interrupt message printed was refused ("holds no tokrag report but has N file(s) the report would
overwrite"). Since s50 f9 the files are written into a staging folder and moved in at the end: the interrupted build
leaves nothing in the folder (but its lock file). Fast: toy spec, no model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from leaderboard_helpers import run_toy_spec

import leaderboards.plots as plots
from leaderboards.report import build_report


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_report_interrupted_in_its_plots_is_finished_by_running_it_again(tmp_path, monkeypatch):
    spec, runs = run_toy_spec(tmp_path / "lb")
    whole = build_report(spec, runs, tmp_path / "whole", timings=False)
    real = plots.make_plots

    def stopped(data, out):  # the first plot written, then Ctrl-C
        made = real(data, out)
        for name, _ in made[1:]:
            (Path(out) / name).unlink()
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "make_plots", stopped)
    out = tmp_path / "report"
    with pytest.raises(KeyboardInterrupt):
        build_report(spec, runs, out, timings=False)
    # the files went to the staging folder, removed on the interrupt (s50 f9): no partial report folder, and no
    # file that would make the rerun refuse the folder as foreign files
    assert sorted(p.name for p in out.iterdir()) == [".tokrag-report.lock"]
    monkeypatch.setattr(plots, "make_plots", real)
    assert build_report(spec, runs, out, timings=False) == out  # no --replace needed
    assert _tree(out) == _tree(whole)
    assert json.loads((out / "leaderboard.json").read_text()) == json.loads((whole / "leaderboard.json").read_text())
