"""leaderboard.json never holds p = 0 (s55 f4; f2/r2's leftover of 3adc3a7 / aa6e7c3).

A p that underflowed to 0.0 (more than 1074 discordant questions all one way: 2/2^m is below the smallest double) was
written to the JSON as 0.0, a certainty no test gives, while the CSV writes the upper bound ``1e-300`` with
``_p_holm_bound`` true. The JSON now writes the smallest positive double, 5e-324, with ``"p_bound": true``, and the
Holm value of 0.0 as ``family`` x 5e-324 with ``"p_holm_bound": true``: upper bounds that keep the order of the
representable p's, which are written exactly as before (a subnormal 2/2^1070 included; no new key there).

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs.
"""

from __future__ import annotations

import csv
import io
import json
import math

from leaderboards.report import build_report, compute, render_csv
from tests.s51_f4_synthetic import synthetic

N = 1100


def _cells(tmp_path):
    # none: 1100 discordant questions all one way (p underflows to 0.0); other: 1070 (p = 2/2^1070, subnormal)
    return synthetic(tmp_path, {"standard": {"em": [1] * N}, "none": {"em": [0] * N},
                                "other": {"em": [1] * 30 + [0] * (N - 30)}})


def test_the_json_writes_an_underflowed_p_as_a_flagged_bound_and_every_other_p_exactly(tmp_path):
    from leaderboards.report import json_report  # new in s55 f4

    data = compute(*_cells(tmp_path), timings=False)
    csv_before = render_csv(data)
    written = json.loads(json.dumps(json_report(data)))  # as atomic_write_json writes it and a reader reads it
    paired = {r["method"]: r["paired"]["standard"]["em"] for r in written["rows"] if r["method"] != "standard"}
    computed = {r["method"]: r["paired"]["standard"]["em"] for r in data["rows"] if r["method"] != "standard"}
    assert (computed["none"]["p"], computed["none"]["p_holm"]) == (0.0, 0.0)  # data itself unchanged
    none = paired["none"]
    fam = none["family"]
    assert (none["n_minus"], fam) == (N, computed["other"]["family"]) and fam >= 2
    assert (none["p"], none["p_bound"]) == (5e-324, True)  # was 0.0 and no flag
    assert (none["p_holm"], none["p_holm_bound"]) == (fam * 5e-324, True)  # was 0.0
    assert none["p"] > 0 and none["p_holm"] > 0
    other = paired["other"]
    assert other == computed["other"] and other["p"] == 2.0 * 2.0 ** -1070  # exact, subnormal, unflagged
    assert "p_bound" not in other and "p_holm_bound" not in other
    # the order of the evidence is kept: 1100 one way < 1070 one way
    assert none["p"] < other["p"] and none["p_holm"] < other["p_holm"]
    assert {k: v for k, v in written.items() if k != "rows"} == json.loads(json.dumps(
        {k: v for k, v in data.items() if k != "rows"}))
    assert render_csv(data) == csv_before  # the CSV reads data, unchanged
    line = {r["method"]: r for r in csv.DictReader(io.StringIO(csv_before))}
    assert (line["none"]["delta_em_vs_standard_p"], line["none"]["delta_em_vs_standard_p_holm_bound"]) == ("1e-300", "true")


def test_the_report_folders_json_has_no_zero_p(tmp_path):
    spec, loaded = _cells(tmp_path)
    out = tmp_path / "rep"
    build_report(spec, tmp_path / "runs", out, timings=False, questions=False, loaded=loaded)
    data = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    ps = [(r["method"], e["p"], e["p_holm"], e.get("p_bound"), e.get("p_holm_bound"))
          for r in data["rows"] for by in (r.get("paired") or {}).values() for e in by.values()]
    assert ps and all(p > 0 and h > 0 for _m, p, h, _b, _hb in ps)
    fam = next(e["family"] for r in data["rows"] for by in (r.get("paired") or {}).values() for e in by.values())
    assert ("none", math.ulp(0.0), fam * math.ulp(0.0), True, True) in ps
    assert [m for m, *_rest, b, _hb in ps if b] == ["none"]
