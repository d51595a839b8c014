"""A records line whose token records the analysis cannot score (edited by hand, or another model's records file renamed
to this key) is scored again, with one WARNING naming the file, the sample and what is wrong (s60 b2, breaker): before,
``tokrag analyze`` / ``tokrag calibrate`` reused it and ended, after every sample was collected, in a traceback
(``IndexError: list index out of range`` for an ``sr`` of 2 layers on a 4-layer model; a string ``tr`` went through
as a token id). Fake 4-layer model (``tests/analyze_fakes.py``), no weights."""

from __future__ import annotations

import json
import logging

import pytest


@pytest.fixture
def fake(monkeypatch):
    """The fake model and data of ``tests/analyze_fakes.py``: 6 samples per data set, one strict token each (even
    samples benefit, odd ones detriment) with S_R at each of 4 layers, gaps and analysis scores."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    def record(i, sid):
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    monkeypatch.setattr(analyze, "check_data_paths", lambda args: None)  # the fake's data needs no data folder
    return install_fake(monkeypatch, record, device="cpu")


EDITS = [
    ("sr", lambda r: r["sr"][:2], "sr holds 2 values, not one per layer of this 4-layer model"),
    ("tr", lambda r: "x", "tr is 'x', not a token position or id (an integer)"),
    ("gap", lambda r: r["gap"] + [None], "gap holds 5 values, not one per layer of this 4-layer model"),
    ("sl", lambda r: None, "sr is given without sl"),
    ("lr", lambda r: "-1.0", "lr is '-1.0', not a log-probability (a number)"),
]


def _edit(path, line_no: int, key: str, change) -> None:
    lines = path.read_text().splitlines()
    obj = json.loads(lines[line_no])
    obj["records"][0][key] = change(obj["records"][0])
    lines[line_no] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")


def _aucs(out) -> dict:
    res = json.loads((out / "results.json").read_text())["results"]["wiki"]["policies"]
    return {name: (v["strict"]["auc"], v["strict"]["ci_low"], v["strict"]["ci_high"]) for name, v in res.items()}


@pytest.mark.parametrize("key,change,why", EDITS, ids=[e[0] for e in EDITS])
def test_analyze_rescores_an_edited_line_and_gives_the_unedited_numbers(fake, tmp_path, caplog, key, change, why
                                                                        ) -> None:
    from tasks import analyze

    args = ["--data", "wiki", "--n", "4", "--bootstrap", "50"]
    assert analyze.main(args + ["--out", str(tmp_path / "clean")]) == 0
    expected = _aucs(tmp_path / "clean")
    assert expected["default"][0] == pytest.approx(0.25)  # layer 2: S_R grows with the sample index, labels alternate

    out = tmp_path / "edited"
    assert analyze.main(args + ["--out", str(out)]) == 0
    records = next(out.glob("records_wiki_test_*.jsonl"))
    _edit(records, 1, key, change)
    fake.scored.clear()
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        assert analyze.main(args + ["--out", str(out)]) == 0  # was a traceback (IndexError / TypeError) after collecting
    assert fake.scored == ["wiki:q1"]  # the edited sample only, scored again
    warned = [r.getMessage() for r in caplog.records if "cannot score" in r.getMessage()]
    assert warned == [f"{records}: the line of sample wiki:q1 holds a record the analysis cannot score ({why}; edited "
                      "by hand?); it is scored again and the new line appended (the later line is read)"]
    assert _aucs(out) == expected
    # the appended line is the one read from now on: a third run reuses every sample, without a WARNING
    fake.scored.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        assert analyze.main(args + ["--out", str(out)]) == 0
    assert fake.scored == [] and not [r for r in caplog.records if "cannot score" in r.getMessage()]
    assert _aucs(out) == expected


def test_calibrate_rescores_an_edited_line(fake, tmp_path) -> None:
    """The same for ``tokrag calibrate`` (its dev records, the same reader): the preset equals an unedited run's."""
    from tasks import calibrate

    args = ["--data", "wiki", "--n", "6", "--bootstrap", "0", "--policy", "fixed"]
    assert calibrate.main(args + ["--out", str(tmp_path / "clean")]) == 0
    clean = json.loads((tmp_path / "clean" / "tokrag_preset.json").read_text())
    out = tmp_path / "edited"
    assert calibrate.main(args + ["--out", str(out)]) == 0
    _edit(next(out.glob("records_wiki_dev_*.jsonl")), 2, "sr", lambda r: r["sr"][:3])
    fake.scored.clear()
    assert calibrate.main(args + ["--out", str(out)]) == 0  # was IndexError in strict_auc
    assert fake.scored == ["wiki:q2"]
    edited = json.loads((out / "tokrag_preset.json").read_text())
    assert edited["params"] == clean["params"]
    assert edited["calibration"]["dev_auc_by_layer"] == clean["calibration"]["dev_auc_by_layer"]


def test_record_shape_error_accepts_what_the_scorer_writes() -> None:
    """Guard: the records the scorer writes (a differing token with every score, an agreeing token without scores,
    ``an`` None, ``bl`` within the model) are accepted; a JSON round trip keeps them so."""
    from tasks.analyze import TokenRecord, record_shape_error

    scored = TokenRecord("wiki:q0", 3, 7, -1.5, -2.0, 7, 9, -1.5, -0.2, False, 0.4, [0.1, 0.2, 0.3],
                         [None, 1e-6, 2e-6], None, [0])
    agree = TokenRecord("wiki:q0", 4, 5, -0.1, -0.2, 5, 5, -0.1, -0.2, True)
    for rec in (scored, agree):
        assert record_shape_error(TokenRecord.from_json(rec.sample, json.loads(json.dumps(rec.to_json()))), 3) is None
    assert record_shape_error(scored, 4) == "sr holds 3 values, not one per layer of this 4-layer model"
    assert record_shape_error(TokenRecord("s", 0, 1, -1.0, -2.0, 1, 2, -0.5, -0.6, False, 0.1, [0.1, 0.2, 0.3],
                                          None, None, [3]), 3) == "bl is [3], not a list of this 3-layer model's layers"
