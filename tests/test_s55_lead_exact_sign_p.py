"""The paired test's exact binomial p where scipy's binomtest returns 0.0 for a p a double holds (s55, f4's finding):
``scipy.stats.binomtest(38, 1075, 0.5)`` gives 0.0 though the true two-sided p is 7.9e-254, so the CSV's ``1e-300``
and the JSON's ``p_bound`` (upper bounds for a p that underflowed) were written for a p far above them."""
import math

import numpy as np
import pytest

from leaderboards.stats import exact_sign_p, paired_test


def _sign_p(k: int, m: int) -> float:
    """The same p by the textbook sum, in exact rationals (math.comb), for the comparison."""
    j = min(k, m - k)
    if 2 * j == m:
        return 1.0
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(j + 1)) / 2 ** m)


@pytest.mark.parametrize("k,m,want", [(0, 3, 0.25), (1, 3, 1.0), (0, 10, 2 / 1024), (2, 10, 2 * 56 / 1024),
                                      (5, 10, 1.0), (0, 1075, 2.0 ** -1074), (0, 1076, 0.0)])
def test_exact_sign_p_hand_values(k: int, m: int, want: float) -> None:
    assert exact_sign_p(k, m) == want
    assert exact_sign_p(m - k, m) == want  # two-sided: symmetric in the direction


def test_paired_test_where_binomtest_returns_zero() -> None:
    # 38 questions one way, 1037 the other, 25 equal: the 0/1 metric's exact binomial test on 1075 discordant ones
    diff = np.array([1.0] * 38 + [-1.0] * 1037 + [0.0] * 25)
    res = paired_test(diff, iters=50, confidence=0.95, seed=1234)
    assert res["n_plus"] == 38 and res["n_minus"] == 1037
    assert res["p"] == pytest.approx(_sign_p(38, 1075), rel=1e-12)
    assert res["p"] == pytest.approx(7.899443384959118e-254, rel=1e-12)


def test_exact_sign_p_refuses_counts_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"k=4 of m=3"):
        exact_sign_p(4, 3)
