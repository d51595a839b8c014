"""s59 r3, review of g1's d23f140 (the record of which spec file wrote a report folder, kept in
``<runs>/.tokrag-report-specs/``): a spec file whose path is not valid UTF-8 (a folder named in Latin-1 bytes, which
Python holds with surrogate escapes) made ``tokrag leaderboard report`` end in a UnicodeEncodeError traceback (exit 1)
after the report had been written, because the record was written as UTF-8 JSON. The report of such a spec was
written and exited 0 before d23f140. Now the record holds the path as a JSON escape that reads back as the same path,
so the guard works for it too. Fast: toy spec, no model."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import edit, run_toy_spec

from leaderboards.report import ReportOverwriteError, build_report
from leaderboards.spec import load_spec
from tokrag_model.cli import main as tokrag


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("r3-spec-paths")
    spec, runs = run_toy_spec(root / "lb", limit=4, tasks=["toy_qa"])
    return Path(spec.path), runs


def _report(spec: Path, runs: Path) -> int:
    return tokrag(["leaderboard", "report", str(spec), "--runs-dir", str(runs), "--no-timings"])


def _seed(out: Path) -> int:
    return json.loads((out / "leaderboard.json").read_text())["bootstrap"]["seed"]


def test_a_spec_path_that_is_not_utf8_is_recorded_and_guarded(finished, tmp_path):
    spec_path, done = finished
    runs = tmp_path / "runs"
    shutil.copytree(done, runs)
    a = tmp_path / os.fsdecode(b"caf\xe9") / "toy.yaml"  # 'caf\udce9'
    b = tmp_path / os.fsdecode(b"na\xefve") / "toy.yaml"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(spec_path, p)
    edit(b, "seed: 7", "seed: 8")
    out = runs / "reports" / "toy"

    assert _report(a, runs) == 0  # was a UnicodeEncodeError after the report had been written
    assert _seed(out) == 7
    rec_file = runs / ".tokrag-report-specs" / os.listdir(runs / ".tokrag-report-specs")[0]
    assert b"caf\\udce9" in rec_file.read_bytes()  # an ASCII escape, not a byte UTF-8 has no form for
    rec = json.loads(rec_file.read_text(encoding="utf-8"))
    assert rec["spec"] == str(a.resolve()) and rec["spec"].endswith("caf\udce9/toy.yaml")
    assert rec["report"] == str(out.resolve())

    # another spec file with the same name: refused, as for any path (in-process: pytest's captured stderr has no
    # backslashreplace for the surrogates, a terminal's has; the command's exit 2 is g1's tests')
    with pytest.raises(ReportOverwriteError) as exc:
        build_report(load_spec(b), runs, timings=False)
    assert (f"holds the report of another spec file with the same name: 'toy', {a.resolve()}; this is {b.resolve()}; "
            "nothing written") in str(exc.value)
    assert _seed(out) == 7

    edit(a, "seed: 7", "seed: 9")  # the same (recorded) spec file, edited: writes over its own report
    assert _report(a, runs) == 0
    assert _seed(out) == 9
