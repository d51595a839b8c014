"""An exact p equal to 2/(iters+1) is not read as the Monte Carlo floor (s59 s1, statistics audit).

The report marks a p at the permutation test's Monte Carlo floor 2/(iters+1) as an upper bound (``p≤``, and Holm's
``holm≤`` / ``p_holm_bound``). It told the floor by the value alone, so with ``bootstrap.iters`` one less than a power
of two an exact p of the same value was marked too: at iters 127 the floor is 2/128, which is exactly the McNemar p of
7 discordant questions all one way (2/2^7), and the exact sign-flip p of 7 differing F1 values all one way. Those read
``p≤0.016 ... holm≤0.016`` though nothing bounds them. Now only a Monte Carlo p at the floor is a bound; an exact one
at that value carries ``"p_exact": true`` in the JSON (absent elsewhere) and prints as any other p.

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs. Values are hand-computable.
"""

from __future__ import annotations

import csv
import io

from leaderboards.report import _cell_paired, compute, render_csv
from tests.s51_f4_synthetic import synthetic

ITERS = 127  # floor 2/(127 + 1) = 2/2^7


def _data(tmp_path, values):
    return compute(*synthetic(tmp_path, values, extra={"bootstrap": {"iters": ITERS, "seed": 7}}), timings=False)


def _pair(data, method="none", metric="em"):
    return next(r for r in data["rows"] if r["method"] == method)["paired"]["standard"][metric]


def test_mcnemar_p_equal_to_the_floor_is_exact(tmp_path):
    data = _data(tmp_path, {"standard": {"em": [1] * 7 + [0] * 3}, "none": {"em": [0] * 10}})
    p = _pair(data)
    assert (p["n_plus"], p["n_minus"], p["p"], p["p_holm"], p["family"]) == (0, 7, 2 / 2 ** 7, 2 / 2 ** 7, 1)
    assert "p_holm_bound" not in p and p["p_exact"] is True  # was p_holm_bound: True
    assert _cell_paired(p, ITERS).endswith(" p=0.016 (0+/7−) holm=0.016")  # was p≤0.016 (0+/7−) holm≤0.016
    line = {r["method"]: r for r in csv.DictReader(io.StringIO(render_csv(data)))}["none"]
    assert line["delta_em_vs_standard_p_holm_bound"] == "false"  # was "true"


def test_exact_sign_flip_p_equal_to_the_floor_is_exact(tmp_path):
    # 7 F1 differences of 7 sizes, all one way: exact over the 2^7 sign patterns, p = 2/2^7
    f1 = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.0, 0.0, 0.0]
    data = _data(tmp_path, {"standard": {"f1": f1}, "none": {"f1": [0.0] * 10}})
    p = _pair(data, metric="f1")
    assert p["p"] == 2 / 2 ** 7 and p["p_holm"] == 2 / 2 ** 7
    assert "p_holm_bound" not in p and p["p_exact"] is True
    assert _cell_paired(p, ITERS).endswith(" p=0.016 holm=0.016")  # was p≤0.016 holm≤0.016


def test_a_monte_carlo_p_at_the_floor_stays_a_bound(tmp_path):
    # 20 F1 differences of 20 sizes, all one way: more than 16, so Monte Carlo over 127 sign patterns, none as extreme
    f1 = [round(0.01 * (i + 1), 2) for i in range(20)]
    data = _data(tmp_path, {"standard": {"f1": f1}, "none": {"f1": [0.0] * 20}})
    p = _pair(data, metric="f1")
    assert p["p"] == 2 / (ITERS + 1) and p["p_holm_bound"] is True and "p_exact" not in p
    assert _cell_paired(p, ITERS).endswith(" p≤0.016 holm≤0.016")


def test_other_ps_carry_no_new_key(tmp_path):
    data = _data(tmp_path, {"standard": {"em": [1] * 6 + [0] * 4}, "none": {"em": [0] * 10}})
    p = _pair(data)
    assert p["p"] == 2 / 2 ** 6 and "p_exact" not in p and "p_holm_bound" not in p
