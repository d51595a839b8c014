"""How the report prints p-values and Holm values, and how check prints a metric without a unit.

* an exact p under 0.001 reads ``p<0.001`` as the table header says (0.000977 = 2/2^11 printed ``p=0.001``: the
  cut-off was 0.0005);
* a Holm value raised by another pair's p at the Monte Carlo floor is an upper bound: ``holm≤`` (it printed ``holm=``);
* ``check``: a metric without a unit has no stray space before the closing parenthesis.
"""

from __future__ import annotations

import pytest

from leaderboards.check import CheckLine
from leaderboards.report import _cell_paired
from leaderboards.stats import holm, monte_carlo_p_floor

FLOOR = monte_carlo_p_floor(2000)  # 2/2001
CELL = {"diff": 0.2, "lo": 0.1, "hi": 0.3}


def test_an_exact_p_under_0_001_reads_p_below_0_001():
    p = 2 / 2**11  # 11 of 11 discordant questions one way: binomtest p = 0.000977
    assert f"{p:.3f}" == "0.001"
    assert _cell_paired(dict(CELL, p=p, p_holm=p), 2000) == "+0.200 [+0.100, +0.300] p<0.001 holm<0.001"
    assert _cell_paired(dict(CELL, p=0.001, p_holm=0.00099), 2000) == "+0.200 [+0.100, +0.300] p=0.001 holm<0.001"
    assert _cell_paired(dict(CELL, p=0.0015, p_holm=0.003), 2000) == "+0.200 [+0.100, +0.300] p=0.002 holm=0.003"


def test_a_holm_value_raised_by_another_pairs_floor_p_is_an_upper_bound():
    from leaderboards.report import holm_with_bounds

    # family of two: pair A at the floor (p <= 0.0009995), pair B exact p = 0.0015. Holm: A first, 2 * floor = 0.0019990;
    # B: max(0.0019990, 1 * 0.0015) = 0.0019990, raised by A's floor: with A's true p lower, B's Holm is 0.0015
    res = holm_with_bounds([FLOOR, 0.0015], FLOOR)
    assert [round(v, 7) for v, _ in res] == [round(2 * FLOOR, 7), round(2 * FLOOR, 7)] == [0.001999, 0.001999]
    assert [b for _, b in res] == [True, True]
    # B's own p dominates: exact, not a bound (A's value stays one)
    res = holm_with_bounds([FLOOR, 0.3], FLOOR)
    assert res[1] == (0.3, False) and res[0][1] is True
    # no floor p in the family: nothing is a bound, values are stats.holm's
    ps = [0.01, 0.04, 0.03]
    assert holm_with_bounds(ps, FLOOR) == [(v, False) for v in holm(ps)]
    cell = dict(CELL, p=0.0015, p_holm=2 * FLOOR, p_holm_bound=True)
    assert _cell_paired(cell, 2000) == "+0.200 [+0.100, +0.300] p=0.002 holm≤0.002"
    # a bound is rounded up (0.0014 is at most 0.002, not at most 0.001), and never printed as "<"
    cell = dict(CELL, p=0.0002, p_holm=0.0004, p_holm_bound=True)
    assert _cell_paired(cell, 2000) == "+0.200 [+0.100, +0.300] p<0.001 holm≤0.001"
    assert _cell_paired(dict(cell, p_holm=0.0014), 2000) == "+0.200 [+0.100, +0.300] p<0.001 holm≤0.002"
    # the floor itself and its multiples print as before: 19 * 2/2001 = 0.018991
    assert _cell_paired(dict(CELL, p=FLOOR, p_holm=19 * FLOOR), 2000) == "+0.200 [+0.100, +0.300] p≤0.001 holm≤0.019"


def test_the_paired_table_header_says_what_holm_bound_means():
    import inspect

    from leaderboards import report

    src = inspect.getsource(report.tables)
    assert "holm≤ = an upper bound raised" in src and "p<0.001 = an exact p below 0.001" in src


@pytest.mark.parametrize("value, expected", [
    (None, "FAIL c  rouge: missing from the runs (baseline 0.5000)"),
    (0.52, "OK   c  rouge = 0.5200 (baseline 0.5000, |Δ| 0.0200 <= 0.0400)"),
])
def test_check_line_without_a_unit_has_no_stray_space(value, expected):
    line = CheckLine("c", "rouge", value, 0.5, 0.04, "", value is not None)
    assert line.render() == expected
    with_unit = CheckLine("c", "rouge", value, 0.5, 0.04, "fraction", value is not None).render()
    assert with_unit == expected[:-1] + " fraction)"


def test_the_readme_says_how_p_and_holm_bounds_read():
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[1] / "leaderboards" / "README.md").read_text().split())
    assert "so does a Holm value that such a p raised, its own or another pair's of the family (`holm≤`" in text
    assert "any other p or Holm value under 0.001 reads `p<0.001` (`holm<0.001`)" in text
