"""A report is never written over one whose results it would lose, and a report written over an earlier one
leaves none of the earlier one's generated files behind (fast: toy spec, no model; the committed v2 report is
only read, from a copy)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from leaderboard_helpers import REPO, run_toy_spec, subprocess_env, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.report import ReportOverwriteError, build_report, cells_with_results
from leaderboards.rescore import rescore
from leaderboards.spec import load_spec


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy spec (2 methods x toy_qa + its noise twin, 4 cells) run once."""
    return run_toy_spec(tmp_path_factory.mktemp("lbo"))


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    return text


def test_partial_report_over_a_full_one_is_refused_and_changes_nothing(toy, tmp_path):
    """A fresh checkout (no run folders) with --allow-missing replaced a committed report with all-"-" tables."""
    spec, runs = toy
    out = build_report(spec, runs, tmp_path / "r", timings=False)
    before = _tree(out)
    assert len(cells_with_results(json.loads((out / "leaderboard.json").read_text()))) == 4
    with pytest.raises(ReportOverwriteError) as exc:
        lb_main(["report", str(spec.path), "--runs-dir", str(tmp_path / "empty"), "--out", str(out), "--allow-missing"])
    msg = _one_line(exc)
    assert f"the report in {out} has results for 4 cell(s) that the new report would not have" in msg
    assert "first: standard/toy_qa/seed1" in msg and "--out DIR" in msg and "--replace" in msg and "--runs-dir" in msg
    assert _tree(out) == before
    # a run folder of one cell gone: that one cell is named
    part = tmp_path / "part"
    shutil.copytree(runs, part)
    from leaderboards.keys import cell_keys

    key = {c.cell_id: k for c, k, _ in cell_keys(spec)}["none/toy_qa_noise67/seed1"]
    shutil.rmtree(part / key)
    with pytest.raises(ReportOverwriteError, match=r"results for 1 cell\(s\) .*first: none/toy_qa_noise67/seed1"):
        build_report(spec, part, out, timings=False, allow_missing=True)
    assert _tree(out) == before
    # the same results again (a rebuild) is not a loss
    build_report(spec, runs, out, timings=False)
    assert _tree(out) == before


def test_rescore_has_the_same_guard_and_can_run_partial(toy, tmp_path):
    spec, runs = toy
    out = build_report(spec, runs, tmp_path / "r", timings=False)
    before = _tree(out)
    with pytest.raises(ReportOverwriteError, match=r"results for 4 cell\(s\)"):
        rescore(spec, tmp_path / "empty", out, timings=False, allow_missing=True)
    assert _tree(out) == before
    part = tmp_path / "part"
    shutil.copytree(runs, part)
    from leaderboards.keys import cell_keys

    key = {c.cell_id: k for c, k, _ in cell_keys(spec)}["none/toy_qa/seed1"]
    shutil.rmtree(part / key)
    new, _ = rescore(spec, part, tmp_path / "r2", timings=False, allow_missing=True)
    data = json.loads((new / "leaderboard.json").read_text())
    assert sorted(cells_with_results(data)) == ["none/toy_qa_noise67/seed1", "standard/toy_qa/seed1", "standard/toy_qa_noise67/seed1"]


def test_replace_overwrites_and_removes_only_stale_generated_files(toy, tmp_path):
    spec, runs = toy
    out = build_report(spec, runs, tmp_path / "r", timings=False)
    assert (out / "questions" / "toy_qa_noise67.html").is_file() and (out / "robustness_toy_qa.png").is_file()
    (out / "my-notes.txt").write_text("mine")
    (out / "questions" / "mine.html").write_text("mine")
    (out / "figure.png").write_bytes(b"mine")
    # a spec without the noisy task, over the same folder: its cells would be lost -> refused, then --replace
    small = load_spec(write_spec(tmp_path / "small", tasks=["toy_qa"]))
    with pytest.raises(ReportOverwriteError, match=r"results for 2 cell\(s\) .*first: standard/toy_qa_noise67/seed1"):
        lb_main(["report", str(small.path), "--runs-dir", str(runs), "--out", str(out)])
    assert lb_main(["report", str(small.path), "--runs-dir", str(runs), "--out", str(out), "--replace"]) == 0
    names = set(_tree(out))
    # the noisy task's page and the robustness plot (needs two noise levels) were the earlier report's only
    assert "questions/toy_qa_noise67.html" not in names and "robustness_toy_qa.png" not in names
    assert {"questions/toy_qa.html", "leaderboard.json", "index.html", "my-notes.txt", "questions/mine.html", "figure.png"} <= names
    html = (out / "index.html").read_text()
    assert all(f'src="{n}"' in html for n in names if n.endswith(".png") and n != "figure.png")
    # --no-questions: the generated pages go, the user's file and folder stay
    assert lb_main(["report", str(small.path), "--runs-dir", str(runs), "--out", str(out), "--no-questions"]) == 0
    assert not (out / "questions" / "toy_qa.html").exists() and (out / "questions" / "mine.html").read_text() == "mine"
    shutil.rmtree(out / "questions")
    (out / "questions").mkdir()
    (out / "questions" / "toy_qa.html").write_text("stale")
    assert lb_main(["report", str(small.path), "--runs-dir", str(runs), "--out", str(out), "--no-questions"]) == 0
    assert not (out / "questions").exists()  # emptied by the report: removed


def test_fresh_checkout_cannot_overwrite_the_committed_v2_report(tmp_path):
    """The new-user trial: ``report leaderboards/specs/nq-wiki-12k-v2.yaml --allow-missing`` without run folders
    (on a copy of the committed report: the committed one is never written)."""
    committed = REPO / "leaderboards" / "nq-wiki-12k-v2"
    copy = tmp_path / "v2"
    shutil.copytree(committed, copy)
    before = _tree(copy)
    n = len(cells_with_results(json.loads((committed / "leaderboard.json").read_text())))
    assert n > 50
    proc = subprocess.run([sys.executable, "-m", "leaderboards.cli", "report", str(REPO / "leaderboards/specs/nq-wiki-12k-v2.yaml"),
                           "--runs-dir", str(tmp_path / "no-runs"), "--out", str(copy), "--allow-missing"],
                          capture_output=True, text=True, env=subprocess_env(tmp_path / "cache"), cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tokrag leaderboard: error: the report in ")
    assert f"has results for {n} cell(s)" in err[0] and "first: smollm2-135m-instruct/" in err[0]
    assert _tree(copy) == before


def test_report_says_how_many_cells_have_results_and_which_are_missing(toy, tmp_path, capsys):
    """A reader saw missing cells only as "-" in the pivot."""
    spec, runs = toy
    part = tmp_path / "part"
    shutil.copytree(runs, part)
    from leaderboards.keys import cell_keys

    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    for cid in ("none/toy_qa/seed1", "none/toy_qa_noise67/seed1"):
        shutil.rmtree(part / keys[cid])
    capsys.readouterr()
    assert lb_main(["report", str(spec.path), "--runs-dir", str(part), "--out", str(tmp_path / "r"), "--allow-missing",
                    "--no-timings"]) == 0
    assert "Cells with results: 2 of 4; 2 missing" in capsys.readouterr().out
    out = tmp_path / "r"
    data = json.loads((out / "leaderboard.json").read_text())
    assert data["cells"]["total"] == 4 and data["cells"]["with_results"] == 2
    assert [m["cell"] for m in data["cells"]["missing"]] == ["none/toy_qa/seed1", "none/toy_qa_noise67/seed1"]
    md = (out / "leaderboard.md").read_text()
    top = md.split("## Overview")[0]
    assert "Cells with results: 2 of 4; 2 missing" in top and "- toy_qa: none\n" in top and "- toy_qa_noise67: none\n" in top
    html = (out / "index.html").read_text()
    assert html.index("Cells with results: 2 of 4") < html.index('id="overview"') and "<li>toy_qa: none</li>" in html
    full = build_report(spec, runs, tmp_path / "full", timings=False)
    assert "Cells with results: 4 of 4 (all finished)" in (full / "leaderboard.md").read_text().split("## Overview")[0]
    # the CSV keeps its columns
    assert (out / "leaderboard.csv").read_text().splitlines()[0] == (full / "leaderboard.csv").read_text().splitlines()[0]


def test_missing_summary_of_several_models_and_seeds():
    from leaderboards.report import cells_lines

    data = {"models": [{"name": "a", "methods": ["x", "y"], "tasks": ["t1", "t2"]}, {"name": "b", "methods": ["x"], "tasks": ["t1"]}],
            "cells": {"total": 10, "with_results": 7, "seeds": [1, 2],
                      "missing": [{"cell": "a/y/t2/seed2", "model": "a", "method": "y", "task": "t2", "seed": 2},
                                  {"cell": "b/x/t1/seed1", "model": "b", "method": "x", "task": "t1", "seed": 1},
                                  {"cell": "b/x/t1/seed2", "model": "b", "method": "x", "task": "t1", "seed": 2}]}}
    assert cells_lines(data) == ["Cells with results: 7 of 10; 3 missing (not finished in the run folders when this report "
                                 "was built; their values show as -):", "a: t2: y (seed 2)", "b: all 2 cells"]
    data["cells"]["missing"][:1] = [{"cell": f"a/{m}/t2/seed{s}", "model": "a", "method": m, "task": "t2", "seed": s}
                                    for m in ("x", "y") for s in (1, 2)]
    assert cells_lines(data)[1] == "a: t2: all 2 methods"


def test_cost_section_says_what_it_has_and_what_estimate_reads(toy, tmp_path):
    """The title promised peak memory without timings; the note said --estimate reads these columns."""
    spec, runs = toy
    plain = (build_report(spec, runs, tmp_path / "a", timings=False) / "leaderboard.md").read_text()
    timed = (build_report(spec, runs, tmp_path / "b", timings=True) / "leaderboard.md").read_text()
    assert "## Cost (totals over seeds)\n" in plain and "peak memory" not in plain and "wall time" not in plain
    assert "## Cost (totals over seeds; peak memory = max)" in timed and "peak RSS (MiB)" in timed
    for md in (plain, timed):
        assert "tokrag leaderboard run SPEC --estimate reads the finished run folders in --runs-dir" in md
        assert "Estimate a grid's CPU time from these columns" not in md


def test_every_argument_has_help_and_rescore_runs_partial(toy, tmp_path, capsys):
    from leaderboards.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        for a in p._actions:
            if a.dest != "help":
                assert a.help, f"{name} {a.option_strings or a.dest} has no help text"
    spec, runs = toy
    part = tmp_path / "part"
    shutil.copytree(runs, part)
    from leaderboards.keys import cell_keys

    shutil.rmtree(part / {c.cell_id: k for c, k, _ in cell_keys(spec)}["none/toy_qa/seed1"])
    capsys.readouterr()
    assert lb_main(["rescore", str(spec.path), "--runs-dir", str(part), "--out", str(tmp_path / "r"), "--allow-missing"]) == 0
    assert "Cells with results: 3 of 4; 1 missing" in capsys.readouterr().out
    from leaderboards.runner import IncompleteRunError

    with pytest.raises(IncompleteRunError, match="1 of 4 cells have no finished run"):
        lb_main(["rescore", str(spec.path), "--runs-dir", str(part), "--out", str(tmp_path / "r2")])


def test_a_folder_without_a_report_keeps_its_files(toy, tmp_path):
    spec, runs = toy
    out = tmp_path / "mine"
    (out / "questions").mkdir(parents=True)
    (out / "questions" / "toy_qa.html").write_text("mine")  # a name the generator uses, not written with questions=False
    build_report(spec, runs, out, timings=False, questions=False)
    assert (out / "questions" / "toy_qa.html").read_text() == "mine"


def test_a_folder_without_a_report_is_refused_when_the_report_would_overwrite_a_file(toy, tmp_path):
    """With questions on, the user's questions/toy_qa.html was overwritten; a user's index.html too (--out .)."""
    spec, runs = toy
    for rel in ("questions/toy_qa.html", "index.html", "leaderboard.md"):
        out = tmp_path / rel.replace("/", "_")
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("mine")
        (out / "README.md").write_text("mine")
        before = _tree(out)
        with pytest.raises(ReportOverwriteError) as exc:
            lb_main(["report", str(spec.path), "--runs-dir", str(runs), "--out", str(out), "--no-timings"])
        text = _one_line(exc)
        assert f"the folder {out} holds no tokrag report but has 1 file(s) the report would overwrite (first: {rel})" in text
        assert "--replace" in text and _tree(out) == before
    # --replace: the user asked; the report is written over that file, nothing else in the folder is touched
    out = tmp_path / "index.html".replace("/", "_")
    assert lb_main(["report", str(spec.path), "--runs-dir", str(runs), "--out", str(out), "--no-timings", "--replace"]) == 0
    assert (out / "README.md").read_text() == "mine" and (out / "index.html").read_text() != "mine"
    # now a report: written over again without --replace
    assert lb_main(["report", str(spec.path), "--runs-dir", str(runs), "--out", str(out), "--no-timings"]) == 0


def test_a_leaderboard_json_that_is_not_a_report_is_not_trusted(toy, tmp_path):
    """A foreign leaderboard.json with a list of rows does not make the folder a report: refused without --replace,
    and with --replace no file of the folder is removed as stale."""
    spec, runs = toy
    out = tmp_path / "mine"
    (out / "questions").mkdir(parents=True)
    (out / "leaderboard.json").write_text(json.dumps({"rows": [{"task": "toy_qa_noise67", "metrics": {"em": 1}}]}))
    (out / "questions" / "toy_qa_noise67.html").write_text("mine")
    with pytest.raises(ReportOverwriteError) as exc:
        build_report(spec, runs, out, timings=False)
    assert "cannot be read as a report (not a tokrag leaderboard report" in _one_line(exc)
    small = load_spec(write_spec(tmp_path / "small", tasks=["toy_qa"]))
    build_report(small, runs, out, timings=False, replace=True)
    assert (out / "questions" / "toy_qa_noise67.html").read_text() == "mine"
    data = json.loads((out / "leaderboard.json").read_text())
    assert data["generator"] == "tokrag leaderboard report"


@pytest.mark.parametrize("name", ["nq-wiki-12k-v2", "reference-cells", "nq-wiki-12k"])
def test_committed_reports_are_recognised_as_reports(name):
    from leaderboards.report import is_report_json

    d = json.loads((REPO / "leaderboards" / name / "leaderboard.json").read_text())
    if name == "reference-cells":  # regenerated on 2026-12-05 (380d7c0): it names its generator
        assert d["generator"] == "tokrag leaderboard report"
    else:  # older than the generator key: still recognised by their shape
        assert "generator" not in d
    assert is_report_json(d)
    assert not is_report_json({"rows": d["rows"]}) and not is_report_json({**d, "rows": None})


def test_stale_removal_never_deletes_through_a_linked_questions_folder(tmp_path):
    from leaderboards.report import _remove_stale

    rep, site = tmp_path / "rep", tmp_path / "site"
    rep.mkdir()
    site.mkdir()
    (site / "nq_oracle_bm25.html").write_text("mine")
    (rep / "questions").symlink_to(site)
    old = {"rows": [{"task": "nq_oracle_bm25", "metrics": {"em": 1}}], "models": [{"name": None}], "multi_model": False}
    assert _remove_stale(rep, old, {"rows": [], "models": [], "multi_model": False}, set()) == []
    assert (site / "nq_oracle_bm25.html").read_text() == "mine"
    assert (rep / "questions").is_symlink()


def test_run_report_refused_still_prints_the_run_summary(tmp_path, capsys):
    """``run --report`` whose report was refused (here: the report folder holds a user's index.html, not a tokrag
    report) raised before the run's summary line: the cells it computed went unreported. The summary JSON is printed
    (last stdout line), then the refusal ends the command as before (exit 2 from the command line)."""
    path = write_spec(tmp_path, tasks=["toy_qa"], limit=4)
    runs = tmp_path / "runs"
    mine = runs / "reports" / "toy" / "index.html"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    capsys.readouterr()
    with pytest.raises(ReportOverwriteError, match="holds no tokrag report but has 1 file"):
        lb_main(["run", str(path), "--runs-dir", str(runs), "--no-progress", "--report"])
    out = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(out[-1])
    assert sorted(summary["ran"]) == ["none/toy_qa/seed1", "standard/toy_qa/seed1"]
    assert mine.read_text() == "mine" and not any(line.startswith("report: ") for line in out)
    # the command line: the same summary line (the cells are now finished: skipped), the error, exit 2
    proc = subprocess.run([sys.executable, "-m", "leaderboards.cli", "run", str(path), "--runs-dir", str(runs),
                           "--no-progress", "--report"], capture_output=True, text=True, cwd=REPO,
                          env=subprocess_env(tmp_path / "cache"))
    assert proc.returncode == 2, proc.stderr
    assert sorted(json.loads(proc.stdout.strip().splitlines()[-1])["skipped"]) == ["none/toy_qa/seed1", "standard/toy_qa/seed1"]
    assert "holds no tokrag report but has 1 file(s) the report would overwrite" in proc.stderr.strip().splitlines()[-1]
