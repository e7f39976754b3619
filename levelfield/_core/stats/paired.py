"""Paired tests with the intervals that invert them: an interval leaves out 0 exactly when its test is significant.

A paired comparison asks one question twice, "is the difference 0?" as a p-value and "which
differences fit these cases?" as an interval. Answered by two methods (a rank test beside a
bootstrap interval), the two can disagree on the same row. Here each test is written as a
function of a shift δ, ``p_at(δ)`` (the test of "the difference is δ"), and its interval at
level 1 − α is the set of shifts the test does not reject: ``p_at(δ) ≥ α``. So at every level,
the interval excludes 0 exactly when ``p_at(0) < α``, and a family adjustment that tests a pair at
level α/k shows that pair's interval at 1 − α/k.

- **McNemar** (0/1 values): the exact binomial test of the wins among the cases that differ.
  Under "the difference is δ", a differing case goes A's way with probability π(δ) = (1 + δ·n/d)/2
  (d differing cases of n). Its interval is Clopper–Pearson's for π, mapped back to δ: the exact
  inversion of the two-sided binomial test (twice the smaller tail). When no case differs, the
  interval is ±(1 − (α/2)^(1/n)): the share of differing cases that 0 of n cannot rule out.
- **Wilcoxon signed-rank** (other values): zeros dropped, ties given mid-ranks; the p-value is
  exact (the null distribution of the rank sum with these ties and zeros, by subset sums) up to
  50 differences that are not 0, and the normal approximation with the tie correction above, as
  SciPy's. The interval is the set of shifts whose signed-rank test is not significant (Hodges–
  Lehmann's), searched over the Walsh averages, where the statistic changes.
- **Permutation** (sign flips of the differences, statistic their mean): every sign pattern up to
  13 cases, else the observed one and 9,999 seeded ones. Each pattern counts as extreme on one
  interval of shifts (all of them containing the mean difference), so the set of accepted shifts is
  an interval found in closed form, and it holds the mean difference.

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

__all__ = ["PairedInference", "paired_inference", "TwoSampleInference", "extreme_intervals", "accepted_interval", "signed_rank_p", "EXACT_SIGNED_RANK", "EXACT_SIGN_FLIPS"]

EXACT_SIGNED_RANK = 50
"""Up to this many differences that are not 0, the signed-rank p-value is exact (SciPy's threshold)."""
EXACT_SIGN_FLIPS = 13
"""Up to this many cases, the permutation test enumerates every sign pattern (2^13 = 8,192)."""
_RESAMPLES = 9999


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

    def p_min(self) -> float:
        """The smallest p this test could give on these cases: every differing case going A's way."""
        if self.n == 0:
            return math.nan
        flipped = paired_inference(np.abs(self.d), np.zeros_like(self.d), test=self.test,
                                   seed=self._cache.get("seed", 0))
        return flipped.p_value

    def _p_mcnemar(self, shift: float) -> float:
        from scipy import stats

        differing = self.wins + self.losses
        if differing == 0:
            # No case differs: a difference of |δ| needs at least that share of cases to differ,
            # and none of n doing so has probability (1 − |δ|)^n at most (doubled: two-sided).
            return min(1.0, 2 * (1 - min(abs(shift), 1.0)) ** self.n)
        pi = (1 + shift * self.n / differing) / 2
        if pi <= 0 or pi >= 1:
            # Every differing case would have to go one way: only that outcome fits.
            return 1.0 if (pi <= 0 and self.wins == 0) or (pi >= 1 and self.losses == 0) else 0.0
        low = float(stats.binom.cdf(self.wins, differing, pi))
        high = float(stats.binom.sf(self.wins - 1, differing, pi))
        return min(1.0, 2 * min(low, high))

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
        from scipy import stats

        differing = self.wins + self.losses
        if differing == 0:
            # The differences these n identical cases cannot rule out: as many cases differing,
            # all one way, as Clopper–Pearson allows for 0 of n.
            bound = 1 - (alpha / 2) ** (1 / self.n)
            return -bound, bound
        # Clopper–Pearson for π, the share of differing cases that go A's way.
        low_pi = float(stats.beta.ppf(alpha / 2, self.wins, self.losses + 1)) if self.wins > 0 else 0.0
        high_pi = float(stats.beta.ppf(1 - alpha / 2, self.wins + 1, self.losses)) if self.losses > 0 else 1.0
        share = differing / self.n
        return share * (2 * low_pi - 1), share * (2 * high_pi - 1)

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

    ``auto``: McNemar when both are 0/1, Wilcoxon signed-rank otherwise.
    """
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ConfigError(f"a paired test needs equal lengths, got {x.size} and {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    binary = x.size > 0 and bool(np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all())
    if test == "auto":
        test = "mcnemar" if binary else "wilcoxon"
    if test not in ("mcnemar", "wilcoxon", "permutation"):
        raise ConfigError(f"unknown paired test {test!r}; use auto, mcnemar, wilcoxon or permutation")
    if test == "mcnemar" and x.size and not binary:
        raise ConfigError("the McNemar test needs 0/1 values")
    d = x - y
    out = PairedInference(test, d, int((d > 0).sum()), int((d < 0).sum()))
    out._cache["seed"] = seed
    return out
