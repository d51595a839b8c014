"""s52 f2 (s51 r8 left it): a baseline whose ``questions`` use the list form (the doc ids that scored 1) and that has
no ``n`` for the cell (a hand-edited file: --write always records n) said "from 0 to 1" for questions the baseline
never scored: written from 4 questions, checked against runs of 20, the runs' right answers 4 and 5 read as flips.
The list cannot tell 0 from not scored without n; the line now says so. Baselines --write produces print as before
(tests/test_s51_f5_check_flips.py).

The cells are synthetic result files (``collect`` stubbed): no model, no run folder."""

import json

import pytest

import leaderboards.check as C
from tests.test_s51_f5_check_flips import CELL, CID, SPEC, TASK

WHY = "; the baseline has no n for this cell, so its list of the doc ids that scored 1 cannot tell 0 from not scored"


def cell(n, right, graded=()):
    samples = [{"doc_id": i, "metrics": ["answer_match", "f1"], "answer_match": float(i in right),
                "f1": 0.5 if i in graded else float(i in right)} for i in range(n)]
    return {CID: (CELL, "key", {"samples": {TASK: samples}, "results": {"results": {TASK: {}}}})}


@pytest.fixture
def baseline(monkeypatch, tmp_path):
    """A baseline --write wrote from 4 questions (answer_match and f1 right on 0 and 1: both lists), then ``n``
    removed by hand; ``use(cells)`` sets the runs."""
    state = {"loaded": cell(4, [0, 1])}
    monkeypatch.setattr(C, "collect", lambda *a, **k: state["loaded"])
    path = tmp_path / "b.json"
    C.write_baseline(SPEC, tmp_path, path)
    b = json.loads(path.read_text())
    assert b["questions"] == {CID: {"answer_match": [0, 1], "f1": [0, 1]}} and b["n"] == {CID: 4}
    del b["n"]
    path.write_text(json.dumps(b))
    return lambda cells: state.update(loaded=cells), path


def flip_lines(path, tmp_path):
    return [x.render() for x in C.check_against_baseline(SPEC, tmp_path, path) if isinstance(x, C.QuestionFlips)]


def test_questions_the_baseline_never_scored_are_not_called_flips_from_0(baseline, tmp_path):
    use, path = baseline
    use(cell(20, [0, 1, 4, 5]))
    assert flip_lines(path, tmp_path) == [
        f"FAIL {CID}  answer_match: 2 of 20 questions differ from the baseline (> 1 allowed): 2 from 0 or not scored "
        f"to 1 (doc_id 4, 5){WHY}",
        f"FAIL {CID}  f1: 2 of 20 questions differ from the baseline (> 1 allowed): 2 from 0 or not scored to 1 "
        f"(doc_id 4, 5){WHY}"]


def test_a_listed_question_that_went_to_0_is_still_a_flip_from_1(baseline, tmp_path):
    use, path = baseline
    use(cell(20, [1, 4], graded=[7]))  # doc 0: 1 -> 0 (the list says 1); 4: 0 or unscored -> 1; f1 of 7: 0.5
    assert flip_lines(path, tmp_path) == [
        f"FAIL {CID}  answer_match: 2 of 20 questions differ from the baseline (> 1 allowed): 1 from 1 to 0 (doc_id 0), "
        f"1 from 0 or not scored to 1 (doc_id 4){WHY}",
        f"FAIL {CID}  f1: 3 of 20 questions differ from the baseline (> 1 allowed): 1 lower (doc_id 0), 2 from 0 or not "
        f"scored to another value (doc_id 4, 7){WHY}"]


def test_with_n_as_write_records_it_the_line_is_unchanged(baseline, tmp_path):
    use, path = baseline
    b = json.loads(path.read_text())
    b["n"] = {CID: 4}
    path.write_text(json.dumps(b))
    use(cell(4, [1, 2]))
    assert flip_lines(path, tmp_path)[0] == (
        f"FAIL {CID}  answer_match: 2 of 4 questions differ from the baseline (> 1 allowed): 1 from 1 to 0 (doc_id 0), "
        "1 from 0 to 1 (doc_id 2)")
    # and the function alone, as check calls it for a cell with n
    f = C.question_flips(CID, "em", {"0": 0.0, "1": 1.0}, [0], 1)
    assert (f.down, f.up, f.unsure, f.changed) == (("0",), ("1",), (), 2)
