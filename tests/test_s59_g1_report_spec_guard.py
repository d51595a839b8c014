"""Two spec files that keep one ``name:`` (a copy made to try another setting) wrote their reports into one folder,
``<runs>/reports/<name>/``, the second over the first without a word (s58 n2's finding 3). s58 f5's guard kept its
record in the report folder and was reverted (0c129ad): the report must stay a function of the spec and the runs.
Now the record lives in the runs folder (``<runs>/.tokrag-report-specs/<key>.json``, keyed by the report folder's
resolved path); a report of another spec file is refused before anything is written (default folder, ``--out``,
``report_dir:``, ``run --report``, ``rescore``), unless ``--replace``; the same spec file edited, the same bytes at
another path, a recorded spec that no longer exists, and a folder whose report is not the recorded one are written
over as before; the report folder's bytes are those of the same spec at any path. Fast: toy spec, no model."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import edit, report_bytes, run_toy_spec

import leaderboards.report as report_mod
from leaderboards.report import ReportOverwriteError, build_report
from leaderboards.rescore import rescore
from leaderboards.spec import load_spec
from tokrag_model.cli import main as tokrag


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("g1-spec-guard")
    spec, runs = run_toy_spec(root / "lb", limit=4)
    return Path(spec.path), runs


@pytest.fixture()
def setup(finished, tmp_path):
    """(spec a, spec b: a copy in another folder keeping name: toy, with another bootstrap seed; a runs folder)."""
    spec_path, runs = finished
    a = tmp_path / "a" / "toy.yaml"
    b = tmp_path / "b" / "toy.yaml"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(spec_path, p)
    edit(b, "seed: 7", "seed: 8")  # the bootstrap seed: the same cells, another report
    shutil.copytree(runs, tmp_path / "runs")
    return a, b, tmp_path / "runs"


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _report(spec: Path, runs: Path, *more: str) -> int:
    return tokrag(["leaderboard", "report", str(spec), "--runs-dir", str(runs), "--no-timings", *more])


def _seed(out: Path) -> int:
    return json.loads((out / "leaderboard.json").read_text())["bootstrap"]["seed"]


def _error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if "the report folder" in x]
    assert len(lines) == 1, err
    return lines[0]


def test_a_second_spec_file_with_the_same_name_is_refused(setup, capsys):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    assert _report(a, runs) == 0
    before = _tree(out)
    assert _seed(out) == 7
    capsys.readouterr()
    assert _report(b, runs) == 2
    line = _error_line(capsys.readouterr().err)
    assert line.endswith(
        f"the report folder {out} holds the report of another spec file with the same name: 'toy', {a.resolve()}; "
        f"this is {b.resolve()}; nothing written: give this spec its own name: (or write its report elsewhere with "
        "--out DIR), or pass --replace to write over that report")
    assert _tree(out) == before  # the first spec's report, byte for byte
    assert _seed(out) == 7


def test_the_record_is_in_the_runs_folder_and_the_report_bytes_do_not_name_the_spec(setup, tmp_path):
    """The same spec at two paths gives byte-identical report folders (what reverted f5's record): the record is
    in the runs folder, keyed by the report folder's resolved path."""
    a, _b, runs = setup
    other = tmp_path / "elsewhere" / "deeper" / "toy.yaml"
    other.parent.mkdir(parents=True)
    shutil.copy(a, other)
    one = build_report(load_spec(a), runs, tmp_path / "one", timings=False)
    two = build_report(load_spec(other), runs, tmp_path / "two", timings=False)
    assert report_bytes(one) == report_bytes(two)
    assert _tree(one) == _tree(two)
    for out, spec in ((one, a), (two, other)):
        rec_path = runs / ".tokrag-report-specs" / (
            hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16] + ".json")
        assert report_mod.report_record_path(runs, out) == rec_path
        assert json.loads(rec_path.read_text()) == {
            "report": str(out.resolve()), "spec": str(spec.resolve()),
            "spec_sha256": hashlib.sha256(spec.read_bytes()).hexdigest(), "name": "toy",
            "leaderboard_sha256": hashlib.sha256((out / "leaderboard.json").read_bytes()).hexdigest()}
    assert not any("spec" in p.name for p in one.rglob("*"))


def test_the_same_spec_file_edited_in_place_refreshes_its_report(setup):
    a, _b, runs = setup
    out = runs / "reports" / "toy"
    assert build_report(load_spec(a), runs, timings=False) == out
    edit(a, "seed: 7", "seed: 9")
    assert build_report(load_spec(a), runs, timings=False) == out
    assert _seed(out) == 9
    rec = json.loads(report_mod.report_record_path(runs, out).read_text())
    assert rec["spec"] == str(a.resolve()) and rec["spec_sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()


def test_the_same_bytes_at_another_path_write_over(setup):
    """A second checkout or an unedited copy: the same bytes, the same report; not refused."""
    a, _b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    copy = a.parent.parent / "checkout2" / "toy.yaml"
    copy.parent.mkdir()
    shutil.copy(a, copy)
    assert build_report(load_spec(copy), runs, timings=False) == out
    assert json.loads(report_mod.report_record_path(runs, out).read_text())["spec"] == str(copy.resolve())


def test_a_moved_spec_file_writes_over_its_old_report(setup, caplog):
    a, _b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    moved = a.parent.parent / "moved.yaml"
    shutil.move(a, moved)
    edit(moved, "seed: 7", "seed: 9")  # another path and other bytes: the recorded file is gone
    with caplog.at_level("WARNING"):
        assert build_report(load_spec(moved), runs, timings=False) == out
    assert f"written by the spec file {a.resolve()}, which no longer exists" in caplog.text
    assert _seed(out) == 9


def test_replace_writes_over_on_purpose_and_the_record_follows(setup, capsys, caplog):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    assert _report(a, runs) == 0
    with caplog.at_level("WARNING"):
        assert _report(b, runs, "--replace") == 0
    assert f"written by another spec file, {a.resolve()}; replaced by the report of {b.resolve()} (--replace)" \
        in caplog.text
    assert _seed(out) == 8
    assert json.loads(report_mod.report_record_path(runs, out).read_text())["spec"] == str(b.resolve())
    capsys.readouterr()
    assert _report(a, runs) == 2  # now a's report would go over b's
    assert f"with the same name: 'toy', {b.resolve()}; this is {a.resolve()}" in _error_line(capsys.readouterr().err)


def test_out_and_report_dir_follow_the_same_rule(setup, capsys):
    a, b, runs = setup
    mine = runs.parent / "mine"
    assert _report(a, runs, "--out", str(mine)) == 0
    before = _tree(mine)
    capsys.readouterr()
    assert _report(b, runs, "--out", str(mine)) == 2
    assert _error_line(capsys.readouterr().err).endswith(
        f"the report folder {mine} (this report's --out) holds the report of another spec file, {a.resolve()}; this "
        f"is {b.resolve()}; nothing written: write this report elsewhere with --out DIR, or pass --replace to write "
        "over that report")
    assert _tree(mine) == before
    assert _report(b, runs, "--out", str(runs.parent / "mine-b")) == 0  # another folder: written
    assert _report(b, runs) == 0  # and the default folder was never written: free
    assert _seed(runs / "reports" / "toy") == 8
    for spec in (a, b):  # both name ../rep
        with spec.open("a") as f:
            f.write("report_dir: ../rep\n")
    rep = runs.parent / "rep"
    assert _report(a, runs) == 0
    before = _tree(rep)
    capsys.readouterr()
    assert _report(b, runs) == 2
    assert (f"the report folder {rep} (this spec's report_dir:) holds the report of another spec file, {a.resolve()}; "
            f"this is {b.resolve()}; nothing written: give this spec its own report_dir: (or write its report "
            "elsewhere with --out DIR)") in _error_line(capsys.readouterr().err)
    assert _tree(rep) == before


def test_run_report_and_rescore_are_refused_too(setup, capsys):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    assert _report(a, runs) == 0
    before = _tree(out)
    capsys.readouterr()
    assert tokrag(["leaderboard", "run", str(b), "--runs-dir", str(runs), "--report", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["ran"] == []  # the run's summary still printed
    assert f"another spec file with the same name: 'toy', {a.resolve()}" in _error_line(captured.err)
    with pytest.raises(ReportOverwriteError, match="holds the report of another spec file with the same name"):
        rescore(load_spec(b), runs, timings=False)
    assert _tree(out) == before


def test_several_specs_share_a_runs_folder(setup):
    """Specs of other names in one runs folder: each its own folder and record; none refused."""
    a, b, runs = setup
    edit(b, "name: toy", "name: toy-alpha")
    assert build_report(load_spec(a), runs, timings=False) == runs / "reports" / "toy"
    assert build_report(load_spec(b), runs, timings=False) == runs / "reports" / "toy-alpha"
    edit(a, "seed: 7", "seed: 9")
    assert build_report(load_spec(a), runs, timings=False) == runs / "reports" / "toy"
    assert build_report(load_spec(b), runs, timings=False) == runs / "reports" / "toy-alpha"
    assert (_seed(runs / "reports" / "toy"), _seed(runs / "reports" / "toy-alpha")) == (9, 8)
    assert len(list((runs / ".tokrag-report-specs").iterdir())) == 2


def test_a_record_of_a_report_no_longer_there_is_not_used(setup):
    """The folder removed, or its report written since by other means (no record of that): written as before."""
    a, b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    shutil.rmtree(out)
    assert build_report(load_spec(b), runs, timings=False) == out
    assert _seed(out) == 8
    other_runs = runs.parent / "runs2"  # a's report written by another runs folder: this one's record is stale
    shutil.copytree(runs, other_runs, ignore=shutil.ignore_patterns(".tokrag-report-specs"))
    build_report(load_spec(a), other_runs, out, timings=False)
    assert _seed(out) == 7
    assert build_report(load_spec(b), runs, timings=False) == out
    assert _seed(out) == 8


def test_an_unreadable_record_is_replaced(setup, caplog):
    a, b, runs = setup
    out = runs / "reports" / "toy"
    build_report(load_spec(a), runs, timings=False)
    rec = report_mod.report_record_path(runs, out)
    rec.write_text("{not json")
    with caplog.at_level("WARNING"):
        assert build_report(load_spec(b), runs, timings=False) == out
    assert f"unreadable record {rec}" in caplog.text
    assert json.loads(rec.read_text())["spec"] == str(b.resolve())


def test_a_record_that_cannot_be_written_leaves_the_report_written(setup, monkeypatch, caplog):
    a, _b, runs = setup
    out = runs / "reports" / "toy"
    real = report_mod.atomic_write_json

    def no_room(path, obj, *args, **kw):
        if ".tokrag-report-specs" in str(path):
            raise OSError(28, "No space left on device")
        return real(path, obj, *args, **kw)

    monkeypatch.setattr(report_mod, "atomic_write_json", no_room)
    with caplog.at_level("WARNING"):
        assert build_report(load_spec(a), runs, timings=False) == out
    assert _seed(out) == 7
    assert "could not record which spec file wrote it" in caplog.text and "No space left on device" in caplog.text
    assert not report_mod.report_record_path(runs, out).exists()


def test_no_runs_folder_is_created_for_the_record(setup, tmp_path):
    a, _b, _runs = setup
    none = tmp_path / "no-runs"
    build_report(load_spec(a), none, tmp_path / "partial", timings=False, allow_missing=True)
    assert not none.exists()
