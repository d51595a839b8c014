"""Bootstrap seeds of a leaderboard report follow the runs, not the spec's labels (leaderboards/report.py)."""

from __future__ import annotations

import pytest
import yaml

from leaderboards.keys import cell_keys
from leaderboards.report import collect, compute, mde_lines
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import run_toy_spec


@pytest.fixture(scope="module")
def two_specs(tmp_path_factory):
    """The toy spec, run once, and the same spec with its one base model listed under ``models:`` as ``toymodel``:
    the same cells (same config hashes), labelled differently (cell ids ``toymodel/...``)."""
    root = tmp_path_factory.mktemp("seeds")
    spec, runs = run_toy_spec(root)
    raw = yaml.safe_load((root / "toy.yaml").read_text(encoding="utf-8"))
    raw.update(name="toy-labelled", models=[{"name": "toymodel"}])
    (root / "toy-labelled.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return spec, load_spec(root / "toy-labelled.yaml"), runs


def test_the_same_runs_get_the_same_cis_in_two_reports(two_specs):
    """The seed came from the spec's model and method labels: the same runs in a spec that names its model gave other
    CIs (as reference-cells and nq-wiki-12k-v2 did for their shared rag-standard cells). It comes from the runs'
    config hashes, the task and the metric now."""
    a, b, runs = two_specs
    assert sorted(k for _, k, _ in cell_keys(a)) == sorted(k for _, k, _ in cell_keys(b))
    da, db = compute(a, collect(a, runs), timings=False), compute(b, collect(b, runs), timings=False)
    assert db["rows"][0]["model"] == "toymodel" and da["rows"][0]["model"] is None
    rows_a = {(r["method"], r["task"]): r for r in da["rows"]}
    rows_b = {(r["method"], r["task"]): r for r in db["rows"]}
    assert set(rows_a) == set(rows_b) and len(rows_a) == 4
    widths = set()
    for k, ra in rows_a.items():
        assert ra["metrics"] == rows_b[k]["metrics"]
        assert ra.get("paired") == rows_b[k].get("paired")
        widths |= {round(v["hi"] - v["lo"], 6) for v in ra["metrics"].values() if v["lo"] is not None}
    assert widths - {0.0}  # real intervals were compared, not only degenerate ones
    assert any(r.get("paired") for r in rows_a.values())


def test_mde_line_says_one_comparison(two_specs):
    """"over 1 comparisons": the toy spec's one pair per task reads "of the 1 comparison" now."""
    a, _b, runs = two_specs
    lines = mde_lines(compute(a, collect(a, runs), timings=False), None)
    # at n = 12 each line ends with the exact test's caveat (8030c53); the count is before it
    assert lines and all(", of the 1 comparison); a normal approximation" in line for line in lines), lines
