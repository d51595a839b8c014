"""``tokrag leaderboard check`` and ``run`` on a damaged or absent cell folder, and ``check --write``'s tolerances
(a new-user trial): a damaged folder is named as damaged with the command that re-runs it, the note about a run
with other inputs appears only where the cell's folder is absent and is worded as a possibility, a missing cell is
one FAIL line (one check), ``run`` warns before it redoes a damaged cell, and ``--write`` prints the tolerances it
used (fast: toy model, no real weights)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import pin_cell_keys, run_toy_spec, write_spec

import leaderboards.report
import leaderboards.runner
from leaderboards.check import check_against_baseline, summary_line, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.spec import load_spec

CELL = "standard/toy_qa/seed1"


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Each spec's run keys computed once per spec file (other work may edit the source the keys hash meanwhile)."""
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def two_limits(tmp_path_factory):
    """The toy spec run at limit 3 (an earlier experiment) and then at limit 4 into the same runs folder:
    ``(spec at limit 4, runs)``."""
    root = tmp_path_factory.mktemp("checkmsgs")
    from leaderboards.runner import run_spec

    run_spec(load_spec(write_spec(root / "old", tasks=["toy_qa"], limit=3)), root / "runs", progress=False)
    spec, runs = run_toy_spec(root, tasks=["toy_qa"], limit=4)
    return spec, runs


def _copy(two_limits, tmp_path: Path):
    spec, runs = two_limits
    shutil.copytree(runs, tmp_path / "runs")
    return spec, tmp_path / "runs"


def _key(spec, cid: str = CELL) -> str:
    return {c.cell_id: k for c, k, _ in leaderboards.runner.cell_keys(spec)}[cid]


def _damage(folder: Path) -> None:
    """Edit a value of results.json (as the trial did): DONE's checksum no longer matches."""
    p = folder / "results.json"
    p.write_text(p.read_text().replace('"limit": 4', '"limit": 44', 1) + " ")


def test_a_damaged_cell_is_one_fail_line_naming_the_damage_and_the_command(two_limits, tmp_path):
    """The trial got 'em: missing from the runs ... checksum mismatch ...; a run of this cell with other inputs exists
    (key ...): its config differs in limit 3 -> 4; re-run it (the spec's inputs changed since that run)', once per
    metric (5 FAIL lines for one cell), blaming an unrelated earlier experiment."""
    spec, runs = _copy(two_limits, tmp_path)
    base = tmp_path / "b.json"
    write_baseline(spec, runs, base)
    _damage(runs / _key(spec))
    lines = check_against_baseline(spec, runs, base)
    mine = [x for x in lines if x.cell == CELL]
    assert len(mine) == 1 and not mine[0].ok
    text = mine[0].render()
    assert text.startswith(f"FAIL {CELL}  damaged run folder {runs / _key(spec)}: ")
    assert "checksum mismatch with DONE" in text
    assert "other inputs" not in text and "missing from the runs" not in text
    assert text.endswith("are not compared; re-run the cell with tokrag leaderboard run "
                         f"{spec.path} --runs-dir {runs} --methods standard --tasks toy_qa"), text
    # one check for the cell, whatever the number of its baseline metrics
    n_metrics = len(json.loads(base.read_text())["cells"][CELL])
    assert n_metrics > 1
    other = sum(1 for x in lines if x.cell != CELL)
    assert summary_line(lines).startswith(f"{other + 1} checks: {other} OK, 1 FAIL")


def test_an_absent_cell_names_a_run_with_other_inputs_as_a_possibility(two_limits, tmp_path):
    """With the cell's folder absent, the other-inputs note stays, worded as a possibility, not as the cause."""
    spec, runs = _copy(two_limits, tmp_path)
    base = tmp_path / "b.json"
    write_baseline(spec, runs, base)
    old_key = _key(load_spec(two_limits[1].parent / "old" / "toy.yaml"))
    shutil.rmtree(runs / _key(spec))
    mine = [x for x in check_against_baseline(spec, runs, base) if x.cell == CELL]
    assert len(mine) == 1 and not mine[0].ok
    text = mine[0].render()
    assert text.startswith(f"FAIL {CELL}  missing from the runs: ")
    assert "not run yet (no run folder)" in text
    assert (f"a finished run of this cell with other inputs exists (key {old_key}): its config differs in limit 3 -> 4; "
            "if that is the run you expected here, the spec's inputs (or a file or code the run key hashes) changed since "
            "then; it may also be an unrelated earlier experiment") in text
    assert "the spec's inputs changed since that run" not in text
    assert text.endswith(f"run the cell with tokrag leaderboard run {spec.path} --runs-dir {runs} --methods standard "
                         "--tasks toy_qa"), text


def test_a_damaged_folder_reported_by_collect_does_not_blame_other_inputs(two_limits, tmp_path):
    """report/rescore/check share collect's reason: a damaged folder under the cell's key is the cause."""
    spec, runs = _copy(two_limits, tmp_path)
    _damage(runs / _key(spec))
    reasons: dict = {}
    leaderboards.report.collect(spec, runs, allow_missing=True, reasons=reasons)
    assert "checksum mismatch with DONE" in reasons[CELL] and "other inputs" not in reasons[CELL]
    # a folder without DONE (an interrupted attempt of this very key) is not blamed on other inputs either
    spec2, runs2 = _copy(two_limits, tmp_path / "b")
    (runs2 / _key(spec2) / "DONE").unlink()
    reasons = {}
    leaderboards.report.collect(spec2, runs2, allow_missing=True, reasons=reasons)
    assert "no DONE marker" in reasons[CELL] and "other inputs" not in reasons[CELL]
def test_run_warns_before_redoing_a_damaged_cell(two_limits, tmp_path, caplog):
    """run recomputed a finished cell whose checksum failed without a word (listed under 'ran', nothing on stderr)."""
    spec, runs = _copy(two_limits, tmp_path)
    folder = runs / _key(spec)
    _damage(folder)
    with caplog.at_level(logging.WARNING, logger="leaderboards"):
        summary = leaderboards.runner.run_spec(spec, runs, progress=False)
    warns = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and str(folder) in r.getMessage()]
    assert len(warns) == 1, [r.getMessage() for r in caplog.records]
    assert "checksum mismatch with DONE" in warns[0] and "is damaged" in warns[0] and "recomputed" in warns[0]
    assert CELL in summary.ran
    # a folder that simply has no DONE (killed) is resumed as before, without this warning
    caplog.clear()
    spec2, runs2 = _copy(two_limits, tmp_path / "b")
    (runs2 / _key(spec2) / "DONE").unlink()
    with caplog.at_level(logging.WARNING, logger="leaderboards"):
        leaderboards.runner.run_spec(spec2, runs2, progress=False)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING and "damaged" in r.getMessage()]


def test_write_prints_the_tolerance_used_per_metric(two_limits, tmp_path, capsys):
    """--write to a new baseline wrote the default tolerances (answer_match abs 0.04) without a word."""
    spec, runs = _copy(two_limits, tmp_path)
    base = tmp_path / "b.json"
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    out = capsys.readouterr().out
    tol = json.loads(base.read_text())["tolerances"]
    line = next(x for x in out.splitlines() if x.startswith("tolerances"))
    assert "answer_match abs 0.25 (the default 0.04 raised to flips/n = 1/4" in line  # n = 4: one question is 0.25
    assert "em abs 0.25 (the default 0.04 raised" in line
    assert all(f"{m} abs {t['abs']:g}" in line for m, t in tol.items())
    assert "leaderboards/README.md" in line and "do not scale with n" in line
    assert "one question of the smallest cell (n = 4) moves a fraction-of-questions metric by 0.25" in line
    # an edited tolerance is kept by the next --write and said to be the file's
    b = json.loads(base.read_text())
    b["tolerances"]["answer_match"]["abs"] = 0.2
    base.write_text(json.dumps(b))
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("tolerances"))
    assert "answer_match abs 0.2 (from the file)" in line
    assert json.loads(base.read_text())["tolerances"]["answer_match"]["abs"] == 0.2


def test_the_ci_spec_comment_names_the_tasks_real_stop_sequences():
    """ci.yaml said 'max_gen_toks: 16  # greedy ..., stop at newline' while its tasks stop at until=['\\n\\n',
    'Question:'] (a blank line): the comment is read against the task template's generation_kwargs."""
    import re

    import yaml

    repo = Path(__file__).resolve().parents[1]
    template = (repo / "tasks" / "qa" / "_qa_template").read_text(encoding="utf-8")
    until = yaml.safe_load(re.search(r"^  until: (.*)$", template, re.M).group(1))
    assert until == ["\n\n", "Question:"]
    spec = (repo / "leaderboards" / "specs" / "ci.yaml").read_text(encoding="utf-8")
    start = spec.index("max_gen_toks: 16")
    comment = spec[start:spec.index("limit:", start)]
    assert "stop at newline" not in comment
    assert "blank line" in comment and '"Question:"' in comment and '["\\n\\n", "Question:"]' in comment
    assert yaml.safe_load(spec)["shared"]["gen_kwargs"] == {"max_gen_toks": 16}


def test_the_readme_states_resume_granularity_and_what_the_cost_ratio_counts(tmp_path):
    """The README said 'a killed run loses at most the chunk in progress' without saying that a chunk is
    progress_chunk (default 8) x batch_size requests (a 5-question cell at batch 4 is one chunk: a kill keeps
    nothing), and did not say what 'forward passes per generated token' counts (a trial saw 77 over 69)."""
    repo = Path(__file__).resolve().parents[1]
    readme = " ".join((repo / "leaderboards" / "README.md").read_text(encoding="utf-8").split())
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4))
    assert spec.progress_chunk == 8  # the default the README names
    assert "A chunk is `progress_chunk` (default 8) × `batch_size` requests" in readme
    assert "keeps **nothing**" in readme and "`progress_chunk: 1`" in readme
    assert "What `forward passes / generated token` counts" in readme
    assert "a request that has stopped keeps its rows in the batch" in readme
    assert "counted 77 passes (4 × 16 for the batch of 4, 13 for the last question alone) over 69" in readme
