"""Statistics of a leaderboard: bootstrap CIs, paired tests, Holm correction, minimum detectable difference.

All functions work on per-question values (shape ``(n,)``, questions matched by ``doc_id`` before the
call) and are deterministic for a given seed. They pass ``rng=`` to ``scipy.stats.bootstrap`` and
``scipy.stats.permutation_test``, which SciPy added in 1.15 (1.14 raises ``TypeError: unexpected keyword
'rng'``): hence ``scipy>=1.15`` in ``pyproject.toml``.

* :func:`bootstrap_ci`: percentile bootstrap CI of a mean (``scipy.stats.bootstrap``; Efron &
  Tibshirani 1993, ch. 13).
* :func:`exact_binomial_ci`: exact (Clopper-Pearson) CI of a proportion, for a 0/1 metric whose questions all
  score the same, where the percentile bootstrap has zero width.
* :func:`paired_test`: mean paired difference, its bootstrap CI, and the two-sided p-value of a
  sign-flip permutation test (``scipy.stats.permutation_test``, ``permutation_type="samples"``); for
  0/1 metrics (every non-zero difference of one size) this is the exact McNemar test on the discordant
  questions, at any count (``scipy.stats.binomtest``; McNemar 1947, Psychometrika 12:153-157).
* :func:`holm`: Holm's step-down adjustment of a family of p-values (Holm 1979, Scand. J. Statist.
  6:65-70): controls the family-wise error rate without assuming independence.
* :func:`min_detectable_difference`: the smallest true mean paired difference a two-sided level-alpha
  test detects with the given power, normal approximation
  ``(z_{1-alpha/2} + z_{power}) * sd / sqrt(n)`` (e.g. Chow, Shao & Wang 2008, *Sample Size Calculations
  in Clinical Research*, sec. 3.1, paired design).
* :func:`ratio_ci` and :func:`paired_ratio_test`: the same for a corpus-level ratio of sums (lm-eval's
  ``word_perplexity`` = exp(-Σ loglik / Σ words), ``bits_per_byte`` = -Σ loglik / Σ bytes / ln 2,
  :data:`RATIO_METRICS`): documents are resampled (bootstrap) or their two methods' (loglik, length)
  pairs swapped (permutation), and the aggregate is recomputed each time, so the CI and the test are
  on the metric as lm-eval reports it, not on a mean of per-document ratios.
* :func:`helped_hurt`: per-question benefit/detriment against a closed-book row (the answer-level
  counterpart of the Tok-RAG paper's benefit and detriment).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def _refuse_nonfinite(what: str, values: np.ndarray, kind: str = "per-question values") -> None:
    """Raise ValueError when ``values`` holds a NaN or an infinity: a NaN mean is no estimate, and a NaN p sorts
    anywhere (a NaN difference gave p 0.0 or the Monte Carlo floor, a NaN p in Holm's family capped every p at 1)."""
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"{what}: {len(bad)} of {len(values)} {kind} are not finite numbers (first: index {bad[0]}, "
                         f"{float(values[bad[0]])})")


def bootstrap_ci(values: np.ndarray, iters: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (shape (n,)); ``(v, v)`` when all values are equal,
    ``(nan, nan)`` when there are none. Raises ValueError for a NaN or infinite value."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    _refuse_nonfinite("bootstrap_ci", values)
    if len(values) == 0:
        return (math.nan, math.nan)
    if np.all(values == values[0]):
        return (float(values[0]), float(values[0]))
    res = stats.bootstrap((values,), np.mean, n_resamples=iters, confidence_level=confidence, method="percentile",
                          vectorized=True, rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def exact_binomial_ci(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) CI of a proportion, ``k`` successes of ``n`` (``scipy.stats.binomtest(k, n)
    .proportion_ci(method="exact")``; Clopper & Pearson 1934, Biometrika 26:404-413). The report uses it for a 0/1
    metric whose questions all score the same (k = 0 or n), where :func:`bootstrap_ci` has zero width: 0 of 30 gives
    (0, 0.116), not (0, 0)."""
    from scipy import stats

    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return (float(ci.low), float(ci.high))


def monte_carlo_p_floor(iters: int) -> float:
    """Smallest p-value the Monte Carlo permutation tests here can return with ``iters`` resamples (two-sided,
    scipy's (count+1)/(iters+1) per side): 2/(iters+1). A p at this value is an upper bound, not an estimate."""
    return 2.0 / (iters + 1)


def exact_sign_p(k: int, m: int) -> float:
    """The exact two-sided sign-test (McNemar) p of ``k`` of ``m`` discordant questions one way, H0 p = 1/2:
    ``min(1, 2 * sum_{i <= min(k, m-k)} C(m, i) / 2^m)``, the value ``scipy.stats.binomtest(k, m, 0.5).pvalue`` is
    (for p = 1/2 the two-sided test sums the tails as extreme as ``k``; McNemar 1947). Computed with Python integers
    and one correctly rounded int/int division, so it is 0.0 only where the true p is at most half the smallest double,
    2^-1075 (``k`` = 0 of ``m`` >= 1076: 2/2^m; ``k`` = 1 of ``m`` >= 1087: 2(m+1)/2^m; and so on); :func:`paired_test` calls it where scipy 1.17's ``binomtest`` returns 0.0 for
    a p a double holds (``binomtest(38, 1075)``: 0.0, the true p 7.9e-254, its ``binom.cdf`` underflowing too; s55 f4).
    O(min(k, m-k)) big-integer steps. Raises ValueError for ``m`` < 0 or ``k`` outside [0, m]."""
    if m < 0 or not 0 <= k <= m:
        raise ValueError(f"exact_sign_p: k={k} of m={m} discordant questions; need 0 <= k <= m")
    j = min(k, m - k)
    if 2 * j == m:
        return 1.0
    c = total = 1
    for i in range(j):
        c = c * (m - i) // (i + 1)
        total += c
    return min(1.0, (2 * total) / (1 << m))


def paired_test(diff: np.ndarray, iters: int, confidence: float, seed: int) -> dict[str, float]:
    """Mean of per-question differences ``diff`` (shape (n,)), its bootstrap CI, and the two-sided p-value
    of a sign-flip permutation test (H0: the two methods are exchangeable on every question). Exact when every
    non-zero difference has the same size (a 0/1 metric: EM, answer match): the test then counts the positive
    signs, so p is the exact two-sided binomial (McNemar) test on the m discordant questions,
    ``binomtest(k, m, 0.5)``, for any m; otherwise exact over the non-zero differences when there are at most 16
    of them, else Monte Carlo over ``iters`` sign patterns (p >= :func:`monte_carlo_p_floor`). A Monte Carlo
    p near 0.05 could flip with the seed, and its floor 2/(iters+1) could keep a Holm-adjusted p above 0.05
    however one-sided the questions are: the exact count avoids both where the metric allows.

    Returns ``{"diff", "lo", "hi", "p", "n", "sd"}`` (``sd``: sample standard deviation of ``diff``,
    ddof=1, 0 for fewer than two questions), and where every non-zero difference has one size (the binomial test's
    case, or none or one differs) ``n_plus`` / ``n_minus``: the discordant questions with a positive / negative
    difference, the counts the exact p is computed from (with few of them the percentile CI is too narrow: 5 of 5
    one way of 300 gives a CI that excludes 0 and p = 2/2^5 = 0.0625). Raises ValueError for a NaN or infinite
    difference."""
    from scipy import stats

    diff = np.asarray(diff, dtype=float)
    _refuse_nonfinite("paired_test", diff, "per-question differences")
    lo, hi = bootstrap_ci(diff, iters, confidence, seed)
    nz = diff[diff != 0]  # zero differences are unchanged by a sign flip: the test runs on the others
    if len(nz) < 2:  # none or one non-zero difference: both signs are as extreme, p = 1
        p = 1.0
    elif np.all(np.abs(nz) == abs(nz[0])):  # |mean| = c·|2k - m| / m: the sign count k is the statistic
        k, m = int((nz > 0).sum()), len(nz)
        p = float(min(1.0, stats.binomtest(k, m, 0.5).pvalue))
        if p == 0.0:  # scipy 1.17 returns 0.0 for some p a double holds (binomtest(38, 1075): true p 7.9e-254)
            p = exact_sign_p(k, m)
    else:
        # exact (all 2^m sign patterns) for up to 16 non-zero differences, else Monte Carlo
        n_res = np.inf if len(nz) <= EXACT_MAX_DIFFERENCES else iters
        res = stats.permutation_test((nz,), lambda x, axis=-1: np.mean(x, axis=axis), permutation_type="samples",
                                     n_resamples=n_res, alternative="two-sided", vectorized=True,
                                     rng=np.random.default_rng(seed + 1))
        p = float(min(1.0, res.pvalue))
    sd = float(np.std(diff, ddof=1)) if len(diff) > 1 else 0.0
    out = {"diff": float(diff.mean()), "lo": lo, "hi": hi, "p": p, "n": int(len(diff)), "sd": sd}
    if len(nz) == 0 or np.all(np.abs(nz) == abs(nz[0])):
        out["n_plus"], out["n_minus"] = int((nz > 0).sum()), int((nz < 0).sum())
    return out


EXACT_MAX_DIFFERENCES = 16  # up to this many non-zero paired differences, the sign-flip test is exact (all 2^m sign
# patterns: paired_test, paired_ratio_test); above it, Monte Carlo with a floor (monte_carlo_p_floor)

RATIO_METRICS = {
    "word_perplexity": lambda ll, n: np.exp(-ll / n),
    "byte_perplexity": lambda ll, n: np.exp(-ll / n),
    "bits_per_byte": lambda ll, n: -ll / n / math.log(2),
}
"""lm-eval's corpus-level metrics of ``loglikelihood_rolling`` tasks: per document ``(loglik, length)`` (nats;
words or UTF-8 bytes), aggregated as ``f(Σ loglik, Σ length)`` (lm_eval.api.metrics: weighted_perplexity, bits_per_byte)."""


def _ratio(metric: str, ll: np.ndarray, n: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The corpus metric over documents ``idx`` (shape (..., m)): ``RATIO_METRICS[metric](Σ ll, Σ n)``."""
    return RATIO_METRICS[metric](ll[idx].sum(axis=-1), n[idx].sum(axis=-1))


def ratio_ci(metric: str, ll: np.ndarray, n: np.ndarray, iters: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI (documents resampled) of the corpus metric ``metric`` of one cell, from per-document
    log-likelihoods ``ll`` (nats, shape (m,)) and lengths ``n`` (words or bytes, shape (m,)).

    Raises:
        KeyError: ``metric`` is not in :data:`RATIO_METRICS`.
    """
    from scipy import stats

    ll, n = np.asarray(ll, dtype=float), np.asarray(n, dtype=float)
    idx = np.arange(len(ll))
    if len(idx) < 2:
        v = float(_ratio(metric, ll, n, idx)) if len(idx) else math.nan
        return (v, v)
    res = stats.bootstrap((idx,), lambda i, axis=-1: _ratio(metric, ll, n, i), n_resamples=iters, confidence_level=confidence,
                          method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def paired_ratio_test(metric: str, ll_a: np.ndarray, n_a: np.ndarray, ll_b: np.ndarray, n_b: np.ndarray, iters: int,
                      confidence: float, seed: int) -> dict[str, float | None]:
    """Difference ``metric(a) - metric(b)`` of a corpus metric (:data:`RATIO_METRICS`) of two methods on the same
    documents (row i of every array is document i; ``ll``: log-likelihood in nats, ``n``: its length in words or
    bytes), its paired bootstrap CI (documents resampled, both methods on the same resample), and the two-sided
    p-value of a paired permutation test that swaps the two methods' (ll, n) per document (H0: exchangeable on
    every document; exact for up to 16 documents, else ``iters`` Monte Carlo resamples).

    Returns ``{"diff", "lo", "hi", "p", "n", "sd"}`` as :func:`paired_test` (``sd``: None, not a mean of
    per-document differences). Raises KeyError for a metric outside :data:`RATIO_METRICS`.
    """
    from scipy import stats

    ll = np.concatenate([np.asarray(ll_a, dtype=float), np.asarray(ll_b, dtype=float)])
    n = np.concatenate([np.asarray(n_a, dtype=float), np.asarray(n_b, dtype=float)])
    m = len(ll_a)
    ia, ib = np.arange(m), np.arange(m, 2 * m)
    diff = float(_ratio(metric, ll, n, ia) - _ratio(metric, ll, n, ib))
    if m < 2:
        return {"diff": diff, "lo": diff, "hi": diff, "p": 1.0, "n": m, "sd": None}

    def stat(a, b, axis=-1):
        return _ratio(metric, ll, n, a) - _ratio(metric, ll, n, b)

    boot = stats.bootstrap((ia,), lambda i, axis=-1: stat(i, i + m), n_resamples=iters, confidence_level=confidence,
                           method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    perm = stats.permutation_test((ia, ib), stat, permutation_type="samples", n_resamples=np.inf if m <= EXACT_MAX_DIFFERENCES else iters,
                                  alternative="two-sided", vectorized=True, rng=np.random.default_rng(seed + 1))
    return {"diff": diff, "lo": float(boot.confidence_interval.low), "hi": float(boot.confidence_interval.high),
            "p": float(min(1.0, perm.pvalue)), "n": m, "sd": None}


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (same order as ``pvalues``): sort ascending, multiply the i-th smallest
    (0-based) by ``m - i``, take the running maximum, cap at 1 (Holm 1979). A family of one is unchanged.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]

    Raises ValueError for a NaN or infinite p (NaN breaks the sort: ``[nan, 0.01, 0.04]`` gave ``[1.0, 1.0, 1.0]``).
    """
    _refuse_nonfinite("holm", np.asarray(pvalues, dtype=float), "p-values")
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        out[i] = running
    return out


def min_detectable_difference(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean paired difference detectable by a two-sided level-``alpha`` test with
    probability ``power``, for per-question differences of standard deviation ``sd`` over ``n``
    questions (normal approximation; units of the metric, e.g. 0.065 = 6.5 points of answer match).
    ``nan`` for ``n < 2``."""
    from scipy.stats import norm

    if n < 2:
        return math.nan
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / math.sqrt(n))


def exact_min_one_way(alpha: float = 0.05) -> int:
    """The fewest differing questions, all differing one way, with which the exact two-sided test of
    :func:`paired_test` (sign-flip; for equal-sized differences the binomial McNemar test) reaches ``p < alpha``:
    with m of them p = 2 / 2^m, so 6 at alpha 0.05 (2/64 = 0.031; 5 give 0.0625) and 9 at 0.05/7. Fewer questions
    than that, or any differing the other way, cannot reach it, whatever the normal approximation of
    :func:`min_detectable_difference` gives."""
    from scipy.stats import binomtest

    m = 1
    while binomtest(m, m, 0.5).pvalue >= alpha:
        m += 1
    return m


def is_right(v: float, lower_is_better: bool = False) -> bool:
    """Whether a per-question value of a 0/1 metric counts as right: value >= 1, or with ``lower_is_better``
    (e.g. ``cf_match``: 1 = the planted answer was given) value <= 0. ``nan`` is never right."""
    return v <= 0.0 if lower_is_better else v >= 1.0


def compare(mine: float, ref: float, lower_is_better: bool = False) -> int:
    """``1`` when ``mine`` is better than ``ref`` (higher, or lower with ``lower_is_better``), ``-1`` when worse,
    ``0`` when equal (or either is ``nan``)."""
    if mine > ref:
        return -1 if lower_is_better else 1
    if mine < ref:
        return 1 if lower_is_better else -1
    return 0


def helped_hurt(mine: Mapping[int, float], closed_book: Mapping[int, float], *, lower_is_better: bool = False) -> dict[str, int]:
    """Per-question comparison with the closed-book row on the same questions (keys: doc ids):
    ``helped`` = better than closed book (for a 0/1 metric: right where closed book is wrong),
    ``hurt`` = worse, ``neutral`` = equal (:func:`compare`). Better is higher, or lower with ``lower_is_better``
    (e.g. ``cf_match``: helped = the closed book gave the planted answer and this method did not). Questions missing
    from either side are ignored."""
    common = sorted(set(mine) & set(closed_book))
    signs = [compare(mine[q], closed_book[q], lower_is_better) for q in common]
    helped, hurt = signs.count(1), signs.count(-1)
    return {"helped": helped, "hurt": hurt, "neutral": len(common) - helped - hurt}


def noise_flips(clean: Mapping[str, float], noisy: Mapping[str, float], *, lower_is_better: bool = False) -> dict[str, int]:
    """Noise sensitivity of one method: ``flips`` = questions right on the clean task and wrong on the noisy twin,
    ``clean_correct`` = questions right on the clean task (both over the questions present in both; keys: question
    ids). Right as :func:`is_right`: value 1, or value 0 with ``lower_is_better`` (e.g. ``cf_match``); wrong =
    value < 1, or value > 0 with ``lower_is_better``."""
    common = [q for q in clean if q in noisy]
    right = [q for q in common if is_right(clean[q], lower_is_better)]
    if lower_is_better:
        return {"flips": int(sum(noisy[q] > 0.0 for q in right)), "clean_correct": len(right)}
    return {"flips": int(sum(noisy[q] < 1.0 for q in right)), "clean_correct": len(right)}


__all__ = ["bootstrap_ci", "exact_binomial_ci", "paired_test", "ratio_ci", "paired_ratio_test", "RATIO_METRICS", "holm", "min_detectable_difference", "exact_min_one_way",
           "helped_hurt", "noise_flips", "is_right", "compare"]
