"""Paired tests with the intervals that invert them: an interval leaves out 0 exactly when its test is significant.

This module is the one place a comparison's intervals, tests, equivalence tests and power figures
come from: ``Comparison.pairwise``, the verdict, the regression gate, ``view``'s diff, ``watch``'s
alerts and the robustness table all call it.

A paired comparison asks one question twice, "is the difference 0?" as a p-value and "which
differences fit these cases?" as an interval. Each test here is written as a function of a shift
δ, ``p_at(δ)`` (the test of "the difference is δ"), and its interval at level 1 − α is the set of
shifts the test does not reject: ``p_at(δ) ≥ α``. So at every level, the interval excludes 0
exactly when ``p_at(0) < α``, and a family adjustment that tests a pair at level α/k shows that
pair's interval at 1 − α/k.

- **McNemar** (0/1 values; the estimand is the difference of proportions p_A − p_B): the score
  test of "p_A − p_B = δ" of Tango (1998), "Equivalence test and confidence interval for the
  difference in proportions for the paired-sample design", Stat Med 17:891-908. With n pairs, b
  cases only A got right and c only B, its statistic is (b − c − nδ) / √(n(2·p̃ + δ(1 − δ))), p̃
  the maximum-likelihood chance of "only B right" under δ (the root of a quadratic, in closed
  form). At δ = 0 it is McNemar's (b − c)/√(b + c). It is unconditional: the number of cases that
  differ is random, not fixed, so the interval reaches past the observed share of differing cases
  (a conditional interval for the share A wins among them cannot, and held the truth about half
  the time when one agent was perfect). The ends are found by root-finding (SciPy's ``brentq``).
- **Paired t** (other values; the estimand is the mean difference): Student's t test of the mean
  of the differences, and its interval mean ± t·SE. When no case differs and the scores lie in
  [0, 1], a mean difference of |δ| needs at least that share of cases to differ: none of n doing so
  has probability (1 − |δ|)^n at most, so the test of δ is 2(1 − |δ|)^n and the interval
  ±(1 − (α/2)^(1/n)).
- **Wilcoxon signed-rank** (on request; the estimand is the Hodges–Lehmann shift, the median of
  the Walsh averages, not the mean): zeros dropped, ties given mid-ranks; the p-value is exact up
  to 50 differences that are not 0, and the normal approximation with the tie correction above, as
  SciPy's. The interval is the set of shifts whose signed-rank test is not significant, searched
  over the Walsh averages, where the statistic changes.
- **Permutation** (on request; sign flips of the differences, statistic their mean): every sign
  pattern up to 13 cases, else the observed one and 9,999 seeded ones. Each pattern counts as
  extreme on one interval of shifts, so the set of accepted shifts is an interval in closed form.

Two figures read beside a result, each computed here once: :func:`detectable_difference`, the
smallest difference these cases detect with 80 % power (the test's own power: exact over every
outcome of n cases for McNemar, the noncentral t for the t test), and :func:`equivalence_bound`,
the largest difference the equivalence test (TOST, :func:`equivalent`) cannot rule out.

Null distributions are computed once per tie pattern and cached: a table of 13 cases costs no
more than one of 300.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError

__all__ = ["PairedInference", "paired_inference", "TwoSampleInference", "extreme_intervals", "accepted_interval",
           "signed_rank_p", "tango_statistic", "tango_interval", "detectable_difference", "equivalence_bound",
           "equivalent", "mcnemar_power", "t_power", "ESTIMANDS", "EXACT_SIGNED_RANK", "EXACT_SIGN_FLIPS"]

EXACT_SIGNED_RANK = 50
"""Up to this many differences that are not 0, the signed-rank p-value is exact (SciPy's threshold)."""
EXACT_SIGN_FLIPS = 13
"""Up to this many cases, the permutation test enumerates every sign pattern (2^13 = 8,192)."""
_RESAMPLES = 9999

ESTIMANDS = {"mcnemar": "difference of proportions", "t": "mean difference", "permutation": "mean difference",
             "wilcoxon": "Hodges–Lehmann shift"}
"""What each test's interval is an interval of (the number printed beside it)."""


def skew_terms(values: np.ndarray) -> tuple[float, float]:
    """Hall's (1992) terms (a, b) = (γ/(3√n), γ/(6√n)) for values of sample skewness γ (0 when they do not vary)."""
    v = np.asarray(values, dtype=float)
    n = v.size
    m2 = float(((v - v.mean()) ** 2).mean())
    if n < 3 or m2 <= 0:
        return 0.0, 0.0
    gamma = float(((v - v.mean()) ** 3).mean()) / m2**1.5
    return gamma / (3 * math.sqrt(n)), gamma / (6 * math.sqrt(n))


def hall_transform(t: float, terms: tuple[float, float]) -> float:
    """Hall's monotone skewness-removing transformation of a studentized mean,
    g(t) = t + a·t² + a²·t³/3 + b: Hall (1992), "On the removal of skewness by transformation",
    JRSS B 54(1):221-228. Its distribution is the t's up to O(1/n) where the t's own is off by O(1/√n)."""
    a, b = terms
    return t + a * t * t + a * a * t**3 / 3 + b


def _hall_inverse(y: float, terms: tuple[float, float]) -> float:
    a, b = terms
    if abs(a) < 1e-12:
        return y - b
    return float((np.cbrt(1 + 3 * a * (y - b)) - 1) / a)  # g(t) = ((1 + a·t)³ − 1)/(3a) + b


def hall_t_interval(mean: float, se: float, n: int, terms: tuple[float, float], alpha: float) -> tuple[float, float]:
    """The means μ whose transformed statistic g((mean − μ)/se) lies within the t(n − 1) quantiles at
    ``alpha``: Student's t interval with Hall's skewness correction (it is Student's when γ = 0)."""
    from scipy.stats import t as student

    crit = float(student.isf(alpha / 2, n - 1))
    return mean - se * _hall_inverse(crit, terms), mean - se * _hall_inverse(-crit, terms)


def _tango_p21(b: float, c: float, n: float, delta: np.ndarray) -> np.ndarray:
    """Tango's restricted maximum-likelihood chance of "only B right" given p_A − p_B = ``delta``:
    the non-negative root of 2n·p² + (−b − c + (2n − b + c)δ)·p − c·δ(1 − δ) = 0."""
    qa = 2.0 * n
    qb = -b - c + (2.0 * n - b + c) * delta
    qc = -c * delta * (1.0 - delta)
    disc = np.maximum(qb * qb - 4.0 * qa * qc, 0.0)
    return (-qb + np.sqrt(disc)) / (2.0 * qa)


def tango_statistic(b: int, c: int, n: int, delta: float | np.ndarray, *, corrected: bool = True) -> float | np.ndarray:
    """Tango's score statistic of "p_A − p_B = ``delta``" for n pairs, b won by A alone and c by B alone.

    (b − c − nδ) / √(n(2·p̃ + δ(1 − δ))); at δ = 0 it is McNemar's (b − c)/√(b + c) (0 when b = c = 0).
    ``corrected`` (the default) multiplies the variance by n/(n − 1), the small-sample correction of
    Laud's score methods (ratesci's ``bcf``): plain Tango's interval dips to 92.8 % coverage at 40 cases
    with one agent perfect; corrected, its lowest is 93.4 % from 10 to 300 cases (computed exactly).
    A zero variance with a non-zero numerator is ±inf (that δ is impossible given the cases).
    """
    d = np.asarray(delta, dtype=float)
    p21 = _tango_p21(float(b), float(c), float(n), d)
    var = n * (2.0 * p21 + d * (1.0 - d)) * (n / (n - 1) if corrected and n > 1 else 1.0)
    num = b - c - n * d
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(var > 1e-300, num / np.sqrt(np.maximum(var, 1e-300)),
                       np.where(np.abs(num) < 1e-9, 0.0, np.sign(num) * np.inf))
    return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=65536)
def tango_interval(b: int, c: int, n: int, alpha: float, *, corrected: bool = True) -> tuple[float, float]:
    """Tango's score interval of p_A − p_B at 1 − ``alpha``: the δ with |statistic| ≤ z(1 − α/2).

    The statistic falls as δ rises and is 0 at the estimate (b − c)/n, so each end is one root,
    found with SciPy's ``brentq``; an end is ±1 when the statistic never reaches z on that side.
    """
    from scipy.optimize import brentq
    from scipy.stats import norm

    if n <= 0:
        return math.nan, math.nan
    z = float(norm.isf(alpha / 2))
    est = (b - c) / n
    edge = 1e-12

    def f(delta: float) -> float:
        return float(tango_statistic(b, c, n, delta, corrected=corrected)) - z

    def g(delta: float) -> float:
        return float(tango_statistic(b, c, n, delta, corrected=corrected)) + z

    low = -1.0 if est <= -1 + edge or f(-1 + edge) <= 0 else float(brentq(f, -1 + edge, est, xtol=1e-12))
    high = 1.0 if est >= 1 - edge or g(1 - edge) >= 0 else float(brentq(g, est, 1 - edge, xtol=1e-12))
    return low, high


@functools.lru_cache(maxsize=4096)
def _rank_sum_null(doubled_ranks: tuple[int, ...]) -> np.ndarray:
    """P(sum of doubled ranks with a + sign = t) for t = 0..total, each sign + or − with probability 1/2."""
    total = sum(doubled_ranks)
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for r in doubled_ranks:
        shifted = np.zeros_like(dist)
        shifted[r:] = dist[: total + 1 - r]
        dist = 0.5 * (dist + shifted)
    return dist


def signed_rank_p(d: np.ndarray) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test of differences ``d`` (NaN-free) against 0.

    Zeros are dropped (SciPy's ``zero_method="wilcox"``), ties get mid-ranks. Exact up to
    :data:`EXACT_SIGNED_RANK` non-zero differences: twice the smaller tail of the conditional null
    distribution given the ties (symmetric, so it is also the "as likely or less" p). Above, the
    normal approximation with the tie correction and no continuity correction, as SciPy's.
    """
    from scipy import stats

    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    n = d.size
    if n == 0:
        return 1.0
    ranks = stats.rankdata(np.abs(d))
    if n <= EXACT_SIGNED_RANK:
        doubled = np.rint(2 * ranks).astype(int)
        t = int(doubled[d > 0].sum())
        dist = _rank_sum_null(tuple(sorted(doubled.tolist())))
        low, high = float(dist[: t + 1].sum()), float(dist[t:].sum())
        return min(1.0, 2 * min(low, high))
    t_ranks = float(ranks[d > 0].sum())
    mean = n * (n + 1) / 4
    _, counts = np.unique(ranks, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - float((counts**3 - counts).sum()) / 48
    if var <= 0:
        return 1.0
    return min(1.0, float(2 * stats.norm.sf(abs(t_ranks - mean) / math.sqrt(var))))


@dataclass
class PairedInference:
    """One pair's paired test as a function of the shift it tests, and the intervals that invert it.

    Build with :func:`paired_inference`. ``p_at(0)`` is the test's p-value; ``interval(alpha)`` the
    shifts it does not reject at level ``alpha``: 0 is outside it exactly when ``p_at(0) < alpha``.
    """

    test: str
    d: np.ndarray
    """The paired differences A − B (NaN pairs left out)."""
    wins: int
    losses: int
    bounded: bool = False
    """Both sides' scores lie in [0, 1] (so a difference is at most 1 either way)."""
    _cache: dict = field(default_factory=dict, repr=False)
    _roots: tuple[np.ndarray, np.ndarray, int, int] | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.d.size)

    @property
    def mean(self) -> float:
        return float(self.d.mean()) if self.d.size else math.nan

    # -- the test at a shift ---------------------------------------------------------------

    def p_at(self, shift: float = 0.0) -> float:
        """Two-sided p-value of "the mean (McNemar, permutation) or centre (Wilcoxon) of A − B is ``shift``"."""
        if self.n == 0:
            return math.nan
        key = ("p", float(shift))
        if key not in self._cache:
            self._cache[key] = getattr(self, f"_p_{self.test}")(float(shift))
        return self._cache[key]

    @property
    def p_value(self) -> float:
        return self.p_at(0.0)

    @property
    def estimate(self) -> float:
        """The number the interval is about: the mean difference, or for Wilcoxon the Hodges–Lehmann shift."""
        return self._centre() if self.n else math.nan

    @property
    def estimand(self) -> str:
        """What :attr:`estimate` and the interval are: see :data:`ESTIMANDS`."""
        return ESTIMANDS[self.test]

    def p_min(self) -> float:
        """The smallest p this test could give on these cases: every differing case going A's way."""
        if self.n == 0:
            return math.nan
        flipped = PairedInference(self.test, np.abs(self.d), self.wins + self.losses, 0, self.bounded)
        flipped._cache["seed"] = self._cache.get("seed", 0)
        return flipped.p_value

    def _p_mcnemar(self, shift: float) -> float:
        from scipy.stats import norm

        if abs(shift) >= 1:
            return 1.0 if math.isclose(self.mean, shift) else 0.0
        return min(1.0, float(2 * norm.sf(abs(tango_statistic(self.wins, self.losses, self.n, shift)))))

    def _p_t(self, shift: float) -> float:
        from scipy.stats import t as student

        d, n = self.d, self.n
        sd = float(d.std(ddof=1)) if n > 1 else math.nan
        if n > 1 and sd > 1e-12 * max(1.0, float(np.abs(d).max())):
            stat = hall_transform((self.mean - shift) / (sd / math.sqrt(n)), skew_terms(d))
            return min(1.0, float(2 * student.sf(abs(stat), n - 1)))
        if not np.any(d) and self.bounded:
            # No case differs: a mean difference of |δ| needs at least that share of cases to differ.
            return min(1.0, 2 * (1 - min(abs(shift), 1.0)) ** n)
        if n == 1:
            return 1.0
        return 1.0 if math.isclose(shift, self.mean, abs_tol=1e-12) else 0.0

    def _p_wilcoxon(self, shift: float) -> float:
        return signed_rank_p(self.d - shift)

    def _p_permutation(self, shift: float) -> float:
        low, high, always, total = self._sign_flip_roots()
        inside = int(((low <= shift) & (shift <= high)).sum())
        return min(1.0, (always + inside) / total)

    # -- the interval -----------------------------------------------------------------------

    def interval(self, alpha: float) -> tuple[float, float]:
        """The shifts this test does not reject at ``alpha``: (low, high); NaN with no pair.

        Unbounded ends (too few cases to reject any shift on that side) are ±inf.
        """
        if self.n == 0:
            return math.nan, math.nan
        key = ("interval", float(alpha))
        if key not in self._cache:
            low, high = getattr(self, f"_interval_{self.test}")(alpha)
            self._cache[key] = self._agree(low, high, alpha)
        return self._cache[key]

    def _agree(self, low: float, high: float, alpha: float) -> tuple[float, float]:
        """Make the interval say what the test at 0 says, where a search over a rank test's steps
        could not (a tie exactly at 0 can make the test at 0 differ from the shifts beside it)."""
        significant = self.p_at(0.0) < alpha
        if not significant and not low <= 0 <= high:
            return min(low, 0.0), max(high, 0.0)
        if significant and low <= 0 <= high:
            nudge = np.nextafter(0.0, 1.0) if self._centre() > 0 else np.nextafter(0.0, -1.0)
            return (float(nudge), high) if self._centre() > 0 else (low, float(nudge))
        return low, high

    def _centre(self) -> float:
        if self.test == "wilcoxon":
            return _hodges_lehmann(self.d)
        return self.mean

    def _interval_mcnemar(self, alpha: float) -> tuple[float, float]:
        return tango_interval(int(self.wins), int(self.losses), int(self.n), float(alpha))

    def _interval_t(self, alpha: float) -> tuple[float, float]:

        d, n = self.d, self.n
        sd = float(d.std(ddof=1)) if n > 1 else math.nan
        if n > 1 and sd > 1e-12 * max(1.0, float(np.abs(d).max())):
            return hall_t_interval(self.mean, sd / math.sqrt(n), n, skew_terms(d), alpha)
        if not np.any(d) and self.bounded:
            bound = 1 - (alpha / 2) ** (1 / n)
            return -bound, bound
        if n == 1:
            return -math.inf, math.inf
        return self.mean, self.mean

    def _interval_permutation(self, alpha: float) -> tuple[float, float]:
        # Accepted: (always + patterns extreme at δ) / total ≥ alpha. Below the mean a pattern is
        # extreme at δ when its low root ≤ δ; above, when its high root ≥ δ.
        return accepted_interval(*self._sign_flip_roots(), alpha, self.mean)

    def _sign_flip_roots(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Per sign pattern, the shifts at which it is as extreme as the observed mean: [low, high].

        A pattern s is as extreme at δ when |Σ s_i (d_i − δ)| ≥ |Σ (d_i − δ)|, a quadratic in δ
        that opens downwards (unless s is all + or all −, extreme at every δ) and is ≥ 0 at the
        mean difference: so the set is one interval around the mean.
        """
        if self._roots is None:
            d, n = self.d, self.d.size
            signs = _sign_patterns(n, int(self._cache.get("seed", 0)))
            self._roots = extreme_intervals(signs @ d, signs.sum(axis=1).astype(float), float(d.sum()), float(n),
                                            float(np.abs(d).sum()))
        return self._roots

    def _interval_wilcoxon(self, alpha: float) -> tuple[float, float]:
        d = self.d
        if not np.any(d):
            return 0.0, 0.0
        i, j = np.triu_indices(d.size)
        walsh = np.unique((d[i] + d[j]) / 2)
        # Candidates: each Walsh average and one point inside each step between them (and beyond).
        mids = (walsh[:-1] + walsh[1:]) / 2
        span = max(float(walsh[-1] - walsh[0]), 1.0)
        cells = np.concatenate([[walsh[0] - span], mids, [walsh[-1] + span]])
        candidates = np.empty(walsh.size + cells.size)
        candidates[0::2], candidates[1::2] = cells, walsh
        centre = int(np.clip(np.searchsorted(candidates, _hodges_lehmann(d)), 0, candidates.size - 1))

        def accepted(k: int) -> bool:
            return self.p_at(float(candidates[k])) >= alpha

        if not accepted(centre):
            centre = max(range(candidates.size), key=lambda k: self.p_at(float(candidates[k])))
        # The first accepted candidate on each side, by bisection (the test's p falls away from the centre).
        lo, hi = 0, centre
        if accepted(0):
            low = -math.inf
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if accepted(mid) else (mid, hi)
            low = float(candidates[hi - 1]) if hi % 2 == 0 else float(candidates[hi])
        lo, hi = centre, candidates.size - 1
        if accepted(hi):
            high = math.inf
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if accepted(mid) else (lo, mid)
            high = float(candidates[lo + 1]) if lo % 2 == 0 else float(candidates[lo])
        return low, high


def extreme_intervals(
    a_s: np.ndarray, c_s: np.ndarray, observed: float, slope: float, scale: float
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """For a permutation test whose statistic under shift δ is ``a_s − δ·c_s`` for rearrangement s
    and ``observed − δ·slope`` as observed: per rearrangement, the closed interval of δ where it is
    as extreme as the observed (``|a_s − δ c_s| ≥ |observed − δ slope|``), and how many are extreme
    at every δ (``|c_s| = slope``: the observed arrangement and its mirror).

    Returns ``(low, high, always, total)``. Each interval holds δ = observed / slope (where the
    observed statistic is 0), so the share of extreme rearrangements falls away on both sides of it
    and the shifts a test at level α accepts form one interval.
    """
    total = a_s.size
    trivial = np.isclose(np.abs(c_s), slope, rtol=0, atol=1e-12 * max(slope, 1.0))
    a_s, c_s = a_s[~trivial], c_s[~trivial]
    qa = c_s**2 - slope**2  # < 0
    qb = -2 * (a_s * c_s - observed * slope)
    qc = a_s**2 - observed**2
    disc = np.maximum(qb**2 - 4 * qa * qc, 0.0)
    r1 = (-qb + np.sqrt(disc)) / (2 * qa)
    r2 = (-qb - np.sqrt(disc)) / (2 * qa)
    low, high = np.minimum(r1, r2), np.maximum(r1, r2)
    # A rearrangement as extreme as the observed one at δ = 0 up to rounding counts at 0, as in SciPy.
    at_zero = qc >= -1e-12 * max(abs(observed), scale, 1e-300) ** 2
    low = np.where(at_zero, np.minimum(low, 0.0), low)
    high = np.where(at_zero, np.maximum(high, 0.0), high)
    return low, high, int(trivial.sum()), int(total)


def accepted_interval(low: np.ndarray, high: np.ndarray, always: int, total: int, alpha: float,
                      centre: float) -> tuple[float, float]:
    """The shifts a permutation test accepts at ``alpha`` from :func:`extreme_intervals`' output."""
    need = math.ceil(alpha * total - 1e-9) - always
    if need <= 0:
        return -math.inf, math.inf
    if need > low.size:
        return centre, centre
    return float(np.sort(low)[need - 1]), float(np.sort(high)[::-1][need - 1])


@dataclass
class TwoSampleInference:
    """Two independent samples (a window of traces against a baseline period): the permutation test
    of the difference of their means as a function of the shift it tests, and the interval that
    inverts it. Every split of the pooled values up to 10,000 splits, else the observed split and
    9,999 seeded ones; for 0/1 values this is Fisher's exact test's comparison of proportions."""

    x: np.ndarray
    y: np.ndarray
    seed: int = 0
    _roots: tuple[np.ndarray, np.ndarray, int, int] | None = field(default=None, repr=False)

    test = "permutation"

    @property
    def difference(self) -> float:
        return float(self.x.mean() - self.y.mean()) if self.x.size and self.y.size else math.nan

    def _extreme(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        if self._roots is None:
            n1, n2 = self.x.size, self.y.size
            pooled = np.concatenate([self.x, self.y])
            groups = _splits(n1, n2, self.seed)  # (rearrangements × pooled) True: in the first group
            weights = np.where(groups, 1.0 / n1, -1.0 / n2)
            a_s = weights @ pooled
            c_s = weights[:, :n1].sum(axis=1)
            self._roots = extreme_intervals(a_s, c_s, self.difference, 1.0, float(np.abs(pooled).sum()))
        return self._roots

    def p_at(self, shift: float = 0.0) -> float:
        if not (self.x.size and self.y.size):
            return math.nan
        low, high, always, total = self._extreme()
        return min(1.0, (always + int(((low <= shift) & (shift <= high)).sum())) / total)

    def interval(self, alpha: float) -> tuple[float, float]:
        if not (self.x.size and self.y.size):
            return math.nan, math.nan
        return accepted_interval(*self._extreme(), alpha, self.difference)


def _splits(n1: int, n2: int, seed: int) -> np.ndarray:
    """Which pooled values go to the first group: every split when there are at most 10,000, else the
    observed split and 9,999 seeded ones."""
    import itertools

    n = n1 + n2
    if math.comb(n, n1) <= _RESAMPLES + 1:
        chosen = np.array(list(itertools.combinations(range(n), n1)), dtype=np.intp).reshape(-1, n1)
        out = np.zeros((chosen.shape[0], n), dtype=bool)
        np.put_along_axis(out, chosen, True, axis=1)
        return out
    rng = np.random.default_rng(seed)
    observed = np.zeros(n, dtype=bool)
    observed[:n1] = True
    drawn = rng.permuted(np.broadcast_to(observed, (_RESAMPLES, n)), axis=1)
    return np.vstack([observed[None, :], drawn])


def _hodges_lehmann(d: np.ndarray) -> float:
    i, j = np.triu_indices(d.size)
    return float(np.median((d[i] + d[j]) / 2))


@functools.lru_cache(maxsize=64)
def _sign_patterns(n: int, seed: int) -> np.ndarray:
    """Every ±1 pattern of n cases when there are at most 2^13, else the all-+ one and 9,999 seeded ones."""
    if n <= EXACT_SIGN_FLIPS:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        return (1 - 2 * bits).astype(np.int8)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, 2, size=(_RESAMPLES, n), dtype=np.int8) * 2 - 1
    return np.vstack([np.ones((1, n), dtype=np.int8), drawn.astype(np.int8)])


def paired_inference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, test: str = "auto",
                     seed: int = 0) -> PairedInference:
    """The paired test of ``a`` against ``b`` (same cases, NaN pairs left out) as a :class:`PairedInference`.

    ``auto``: McNemar's score test (Tango's interval) when both are 0/1, the paired t test otherwise.
    """
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ConfigError(f"a paired test needs equal lengths, got {x.size} and {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    binary = x.size > 0 and bool(np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all())
    if test == "auto":
        test = "mcnemar" if binary else "t"
    if test not in ("mcnemar", "t", "wilcoxon", "permutation"):
        raise ConfigError(f"unknown paired test {test!r}; use auto, mcnemar, t, wilcoxon or permutation")
    if test == "mcnemar" and x.size and not binary:
        raise ConfigError("the McNemar test needs 0/1 values")
    d = x - y
    values = np.concatenate([x, y])
    bounded = bool(values.size) and bool(((values >= 0) & (values <= 1)).all())
    out = PairedInference(test, d, int((d > 0).sum()), int((d < 0).sum()), bounded)
    out._cache["seed"] = seed
    return out


# -- the figures read beside a result: power and equivalence ---------------------------------


def mcnemar_power(n: int, discordance: float, difference: float, alpha: float) -> float:
    """The exact chance that McNemar's score test on n pairs rejects at ``alpha`` when the agents
    differ on a share ``discordance`` of cases and p_A − p_B = ``difference``.

    Summed over every outcome, by the number m of pairs the agents differ on: m is Binomial(n, ψ)
    and, given m, the pairs A wins are Binomial(m, (ψ + Δ)/(2ψ)); the test (corrected, at 0)
    rejects m's outcomes whose wins w have |2w − m| > z·√(m·n/(n − 1)), two binomial tails. The
    same sum as over the (wins, losses) grid, in n terms instead of n²/2 (the gate asks it a
    dozen times a metric: at 2,000 cases 1.2-1.6 ms a call instead of 41-46 ms, and no 45 MB
    grid kept; ``bench/bench_stats_gate.py``)."""
    from scipy.stats import binom, norm

    psi, delta = float(discordance), float(difference)
    n = int(n)
    if not (0 <= abs(delta) <= psi <= 1):
        return math.nan
    if psi == 0 or n < 1:
        return 0.0  # no pair differs: nothing for the test to reject
    z = float(norm.isf(alpha / 2))
    m = np.arange(1, n + 1)
    t = z * np.sqrt(m * (n / (n - 1) if n > 1 else 1.0))
    # The fewest wins rejected above (2w − m > t) and the most rejected below (m − 2w > t), each set
    # by the test's own comparison: a bound that rounding put one off is moved back.
    high = np.floor((m + t) / 2).astype(np.int64) + 1
    high = np.where(2 * (high - 1) - m > t, high - 1, high)
    high = np.where(2 * high - m > t, high, high + 1)
    low = np.ceil((m - t) / 2).astype(np.int64) - 1
    low = np.where(m - 2 * (low + 1) > t, low + 1, low)
    low = np.where(m - 2 * low > t, low, low - 1)
    q = min(max((psi + delta) / (2 * psi), 0.0), 1.0)  # the chance a differing pair is one A wins
    reject = binom.sf(high - 1, m, q) + binom.cdf(low, m, q)
    return float(np.sum(binom.pmf(m, n, psi) * reject))


def t_power(n: int, effect: float, alpha: float) -> float:
    """The chance that the two-sided paired t test on n cases rejects at ``alpha`` when the mean
    difference is ``effect`` standard deviations of the differences (the noncentral t)."""
    from scipy.stats import nct
    from scipy.stats import t as student

    if n < 2:
        return math.nan
    from scipy.stats import norm

    crit = float(student.isf(alpha / 2, n - 1))
    lam = float(effect) * math.sqrt(n)
    found = float(nct.sf(crit, n - 1, lam) + nct.cdf(-crit, n - 1, lam))
    if math.isnan(found):  # SciPy's noncentral t gives NaN far in its tail: there the normal is exact enough
        found = float(norm.sf(crit - lam) + norm.cdf(-crit - lam))
    return found


def detectable_difference(inference: PairedInference, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference these paired cases detect with ``power`` at ``alpha``: "could detect ≥ X".

    McNemar: the difference at which the test's exact power (:func:`mcnemar_power`) reaches
    ``power`` with the agents differing on the share of cases they differ on here; NaN when no
    difference within that share reaches it (too few cases differ). Other tests: the t test's
    power (:func:`t_power`) at the SD of the differences seen here; NaN when nothing varies.
    """
    from scipy.optimize import brentq

    n = inference.n
    if n < 2:
        return math.nan
    if inference.test == "mcnemar":
        psi = (inference.wins + inference.losses) / n
        if psi == 0 or mcnemar_power(n, psi, psi, alpha) < power:
            return math.nan
        return float(brentq(lambda delta: mcnemar_power(n, psi, delta, alpha) - power, 0.0, psi, xtol=1e-9))
    sd = float(inference.d.std(ddof=1))
    if not sd > 0:
        return math.nan
    def short(effect: float) -> float:
        return t_power(n, effect, alpha) - power

    if short(50.0) < 0:
        return math.nan  # so few cases that even a difference of 50 SDs is not detected with that power
    effect = float(brentq(short, 0.0, 50.0, xtol=1e-10))
    return effect * sd


def equivalence_bound(inference: PairedInference, *, alpha: float = 0.05) -> float:
    """The largest difference (either way) the equivalence test at ``alpha`` cannot rule out: the
    farther end from 0 of the test's 1 − 2α interval, so :func:`equivalent` holds exactly for
    margins above it. NaN with no pair; inf when the cases bound neither side."""
    if inference.n == 0:
        return math.nan
    low, high = inference.interval(2 * alpha)
    bound = max(-low, high, 0.0)
    return min(bound, 1.0) if inference.bounded else bound


def equivalent(inference: PairedInference, margin: float, *, alpha: float = 0.05) -> bool:
    """Two one-sided tests (TOST) at ``alpha`` from the same test: the difference lies within
    ±``margin`` when the 1 − 2α interval does (Schuirmann 1987). Never with a margin of 0."""
    if inference.n == 0 or not margin > 0:
        return False
    low, high = inference.interval(2 * alpha)
    return -margin < low and high < margin
