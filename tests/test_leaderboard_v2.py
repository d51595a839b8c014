"""Leaderboard v2 on the deterministic toy model: statistics (Holm, minimum detectable difference,
helped/hurt, noise flips), trace columns, the pivot, per-question pages, invariants, rescore,
the CPU-time estimate, several models per spec and per-task limits.

Toy facts used for the hand-computed values (limit 12, see test_leaderboard.py): ``first`` answers
9 of 12 ``toy_qa`` questions and 3 of 12 ``toy_qa_noise67`` questions right (the 3 it keeps are among
the 9), ``none`` answers none; ``vote`` gives the same answers as ``first`` here.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, report_bytes, run_toy_spec, write_spec

from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.invariants import InvariantError
from leaderboards.keys import cell_keys
from leaderboards.report import build_report
from leaderboards.rescore import rescore
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from leaderboards.stats import holm, min_detectable_difference
from retrieval.errors import ConfigError
from retrieval.io import sha256_file

METHODS = [
    {"name": "standard", "model": TOY, "model_args": {"mode": "first", "trace": "tokens"}},
    {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
    {"name": "vote", "model": TOY, "model_args": {"mode": "vote", "trace": "weights"}},
    {"name": "old", "model": TOY, "model_args": {"mode": "first", "trace": "tokens4"}},
    {"name": "filter", "model": TOY, "model_args": {"mode": "first", "trace": "critic"}},
]
EXTRA = {"reference": ["standard", "none"]}  # closed_book defaults to a method named rag-none: set below


def _spec(root: Path, **kw) -> Path:
    extra = dict(EXTRA, closed_book="none", **kw.pop("extra", {}))
    return write_spec(root, methods=kw.pop("methods", METHODS), tasks=kw.pop("tasks", ["toy_qa", "toy_qa_noise67", "toy_lm"]),
                      extra=extra, **kw)


@pytest.fixture(scope="module")
def v2_run(tmp_path_factory):
    """5 methods x 3 tasks on the toy model, and its report without timings."""
    root = tmp_path_factory.mktemp("lbv2")
    spec = load_spec(_spec(root))
    run_spec(spec, root / "runs", progress=False)
    out = build_report(spec, root / "runs", root / "report", timings=False)
    data = json.loads((out / "leaderboard.json").read_text())
    return spec, root / "runs", out, data


def _rows(data):
    return {(r["method"], r["task"]): r for r in data["rows"]}


# --------------------------------------------------------------------------- statistics

def test_holm_and_minimum_detectable_difference_hand_computed():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.2]) == [0.2] and holm([0.5, 0.6]) == [1.0, 1.0]
    # (z_0.975 + z_0.8) * sd / sqrt(n): 2.8016 * 0.4 / sqrt(300) = 0.0647 -- "about 6-7 points" at n = 300
    assert min_detectable_difference(0.4, 300) == pytest.approx(2.801585 * 0.4 / math.sqrt(300), rel=1e-5)
    assert 0.06 < min_detectable_difference(0.4, 300) < 0.07
    assert math.isnan(min_detectable_difference(0.4, 1))


def test_paired_tests_against_both_references_are_holm_corrected_within_a_task(v2_run):
    _, _, _, data = v2_run
    rows = _rows(data)
    # none - standard on toy_qa: 9 questions lost, exact p = 2/2^9; the task's family has 7 distinct
    # pairs with a reference (none-standard, none-vote, none-old, none-filter: p = 2/512 each;
    # standard-vote, standard-old, standard-filter: identical answers, p = 1) -> Holm: 7 * 2/512
    p = rows[("none", "toy_qa")]["paired"]["standard"]["answer_match"]
    assert p["diff"] == -0.75 and p["p"] == pytest.approx(2 / 512)
    assert p["family"] == 7 and p["p_holm"] == pytest.approx(7 * 2 / 512)
    # the same pair seen from the other reference: the same test, the sign flipped
    q = rows[("standard", "toy_qa")]["paired"]["none"]["answer_match"]
    assert (q["diff"], q["lo"], q["hi"], q["p"], q["p_holm"]) == (0.75, -p["hi"], -p["lo"], p["p"], p["p_holm"])
    assert rows[("vote", "toy_qa")]["paired"]["standard"]["answer_match"]["p_holm"] == 1.0
    assert "standard" not in (rows[("standard", "toy_qa")].get("paired") or {})  # no test against itself
    # minimum detectable difference: pooled sd over the 4 of the 7 pairs with spread (sd^2 = 2.25/11); the 3 with
    # identical answers (sd 0) are left out since s54 f3 (they pulled it down to sqrt(4 * (2.25 / 11) / 7))
    mde = {(x["task"], x["metric"]): x for x in data["mde"]}[("toy_qa", "answer_match")]
    sd = math.sqrt(2.25 / 11)
    assert (mde["sd_comparisons"], len(mde["sd_left_out"])) == (4, 3)
    assert mde["n"] == 12 and mde["sd"] == pytest.approx(sd, abs=1e-4)
    assert mde["mde"] == pytest.approx(2.801585 * sd / math.sqrt(12), abs=1e-4)
    md = (v2_run[2] / "leaderboard.md").read_text()
    # and at alpha 0.05/7, the level Holm's step-down tests the smallest of the 7 p-values against
    assert mde["comparisons"] == 7 and mde["mde_holm_first_step"] == pytest.approx(3.531731 * sd / math.sqrt(12), abs=1e-4)
    assert (f"toy_qa: n = 12 questions; a true difference in answer match under {100 * mde['mde']:.1f} points is detected "
            f"less than 80% of the time (two-sided alpha 0.05; under {100 * mde['mde_holm_first_step']:.1f} points at alpha "
            "0.05/7, the level Holm's correction tests the smallest p against;") in md


def test_paired_cells_mark_the_monte_carlo_floor_and_plots_keep_one_style_per_method():
    """p at 2/(iters+1) is a bound of the Monte Carlo permutation test (p≤, holm≤); an exact p under 0.001 is not
    printed as 0.000. Eleven methods get eleven colours and markers (matplotlib's default cycle has ten)."""
    import matplotlib

    from leaderboards.plots import method_styles
    from leaderboards.report import _cell_paired

    cell = {"diff": -0.1, "lo": -0.15, "hi": -0.05, "p": 2 / 2001, "p_holm": 19 * 2 / 2001}
    assert _cell_paired(cell, 2000) == "-0.100 [-0.150, -0.050] p≤0.001 holm≤0.019"
    assert _cell_paired(dict(cell, p=2 / 2**12, p_holm=3 * 2 / 2**12), 2000) == "-0.100 [-0.150, -0.050] p<0.001 holm=0.001"
    assert _cell_paired(dict(cell, p=0.125, p_holm=0.5), 2000) == "-0.100 [-0.150, -0.050] p=0.125 holm=0.500"
    assert _cell_paired(None, 2000) == "-"
    names = [f"m{i}" for i in range(11)]
    st = method_styles(names)
    assert len({st[m]["color"] for m in names}) == 11 and len({st[m]["marker"] for m in names}) == 11
    few = method_styles(names[:4])  # ten or fewer methods: tab10's colours in order
    assert [few[m]["color"] for m in names[:4]] == [matplotlib.colormaps["tab10"](i) for i in range(4)]


def test_helped_hurt_and_noise_flips_are_per_question_columns(v2_run):
    _, _, out, data = v2_run
    rows = _rows(data)
    assert rows[("standard", "toy_qa")]["closed_book"] == {"helped": 9, "hurt": 0, "neutral": 3}
    assert rows[("standard", "toy_qa_noise67")]["closed_book"] == {"helped": 3, "hurt": 0, "neutral": 9}
    assert "closed_book" not in rows[("none", "toy_qa")]
    ns = rows[("standard", "toy_qa_noise67")]["noise_sensitivity"]
    assert ns == {"flips": 6, "clean_correct": 9, "clean_task": "toy_qa"}
    assert "noise_sensitivity" not in rows[("standard", "toy_qa")]
    csv_lines = (out / "leaderboard.csv").read_text().splitlines()
    head = csv_lines[0].split(",")
    for col in ("helped", "hurt", "neutral", "noise_flips", "noise_clean_correct", "top1_weight", "kept_rate",
                "critic_auc", "rag_token_share", "delta_answer_match_vs_none_p_holm"):
        assert col in head, col
    line = next(x.split(",") for x in csv_lines[1:] if x.startswith("standard,toy_qa_noise67,"))
    assert [line[head.index(c)] for c in ("helped", "hurt", "neutral", "noise_flips", "noise_clean_correct")] == ["3", "0", "9", "6", "9"]


def test_trace_columns_accept_both_token_forms(v2_run):
    _, _, _, data = v2_run
    rows = _rows(data)
    assert rows[("vote", "toy_qa")]["trace"]["top1_weight"] == {"mean": 0.5, "n": 12}
    h = -(0.5 * math.log(0.5) + math.log(1 / 3) / 3 + math.log(1 / 6) / 6)
    assert rows[("vote", "toy_qa")]["trace"]["weight_entropy"]["mean"] == pytest.approx(h)
    # answers come from the passages: every token from the RAG branch, in the 5- and the 4-element form
    assert rows[("standard", "toy_qa")]["trace"]["rag_token_share"]["mean"] == 1.0
    assert rows[("old", "toy_qa")]["trace"]["rag_token_share"]["mean"] == 1.0
    # filter: kept = gold passages among the 3 shown; AUC only where both classes occur
    kept = rows[("filter", "toy_qa")]["trace"]["kept_rate"]
    assert kept["mean"] == pytest.approx(1 / 3) and kept["n"] == 12
    assert rows[("filter", "toy_qa")]["trace"]["critic_auc"] == {"mean": 1.0, "n": 12}
    assert "trace" not in rows[("none", "toy_qa")]
    assert rows[("standard", "toy_qa")]["trace"]["rag_win_rate"]["mean"] == 1.0  # its tested tokens: all RAG
    assert data["trace_columns"] == ["top1_weight", "weight_entropy", "kept_rate", "critic_auc", "rag_token_share",
                                     "rag_win_rate"]


def test_pivot_best_in_bold_average_and_language_modelling_column(v2_run):
    _, _, out, data = v2_run
    (piv,) = data["pivot"]
    cols = {c["task"]: c for c in piv["columns"]}
    assert cols["toy_qa"]["metric"] == "answer_match" and cols["toy_lm"]["metric"] == "word_perplexity"
    assert cols["toy_lm"]["lower_is_better"] and not cols["toy_qa"]["lower_is_better"]
    assert sorted(piv["best"]["toy_qa"]) == ["filter", "old", "standard", "vote"]  # ties share the bold
    assert piv["best"]["toy_lm"] == ["standard", "vote", "old", "filter"]  # e^2 < e^3 (none)
    assert piv["average_over"] == ["toy_qa", "toy_qa_noise67"]
    avg = {r["method"]: r["average"] for r in piv["rows"]}
    assert avg["standard"] == 0.5 and avg["none"] == 0.0
    md = (out / "leaderboard.md").read_text()
    assert md.index("## Overview") < md.index("## Fairness contract") < md.index("## Results") < md.index("## Provenance")
    assert "| standard | **0.750** | **0.250** | **7.389** | **0.500** |" in md
    assert "| none | 0.000 | 0.000 | 20.086 | 0.000 |" in md


def test_question_pages_show_passages_answers_and_coloured_tokens(v2_run):
    _, _, out, _ = v2_run
    html = (out / "questions" / "toy_qa.html").read_text()
    assert html.count("<details") == 12 and "What is the colour of thing 5?" in html
    assert "<b>Gold answers:</b> green, GREEN" in html  # thing 5: COLOURS[25 % 8] = green
    assert '<li class="gold"><span class="tag">gold</span><span class="tag">has answer</span><code>g5 (10.000)</code>' in html
    # Tok-RAG-style tokens: coloured by branch, S_R / S_L / layer on hover; old 4-element form without text
    assert '<span class="tok tok-R" title="RAG branch: S_R 0.9000, S_L 0.5000, layer 12">green</span>' in html
    assert '<span class="tok tok-R" title="RAG branch: S_R 0.9000, S_L 0.5000, layer 12">\u25ae</span>' in html
    assert '<span class="bad">&#9660; hurt</span>' not in html and '<span class="ok">&#9650; helped</span>' in html
    index = (out / "index.html").read_text()
    assert 'href="questions/toy_qa.html"' in index and 'href="questions/toy_lm.html"' in index


# --------------------------------------------------------------------------- invariants

def _resign(cell_dir: Path) -> None:
    """Rewrite DONE with the current checksums (as if the run had written these files)."""
    done = json.loads((cell_dir / "DONE").read_text())
    done["files"] = {name: sha256_file(cell_dir / name) for name in done["files"]}
    (cell_dir / "DONE").write_text(json.dumps(done))


def _edit_cell(runs: Path, key: str, task: str, edit_sample=None, edit_results=None, drop: int | None = None) -> None:
    d = runs / key
    path = d / f"samples_{task}.jsonl"
    samples = [json.loads(x) for x in path.read_text().splitlines()]
    if drop is not None:
        samples = [s for s in samples if s["doc_id"] != drop]
    if edit_sample:
        for s in samples:
            edit_sample(s)
    path.write_text("".join(json.dumps(s, sort_keys=True) + "\n" for s in samples))
    if edit_results:
        res = json.loads((d / "results.json").read_text())
        edit_results(res["results"][task])
        (d / "results.json").write_text(json.dumps(res))
    _resign(d)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A 2-method toy run (standard, none) on toy_qa + toy_qa_noise67 (read-only)."""
    return run_toy_spec(tmp_path_factory.mktemp("small"))


@pytest.fixture()
def small_copy(small_run, tmp_path):
    """A private copy of ``small_run`` that a test may break."""
    spec, runs = small_run
    shutil.copytree(runs, tmp_path / "runs")
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    return spec, tmp_path / "runs", keys


def test_em_above_f1_is_refused_by_report_and_failed_by_check(small_copy, tmp_path, capsys):
    spec, runs, keys = small_copy
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)

    def halve_f1(s):  # the toy: EM 0.750, F1 0.375
        if s["em"] == 1.0:
            s["f1"] = 0.5

    _edit_cell(runs, keys["standard/toy_qa/seed1"], "toy_qa", halve_f1, lambda r: r.update({"f1,none": 0.375}))
    with pytest.raises(InvariantError) as exc:
        build_report(spec, runs, tmp_path / "r")
    msg = str(exc.value)
    assert "FAIL standard/toy_qa/seed1 doc_id 1  invariant: em=1 but f1=0.5 (an exact match must have f1 1)" in msg
    assert "FAIL standard/toy_qa/seed1  invariant: mean em 0.7500 > mean f1 0.3750" in msg
    assert msg.count("FAIL") == 10 and not (tmp_path / "r" / "index.html").exists()
    capsys.readouterr()
    assert lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]) == 1
    out = capsys.readouterr().out
    assert "FAIL standard/toy_qa/seed1  invariant: mean em 0.7500 > mean f1 0.3750" in out
    assert "FAIL standard/toy_qa/seed1  f1 = 0.3750 (baseline 0.7500" in out
    from tokrag_model.cli import main as tokrag_main

    assert tokrag_main(["leaderboard", "report", str(spec.path), "--runs-dir", str(runs), "--out", str(tmp_path / "r")]) == 2
    assert "invariant violation(s)" in capsys.readouterr().err
    with pytest.raises(InvariantError):
        write_baseline(spec, runs, tmp_path / "b2.json")


def test_results_json_must_equal_the_samples_mean(small_copy, tmp_path):
    spec, runs, keys = small_copy
    _edit_cell(runs, keys["none/toy_qa_noise67/seed1"], "toy_qa_noise67", edit_results=lambda r: r.update({"em,none": 0.5}))
    lines = [x.render() for x in check_against_baseline(spec, runs, _baseline(spec, tmp_path)) if not x.ok]
    assert lines == ["FAIL none/toy_qa_noise67/seed1  invariant: results.json em,none = 0.500000 but the samples' "
                     "mean is 0.000000 (12 samples)"]


def _baseline(spec, tmp_path: Path) -> Path:
    p = tmp_path / "empty-baseline.json"
    p.write_text(json.dumps({"spec": spec.name, "tolerances": {}, "cells": {}}))
    return p


def test_a_cell_with_other_questions_than_its_siblings_is_refused(small_copy, tmp_path):
    spec, runs, keys = small_copy
    # drop doc 4 from one cell (and keep its results.json consistent, so only the sibling check fires)
    _edit_cell(runs, keys["none/toy_qa/seed1"], "toy_qa", drop=4)
    with pytest.raises(InvariantError) as exc:
        build_report(spec, runs, tmp_path / "r")
    assert ("FAIL none/toy_qa/seed1 doc_id 4  invariant: 11 questions vs 12 in its siblings on toy_qa "
            "(e.g. standard/toy_qa/seed1): doc id 4 is missing (1 missing, 0 extra)") in str(exc.value)
    # how to redo it: the runner skips a finished folder, so "re-run the cell" alone led nowhere
    assert f"remove its run folder {runs / keys['none/toy_qa/seed1']} and run the spec again" in str(exc.value)


# --------------------------------------------------------------------------- rescore

def test_rescore_gives_the_report_byte_for_byte(v2_run, tmp_path):
    spec, runs, out, _ = v2_run
    again, changes = rescore(spec, runs, tmp_path / "rescored", timings=False)
    assert changes["changed_values"] == 0 and changes["changed"] == {} and changes["notes"] == []
    assert changes["cells"] == 15 and changes["samples"] == 12 * 10 + 6 * 5
    mine, ref = report_bytes(again), report_bytes(out)
    assert mine.keys() == ref.keys() and all(mine[k] == ref[k] for k in ref)
    q = {p.name: p.read_bytes() for p in (again / "questions").iterdir()}
    assert q == {p.name: p.read_bytes() for p in (out / "questions").iterdir()}


def test_rescore_applies_a_metric_fix_without_a_run(tmp_path, capsys, caplog):
    inc = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", inc, ignore=shutil.ignore_patterns("__pycache__"))
    spec = load_spec(write_spec(tmp_path / "s", include=inc, tasks=["toy_qa"]))
    run_spec(spec, tmp_path / "runs", progress=False)
    utils = inc / "toy_qa" / "utils.py"
    # a "metric fix": EM only for the upper-case gold spelling (which no toy answer uses)
    utils.write_text(utils.read_text().replace('scores = qa_scores(results[0], doc["answers"])',
                                               'scores = qa_scores(results[0], doc["answers"])\n'
                                               '    scores["em"] = float(results[0].strip() == doc["answers"][1])'))
    capsys.readouterr()
    assert not [r for r in caplog.records if "max_seq_lengths" in r.getMessage()]  # from run_spec: dropped too
    assert lb_main(["rescore", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert not [r for r in caplog.records if "max_seq_lengths" in r.getMessage()]  # lm-eval's custom_dataset hint, dropped
    assert "note: standard/toy_qa/seed1: task folder changed since the run" in out
    assert "changed standard/toy_qa/seed1  em: 0.75 -> 0.0" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary == {"cells": 2, "cells_changed": 1, "cells_from_earlier_task_code": 2, "changed_values": 9, "samples": 24}
    rows = {r["method"]: r for r in json.loads((tmp_path / "r" / "leaderboard.json").read_text())["rows"]}
    assert rows["standard"]["metrics"]["em"]["mean"] == 0.0 and rows["standard"]["metrics"]["f1"]["mean"] == 0.75



def test_rescore_allow_missing_says_why_a_cell_is_missing(tmp_path, capsys):
    """Several candidate folders for a cell: with --allow-missing the cell is missing and a note on stderr says why
    (it was an unexplained missing cell)."""
    inc = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", inc, ignore=shutil.ignore_patterns("__pycache__"))
    spec = load_spec(write_spec(tmp_path / "s", include=inc, tasks=["toy_qa"]))
    runs = tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    key = {c.cell_id: k for c, k, _ in cell_keys(spec)}["standard/toy_qa/seed1"]
    shutil.copytree(runs / key, runs / "copy-of-standard")
    utils = inc / "toy_qa" / "utils.py"
    utils.write_text(utils.read_text() + "\nTASK_CODE_CHANGED = 1\n")
    capsys.readouterr()
    assert lb_main(["rescore", str(spec.path), "--runs-dir", str(runs), "--out", str(tmp_path / "r"), "--allow-missing"]) == 0
    cap = capsys.readouterr()
    notes = [line for line in cap.err.splitlines() if line.startswith("note: missing ")]
    assert len(notes) == 1, cap.err
    assert notes[0].startswith("note: missing standard/toy_qa/seed1 (several finished folders differ only in the task code: ")
    assert key in notes[0] and "copy-of-standard" in notes[0]
    assert "Cells with results: 1 of 2; 1 missing" in cap.out


# --------------------------------------------------------------------------- estimate

def test_estimate_uses_measured_seconds_per_question(v2_run, tmp_path, capsys):
    spec, runs, _, _ = v2_run
    cost = {}
    for cell, key, _ in cell_keys(spec):
        c = json.loads((runs / key / "cost.json").read_text())
        cost[cell.cell_id] = (c["wall_s"], c["n_samples"], c["model_s"])
    methods = METHODS[:2] + [{"name": "fresh", "model": TOY, "model_args": {"mode": "vote"}}]
    bigger = load_spec(_spec(tmp_path, methods=methods, limit=24, tasks=["toy_qa", "toy_lm"]))
    capsys.readouterr()
    assert lb_main(["run", str(bigger.path), "--runs-dir", str(runs), "--estimate", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    est = json.loads(out.strip().splitlines()[-1])
    assert est["cells_total"] == 6 and est["cells_done"] == 0 and est["cells_todo"] == 6 and est["unestimated_cells"] == 0
    # toy_lm has 6 paragraphs, shown by its finished cells (6 scored at limit 12): its cells count 6, not the limit 24
    # (it estimated 6 * 24); toy_qa's 24 is exact: its cells scored their limit 12, but lm-eval recorded the task's 24
    # documents (results.json n-samples.toy_qa.original; s56: before, its 24 was only the limit, an upper bound)
    assert est["questions"] == 3 * 24 + 3 * 6 and est["measurements"] == 15 and est["questions_upper_bound"] == 0
    # standard/toy_qa: its own measurement (method + task); fresh/toy_qa: every ToyLM QA cell (model + kind)
    # per question the model seconds (cost.json model_s), and the fixed seconds (wall_s - model_s) once per cell: the
    # task's largest for its first cell (standard), its smallest for the next ones (s60 f1: it was wall_s / n per question)
    _, n, m = cost["standard/toy_qa/seed1"]
    qa = [v for k, v in cost.items() if "toy_lm" not in k]
    fixed = [w - s for k, (w, _, s) in cost.items() if k.split("/")[1] == "toy_qa"]
    expected = 24 * m / n + max(fixed) + 24 * sum(s for _, _, s in qa) / sum(b for _, b, _ in qa) + min(fixed)
    from leaderboards.estimate import estimate

    e2 = estimate(bigger, runs, jobs=2)
    got = {c["cell"]: c for c in e2["cells"]}
    assert got["standard/toy_qa/seed1"]["level"] == "method+task" and got["fresh/toy_qa/seed1"]["level"] == "model+kind"
    assert got["standard/toy_qa/seed1"]["seconds"] + got["fresh/toy_qa/seed1"]["seconds"] == pytest.approx(expected, abs=0.2)
    assert {c["cell"]: (c["questions"], c["questions_upper_bound"]) for c in e2["cells"] if c["task"] == "toy_lm"} == {
        f"{m}/toy_lm/seed1": (6, False) for m in ("standard", "none", "fresh")}
    assert {c["cell"]: (c["questions"], c["questions_upper_bound"]) for c in e2["cells"] if c["task"] == "toy_qa"} == {
        f"{m}/toy_qa/seed1": (24, False) for m in ("standard", "none", "fresh")}
    assert "144 questions" not in out and "90 questions, " in out and "at most" not in out
    assert est["wall_hours"] == pytest.approx(est["cell_hours"] / 2, abs=0.01)
    # the cell time in the unit that reads it (s61 f1: seconds here, a few s of ToyLM; it printed "0.00 cell-hours")
    assert "standard" in out and "method+task" in out and re.search(r"\d cell-(seconds|minutes|hours) \(CPU-", out)


def test_estimate_refuses_what_a_run_would_refuse(tmp_path):
    """``--estimate`` used to price a spec that ``run`` then refused before its first cell."""
    stray = METHODS[:2] + [{"name": "tokrag-js", "model": "tokrag", "model_args": {"js_threshold": 1e-6}}]
    spec = _spec(tmp_path / "a", methods=stray, tasks=["toy_qa"])
    with pytest.raises(ConfigError, match=r"method tokrag-js: --model tokrag: model argument\(s\) js_threshold has no "
                                          r"effect with layer=0.625"):
        lb_main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--estimate"])
    twice = METHODS[:2] + [{"name": "standard-again", "model": TOY, "model_args": dict(METHODS[0]["model_args"])}]
    spec = _spec(tmp_path / "b", methods=twice, tasks=["toy_qa"])
    with pytest.raises(ConfigError, match=r"methods 'standard' and 'standard-again' run the same configuration"):
        lb_main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--estimate"])
    assert not (tmp_path / "runs").exists()


def test_estimate_lists_cells_it_cannot_estimate(tmp_path):
    from leaderboards.estimate import estimate

    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"]))
    est = estimate(spec, tmp_path / "empty-runs")
    # nothing estimated: unknown (None), not 0 hours
    assert est["cells_todo"] == 2 and est["cell_hours"] is None and est["wall_hours"] is None and len(est["unestimated"]) == 2
    est = estimate(spec, tmp_path / "empty-runs", fallback=3.5)
    assert est["unestimated"] == [] and est["cell_hours"] == pytest.approx(2 * 12 * 3.5 / 3600, abs=0.01)


def test_estimate_says_when_it_estimated_nothing_or_part(tmp_path, capsys):
    """A fresh clone has no finished cell: the estimate said "total: 0 questions, 0.00 cell-hours" as if the grid
    were free; a part-estimate did not say it was a lower bound."""
    from leaderboards.estimate import estimate, render

    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"]))
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "empty-runs"), "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "total: not estimated: none of the 2 unfinished cells resembles a finished cell" in out and "0.00 cell-hours" not in out
    assert "--max-cells 1" in out and json.loads(out.strip().splitlines()[-1])["complete"] is False
    # the JSON said 0.0 hours, as if the grid were free: unknown is null; the line gives a figure for the fallback
    last = json.loads(out.strip().splitlines()[-1])
    assert last["cell_hours"] is None and last["wall_hours"] is None and last["questions"] is None
    assert "--fallback-s-per-question S (a rough S: SmolLM2-135M-Instruct at k=5" in out and "3.4 s per question" in out
    assert "leaderboards/nq-wiki-12k/leaderboard.csv" in out
    # every cell finished: 0 hours left is a real 0
    run_spec(spec, tmp_path / "runs", progress=False)
    done = estimate(spec, tmp_path / "runs")
    assert done["cells_todo"] == 0 and done["cell_hours"] == 0 and done["wall_hours"] == 0 and done["complete"] is True
    est = estimate(spec, tmp_path / "empty-runs")
    est["cells"] = [{"cell": "x", "questions": 12, "seconds": 36.0}]
    est["questions"], est["unestimated"], est["cell_hours"], est["wall_hours"] = 12, est["unestimated"][:1], 0.01, 0.01
    assert "total of the 1 estimated cell (a lower bound: 1 cell not estimated): 12 questions" in render(est)


def test_estimate_names_an_unknown_task_and_model(tmp_path, capsys):
    """An unknown task was reported as "models not registered in lm-eval yet: <every model>"; a model typo had no hint."""
    from leaderboards.estimate import estimate, render

    spec = load_spec(write_spec(tmp_path / "a", tasks=["toy_qa", "toy_qa_nosie67"]))
    with pytest.raises(ConfigError, match=r"unknown task 'toy_qa_nosie67' \(did you mean 'toy_qa_noise67'\?\)"):
        estimate(spec, tmp_path / "runs")
    spec = load_spec(write_spec(tmp_path / "b", tasks=["toy_qa"], methods=[{"name": "t", "model": "tokrg"}], extra={"reference": "t"}))
    text = render(estimate(spec, tmp_path / "runs"))
    assert "models not registered in lm-eval (their cells count as not done): unknown model 'tokrg' (did you mean 'tokrag'?)" in text


# --------------------------------------------------------------------------- several models, per-task limits

def _two_models(tmp_path: Path, **change) -> Path:
    w2 = tmp_path / "w2.bin"
    w2.write_bytes(b"another toy model")
    models = [{"name": "toy-a", "label": "Toy A (chat)"},
              {"name": "toy-b", "shared": {"model_args": {"pretrained": str(w2)}}, "tasks": ["toy_qa"],
               "methods": ["standard", "none"]}]
    extra = {"models": models, "reference": ["standard", "none"], "closed_book": "none"}
    extra.update(change)
    return write_spec(tmp_path, methods=METHODS[:3], tasks=["toy_qa", "toy_qa_noise67", {"task": "toy_lm", "limit": 3}],
                      extra=extra)


def test_several_models_each_with_its_contract_compared_only_within_a_model(tmp_path):
    spec = load_spec(_two_models(tmp_path))
    cells = spec.cells()
    ids = [c.cell_id for c in cells]
    assert len(ids) == 3 * 3 + 2 and ids[0] == "toy-a/standard/toy_qa/seed1" and ids[-1] == "toy-b/none/toy_qa/seed1"
    assert {c.limit for c in cells if c.task.task == "toy_lm"} == {3} and {c.limit for c in cells if c.task.task == "toy_qa"} == {12}
    b = spec.models[1]
    assert "model_args.pretrained: " + str(tmp_path / "w2.bin") in spec.contract_lines(b)
    assert "limit.toy_lm: 3" in spec.contract_lines(spec.models[0]) and "tasks: toy_qa" in spec.contract_lines(b)
    keyed = cell_keys(spec)
    k = {c.cell_id: key for c, key, _ in keyed}
    assert k["toy-a/standard/toy_qa/seed1"] != k["toy-b/standard/toy_qa/seed1"]  # other weights, other folder
    run_spec(spec, tmp_path / "runs", progress=False)
    out = build_report(spec, tmp_path / "runs", tmp_path / "r", timings=False)
    data = json.loads((out / "leaderboard.json").read_text())
    assert [p["model"] for p in data["pivot"]] == ["toy-a", "toy-b"]
    rows = {(r["model"], r["method"], r["task"]): r for r in data["rows"]}
    assert rows[("toy-a", "standard", "toy_lm")]["n"] == 3
    # toy-b: 2 methods on one task -> one pair in its family; toy-a: 3 methods -> 3 pairs
    assert rows[("toy-b", "none", "toy_qa")]["paired"]["standard"]["answer_match"]["family"] == 1
    assert rows[("toy-a", "none", "toy_qa")]["paired"]["standard"]["answer_match"]["family"] == 3
    md = (out / "leaderboard.md").read_text()
    assert "### Toy A (chat)" in md and "## Fairness contract of toy-b" in md
    assert (out / "questions" / "toy-b__toy_qa.html").is_file() and (out / "robustness_toy_qa_toy-a.png").is_file()
    assert (out / "leaderboard.csv").read_text().startswith("model,method,task,")


def test_partial_report_names_tasks_without_results(tmp_path):
    """A partial grid (--allow-missing): a model whose tasks have no finished cell gets columns marked
    'no results yet', not a metric named None."""
    spec = load_spec(_two_models(tmp_path))
    run_spec(spec, tmp_path / "runs", progress=False, max_cells=9)  # toy-a's 9 cells only
    out = build_report(spec, tmp_path / "runs", tmp_path / "r", timings=False, allow_missing=True)
    md = (out / "leaderboard.md").read_text()
    assert "None" not in md.split("## Fairness contract")[0]
    assert "| method | toy_qa (no results yet) | average (no task with answer match yet) |" in md
    assert "| method | toy_qa (answer match) | toy_qa_noise67 (answer match) | toy_lm (word ppl, lower is better) | average (answer match, 2 tasks) |" in md


@pytest.mark.parametrize(
    "change, message",
    [
        ({"models": [{"name": "a", "tasks": ["toy_qaa"]}]}, "models[0].tasks: 'toy_qaa' is not in the spec (did you mean 'toy_qa'?)"),
        ({"models": [{"name": "a", "sahred": {}}]}, "models[0]: unknown key(s) 'sahred' (did you mean 'shared'?)"),
        ({"models": [{"name": "a"}, {"name": "a"}]}, "duplicate model names ['a']"),
        ({"models": [{"name": "a", "shared": {"model_args": {"mode": "x"}}}]},
         "methods[0] (standard): model_args ['mode'] are contract settings"),
        ({"closed_book": "nobody"}, "closed_book 'nobody' is not one of the methods"),
        ({"tasks": [{"task": "toy_qa", "limit": 0}]}, "tasks[0] (toy_qa).limit must be a positive number of documents"),
    ],
)
def test_v2_spec_keys_are_validated(tmp_path, change, message):
    p = write_spec(tmp_path, methods=METHODS[:2], extra=change)
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    assert message in str(exc.value)


# --------------------------------------------------------------------------- the committed v2 spec

ROOT = Path(__file__).resolve().parents[1]
V2_METHODS = {"rag-none", "rag-standard", "rag-replug", "rag-selfrag-filter", "rag-selfrag-filter-top2", "rag-cad",
              "rag-adacad", "rag-ensemble-entropy", "tokrag", "tokrag-dynamic", "tokrag-calibrated"}


def test_v2_spec_is_the_planned_grid():
    spec = load_spec(ROOT / "leaderboards" / "specs" / "nq-wiki-12k-v2.yaml")
    assert {m.name for m in spec.methods} == V2_METHODS
    assert spec.references == ["rag-standard", "rag-none"] and spec.closed_book == "rag-none"
    smol, gemma = spec.models
    assert smol.shared["model_args"]["pretrained"] == "smollm2-135m-instruct" and smol.shared["apply_chat_template"] is True
    assert gemma.shared["model_args"]["pretrained"] == "gemma-3-270m" and not gemma.shared.get("apply_chat_template")
    assert gemma.tasks == ("nq_oracle_bm25", "nq_oracle_bm25_noise60")
    assert [t.task for t in spec.tasks] == ["nq_oracle_gold", "nq_oracle_bm25", "nq_oracle_bm25_noise20", "nq_oracle_bm25_noise60",
                                            "nq_oracle_bm25_noise100", "nq_oracle_gold_counterfactual", "wiki_lm_bm25"]
    cells = spec.cells()
    assert len(cells) == 11 * 7 + 11 * 2
    assert {c.limit for c in cells if c.task.task != "wiki_lm_bm25"} == {300}
    assert {c.limit for c in cells if c.task.task == "wiki_lm_bm25"} == {100}
    assert len({c.model_args["k"] for c in cells}) == 1  # one k in both contracts
    # every cell's model arguments are accepted by its method, and the labelled filter variant is top-2, not the
    # threshold filter again (its top_m alone was once silently ignored)
    from leaderboards.runner import check_cell_args
    from tokrag_model.args import COMMON_ARGS, parse_args
    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

    check_cell_args(spec, cells)
    top2 = next(m for m in spec.methods if m.name == "rag-selfrag-filter-top2")
    resolved = parse_args(SelfRAGFilterLM.METHOD, {**COMMON_ARGS, **SelfRAGFilterLM.EXTRA_ARGS}, dict(top2.model_args))
    assert (resolved["selection"], resolved["top_m"]) == ("top_m", 2)
    # the calibrated rows resolve through their presets (read without loading a model): SmolLM2's fixes layer 14
    from leaderboards.runner import resolved_model_args

    calibrated = {c.model_name: resolved_model_args(c, dict(c.model_args)) for c in cells if c.method.name == "tokrag-calibrated"}
    assert calibrated["smollm2-135m-instruct"]["layer"] == 14
    # every method's lm-eval model resolves (the issue-11 methods once they are registered)
    from leaderboards.keys import model_target

    unresolved = set()
    for m in spec.methods:
        try:
            model_target(m.model)
        except ConfigError:
            unresolved.add(m.model)
    assert unresolved <= {"rag-cad", "rag-adacad", "rag-ensemble-entropy"}, unresolved


def test_a_variant_that_runs_its_base_configuration_is_refused_before_any_cell(tmp_path):
    """Two rows with one configuration (a variant whose arguments are missing) are refused before anything runs."""
    p = write_spec(tmp_path, methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
                                      {"name": "standard-variant", "model": TOY, "model_args": {"mode": "first"}},
                                      {"name": "none", "model": TOY, "model_args": {"mode": "none"}}])
    with pytest.raises(ConfigError, match=r"methods 'standard' and 'standard-variant' run the same configuration"):
        run_spec(load_spec(p), tmp_path / "runs")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_the_v2_variants_without_their_arguments_are_refused(tmp_path):
    """Without the models' method_args (their presets) the calibrated row is the tokrag row: refused, naming both."""
    import yaml

    from leaderboards.runner import check_distinct_methods

    spec = load_spec(ROOT / "leaderboards" / "specs" / "nq-wiki-12k-v2.yaml")
    check_distinct_methods(spec, spec.cells())
    raw = yaml.safe_load((ROOT / "leaderboards" / "specs" / "nq-wiki-12k-v2.yaml").read_text(encoding="utf-8"))
    for model in raw["models"]:
        model.pop("method_args", None)
    path = tmp_path / "no-presets.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    broken = load_spec(path)
    with pytest.raises(ConfigError, match=r"methods 'tokrag' and 'tokrag-calibrated' run the same configuration "
                                          r"for model smollm2-135m-instruct"):
        check_distinct_methods(broken, broken.cells())


def test_contract_lists_the_generation_settings_as_run(v2_run):
    """The stops come from the task's prompt format, not the spec: the contract shows them as the samples logged
    them, once per group of tasks with equal settings; a log-likelihood task has none."""
    _, _, out, data = v2_run
    md = (out / "leaderboard.md").read_text()
    lines = [x for x in md.splitlines() if x.startswith("- generation as run")]
    assert lines == ["- generation as run (from the samples) on toy_qa, toy_qa_noise67: do_sample=False, max_gen_toks=8, "
                     "until=['\\n']"]
    assert "toy_lm" in {t for m in data["models"] for t in m["tasks"]}  # ... and the LM task has no line
    from leaderboards.report import _generation_kwargs, _generation_lines

    a = _generation_kwargs([{"arguments": [["ctx", {"until": ["\n"], "max_gen_toks": 8}, {"tokrag_trace": {}}]]}])
    b = _generation_kwargs([{"arguments": {"gen_args_0": {"arg_0": "ctx", "arg_1": {"until": ["\n\n"], "max_gen_toks": 8}}}}])
    assert _generation_kwargs([{"arguments": [["text", {"tokrag_trace": {"method": "tokrag"}}]]}]) == set()  # rolling LL
    assert _generation_lines("m", ["t1", "t2"], {("m", "t1"): a | b, ("m", "t2"): a}) == [
        "generation as run (from the samples) on t1: DIFFERS between methods: max_gen_toks=8, until=['\\n'] | "
        "max_gen_toks=8, until=['\\n\\n']",
        "generation as run (from the samples) on t2: max_gen_toks=8, until=['\\n']"]


def test_csv_flags_each_holm_value_as_exact_or_a_bound(v2_run):
    """Each ``..._p_holm`` column of the CSV is followed by ``..._p_holm_bound``, read from the JSON's
    ``p_holm_bound`` (the toy tests are exact: all false), empty where the pair has no test."""
    import csv
    import io

    _, _, out, data = v2_run
    table = list(csv.reader(io.StringIO((out / "leaderboard.csv").read_text())))
    head = table[0]
    holm = [c for c in head if c.endswith("_p_holm")]
    assert holm and all(head[head.index(c) + 1] == c + "_bound" for c in holm)
    rows = _rows(data)
    line = next(r for r in table[1:] if r[:2] == ["none", "toy_qa"])
    p = rows[("none", "toy_qa")]["paired"]["standard"]["answer_match"]
    assert line[head.index("delta_answer_match_vs_standard_p_holm_bound")] == ("true" if p.get("p_holm_bound") else "false")
    assert line[head.index("delta_answer_match_vs_standard_p_holm_bound")] == "false"
    own = next(r for r in table[1:] if r[:2] == ["standard", "toy_qa"])
    assert own[head.index("delta_answer_match_vs_standard_p_holm_bound")] == ""  # no test against itself
