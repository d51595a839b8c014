"""Two spec files that keep one ``name:`` (a copy made to try a variant) wrote their reports into one folder,
``<runs>/reports/<name>/``, the second over the first without a word (s58 f5, from n2's finding 3). The report folder
now records which spec file wrote it (``.tokrag-report-spec.json``: resolved path, SHA-256, name); a report of another
spec file is refused before anything is written (default folder and ``--out`` alike); the same spec file edited and
reported again overwrites; a folder without the record (written before) is written over as before. Fast: toy spec,
no model."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import edit, run_toy_spec

from leaderboards.report import ReportOverwriteError, build_report
from leaderboards.spec import load_spec
from tokrag_model.cli import main as tokrag

RECORD = ".tokrag-report-spec.json"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("f5-spec-record")
    spec, runs = run_toy_spec(root / "lb", limit=4)
    return Path(spec.path), runs


@pytest.fixture()
def setup(finished, tmp_path):
    """(spec a, spec b: a copy in another folder with the same name: and another bootstrap seed, runs folder)."""
    spec_path, runs = finished
    a = tmp_path / "a" / "toy.yaml"
    b = tmp_path / "b" / "toy.yaml"
    a.parent.mkdir()
    b.parent.mkdir()
    shutil.copy(spec_path, a)
    shutil.copy(spec_path, b)
    edit(b, "seed: 7", "seed: 8")  # the bootstrap seed: the same cells, another report
    shutil.copytree(runs, tmp_path / "runs")
    return a, b, tmp_path / "runs"


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _report(spec: Path, runs: Path, *more: str) -> int:
    return tokrag(["leaderboard", "report", str(spec), "--runs-dir", str(runs), "--no-timings", *more])


def test_the_folder_records_the_spec_file(setup, capsys):
    a, _b, runs = setup
    import leaderboards.report as report

    assert report.SPEC_RECORD == RECORD
    assert _report(a, runs) == 0
    rec = json.loads((runs / "reports" / "toy" / RECORD).read_text())
    assert rec == {"spec": str(a.resolve()), "sha256": hashlib.sha256(a.read_bytes()).hexdigest(), "name": "toy"}


def test_a_second_spec_file_with_the_same_name_is_refused(setup, capsys):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    assert _report(a, runs) == 0
    before = _tree(out)
    assert json.loads((out / "leaderboard.json").read_text())["bootstrap"]["seed"] == 7
    capsys.readouterr()
    assert _report(b, runs) == 2
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "error" in x]
    assert len(line) == 1 and "Traceback" not in err
    assert (f"the report folder {out} was written by another spec file with the same name: 'toy', {a.resolve()}; "
            f"this is {b.resolve()}; nothing written: give this spec its own name:") in line[0]
    assert "--out DIR" in line[0] and f"remove {out}" in line[0]
    assert _tree(out) == before  # nothing written, the first spec's report byte for byte


def test_out_folder_follows_the_same_rule(setup, capsys):
    a, b, runs = setup
    out = setup[2].parent / "mine"
    assert _report(a, runs, "--out", str(out)) == 0
    before = _tree(out)
    capsys.readouterr()
    assert _report(b, runs, "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert (f"the report folder {out} (this spec's --out) was written by another spec file, {a.resolve()}; this is "
            f"{b.resolve()}; nothing written: report it with --out DIR into another folder, or remove {out}") in err
    assert _tree(out) == before
    # another folder: written
    assert _report(b, runs, "--out", str(out.parent / "mine-b")) == 0
    assert json.loads((out.parent / "mine-b" / RECORD).read_text())["spec"] == str(b.resolve())
    # and b's default folder is free: written there
    assert _report(b, runs) == 0
    assert json.loads((runs / "reports" / "toy" / "leaderboard.json").read_text())["bootstrap"]["seed"] == 8


def test_the_same_spec_file_edited_overwrites(setup):
    a, _b, runs = setup
    out = runs / "reports" / "toy"
    assert build_report(load_spec(a), runs, timings=False) == out
    assert json.loads((out / "leaderboard.json").read_text())["bootstrap"]["seed"] == 7
    edit(a, "seed: 7", "seed: 9")
    assert build_report(load_spec(a), runs, timings=False) == out
    assert json.loads((out / "leaderboard.json").read_text())["bootstrap"]["seed"] == 9
    rec = json.loads((out / RECORD).read_text())
    assert rec["spec"] == str(a.resolve()) and rec["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()


def test_a_folder_without_the_record_is_written_over(setup):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    (out / RECORD).unlink()  # a report written before the record existed
    assert build_report(load_spec(b), runs, timings=False) == out
    assert json.loads((out / "leaderboard.json").read_text())["bootstrap"]["seed"] == 8
    assert json.loads((out / RECORD).read_text())["spec"] == str(b.resolve())
    # and from now on a's report is refused there
    with pytest.raises(ReportOverwriteError, match="written by another spec file with the same name"):
        build_report(load_spec(a), runs, timings=False)


def test_the_same_bytes_at_another_path_overwrite(setup):
    """A spec file moved (or a checkout at another path) with the same bytes writes the same report: not refused."""
    a, _b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    moved = a.parent.parent / "moved" / "toy.yaml"
    moved.parent.mkdir()
    shutil.copy(a, moved)
    assert build_report(load_spec(moved), runs, timings=False) == out
    assert json.loads((out / RECORD).read_text())["spec"] == str(moved.resolve())


def test_an_unreadable_record_is_replaced(setup, caplog):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    (out / RECORD).write_text("{not json")
    with caplog.at_level("WARNING"):
        assert build_report(load_spec(b), runs, timings=False) == out
    assert f"unreadable {out / RECORD}" in caplog.text
    assert json.loads((out / RECORD).read_text())["spec"] == str(b.resolve())


def test_a_moved_checkout_edits_its_own_report(setup, caplog):
    """A checkout (spec and report folder together, as leaderboards/specs/*.yaml and their report_dir) moved
    elsewhere: the spec, edited there, overwrites its own report, the recorded spec file being gone (one warning)."""
    a, _b, runs = setup
    root = a.parent.parent
    spec = a.parent / "own.yaml"
    edit(a, "name: toy", "name: own")
    shutil.move(a, spec)
    with spec.open("a") as f:
        f.write("report_dir: ../rep\n")
    build_report(load_spec(spec), runs, timings=False)
    assert json.loads((root / "rep" / RECORD).read_text())["spec"] == str(spec.resolve())
    moved = root / "moved"
    moved.mkdir()
    shutil.move(root / "a", moved / "a")
    shutil.move(root / "rep", moved / "rep")
    edit(moved / "a" / "own.yaml", "seed: 7", "seed: 9")  # another path, other bytes
    with caplog.at_level("WARNING"):
        assert build_report(load_spec(moved / "a" / "own.yaml"), runs, timings=False) == moved / "rep"
    assert f"written by the spec file {spec.resolve()}, which no longer exists" in caplog.text
    assert json.loads((moved / "rep" / "leaderboard.json").read_text())["bootstrap"]["seed"] == 9
    assert json.loads((moved / "rep" / RECORD).read_text())["spec"] == str((moved / "a" / "own.yaml").resolve())


def test_report_dir_follows_the_same_rule(setup, capsys):
    a, b, runs = setup
    for spec in (a, b):
        with spec.open("a") as f:
            f.write("report_dir: ../rep\n")  # both: tmp/rep
    out = a.parent.parent / "rep"
    assert _report(a, runs) == 0
    before = _tree(out)
    capsys.readouterr()
    assert _report(b, runs) == 2
    err = capsys.readouterr().err
    assert (f"the report folder {out} (this spec's report_dir) was written by another spec file, {a.resolve()}; this "
            f"is {b.resolve()}; nothing written: give this spec its own report_dir:") in err
    assert _tree(out) == before
