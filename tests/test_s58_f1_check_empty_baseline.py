"""``tokrag leaderboard check SPEC --baseline B`` with a baseline that holds no value of the checked cells (s58 f1,
from s58 b2's report): a hand-made ``{"cells": {}, ...}`` (``check --write`` never writes one), cells without
metrics, or a ``--methods`` selection the baseline does not cover printed ``0 checks: 0 OK, 0 FAIL, N cells not in
the baseline (not checked)`` and exited 0: a CI gate that checked nothing passed. Now refused in one line (exit 2 from
the command), naming the baseline and the ``check --write`` that makes one. A baseline that covers some of the
selected cells is unchanged: those are compared, the others are ``NEW`` lines that do not fail the check."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from leaderboards.cli import main as lb_main
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import run_toy_spec

STANDARD, NONE = "standard/toy_qa/seed1", "none/toy_qa/seed1"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Both toy methods on toy_qa at limit 3, run once, and the baseline --write makes of them (read-only)."""
    root = tmp_path_factory.mktemp("check_empty")
    spec, runs = run_toy_spec(root, tasks=["toy_qa"], limit=3)
    baseline = root / "baseline.json"
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(baseline), "--write"]) == 0
    return spec.path, runs, json.loads(baseline.read_text(encoding="utf-8"))


def _write(tmp_path, b):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(b), encoding="utf-8")
    return path


def _refusal(spec, runs, path, *selection):
    with pytest.raises(ConfigError) as err:
        lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(path), *selection])
    assert "\n" not in str(err.value)
    return str(err.value)


def _write_command(spec, runs, path):
    """The suggested command as the message writes it (shell-quoted: a temporary folder may hold a space)."""
    q = shlex.quote
    return f"tokrag leaderboard check {q(str(spec))} --runs-dir {q(str(runs))} --baseline {q(str(path))} --write"


def test_an_empty_baseline_is_refused(finished, tmp_path, capsys):
    spec, runs, written = finished
    path = _write(tmp_path, {"spec": "toy", "cells": {}, "tolerances": written["tolerances"]})
    capsys.readouterr()
    assert _refusal(spec, runs, path) == (
        f"baseline {path} holds no value of the 2 cells of spec 'toy' ({spec}), so check would compare nothing "
        f"(0 checks) and pass; write it from good runs with: {_write_command(spec, runs, path)}")
    assert capsys.readouterr().out == ""  # refused before any OK/NEW line or summary


def test_cells_without_metrics_are_refused_too(finished, tmp_path):
    spec, runs, written = finished
    path = _write(tmp_path, {"cells": {STANDARD: {}, NONE: {}}, "tolerances": written["tolerances"]})
    assert _refusal(spec, runs, path).startswith(f"baseline {path} holds no value of the 2 cells of spec 'toy' ")


def test_a_selection_the_baseline_does_not_cover_is_refused(finished, tmp_path):
    spec, runs, written = finished
    path = _write(tmp_path, {**written, "cells": {STANDARD: written["cells"][STANDARD]}})
    assert _refusal(spec, runs, path, "--methods", "none") == (
        f"baseline {path} holds no value of the 1 cell that --methods none selects of spec 'toy' ({spec}), so check "
        "would compare nothing (0 checks) and pass; select cells the baseline has, or write it from good runs of the "
        f"whole spec with: {_write_command(spec, runs, path)}")


def test_a_baseline_covering_some_cells_checks_them_and_notes_the_others(finished, tmp_path, capsys):
    """Unchanged: the covered cell is compared (exit 0 while it is within tolerance), the other is one NEW line."""
    spec, runs, written = finished
    path = _write(tmp_path, {**written, "cells": {STANDARD: written["cells"][STANDARD]}})
    capsys.readouterr()
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    metrics = sorted(written["cells"][STANDARD])
    assert [ln.split()[:3] for ln in out if ln.startswith("OK ")] == [["OK", STANDARD, m] for m in metrics]
    assert f"NEW  {NONE}  not in the baseline: not checked (accept its values with --write)" in out
    assert f"{len(metrics)} checks: {len(metrics)} OK, 0 FAIL, 1 cells not in the baseline (not checked)" in out
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(path), "--methods", "standard"]) == 0


def test_the_written_baseline_and_a_foreign_cell_keep_their_exit_codes(finished, tmp_path, capsys):
    """The baseline --write made passes (exit 0); one holding only a cell the spec lacks FAILs (exit 1), as before."""
    spec, runs, written = finished
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(_write(tmp_path, written))]) == 0
    other = _write(tmp_path, {"cells": {"other/toy_qa/seed1": {"em": 0.5}}, "tolerances": written["tolerances"]})
    capsys.readouterr()
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(other)]) == 1
    assert "FAIL other/toy_qa/seed1" in capsys.readouterr().out


def test_the_command_exits_2_with_one_line(finished, tmp_path):
    spec, runs, written = finished
    path = _write(tmp_path, {"cells": {}, "tolerances": written["tolerances"]})
    env = dict(os.environ)
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([sys.executable, "-m", "leaderboards.cli", "check", str(spec), "--runs-dir", str(runs),
                           "--baseline", str(path)], capture_output=True, text=True, env=env, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stdout == ""
    assert [ln for ln in proc.stderr.splitlines() if " INFO " not in ln and " WARNING " not in ln] == [
        f"tokrag leaderboard: error: baseline {path} holds no value of the 2 cells of spec 'toy' ({spec}), so check "
        f"would compare nothing (0 checks) and pass; write it from good runs with: {_write_command(spec, runs, path)}"]


def test_from_another_directory_the_write_command_runs_where_the_task_data_are(tmp_path, monkeypatch):
    """A spec whose task reads its questions by a relative path, checked from the folder above (as in
    test_s52_f6_check_other_directory) with an empty baseline given by a relative path: the suggested ``--write``
    runs from the data's folder, so it names the baseline by its absolute path."""
    import shutil

    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec
    from tests.leaderboard_helpers import FIX, write_spec

    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, questions: data/q.jsonl}"))
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "q.jsonl").write_text('{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n')
    spec = load_spec(write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3))
    runs = tmp_path / "runs"
    monkeypatch.chdir(work)
    run_spec(spec, runs, progress=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.json").write_text(json.dumps({"cells": {}, "tolerances": {"em": {"abs": 0.0}}}), encoding="utf-8")
    assert _refusal(spec.path, runs, "b.json") == (
        f"baseline b.json holds no value of the 2 cells of spec 'toy' ({spec.path}), so check would compare nothing "
        f"(0 checks) and pass; write it from good runs with: cd {shlex.quote(str(work.resolve()))} && "
        f"{_write_command(spec.path, runs, tmp_path / 'b.json')}")
