"""``tokrag leaderboard check`` (s53 u2 F2, F3, F6; /work/scratch/s53/f6/repro.py, repro.old.txt / repro.new.txt):

* F6: for an exact metric (``answer_recall``, ``gold_at_k``: abs 0) ``--write`` wrote ``flips: 1``, so one changed
  question gave ``OK ... (<= 1 allowed)`` right under the mean line's ``FAIL`` for that same question. An abs of 0 now
  allows no changed question (``--write`` writes ``flips: 0``; a file's own ``flips: 1``, as ci.json's, reads as 0).
* F3: a FAIL after a spec change (a method's argument) did not name it once the cell had run (before, the missing
  cell's line did). ``--write`` records each cell's run config (``configs``) and the FAIL cell gets a NOTE naming the
  settings its run key changed.
* F2: a baseline recorded no machine, and ``check`` never said under what the runs or the baseline were computed.
  ``--write`` records each cell's compute setting (``machines``: CPU model, torch's CPU kernels, threads, torch) and
  ``check`` prints one NOTE where the runs' differ (on a FAIL: that it may be the cause), or where the baseline
  records none; the verdict is unchanged.

The F3/F2 tests run the toy spec (tests/leaderboard_fixtures, the toy LM: seconds)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.check as C
from leaderboards.cli import main as lb_main
from leaderboards.provenance_view import setting_label
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

CID = "standard/toy_qa/seed1"


# --------------------------------------------------------------------------- F6: an exact metric allows no flip

TASK = "my_qa"
SCID = "rag-standard/my_qa/seed1"
SPEC = SimpleNamespace(name="mine", whole=None, selection=None, path="mine.yaml", runs_dir=None)


def synthetic(recalled: range) -> dict:
    """One cell of 8 questions: answer_recall 1 on ``recalled``, em 0 everywhere."""
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None, method=SimpleNamespace(name="rag-standard"))
    samples = [{"doc_id": i, "metrics": ["answer_recall", "em"], "answer_recall": float(i in recalled), "em": 0.0}
               for i in range(8)]
    return {SCID: (cell, "key", {"samples": {TASK: samples}, "results": {"results": {TASK: {}}}})}


def test_an_exact_metric_allows_no_changed_question(monkeypatch, tmp_path):
    state = {"loaded": synthetic(range(7))}
    monkeypatch.setattr(C, "collect", lambda *a, **k: state["loaded"])
    base = tmp_path / "b.json"
    written = C.write_baseline(SPEC, tmp_path, base)
    tol = json.loads(base.read_text())["tolerances"]
    assert tol["answer_recall"] == {"abs": 0.0, "unit": "fraction of questions"}  # was flips 1 (none: abs 0, s53 r6)
    assert tol["em"]["flips"] == 1
    assert "(flips): answer_recall 0, em 1;" in C.tolerance_line(written)
    state["loaded"] = synthetic(range(6))  # question 6 no longer recalls its answer
    mean = (f"FAIL {SCID}  answer_recall = 0.7500 (baseline 0.8750, |Δ| 0.1250 > 0.0000 fraction of questions)")
    flip = (f"FAIL {SCID}  answer_recall: 1 of 8 questions differs from the baseline (> 0 allowed, as its tolerance is "
            "exact: abs 0): 1 from 1 to 0 (doc_id 6)")  # was 'OK ... (<= 1 allowed)' under the mean's FAIL
    lines = C.check_against_baseline(SPEC, tmp_path, base)
    assert [x.render() for x in lines][:2] == [mean, flip]
    assert C.summary_line(lines) == "3 checks: 1 OK, 2 FAIL"
    # a file's own flips 1 with abs 0 (leaderboards/baselines/ci.json's retrieval tolerances) reads as 0
    b = json.loads(base.read_text())
    b["tolerances"]["answer_recall"]["flips"] = 1
    base.write_text(json.dumps(b))
    assert [x.render() for x in C.check_against_baseline(SPEC, tmp_path, base)][:2] == [mean, flip]
    ci = C.load_baseline(Path(__file__).resolve().parents[1] / "leaderboards" / "baselines" / "ci.json")
    assert {m: (t["abs"], t["flips"], C.allowed_flips(t)) for m, t in ci["tolerances"].items()
            if m in ("answer_recall", "gold_at_k", "em")} == {
        "answer_recall": (0.0, 1, 0), "gold_at_k": (0.0, 1, 0), "em": (0.05, 1, 1)}
    # a graded metric's exact tolerance: the line says so; two changes that leave the mean fail too
    state["loaded"] = synthetic(range(1, 8))
    assert [x.render() for x in C.check_against_baseline(SPEC, tmp_path, base)][:2] == [
        f"OK   {SCID}  answer_recall = 0.8750 (baseline 0.8750, |Δ| 0.0000 <= 0.0000 fraction of questions)",
        f"FAIL {SCID}  answer_recall: 2 of 8 questions differ from the baseline (> 0 allowed, as its tolerance is "
        "exact: abs 0): 1 from 1 to 0 (doc_id 0), 1 from 0 to 1 (doc_id 7)"]


# --------------------------------------------------------------------------- F2, F3: toy run folders

@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy spec (``standard``, mode ``first``, on toy_qa, 12 questions) run once, then with mode ``none``
    (another run key) into a second runs folder: ``(root, spec_first, runs_first, spec_none, runs_both)``."""
    root = tmp_path_factory.mktemp("f6")
    first = load_spec(write_spec(root / "first", tasks=["toy_qa"],
                                 methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]))
    run_spec(first, root / "runs", progress=False)
    shutil.copytree(root / "runs", root / "runs_both")
    none = load_spec(write_spec(root / "none", tasks=["toy_qa"],
                                methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "none"}}]))
    run_spec(none, root / "runs_both", progress=False)
    return root, first, root / "runs", none, root / "runs_both"


def _check(spec, runs, base, capsys, *extra):
    capsys.readouterr()
    rc = lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs), *extra])
    return rc, capsys.readouterr().out.strip().splitlines()


def test_write_records_the_machine_and_check_says_when_the_runs_ran_on_another(toy, tmp_path, capsys):
    _root, spec, runs, _none, _both = toy
    base = tmp_path / "ci.json"
    assert _check(spec, runs, base, capsys, "--write")[0] == 0
    b = json.loads(base.read_text())
    folder = next(p for p in runs.iterdir() if (p / "DONE").is_file())
    prov = json.loads((folder / "provenance.json").read_text())
    m = prov["machine"]
    assert b["machines"] == {CID: {"device": "cpu", "cpu_model": m["cpu_model"], "cpu_capability": m["cpu_capability"],
                                   "torch_num_threads": m["torch_num_threads"], "cuda_device": None,
                                   "torch": prov["versions"]["torch"]}}
    assert isinstance(m["torch_num_threads"], int) and m["cpu_capability"]
    here = setting_label(b["machines"][CID])
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 0 and not [x for x in out if x.startswith("NOTE")] and out[-1] == "4 checks: 4 OK, 0 FAIL"
    # the baseline written on another CPU kind at another thread count: one NOTE, the verdict unchanged
    other = {**b["machines"][CID], "cpu_capability": "AVX512" if m["cpu_capability"] != "AVX512" else "AVX2",
             "torch_num_threads": m["torch_num_threads"] + 1}
    base.write_text(json.dumps({**b, "machines": {CID: other}}))
    rc, out = _check(spec, runs, base, capsys)
    why = ("float32 results, and so a near-tie greedy answer, can differ between CPU kinds (AVX2, AVX-512), thread "
           "counts and torch builds, so ")
    note = (f"NOTE machine: the one cell compared ran on another machine than the baseline was written from ("
            f"{CID}): these runs on {here}, the baseline on {setting_label(other)}; {why}")
    tail = ("check on the baseline's CPU kind and thread count, or write the baseline on this machine with check --write "
            "(the verdict is not changed by this)")
    assert rc == 0 and out[-2:] == [note + tail, "4 checks: 4 OK, 0 FAIL"]
    assert f"threads, torch {prov['versions']['torch']}" in note
    # with a FAIL: the machine is named as a possible cause, the FAIL stays
    cells = {CID: {**b["cells"][CID], "em": 0.5}}
    base.write_text(json.dumps({**b, "machines": {CID: other}, "cells": cells}))
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 1 and out[-4] == (note + "a FAIL above may come from the machine rather than from a change of code or "
                                   "data; " + tail) and out[-3] == "4 checks: 3 OK, 1 FAIL"
    # a baseline written before --write recorded the machine (ci.json): says so, and what the runs ran on
    old = {k: v for k, v in b.items() if k not in ("machines", "configs")}
    base.write_text(json.dumps(old))
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 0 and out[-2:] == [
        f"NOTE baseline machine not recorded (written before check --write recorded it): these runs were computed on "
        f"{here}; {why}write the baseline on the CPU kind and thread count that check runs on with check --write (it "
        "records them; the verdict is not changed by this)", "4 checks: 4 OK, 0 FAIL"]
    # a baseline whose machine differs only in a field the other side did not record: the same (nothing said)
    unknown = {**b["machines"][CID], "cpu_model": None, "torch": None}
    base.write_text(json.dumps({**b, "machines": {CID: unknown}}))
    rc, out = _check(spec, runs, base, capsys)
    assert rc == 0 and not [x for x in out if x.startswith("NOTE")]


def test_a_fail_after_a_spec_change_names_the_changed_setting(toy, tmp_path, capsys):
    _root, first, runs, none, both = toy
    base = tmp_path / "ci.json"
    assert _check(first, runs, base, capsys, "--write")[0] == 0
    b = json.loads(base.read_text())
    key_first = next(p.name for p in runs.iterdir() if (p / "DONE").is_file())
    assert b["configs"][CID]["config_hash"] == key_first and b["configs"][CID]["model_args"]["mode"] == "first"
    assert "cell_id" not in b["configs"][CID] and "spec" not in b["configs"][CID]
    key_none = next(p.name for p in both.iterdir() if (p / "DONE").is_file() and p.name != key_first)
    rc, out = _check(none, both, base, capsys)  # the spec with mode none, run: its cell exists under the new key
    assert rc == 1 and f"FAIL {CID}  em = 0.0000 (baseline 0.7500, |Δ| 0.7500 > 0.0833 fraction of questions)" in out
    notes = [x for x in out if x.startswith("NOTE")]
    assert notes == [f"NOTE {CID}  its runs have another run key ({key_none}) than the run the baseline was written "
                     f"from ({key_first}): its config differs in model_args[mode] first -> none (a setting of the "
                     "spec); this change may be the cause of the FAIL above"]
    assert out.index(notes[0]) == out.index(next(x for x in out if x.endswith("checks: 1 OK, 6 FAIL"))) - 1
    # the unchanged spec over the same runs folder: its own key, nothing named
    rc, out = _check(first, both, base, capsys)
    assert rc == 0 and not [x for x in out if x.startswith("NOTE")]
    # a baseline without configs (written before they were recorded): the FAIL as before, no NOTE about the key
    base.write_text(json.dumps({k: v for k, v in b.items() if k != "configs"}))
    rc, out = _check(none, both, base, capsys)
    assert rc == 1 and not [x for x in out if "run key" in x]


@pytest.mark.parametrize("key, value, want", [
    ("machines", [1], r"'machines' must be a mapping \{cell id: its compute setting .*\}, got a list; edit the file"),
    ("machines", {CID: "AVX2"}, rf"machines\.{CID} must be its compute setting .* \(a mapping\), got the text \"AVX2\""),
    ("configs", {CID: {"model_args": {}}}, rf"configs\.{CID}\.config_hash must be the run's key \(text\), got null"),
])
def test_a_malformed_machine_or_config_record_is_one_line(tmp_path, key, value, want):
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"spec": "toy", "tolerances": {"em": {"abs": 0.04}}, "cells": {CID: {"em": 0.75}},
                             key: value}))
    with pytest.raises(ConfigError, match=want):
        C.load_baseline(p)
