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
