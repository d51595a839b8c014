"""``tokrag leaderboard check`` no longer passes silently (s60 j1, s59 b3's leftovers 1 and 4):

* A tolerance deleted from the baseline file, with the metric's values (a value without one is refused), left that
  metric unchecked without a word: ``3 checks: 3 OK, 0 FAIL``, exit 0, em never compared. Now one ``NOTE`` line names
  it (and how to check it again); the exit code and the counts are unchanged.
* A cell that passes under another run key than the run the baseline was written from (the baseline's
  ``configs.<cell>.config_hash``) said nothing: the run-key ``NOTE`` came only after a FAIL. Now one ``NOTE run key:``
  line names the first such cell's differences; the exit code and the counts are unchanged.

The toy spec (tests/leaderboard_fixtures, the toy LM: seconds)."""

from __future__ import annotations

import json
import shutil

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.check as C
from leaderboards.cli import main as lb_main
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

CID = "standard/toy_qa/seed1"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy spec (toy_qa, 5 questions, ``standard`` without a mode) run once, its baseline written; then the same
    cell with ``mode: first`` given (the default: the same answers, another run key) run into a second runs folder.
    ``(spec_default, runs, baseline, spec_explicit, runs_both)``."""
    root = tmp_path_factory.mktemp("s60j1")
    default = load_spec(write_spec(root / "a", tasks=["toy_qa"], limit=5, methods=[{"name": "standard", "model": TOY}]))
    run_spec(default, root / "runs", progress=False)
    base = root / "base.json"
    assert lb_main(["check", str(default.path), "--baseline", str(base), "--runs-dir", str(root / "runs"), "--write"]) == 0
    shutil.copytree(root / "runs", root / "runs_both")
    explicit = load_spec(write_spec(root / "e", tasks=["toy_qa"], limit=5,
                                    methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]))
    run_spec(explicit, root / "runs_both", progress=False)
    return default, root / "runs", base, explicit, root / "runs_both"


def _check(spec, runs, base, capsys):
    capsys.readouterr()
    rc = lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)])
    return rc, capsys.readouterr().out.strip().splitlines()


def test_the_same_runs_against_their_baseline_print_no_note(toy, capsys):
    default, runs, base, _explicit, _both = toy
    rc, out = _check(default, runs, base, capsys)
    assert rc == 0 and out[-1] == "4 checks: 4 OK, 0 FAIL"
    assert [x for x in out if x.startswith("NOTE")] == []


def test_a_deleted_tolerance_is_named_not_silently_unchecked(toy, tmp_path, capsys):
    default, runs, base, _explicit, _both = toy
    b = json.loads(base.read_text(encoding="utf-8"))
    del b["tolerances"]["em"]  # and its values, which check refuses without a tolerance
    del b["cells"][CID]["em"]
    del b["questions"][CID]["em"]
    edited = tmp_path / "no_em.json"
    edited.write_text(json.dumps(b), encoding="utf-8")
    rc, out = _check(default, runs, edited, capsys)
    assert rc == 0 and out[-1] == "3 checks: 3 OK, 0 FAIL"  # was: the same, and no other line about em
    assert not any(" em = " in x for x in out)
    notes = [x for x in out if x.startswith("NOTE")]
    assert notes == [f"NOTE metric of the runs with no tolerance in baseline {edited}, so not checked: em (in the one "
                     "cell compared); check --write records em again with its default tolerance"]


def test_a_metric_no_default_names_names_the_tolerance_to_add():
    note = C.MetricsWithoutTolerance("b.json", {"my_acc": 2, "em": 3}, 3)
    assert note.render() == (
        "NOTE metrics of the runs with no tolerance in baseline b.json, so not checked: em (in 3 of the 3 cells "
        "compared), my_acc (in 2 of the 3 cells compared); check --write records em again with its default tolerance; "
        "to check my_acc, add a tolerance to b.json (e.g. \"tolerances\": {\"my_acc\": {\"abs\": 0.04}, ...}, the "
        "largest change of its mean to accept, in its unit) and run check --write")
    assert note.ok and C.summary_line([note]) == "0 checks: 0 OK, 0 FAIL"  # not a check


def test_a_pass_under_another_run_key_is_noted(toy, capsys):
    _default, _runs, base, explicit, both = toy
    rc, out = _check(explicit, both, base, capsys)
    assert rc == 0 and out[-1] == "4 checks: 4 OK, 0 FAIL"  # the same answers: every value within tolerance
    notes = [x for x in out if x.startswith("NOTE")]
    assert len(notes) == 1  # was: none
    b = json.loads(base.read_text(encoding="utf-8"))
    was = b["configs"][CID]["config_hash"]
    now = next(p.name for p in both.iterdir() if p.is_dir() and p.name != was and (p / "config.json").is_file())
    assert notes[0] == (
        f"NOTE run key: the one cell compared passed under another run key than the run the baseline was written from "
        f"({now} against {was}: its config differs in model_args[mode] (absent: default first) -> first (a setting of "
        "the spec)): its values are within tolerance but are not the baseline's run, so this check compared other "
        "inputs (or another tokrag or library version); if that change is intended, record these runs with check "
        "--write (the verdict is not changed by this)")


def test_a_fail_under_another_run_key_keeps_its_own_note(toy, tmp_path, capsys):
    """A FAIL cell's run-key NOTE stays the one after its lines; the pass note does not repeat it."""
    _default, _runs, base, explicit, both = toy
    b = json.loads(base.read_text(encoding="utf-8"))
    b["cells"][CID]["f1"] += 0.5
    edited = tmp_path / "moved.json"
    edited.write_text(json.dumps(b), encoding="utf-8")
    rc, out = _check(explicit, both, edited, capsys)
    assert rc == 1
    notes = [x for x in out if x.startswith("NOTE")]
    assert len(notes) == 1 and notes[0].startswith(f"NOTE {CID}  its runs have another run key (")
    assert notes[0].endswith("this change may be the cause of the FAIL above")
