"""``check`` compared each cell's mean with the baseline only: in a greedy (deterministic) cell of 20 questions, 4
answers going right -> wrong and 4 wrong -> right left every mean as it was and every line said OK (s51 a2 M4,
/work/scratch/s51/a2/check_synthetic.py). A baseline now records each cell's per-question values (``questions``,
written by ``check --write``) and ``check`` counts the questions that score otherwise, failing above
``tolerances.<metric>.flips`` (default 1). A baseline without them is still checked by its means, with one NOTE line.

The cells are synthetic result files (``collect`` stubbed): no model, no run folder."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import leaderboards.check as C
from retrieval.errors import ConfigError

CID, TASK = "rag-standard/nq_oracle_bm25/seed1234", "nq_oracle_bm25"
SPEC = SimpleNamespace(name="ci", whole=None, selection=None, path="leaderboards/specs/ci.yaml", runs_dir=None)
CELL = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None, method=SimpleNamespace(name="rag-standard"))
RIGHT = [0, 1, 2, 3]  # the baseline's right answers: answer_match 4 of 20 = 0.20


def loaded(right, f1_extra=0.0):
    """One finished cell of 20 questions: answer_match 1 on ``right``; em 0 everywhere; f1 0.5 on ``right`` (plus
    ``f1_extra``), 0 elsewhere."""
    samples = [{"doc_id": i, "metrics": ["answer_match", "em", "f1"], "answer_match": float(i in right), "em": 0.0,
                "f1": 0.5 + f1_extra if i in right else 0.0} for i in range(20)]
    return {CID: (CELL, "key", {"samples": {TASK: samples}, "results": {"results": {TASK: {}}}})}


@pytest.fixture
def runs(monkeypatch, tmp_path):
    """``use(cells)`` makes ``collect`` return these cells; the baseline is written from RIGHT's."""
    state = {}
    monkeypatch.setattr(C, "collect", lambda *a, **k: state["loaded"])

    def use(cells):
        state["loaded"] = cells

    use(loaded(RIGHT))
    base = tmp_path / "ci.json"
    written = C.write_baseline(SPEC, tmp_path, base)
    return use, base, written


def rendered(base, tmp_path):
    lines = C.check_against_baseline(SPEC, tmp_path, base)
    return [x.render() for x in lines], C.summary_line(lines), all(x.ok for x in lines)


MEAN_LINES = [
    f"OK   {CID}  answer_match = 0.2000 (baseline 0.2000, |Δ| 0.0000 <= 0.0500 fraction of questions)",
    f"OK   {CID}  em = 0.0000 (baseline 0.0000, |Δ| 0.0000 <= 0.0500 fraction of questions)",
    f"OK   {CID}  f1 = 0.1000 (baseline 0.1000, |Δ| 0.0000 <= 0.0500 mean token F1 (0-1))",
]


def test_write_records_the_questions_each_cell_scored(runs):
    _use, base, written = runs
    b = json.loads(base.read_text())
    assert b["cells"] == {CID: {"answer_match": 0.2, "em": 0.0, "f1": 0.1}}  # the means, as before
    assert b["questions"] == {CID: {"answer_match": [0, 1, 2, 3], "em": [],
                                    "f1": {**{str(i): 0.0 for i in range(20)}, **{str(i): 0.5 for i in RIGHT}}}}
    assert {m: t["flips"] for m, t in b["tolerances"].items()} == {"answer_match": 1, "em": 1, "f1": 1}
    assert "flips): answer_match 1, em 1, f1 1;" in C.tolerance_line(written)


def test_eight_answers_changed_both_ways_fail_although_the_mean_is_the_same(runs, tmp_path):
    use, base, _ = runs
    use(loaded([4, 5, 6, 7]))  # 0-3 right -> wrong, 4-7 wrong -> right: every mean unchanged
    lines, summary, ok = rendered(base, tmp_path)
    assert not ok
    assert lines == [
        MEAN_LINES[0],
        f"FAIL {CID}  answer_match: 8 of 20 questions differ from the baseline (> 1 allowed): 4 from 1 to 0 "
        "(doc_id 0, 1, 2, 3), 4 from 0 to 1 (doc_id 4, 5, 6, 7)",
        MEAN_LINES[1],
        MEAN_LINES[2],
        f"FAIL {CID}  f1: 8 of 20 questions differ from the baseline (> 1 allowed): 4 lower (doc_id 0, 1, 2, 3), "
        "4 higher (doc_id 4, 5, 6, 7)",
    ]
    assert summary == "5 checks: 3 OK, 2 FAIL"


def test_one_changed_answer_passes_and_is_named(runs, tmp_path):
    use, base, _ = runs
    use(loaded([1, 2, 3]))  # doc 0 right -> wrong: 0.20 -> 0.15 (the default abs 0.04 is written as 1/20 = 0.05)
    lines, summary, ok = rendered(base, tmp_path)
    assert ok and summary == "5 checks: 5 OK, 0 FAIL"  # the mean line FAILed at 0.04 before s52 f6
    assert f"OK   {CID}  answer_match: 1 of 20 questions differs from the baseline (<= 1 allowed): 1 from 1 to 0 (doc_id 0)" in lines
    assert f"OK   {CID}  f1: 1 of 20 questions differs from the baseline (<= 1 allowed): 1 lower (doc_id 0)" in lines
    # the same change under the file's abs 0.05 (1 of 20, as leaderboards/baselines/ci.json): everything passes
    b = json.loads(base.read_text())
    for t in b["tolerances"].values():
        t["abs"] = 0.05
    base.write_text(json.dumps(b))
    lines, summary, ok = rendered(base, tmp_path)
    assert ok and summary == "5 checks: 5 OK, 0 FAIL"


def test_identical_runs_and_float_noise_add_no_line(runs, tmp_path):
    use, base, _ = runs
    for extra in (0.0, 4e-8):  # below the 6 decimals a baseline stores (another CPU's float sums)
        use(loaded(RIGHT, f1_extra=extra))
        lines, summary, ok = rendered(base, tmp_path)
        assert ok and lines == MEAN_LINES and summary == "3 checks: 3 OK, 0 FAIL"


def test_the_file_sets_how_many_questions_may_differ(runs, tmp_path):
    use, base, _ = runs
    use(loaded([4, 5, 6, 7]))
    b = json.loads(base.read_text())
    b["tolerances"]["answer_match"]["flips"] = 8
    b["tolerances"]["f1"]["flips"] = 7
    base.write_text(json.dumps(b))
    lines, summary, _ok = rendered(base, tmp_path)
    assert [x.split(":")[0] for x in lines if ": 8 of 20" in x] == [f"OK   {CID}  answer_match", f"FAIL {CID}  f1"]
    assert summary == "5 checks: 4 OK, 1 FAIL"
    for bad, kind in ((-1, "the number -1"), (1.5, "the number 1.5"), (True, "true")):
        b["tolerances"]["f1"]["flips"] = bad
        base.write_text(json.dumps(b))
        with pytest.raises(ConfigError) as exc:
            C.load_baseline(base)
        assert str(exc.value) == (f"baseline {base}: tolerances.f1.flips must be a whole number of questions >= 0 (how "
                                  f"many may score otherwise than in the baseline), got {kind}; {C.BASELINE_FIX}")


def test_a_baseline_without_per_question_values_checks_the_means_and_says_so(runs, tmp_path):
    use, base, _ = runs
    b = json.loads(base.read_text())
    del b["questions"]
    for t in b["tolerances"].values():
        del t["flips"]
    base.write_text(json.dumps(b))
    use(loaded([4, 5, 6, 7]))
    lines, summary, ok = rendered(base, tmp_path)
    assert ok and summary == "3 checks: 3 OK, 0 FAIL"  # the old verdict: the means alone
    assert lines == [*MEAN_LINES,
                     f"NOTE baseline {base} has no per-question values: only the means were compared, not which "
                     "questions changed (answers that changed both ways leave the mean as it was); add them with check "
                     "--write from runs you accept (it rewrites the means from them too)"]
    # --write over it adds them (keeping the file's tolerances, adding flips)
    use(loaded(RIGHT))
    C.write_baseline(SPEC, tmp_path, base)
    assert json.loads(base.read_text())["questions"][CID]["answer_match"] == [0, 1, 2, 3]
    use(loaded([4, 5, 6, 7]))
    assert not rendered(base, tmp_path)[2]


def test_malformed_per_question_values_are_refused_in_one_line(runs):
    _use, base, _ = runs
    b = json.loads(base.read_text())
    for q, want in (([0, 0], "questions.%s.answer_match must list distinct doc ids (numbers or text), got a doc id twice"),
                    ([0.5], "questions.%s.answer_match must list distinct doc ids (numbers or text), got the number 0.5 in it"),
                    ({"0": "x"}, "questions.%s.answer_match.0 must be a number, got the text \"x\""),
                    (3, "questions.%s.answer_match must be the list of doc ids that scored 1 or a mapping {doc id: number}, "
                        "got the number 3")):
        b["questions"][CID]["answer_match"] = q
        base.write_text(json.dumps(b))
        with pytest.raises(ConfigError) as exc:
            C.load_baseline(base)
        assert str(exc.value) == f"baseline {base}: {want % CID}; {C.BASELINE_FIX}"


def test_the_committed_ci_baseline_has_per_question_values_that_match_its_means():
    """Every cell and metric of leaderboards/baselines/ci.json has per-question values, and their mean is the
    cell's committed mean (20 questions each)."""
    b = C.load_baseline(Path(__file__).resolve().parents[1] / "leaderboards" / "baselines" / "ci.json")
    assert set(b["questions"]) == set(b["cells"])
    for cid, vals in b["cells"].items():
        n = b["n"][cid]
        assert set(b["questions"][cid]) == set(vals), cid
        for m, mean in vals.items():
            q = b["questions"][cid][m]
            total = len(q) if isinstance(q, list) else sum(q.values())
            assert total / n == pytest.approx(mean, abs=1e-6), (cid, m)
        assert all(t.get("flips") == 1 for t in b["tolerances"].values())
