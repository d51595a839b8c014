"""The same runs give the same bootstrap CIs whatever order the spec lists its seeds in (s52 r6, review of ac4163a).

Since ac4163a a row's resamples are seeded by a hash of its per-question values, each the mean over the row's seeds;
that mean was np.mean over the seeds in the spec's order, and a float sum of three or more values depends on the
order (question 0 below: 0.30954444444444446 or 0.3095444444444444), so seeds [1, 2, 3] and [3, 2, 1] over the same
run folders drew other resamples: F1 [0.051, 0.215] and [0.054, 0.223], the paired CI [-0.223, -0.054] and
[-0.213, -0.054]. Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs.
"""

from __future__ import annotations

from leaderboards.report import compute
from tests.s51_f4_synthetic import synthetic

PER_SEED = {1: [1 / 3, 0.4286, 0, 0, 0.2, 0, 0, 0.2], 2: [0.4286, 0.1667, 0, 0.5, 0, 0, 0, 0.2],
            3: [0.1667, 0.3, 0, 0, 0, 0, 0.1, 0.2]}


def _stats(tmp_path, order: list[int]):
    spec, loaded = synthetic(tmp_path, {"standard": {"f1": PER_SEED[1]}, "none": {"f1": [0.0] * 8}},
                             extra={"seeds": order, "bootstrap": {"iters": 1000, "seed": 1234}})
    for cell, _key, data in loaded.values():
        if cell.method.name == "standard":
            for s, v in zip(data["samples"]["toy_qa"], PER_SEED[cell.seed]):
                s["f1"] = v
    rows = {r["method"]: r for r in compute(spec, loaded, timings=False)["rows"]}
    m, p = rows["standard"]["metrics"]["f1"], rows["none"]["paired"]["standard"]["f1"]
    return (m["mean"], m["lo"], m["hi"]), (p["diff"], p["lo"], p["hi"], p["p"])


def test_the_order_of_the_specs_seeds_does_not_move_the_intervals(tmp_path):
    row, paired = _stats(tmp_path / "a", [1, 2, 3])
    assert (round(row[1], 3), round(row[2], 3)) == (0.051, 0.215)
    assert (round(paired[1], 3), round(paired[2], 3), paired[3]) == (-0.223, -0.054, 0.03125)
    assert _stats(tmp_path / "b", [3, 2, 1]) == (row, paired)
    assert _stats(tmp_path / "c", [2, 3, 1]) == (row, paired)
