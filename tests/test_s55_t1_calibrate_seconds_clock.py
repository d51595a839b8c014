"""``calibration.seconds`` / analyze's ``seconds`` (every used sample's scoring time, over invocations) and
``wall_seconds`` (this invocation) on a virtual clock (s55 t1). test_calibrate_resume_report compared real wall time
with the fake's 0.15 s sleeps (``res["wall_seconds"] < 0.45``; ``cal["wall_seconds"] < cal["seconds"]``, i.e. the
second invocation's overhead under 0.45 s), which a loaded machine can exceed though every number is right. Here
``tasks.analyze``, ``tasks.calibrate`` and the fake model read one clock that only the fake's scoring advances
(DELAY virtual seconds a sample), so each figure has one exact value."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

DELAY = 0.2  # virtual seconds to score one sample


@pytest.fixture
def fake(monkeypatch):
    """The fake 4-layer TokRAGLM of tests/analyze_fakes.py (6 samples per data set), every ``time`` it and the two
    modules read replaced by a clock that only its scoring (``time.sleep``) advances."""
    from tasks import analyze, calibrate

    import tests.analyze_fakes
    from tests.analyze_fakes import install_fake

    def record(i, sid):
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    clock = {"now": 0.0}

    def sleep(seconds):
        clock["now"] += seconds

    virtual = SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    virtual.time = virtual.perf_counter = virtual.monotonic = lambda: clock["now"]
    virtual.sleep = sleep
    for module in (analyze, calibrate, tests.analyze_fakes):
        monkeypatch.setattr(module, "time", virtual)
    state = install_fake(monkeypatch, record, device="cpu")
    state.delay = DELAY
    return state


def test_seconds_sum_every_used_sample_and_wall_seconds_is_this_invocation(fake, tmp_path) -> None:
    from tasks import analyze, calibrate

    out = tmp_path / "out"
    argv = ["--data", "wiki", "--split", "dev", "--out", str(out), "--bootstrap", "5"]
    assert calibrate.main(argv + ["--n", "3"]) == 0
    first = json.loads((out / "tokrag_preset.json").read_text())["calibration"]
    assert (first["seconds"], first["wall_seconds"]) == (0.6, 0.6)  # 3 samples scored
    assert calibrate.main(argv + ["--n", "6"]) == 0  # 3 reused, 3 scored
    assert fake.scored == ["wiki:q0", "wiki:q1", "wiki:q2", "wiki:q3", "wiki:q4", "wiki:q5"]
    records = next(out.glob("records_wiki_dev_*.jsonl"))
    lines = [json.loads(x) for x in records.read_text(encoding="utf-8").splitlines()]
    assert sorted({x["seconds"] for x in lines}) == [DELAY]  # each line: its sample's scoring time
    cal = json.loads((out / "tokrag_preset.json").read_text())["calibration"]
    assert (cal["seconds"], cal["seconds_known"], cal["samples_untimed"]) == (1.2, 1.2, 0)  # all 6, both invocations
    assert cal["wall_seconds"] == 0.6  # this invocation: the 3 it scored
    assert analyze.main(argv + ["--n", "6"]) == 0  # every sample reused: nothing scored
    assert len(fake.scored) == 6
    res = json.loads((out / "results.json").read_text())
    assert (res["seconds"], res["wall_seconds"], res["configs"]["wiki"]["reused"]) == (1.2, 0.0, 6)
