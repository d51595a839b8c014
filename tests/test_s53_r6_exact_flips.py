"""An exact tolerance's flips (s53 r6, review of c48c47f; /work/scratch/s53/r6/probe.py, probe.old.txt / probe.new.txt).

c48c47f made an ``abs`` of 0 allow no changed question whatever its ``flips`` (check.allowed_flips), and made
``--write`` write ``flips: 0`` there. Two things went wrong with that:

* A derived 0 written into the file outlived the ``abs`` it came from: the README's way to tolerate one question is
  to edit ``tolerances.<metric>.abs``; with ``answer_recall`` edited from 0 to 0.125 (1 of 8), one changed question
  gave ``OK ... answer_recall = 0.7500 (baseline 0.8750, |Δ| 0.1250 <= 0.1250 ...)`` and then ``FAIL ...
  answer_recall: 1 of 8 questions differs from the baseline (> 0 allowed)``, rc 1 (before c48c47f: rc 0).
  ``--write`` now writes no ``flips`` for an exact tolerance: none is allowed while ``abs`` is 0, the default once
  it is edited up.
* ``--write`` over a baseline whose own ``flips: 1`` sits on an ``abs`` of 0 (``baselines/ci.json``'s retrieval
  tolerances) printed ``(flips): answer_recall 1, em 1``, although check allows 0 there. The tolerance line now
  gives the flips check allows, and says when the file's differs.

And c48c47f's machine NOTE said ``a FAIL above may come from the machine`` whenever any cell FAILed and any cell's
machine differed from its baseline's, also when the FAILing cell ran on exactly its baseline's machine
(/work/scratch/s53/r6/probe3.py, probe3.old.txt / probe3.fix.txt). It now says so only when a FAILing cell is one
whose machine differs (or is not recorded in the baseline).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import leaderboards.check as C

TASK = "my_qa"
CID = "rag-standard/my_qa/seed1"
SPEC = SimpleNamespace(name="mine", whole=None, selection=None, path="mine.yaml", runs_dir=None)


def synthetic(recalled: range) -> dict:
    """One cell of 8 questions: answer_recall 1 on ``recalled``, em 0 everywhere."""
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None, method=SimpleNamespace(name="rag-standard"))
    samples = [{"doc_id": i, "metrics": ["answer_recall", "em"], "answer_recall": float(i in recalled), "em": 0.0}
               for i in range(8)]
    return {CID: (cell, "key", {"samples": {TASK: samples}, "results": {"results": {TASK: {}}}})}


def test_an_exact_tolerance_edited_up_allows_the_default_flip(monkeypatch, tmp_path):
    state = {"loaded": synthetic(range(7))}
    monkeypatch.setattr(C, "collect", lambda *a, **k: state["loaded"])
    base = tmp_path / "b.json"
    written = C.write_baseline(SPEC, tmp_path, base)
    b = json.loads(base.read_text())
    assert b["tolerances"]["answer_recall"] == {"abs": 0.0, "unit": "fraction of questions"}  # c48c47f: flips 0
    assert b["tolerances"]["em"]["flips"] == 1
    assert "(flips): answer_recall 0, em 1;" in C.tolerance_line(written)
    state["loaded"] = synthetic(range(6))  # question 6 no longer recalls its answer
    lines = [x.render() for x in C.check_against_baseline(SPEC, tmp_path, base)]
    assert lines[1] == (f"FAIL {CID}  answer_recall: 1 of 8 questions differs from the baseline (> 0 allowed, as its "
                        "tolerance is exact: abs 0): 1 from 1 to 0 (doc_id 6)")  # exact: still no flip allowed
    b["tolerances"]["answer_recall"]["abs"] = 0.125  # the README's way to tolerate one question of 8
    base.write_text(json.dumps(b))
    lines = C.check_against_baseline(SPEC, tmp_path, base)
    assert [x.render() for x in lines][:2] == [
        f"OK   {CID}  answer_recall = 0.7500 (baseline 0.8750, |Δ| 0.1250 <= 0.1250 fraction of questions)",
        f"OK   {CID}  answer_recall: 1 of 8 questions differs from the baseline (<= 1 allowed): 1 from 1 to 0 "
        "(doc_id 6)"]  # c48c47f: FAIL ... (> 0 allowed), rc 1
    assert C.summary_line(lines) == "3 checks: 3 OK, 0 FAIL"


def test_the_tolerance_line_gives_the_flips_check_allows(monkeypatch, tmp_path):
    monkeypatch.setattr(C, "collect", lambda *a, **k: synthetic(range(7)))
    base = tmp_path / "b.json"
    C.write_baseline(SPEC, tmp_path, base)
    b = json.loads(base.read_text())
    b["tolerances"]["answer_recall"]["flips"] = 1  # as baselines/ci.json has it (written before c48c47f)
    base.write_text(json.dumps(b))
    written = C.write_baseline(SPEC, tmp_path, base)  # --write keeps the file's tolerance
    assert json.loads(base.read_text())["tolerances"]["answer_recall"] == {
        "abs": 0.0, "flips": 1, "unit": "fraction of questions"}
    assert ("(flips): answer_recall 0 (its flips 1 does not apply while abs is 0), em 1;"
            in C.tolerance_line(written))  # c48c47f: 'answer_recall 1, em 1'


MACHINE = {"torch_num_threads": 1, "cpu_model": "AMD EPYC 7B13", "cpu_capability": "AVX2", "cuda_device": None}


def two_cells(a: list[int], b: list[int]) -> dict:
    """Cells a and b of 8 questions (em 1 on the doc ids given), each recording MACHINE in its provenance."""
    out = {}
    for method, right in (("a", a), ("b", b)):
        cid = f"{method}/{TASK}/seed1"
        cell = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None, method=SimpleNamespace(name=method))
        samples = [{"doc_id": i, "metrics": ["em"], "em": float(i in right)} for i in range(8)]
        out[cid] = (cell, f"k{method}", {"samples": {TASK: samples}, "results": {"results": {TASK: {}}},
                                         "config": {"config_hash": f"k{method}", "cell_id": cid, "spec": "mine"},
                                         "provenance": {"machine": MACHINE, "versions": {"torch": "2.13.0+cpu"}}})
    return out


def test_the_machine_is_named_as_a_cause_only_for_a_cell_whose_machine_differs(monkeypatch, tmp_path):
    state = {"loaded": two_cells([0, 1, 2], [0, 1])}
    monkeypatch.setattr(C, "collect", lambda *a, **k: state["loaded"])
    base = tmp_path / "b.json"
    C.write_baseline(SPEC, tmp_path, base)
    b = json.loads(base.read_text())
    b["machines"]["b/my_qa/seed1"]["torch_num_threads"] = 2  # b's baseline written at 2 threads, a's as the runs
    base.write_text(json.dumps(b))
    head = ("NOTE machine: 1 of the 2 cells compared ran on another machine than the baseline was written from (first: "
            "b/my_qa/seed1): these runs on cpu AMD EPYC 7B13 (AVX2), 1 thread, torch 2.13.0+cpu, the baseline on cpu "
            "AMD EPYC 7B13 (AVX2), 2 threads, torch 2.13.0+cpu; float32 results, and so a near-tie greedy answer, can "
            "differ between CPU kinds (AVX2, AVX-512), thread counts and torch builds, so ")
    tail = ("check on the baseline's CPU kind and thread count, or write the baseline on this machine with check --write "
            "(the verdict is not changed by this)")
    state["loaded"] = two_cells([3, 4, 5], [0, 1])  # a, on its baseline's machine, changes 6 answers
    lines = C.check_against_baseline(SPEC, tmp_path, base)
    assert [x.render() for x in lines if not x.ok] == [
        "FAIL a/my_qa/seed1  em: 6 of 8 questions differ from the baseline (> 1 allowed): 3 from 1 to 0 (doc_id 0, 1, "
        "2), 3 from 0 to 1 (doc_id 3, 4, 5)"]
    assert lines[-1].render() == head + tail  # c48c47f: '... so a FAIL above may come from the machine ...'
    state["loaded"] = two_cells([0, 1, 2], [3, 4, 5])  # b, on another machine than its baseline's, changes 5
    lines = C.check_against_baseline(SPEC, tmp_path, base)
    assert [x.cell for x in lines if not x.ok] == ["b/my_qa/seed1"]
    assert lines[-1].render() == (head + "a FAIL above may come from the machine rather than from a change of code or "
                                  "data; " + tail)
