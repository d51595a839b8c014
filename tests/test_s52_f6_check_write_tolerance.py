"""``check --write`` wrote the default tolerances (answer_match abs 0.04) with ``flips: 1``; at n < 25 one flipped
answer moves a fraction-of-questions metric by 1/n > 0.04, so the mean line FAILed on exactly the flip the per-question
line allows (s52 u1 P9, n = 8). Now a default abs of an [0, 1] metric is raised to flips/n of the smallest cell; a
tolerance of the existing file is kept as it is. The cells are synthetic (``collect`` stubbed), as in
test_s51_f5_check_flips.py."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import leaderboards.check as C

TASK = "my_qa"
METRICS = ("answer_match", "answer_recall", "em", "f1", "gold_at_k")
RETRIEVAL = ("answer_recall", "gold_at_k")  # the same passages whatever the answers: 1 on every question
SPEC = SimpleNamespace(name="mine", whole=None, selection=None, path="mine.yaml", runs_dir=None)


def loaded(cells: dict[str, list[int]], n: int = 8, metrics: list[str] | None = None) -> dict:
    """Cells of ``n`` questions: every answer metric 1 on the listed doc ids, else 0; the retrieval metrics 1.
    ``metrics``: the metrics each sample logs (default :data:`METRICS`)."""
    metrics = list(metrics or METRICS)
    out = {}
    for cid, right in cells.items():
        cell = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None,
                               method=SimpleNamespace(name=cid.split("/")[0]))
        samples = [{"doc_id": i, "metrics": metrics, **{m: float(i in right or m in RETRIEVAL) for m in metrics}} for i in range(n)]
        out[cid] = (cell, "key", {"samples": {TASK: samples}, "results": {"results": {TASK: {}}}})
    return out


def test_write_raises_the_default_abs_to_one_flip_and_the_flip_passes(monkeypatch, tmp_path):
    state = {"loaded": loaded({"tokrag/my_qa/seed1": [0, 1, 2], "rag-none/my_qa/seed1": [0]})}
    monkeypatch.setattr(C, "collect", lambda *a, **k: state["loaded"])
    base = tmp_path / "baseline.json"
    written = C.write_baseline(SPEC, tmp_path, base)
    tol = json.loads(base.read_text())["tolerances"]
    assert {m: (t["abs"], t.get("flips")) for m, t in tol.items()} == {
        "answer_match": (0.125, 1), "answer_recall": (0.0, None), "em": (0.125, 1), "f1": (0.125, 1), "gold_at_k": (0.0, None)}  # was 0.04
    # (retrieval: no flips, as its mean is exact and no question may differ; s53 f6/r6, test_s53_r6_exact_flips)
    # retrieval stays exact (s52 lead): a flipped answer does not move it, a changed passage must fail
    line = C.tolerance_line(written)
    assert ("answer_match abs 0.125 (the default 0.04 raised to flips/n = 1/8, so that the 1 flipped question allowed "
            "per cell pass the mean check too)") in line
    assert "gold_at_k abs 0 (default" in line and "gold_at_k abs 0.125" not in line
    state["loaded"] = loaded({"tokrag/my_qa/seed1": [0, 1], "rag-none/my_qa/seed1": [0]})  # one answer flips
    lines = C.check_against_baseline(SPEC, tmp_path, base)
    assert all(x.ok for x in lines), [x.render() for x in lines if not x.ok]  # the mean line FAILed (0.125 > 0.04)
    state["loaded"] = loaded({"tokrag/my_qa/seed1": [0], "rag-none/my_qa/seed1": [0]})  # two flip: still FAIL
    bad = [x.render() for x in C.check_against_baseline(SPEC, tmp_path, base) if not x.ok]
    assert any("answer_match = 0.1250 (baseline 0.3750" in x for x in bad), bad


def test_a_larger_default_and_the_files_own_tolerances_are_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=50))
    base = tmp_path / "baseline.json"
    written = C.write_baseline(SPEC, tmp_path, base)  # n = 50: 1/50 = 0.02 < 0.04, the default stays
    tol = json.loads(base.read_text())["tolerances"]
    assert (tol["answer_match"]["abs"], tol["gold_at_k"]["abs"]) == (0.04, 0.0) and written["_raised"] == {}
    b = json.loads(base.read_text())
    b["tolerances"]["gold_at_k"]["abs"] = 0.0  # the user's own: never changed
    base.write_text(json.dumps(b))
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=8))
    written = C.write_baseline(SPEC, tmp_path, base)
    assert json.loads(base.read_text())["tolerances"]["gold_at_k"]["abs"] == 0.0 and written["_raised"] == {}
    assert "gold_at_k abs 0 (from the file)" in C.tolerance_line(written)


def test_the_committed_ci_baseline_is_written_as_it_is(monkeypatch, tmp_path):
    """--write over leaderboards/baselines/ci.json (n = 20, abs 0.05 and retrieval abs 0 of its own) from its own
    values changes no tolerance."""
    ci = Path(__file__).resolve().parents[1] / "leaderboards" / "baselines" / "ci.json"
    b = C.load_baseline(ci)
    base = tmp_path / "ci.json"
    shutil.copy(ci, base)
    spec = SimpleNamespace(name=b.get("spec", "ci"), whole=None, selection=None, path="ci.yaml", runs_dir=None)
    # the runs log the metrics the file holds (since s59 b3 also empty_pred / overlong_pred)
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({c: [0] for c in b["cells"]}, n=20, metrics=sorted(b["tolerances"])))
    written = C.write_baseline(spec, tmp_path, base)
    assert json.loads(base.read_text())["tolerances"] == b["tolerances"] and written["_raised"] == {}


def test_a_raised_tolerance_comes_down_when_the_spec_grows_and_a_hand_edit_stays(monkeypatch, tmp_path):
    """s52 r7: a tolerance --write raised (0.125 at n = 8) was saved like the file's own, so a later --write after the
    spec grew to 50 questions kept it, and the mean check stayed at one question in 8. The raise records the default it
    raised (``raised_from``); while its abs is still flips/n of the file's n, it is derived again."""
    base = tmp_path / "baseline.json"
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=8))
    C.write_baseline(SPEC, tmp_path, base)
    tol = json.loads(base.read_text())["tolerances"]
    assert tol["answer_match"] == {"abs": 0.125, "flips": 1, "unit": "fraction of questions", "raised_from": 0.04}
    assert "raised_from" not in tol["gold_at_k"]  # retrieval is exact: never raised
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=20))
    written = C.write_baseline(SPEC, tmp_path, base)  # 20 questions: 1/20, raised from the default again
    assert json.loads(base.read_text())["tolerances"]["answer_match"]["abs"] == 0.05 and written["_raised"]["answer_match"] == 0.04
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=50))
    written = C.write_baseline(SPEC, tmp_path, base)  # 50 questions: the default 0.04 is enough, written as the default
    tol = json.loads(base.read_text())["tolerances"]
    assert tol["answer_match"] == {"abs": 0.04, "flips": 1, "unit": "fraction of questions"}
    assert "answer_match abs 0.04 (default)" in C.tolerance_line(written)
    # a raised abs edited by hand (raised_from left in place) is the user's: kept
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=8))
    base.unlink()
    C.write_baseline(SPEC, tmp_path, base)
    b = json.loads(base.read_text())
    b["tolerances"]["answer_match"]["abs"] = 0.2
    base.write_text(json.dumps(b))
    monkeypatch.setattr(C, "collect", lambda *a, **k: loaded({"tokrag/my_qa/seed1": [0, 1]}, n=50))
    written = C.write_baseline(SPEC, tmp_path, base)
    assert json.loads(base.read_text())["tolerances"]["answer_match"]["abs"] == 0.2
    assert "answer_match abs 0.2 (from the file)" in C.tolerance_line(written)
    # the check reads the new key; a bad value of it is one line
    assert C.load_baseline(base)["tolerances"]["answer_match"]["raised_from"] == 0.04
    b = json.loads(base.read_text())
    b["tolerances"]["answer_match"]["raised_from"] = "0.04"
    base.write_text(json.dumps(b))
    import pytest
    from retrieval.errors import ConfigError
    with pytest.raises(ConfigError, match=r"tolerances\.answer_match\.raised_from must be a finite number >= 0"):
        C.load_baseline(base)
