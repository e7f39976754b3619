"""Statistics for comparing agents: intervals over cases, paired tests, multiplicity, pass@k.

Everything here works on per-case values: when a case ran several trials, its trials are
averaged first, so a case counts once and two agents stay paired case by case. Means get Wilson
intervals (SciPy's ``binomtest``) for 0/1 values and Student's t interval otherwise (a BCa
bootstrap under-covers at a few cases; ``bootstrap_interval`` remains for costs). Paired tests and the
intervals beside them come from :mod:`levelfield._core.stats.paired`, where each interval is its
test inverted; unpaired tests from SciPy (``fisher_exact``, ``mannwhitneyu``). Holm's step-down
adjustment, the levels it decides each test at, Tarone's choice of the family of testable pairs
and the pass@k estimators, which SciPy does not have, are written here. SciPy is imported when a
statistic is first computed, so ``import levelfield`` stays light.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ConfigError
from .paired import paired_inference

__all__ = [
    "Interval",
    "PairedTest",
    "PairedTestName",
    "is_binary",
    "case_means",
    "reduce_trials",
    "REDUCERS",
    "Reducer",
    "wilson_interval",
    "bootstrap_interval",
    "t_interval",
    "mean_interval",
    "paired_test",
    "holm",
    "tarone_family",
    "family_adjusted",
    "family_levels",
    "difference_interval",
    "noninferiority_p",
    "TwoSampleTest",
    "two_sample_test",
    "noninferiority_p_unpaired",
    "pass_at_k",
    "pass_hat_k",
    "flaky_cases",
]

PairedTestName = Literal["auto", "mcnemar", "t", "wilcoxon", "permutation"]
TwoSampleTestName = Literal["auto", "fisher", "mannwhitney"]

_RESAMPLES = 9999


@dataclass(frozen=True)
class Interval:
    """A mean over cases and its confidence interval."""

    estimate: float
    low: float
    high: float
    n: int
    """Cases the estimate is over (NaN cases left out)."""
    method: str
    """``wilson``, ``t``, ``bootstrap`` or ``none`` (too few cases for an interval)."""


@dataclass(frozen=True)
class PairedTest:
    """How agent A differs from agent B on the cases both have a value for."""

    difference: float
    """Mean of A − B over paired cases."""
    low: float
    high: float
    p_value: float
    test: str
    """``mcnemar`` (score test, Tango's interval), ``t``, ``wilcoxon``, ``permutation`` or ``none`` (nothing to test)."""
    n: int
    """Paired cases."""
    wins: int
    """Cases where A scored higher."""
    ties: int
    losses: int
    """Cases where B scored higher."""
    p_min: float = math.nan
    """The smallest p-value this test could give on these cases: the p it would give if every case
    that differs went A's way (for McNemar, the two-sided normal p of √discordant). Above the significance level,
    the pair can never be significant, whatever its scores (Tarone 1990)."""


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    return arr[~np.isnan(arr)]


def is_binary(values: Sequence[float] | np.ndarray) -> bool:
    """True when every non-NaN value is 0 or 1 (and there is at least one)."""
    arr = _finite(values)
    return arr.size > 0 and bool(np.isin(arr, (0.0, 1.0)).all())


def case_means(trials: np.ndarray) -> np.ndarray:
    """Average a (cases × trials) matrix over trials, ignoring NaN trials; all-NaN cases stay NaN."""
    arr = np.asarray(trials, dtype=float)
    if arr.ndim == 1:
        return arr.copy()
    counts = (~np.isnan(arr)).sum(axis=1)
    sums = np.nansum(arr, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _reduce(arr: np.ndarray, fn) -> np.ndarray:
    arr = np.asarray(arr, dtype=float)
    if arr.ndim == 1:
        return arr.copy()
    out = np.full(arr.shape[0], np.nan)
    scored = (~np.isnan(arr)).any(axis=1)
    if scored.any():
        out[scored] = fn(arr[scored], axis=1)
    return out


REDUCERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": case_means,
    "max": lambda arr: _reduce(arr, np.nanmax),
    "min": lambda arr: _reduce(arr, np.nanmin),
    "median": lambda arr: _reduce(arr, np.nanmedian),
}
"""Named trial reducers: how a case's trials become one value. ``mean`` (the default) weighs
every trial; ``max`` counts a case as solved when any trial solved it (pass@k-style); ``min``
when every trial did (pass^k-style); ``median`` resists one odd trial."""

Reducer = Literal["mean", "max", "min", "median"]


def reduce_trials(trials: np.ndarray, reducer: str = "mean") -> np.ndarray:
    """A (cases × trials) matrix reduced over trials by a named reducer, NaN trials ignored."""
    fn = REDUCERS.get(reducer)
    if fn is None:
        raise ConfigError(f"reducer={reducer!r}: use one of {', '.join(REDUCERS)}")
    return fn(trials)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval of a proportion with the continuity correction (SciPy's
    ``binomtest(...).proportion_ci(method="wilsoncc")``): without it, 9 of 10 cases right gives an
    interval that holds a true 95 % pass rate only 91 % of the time."""
    from scipy import stats

    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "none")
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="wilsoncc")
    return Interval(successes / n, float(ci.low), float(ci.high), int(n), "wilson")


def _bootstrap(values: np.ndarray, confidence: float, seed: int) -> tuple[float, float]:
    from scipy import stats

    if np.all(values == values[0]):
        # No spread: every resample has the same mean (BCa would warn and return NaN).
        return float(values[0]), float(values[0])
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            (values,), np.mean, confidence_level=confidence, n_resamples=_RESAMPLES, method="BCa", rng=rng
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isnan(low) or math.isnan(high):
            # BCa is undefined for some lopsided samples; the percentile interval still is.
            res = stats.bootstrap(
                (values,),
                np.mean,
                confidence_level=confidence,
                n_resamples=_RESAMPLES,
                method="percentile",
                rng=np.random.default_rng(seed),
            )
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return low, high


def bootstrap_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Mean of the non-NaN values with a BCa bootstrap interval (SciPy), reproducible by ``seed``."""
    arr = _finite(values)
    if arr.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "none")
    mean = float(arr.mean())
    if arr.size < 2:
        return Interval(mean, math.nan, math.nan, 1, "none")
    low, high = _bootstrap(arr, confidence, seed)
    return Interval(mean, low, high, int(arr.size), "bootstrap")


def t_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Interval:
    """Mean of the non-NaN values with Student's t interval and Hall's skewness correction
    (:func:`levelfield._core.stats.paired.hall_t_interval`; Student's mean ± t(n − 1)·SD/√n for
    symmetric values), cut to [0, 1] when every value lies there. Constant values give that value as
    both ends; one value has no interval (NaN).
    """
    from .paired import hall_t_interval, skew_terms

    arr = _finite(values)
    if arr.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0, "none")
    mean = float(arr.mean())
    if arr.size < 2:
        return Interval(mean, math.nan, math.nan, 1, "none")
    sd = float(arr.std(ddof=1))
    if sd == 0:
        return Interval(mean, mean, mean, int(arr.size), "t")
    low, high = hall_t_interval(mean, sd / math.sqrt(arr.size), int(arr.size), skew_terms(arr), 1 - confidence)
    if ((arr >= 0) & (arr <= 1)).all():
        low, high = max(low, 0.0), min(high, 1.0)  # a score in [0, 1] has its mean there too
    return Interval(mean, low, high, int(arr.size), "t")


def mean_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Mean over cases with a 95% (by default) interval: Wilson for 0/1 values, Student's t otherwise
    (checked by simulation: ``tests/core/stats/test_calibration.py``). ``seed`` is unused, kept for callers."""
    arr = _finite(values)
    if is_binary(arr):
        return wilson_interval(int(arr.sum()), int(arr.size), confidence)
    return t_interval(arr, confidence)


def paired_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    test: PairedTestName = "auto",
    confidence: float = 0.95,
    seed: int = 0,
    interval: bool = True,
) -> PairedTest:
    """Compare two agents case by case (``a[i]`` and ``b[i]`` are the same case).

    Cases where either value is NaN are left out. ``auto`` picks McNemar's score test with Tango's
    interval of p_A − p_B when both are 0/1, else the paired t test of the mean difference. The interval is the
    inversion of the same test at ``confidence`` (see :mod:`levelfield._core.stats.paired`), so it
    leaves out 0 exactly when ``p_value < 1 − confidence``; ``interval=False`` skips it (NaN).
    ``p_min`` is the p the same test would give if every differing case went A's way (see
    :func:`tarone_family`).
    """
    inference = paired_inference(a, b, test=test, seed=seed)
    d = inference.d
    wins, losses = inference.wins, inference.losses
    ties = int(d.size - wins - losses)
    if d.size == 0:
        return PairedTest(math.nan, math.nan, math.nan, math.nan, "none", 0, 0, 0, 0)
    low, high = inference.interval(1 - confidence) if interval else (math.nan, math.nan)
    return PairedTest(inference.mean, low, high, inference.p_value, inference.test, int(d.size), wins, ties, losses,
                      inference.p_min())


def difference_interval(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, confidence: float = 0.95, seed: int = 0,
    *, test: PairedTestName = "auto",
) -> tuple[float, float]:
    """The interval of A − B over the cases both have that inverts the paired ``test`` (NaN with none)."""
    return paired_inference(a, b, test=test, seed=seed).interval(1 - confidence)


def noninferiority_p(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    margin: float,
    *,
    test: PairedTestName = "auto",
    seed: int = 0,
) -> float:
    """p-value that A is worse than B by more than ``margin`` (H1: A − B < −margin), paired by case.

    The paired test of "A − B = −margin" (:meth:`PairedInference.p_at`), counted only when the
    cases lie below −margin: ``p < alpha`` exactly when the test's 1 − alpha interval lies wholly
    below −margin, so the gate and the interval it prints agree. 1 when the cases sit above
    −margin; NaN when no pair is left.
    """
    margin = float(margin)
    if not (margin >= 0 and math.isfinite(margin)):
        raise ConfigError(f"margin={margin!r}: must be a number of at least 0")
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ConfigError(f"noninferiority_p needs equal lengths, got {x.size} and {y.size}")
    inference = paired_inference(x, y, test=test, seed=seed)
    if inference.n == 0:
        return math.nan
    below = inference._centre() < -margin
    return inference.p_at(-margin) if below else 1.0


@dataclass(frozen=True)
class TwoSampleTest:
    """How sample A (e.g. a window of production traces) differs from sample B (a baseline), unpaired."""

    difference: float
    """Mean of A − mean of B."""
    low: float
    high: float
    """Welch's normal interval of the difference (NaN with fewer than two values on a side)."""
    p_value: float
    test: str
    """``fisher`` (exact, 0/1 values), ``mannwhitney`` or ``none`` (nothing to test)."""
    n: int
    """Values of A (NaN left out)."""
    n_baseline: int
    """Values of B (NaN left out)."""


def _welch_interval(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float]:
    from scipy import stats

    if x.size < 2 or y.size < 2:
        return math.nan, math.nan
    diff = float(x.mean() - y.mean())
    se = math.sqrt(float(x.var(ddof=1)) / x.size + float(y.var(ddof=1)) / y.size)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return diff - z * se, diff + z * se


def two_sample_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    test: TwoSampleTestName = "auto",
    confidence: float = 0.95,
) -> TwoSampleTest:
    """Compare two independent samples (different cases on each side); NaN values are left out.

    The unpaired counterparts of :func:`paired_test`'s tests: ``auto`` picks Fisher's exact test
    of the 2×2 table when both samples are 0/1 (McNemar's unpaired twin), else the Mann-Whitney U
    test (Wilcoxon's). Both two-sided, from SciPy.
    """
    from scipy import stats

    x, y = _finite(a), _finite(b)
    if x.size == 0 or y.size == 0:
        return TwoSampleTest(math.nan, math.nan, math.nan, math.nan, "none", int(x.size), int(y.size))
    if test == "auto":
        test = "fisher" if is_binary(x) and is_binary(y) else "mannwhitney"
    if test == "fisher":
        if not (is_binary(x) and is_binary(y)):
            raise ConfigError("Fisher's exact test needs 0/1 values")
        ones_x, ones_y = int(x.sum()), int(y.sum())
        p = float(stats.fisher_exact([[ones_x, x.size - ones_x], [ones_y, y.size - ones_y]]).pvalue)
    elif test == "mannwhitney":
        p = 1.0 if (np.all(x == x[0]) and np.all(y == x[0])) else float(stats.mannwhitneyu(x, y).pvalue)
    else:
        raise ConfigError(f"unknown two-sample test {test!r}; use auto, fisher or mannwhitney")
    low, high = _welch_interval(x, y, confidence)
    return TwoSampleTest(float(x.mean() - y.mean()), low, high, min(p, 1.0), test, int(x.size), int(y.size))


def noninferiority_p_unpaired(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, margin: float, *, test: TwoSampleTestName = "auto"
) -> float:
    """p-value that A's mean is below B's by more than ``margin``, for independent samples.

    Two-sided scale, as :func:`noninferiority_p`. 0/1 values: the Wald z-test of the difference of
    proportions shifted by the margin; otherwise the one-sided Mann-Whitney test of A + margin
    against B. NaN when a side has no value.
    """
    from scipy import stats

    margin = float(margin)
    if not (margin >= 0 and math.isfinite(margin)):
        raise ConfigError(f"margin={margin!r}: must be a number of at least 0")
    x, y = _finite(a), _finite(b)
    if x.size == 0 or y.size == 0:
        return math.nan
    if test == "auto":
        test = "fisher" if is_binary(x) and is_binary(y) else "mannwhitney"
    if test == "fisher":
        if x.size < 2 or y.size < 2:
            return math.nan
        se = math.sqrt(float(x.var(ddof=1)) / x.size + float(y.var(ddof=1)) / y.size)
        shifted = float(x.mean() - y.mean()) + margin
        one_sided = (0.0 if shifted < 0 else 1.0) if se == 0 else float(stats.norm.cdf(shifted / se))
    elif test == "mannwhitney":
        one_sided = float(stats.mannwhitneyu(x + margin, y, alternative="less").pvalue)
    else:
        raise ConfigError(f"unknown two-sample test {test!r}; use auto, fisher or mannwhitney")
    return min(1.0, 2 * one_sided)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (NaN stays NaN and is not counted).

    The i-th smallest of m p-values is multiplied by (m − i + 1); adjusted values are made
    non-decreasing in that order and capped at 1. Controls the family-wise error rate.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def _tarone(p_min: np.ndarray, alpha: float) -> tuple[np.ndarray, int]:
    """Tarone's family (a mask) and the m that chose it (0 when nothing is testable)."""
    p = np.asarray(p_min, dtype=float)
    testable = ~np.isnan(p)
    for m in range(1, int(testable.sum()) + 1):
        family = testable & (p * m < alpha)
        if family.sum() <= m:
            return family, m
    return np.zeros(p.shape, dtype=bool), 0


def tarone_family(p_min: Sequence[float] | np.ndarray, alpha: float) -> np.ndarray:
    """Which tests of a family of discrete tests belong in the multiplicity correction (a mask).

    Tarone, R. E. (1990), "A modified Bonferroni method for discrete data", Biometrics 46(2):
    515-522. A discrete test has a smallest achievable p-value (``PairedTest.p_min``); a test
    that could not reach significance even at that p cannot make a false discovery, so it need
    not be paid for. With K(m) the number of tests whose ``p_min`` is under ``alpha / m``, the
    family is those K(m) tests for the smallest m with K(m) ≤ m. Two identical agents (no case
    where they differ, ``p_min`` = 1) are never in it. NaN ``p_min`` (nothing to test) is left out.
    """
    return _tarone(np.asarray(p_min, dtype=float), alpha)[0]


def family_adjusted(
    p_values: Sequence[float] | np.ndarray, p_min: Sequence[float] | np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Holm-adjusted p-values within Tarone's family: ``(adjusted, in_family)``.

    The family is :func:`tarone_family` of the ``p_min``; Holm's step-down runs over it alone.
    A test outside it gets NaN (it was not tested: it could never be significant). The family
    depends only on which cases differ, not on which way, so choosing it spends no error rate:
    the family-wise error rate stays at most ``alpha``.
    """
    family = tarone_family(p_min, alpha)
    p = np.asarray(p_values, dtype=float)
    return holm(np.where(family, p, np.nan)), family


def family_levels(
    p_values: Sequence[float] | np.ndarray, p_min: Sequence[float] | np.ndarray, alpha: float
) -> np.ndarray:
    """The level each test of a Tarone–Holm family is decided at, for the interval beside it.

    Holm's step-down compares the i-th smallest p of the m in the family with alpha / (m − i + 1)
    and stops at the first it cannot reject. A test rejected at step i gets that level; the test
    it stopped at and every later one get the stopping step's level (their p is at least that
    level, so their interval holds 0); a test outside Tarone's family gets alpha / m for Tarone's m
    (its smallest possible p is at least that). An interval inverting the test at its level then
    leaves out 0 exactly when the adjusted p is under ``alpha``. Tests rejected with equal p-values
    all get the first of their levels, so equal evidence shows equal intervals. With Holm over all
    tests (``p_min`` NaN-free and tiny), this is Holm's own sequence of levels.
    """
    p = np.asarray(p_values, dtype=float)
    family, m_tarone = _tarone(np.asarray(p_min, dtype=float), alpha)
    family &= ~np.isnan(p)
    levels = np.full(p.shape, alpha / max(m_tarone, 1))
    members = np.flatnonzero(family)
    m = members.size
    order = members[np.argsort(p[members], kind="stable")]
    stopped = None
    first_level: dict[float, float] = {}  # equal p-values: the level of the first of them
    for step, k in enumerate(order):
        level = alpha / (m - step)
        if stopped is None and p[k] < level:
            # Tests with equal p are rejected together; each gets the strictest of their steps'
            # levels (still above their p), so equal evidence shows equal intervals.
            levels[k] = first_level.setdefault(float(p[k]), level)
        else:
            stopped = level if stopped is None else stopped
            levels[k] = stopped
    return levels


def pass_at_k(n: int | np.ndarray, c: int | np.ndarray, k: int) -> float | np.ndarray:
    """Chance that at least one of k trials passes, estimated from n trials with c passes.

    The unbiased estimator 1 − C(n−c, k) / C(n, k); with n = k it is 1 when any trial passed.
    NaN where n < k.
    """
    from scipy.special import comb

    n_, c_ = np.asarray(n, dtype=float), np.asarray(c, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1.0 - comb(n_ - c_, k) / comb(n_, k)
    value = np.where(n_ >= k, value, np.nan)
    return float(value) if value.ndim == 0 else value


def pass_hat_k(n: int | np.ndarray, c: int | np.ndarray, k: int) -> float | np.ndarray:
    """pass^k: chance that all of k trials pass, C(c, k) / C(n, k); with n = k, 1 only if every trial passed."""
    from scipy.special import comb

    n_, c_ = np.asarray(n, dtype=float), np.asarray(c, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = comb(c_, k) / comb(n_, k)
    value = np.where(n_ >= k, value, np.nan)
    return float(value) if value.ndim == 0 else value


def flaky_cases(trials: np.ndarray) -> np.ndarray:
    """For a (cases × trials) matrix: True where a case's non-NaN trials disagree."""
    arr = np.asarray(trials, dtype=float)
    if arr.ndim == 1 or arr.shape[1] < 2:
        return np.zeros(arr.shape[0], dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        spread = np.nanmax(arr, axis=1) - np.nanmin(arr, axis=1)
    return np.nan_to_num(spread, nan=0.0) > 0
