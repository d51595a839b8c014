"""A finished cell's run-written JSON files past Python's digit or recursion limit (s60 r1, j1's leftover 1).

Before (3cfc1fc's tree): a cell's ``DONE`` manifest nested 100,000 deep made ``tokrag leaderboard report`` and
``run`` end in a RecursionError traceback (exit 1); one holding a 5001-digit integer read ``unreadable manifest (not
valid JSON at line ? column ?)``, which it is. Now :func:`retrieval.io.json_limit_error`'s line naming the file, with
the manifest's own fix (``re-run the cell``): the cell reads as damaged, ``run`` computes it again. The tolerant reads
of the runner (a finished folder's ``config.json``, ...) skip such a file as they skip malformed JSON.
The toy spec (tests/leaderboard_fixtures, the toy LM)."""

from __future__ import annotations

import shutil

import pytest
from json_limit_helpers import DEEP, limits  # noqa: F401 (limits: an autouse fixture)
from leaderboard_helpers import TOY, run_toy_spec

from leaderboards.runner import IncompleteRunError, finished_folders, verify_cell_dir
from tokrag_model.cli import main

BIG = '{"files": {"x": 1' + "0" * 5000 + "}}"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The toy spec (toy_qa, 3 questions, one cell) run once: ``(spec, runs)``."""
    return run_toy_spec(tmp_path_factory.mktemp("s60r1"), tasks=["toy_qa"], limit=3,
                        methods=[{"name": "standard", "model": TOY}])


@pytest.fixture
def cell(finished, tmp_path):
    """A copy of the finished runs folder: ``(spec, runs, the cell's folder)``."""
    spec, runs = finished
    shutil.copytree(runs, tmp_path / "runs")
    folder = next(d for d in (tmp_path / "runs").iterdir() if (d / "DONE").is_file())
    return spec, tmp_path / "runs", folder


NESTED = "holds JSON nested too deep for Python's JSON reader (past its recursion limit, 1000); re-run the cell"
DIGITS = "holds an integer of more than 4300 digits, more than Python's JSON reader converts; re-run the cell"


@pytest.mark.parametrize("text, why", [(DEEP, NESTED), (BIG, DIGITS)], ids=["deep", "digits"])
def test_a_done_manifest_past_the_limits_is_one_line(cell, text, why):
    _spec, _runs, folder = cell
    (folder / "DONE").write_text(text, encoding="utf-8")
    with pytest.raises(IncompleteRunError) as err:  # was: RecursionError / 'not valid JSON at line ? column ?'
        verify_cell_dir(folder)
    assert str(err.value) == f"{folder / 'DONE'}: unreadable manifest: {why}"


def test_report_and_run_over_a_deep_done_manifest(cell, capsys):
    spec, runs, folder = cell
    (folder / "DONE").write_text(DEEP, encoding="utf-8")
    capsys.readouterr()
    # was: a RecursionError traceback from both commands
    assert main(["leaderboard", "report", str(spec.path), "--runs-dir", str(runs), "--out", str(runs.parent / "rep")]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'DONE'}: unreadable manifest: {NESTED}" in err and "Traceback" not in err
    assert main(["leaderboard", "run", str(spec.path), "--runs-dir", str(runs)]) == 0  # computed again
    assert (folder / "DONE").read_text(encoding="utf-8").startswith("{")
    verify_cell_dir(folder)


def test_a_deep_config_json_is_skipped_as_malformed(cell):
    _spec, runs, folder = cell
    assert [d for d, _cfg in finished_folders(runs)] == [folder]
    (folder / "config.json").write_text(DEEP, encoding="utf-8")
    assert finished_folders(runs) == []  # was: a RecursionError traceback
