"""Sample-size planning: how many cases an evaluation needs to detect a change, and what it could detect.

Four designs, each a normal-approximation formula (SciPy gives the normal quantiles):

- a 0/1 metric, **paired** (both agents on the same cases; planned for the exact McNemar test): Connor (1987),
  "Sample size for testing differences in proportions for the paired-sample design",
  Biometrics 43(1):207-211: ``n = (z_a·√ψ + z_b·√(ψ − Δ²))² / Δ²`` with ψ the discordance, the
  share of cases on which the two agents disagree.
- a 0/1 metric, **unpaired** (two independent sets of cases): Fleiss, Levin & Paik, *Statistical
  Methods for Rates and Proportions* (3rd ed., 2003), eq. 4.14 without continuity correction:
  ``n = (z_a·√(2·p̄q̄) + z_b·√(p0·q0 + p1·q1))² / Δ²`` cases per agent.
- a continuous metric, **paired**: ``n = ((z_a + z_b)·σ_d / Δ)²`` with σ_d the SD of the
  per-case differences; **unpaired**: ``n = 2·((z_a + z_b)·σ / Δ)²`` per agent; both plus
  Guenther's correction for an estimated SD (``z_a²/2`` paired, ``z_a²/4`` per group): Guenther
  (1981), "Sample size formulas for normal theory t tests", Am. Stat. 35(4):243-244.

``z_a`` is the normal quantile of 1 − α/2 (two-sided) or 1 − α (one-sided), ``z_b`` that of the
power. **Trials**: averaging k trials per case shrinks the variance of a case's score by the
design effect ``f = ρ + (1 − ρ)/k`` (Kish, *Survey Sampling*, 1965, for clusters of size k), ρ
being the intra-case correlation: the share of the run-to-run variance that lies between cases
(ρ = 1: trials of a case always agree and extra trials buy nothing). The cases needed are ``f·n``.

With one trial, a paired 0/1 metric is planned for the exact McNemar test, whose power the normal
formula overstates by a few points (``compare`` runs McNemar's score test, at least as powerful on
every n, discordance and difference checked, so the planned n is on the safe side); :func:`sample_size` starts from Connor's n and returns the
smallest n whose exact power (:func:`mcnemar_power`) reaches the target.

The minimum detectable effect is the normal formula solved for Δ at a given n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ConfigError
from .components import NoiseSplit

__all__ = [
    "SampleSize",
    "Alternative",
    "MeasuredDesign",
    "sample_size",
    "minimum_detectable_effect",
    "design_effect",
    "mcnemar_power",
    "measure_design",
]

Alternative = Literal["two-sided", "one-sided"]


@dataclass(frozen=True)
class SampleSize:
    """How many cases a comparison needs, and under which assumptions."""

    cases: int
    """Cases to run (per agent when unpaired; shared by both agents when paired)."""
    runs: int
    """Runs per agent: cases × trials."""
    design: str
    """``paired 0/1 (McNemar)``, ``unpaired 0/1``, ``paired continuous`` or ``unpaired continuous``."""
    mde: float
    p0: float | None
    discordance: float | None
    sd: float | None
    alpha: float
    power: float
    alternative: Alternative
    trials: int
    icc: float
    assumptions: str
    """The assumptions in words (printed by ``levelfield plan``)."""

    def __int__(self) -> int:
        return self.cases


def _check_probability(name: str, value: float, *, open_low: bool = True) -> float:
    value = float(value)
    low_ok = value > 0 if open_low else value >= 0
    if not (low_ok and value < 1):
        raise ConfigError(f"{name}={value!r}: must be between 0 and 1")
    return value


def _z(alpha: float, power: float, alternative: Alternative) -> tuple[float, float]:
    from scipy.stats import norm

    _check_probability("alpha", alpha)
    _check_probability("power", power)
    if alternative not in ("two-sided", "one-sided"):
        raise ConfigError(f"alternative={alternative!r}: use 'two-sided' or 'one-sided'")
    z_a = float(norm.ppf(1 - alpha / 2 if alternative == "two-sided" else 1 - alpha))
    return z_a, float(norm.ppf(power))


def design_effect(trials: int, icc: float) -> float:
    """Variance factor of a case's mean over ``trials`` runs: ρ + (1 − ρ)/k (1 for one trial)."""
    if not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"trials={trials!r}: must be a whole number of at least 1")
    icc = float(icc)
    if not 0 <= icc <= 1:
        raise ConfigError(f"icc={icc!r}: the intra-case correlation must be between 0 and 1")
    return icc + (1 - icc) / trials


def _other_rate(p0: float, mde: float) -> float:
    # The planned change is a drop from p0 (what a regression gate looks for); a rise when p0 is too low to drop.
    return p0 - mde if p0 - mde >= 0 else p0 + mde


def _raw_n(
    delta: float,
    z_a: float,
    z_b: float,
    *,
    p0: float | None,
    discordance: float | None,
    sd: float | None,
    paired: bool,
) -> float:
    """The real-valued n of the design's formula for a change of ``delta`` (inf when it cannot be detected)."""
    if sd is not None:
        n = ((z_a + z_b) * sd / delta) ** 2
        return n if paired else 2 * n
    assert p0 is not None
    if paired:
        psi = discordance if discordance is not None else _independent_discordance(p0, delta)
        if delta >= psi:
            return z_a**2 / psi if delta == psi else math.inf
        return (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - delta**2)) ** 2 / delta**2
    p1 = _other_rate(p0, delta)
    if not 0 <= p1 <= 1:
        return math.inf
    p_bar = (p0 + p1) / 2
    return (z_a * math.sqrt(2 * p_bar * (1 - p_bar)) + z_b * math.sqrt(p0 * (1 - p0) + p1 * (1 - p1))) ** 2 / delta**2


def mcnemar_power(
    n: int, *, discordance: float, mde: float, alpha: float = 0.05, alternative: Alternative = "two-sided"
) -> float:
    """Exact power of the exact McNemar test on ``n`` paired cases (``compare`` runs McNemar's score test, which
    rejects at least as often here, so an n planned with this power is on the safe side).

    The discordant count M is Binomial(n, ψ); given M = m, the cases the worse agent loses are
    Binomial(m, (ψ + Δ)/(2ψ)), and the test rejects when the binomial tail at ½ is below α/2 on
    either side (two-sided) or α on the worse side (one-sided). Summed exactly over m.
    """
    from scipy.stats import binom

    psi, delta = float(discordance), float(mde)
    if not 0 < delta <= psi <= 1:
        return math.nan
    sd = math.sqrt(n * psi * (1 - psi))
    lo, hi = max(0, math.floor(n * psi - 10 * sd) - 1), min(n, math.ceil(n * psi + 10 * sd) + 1)
    m = np.arange(max(lo, 1), hi + 1)
    tail = alpha / 2 if alternative == "two-sided" else alpha
    # Largest count c with P(X <= c | m, 1/2) < tail: the test rejects at c or fewer (and, two-sided, at m - c or more).
    c = binom.ppf(tail, m, 0.5)
    c = np.where(binom.cdf(c, m, 0.5) < tail, c, c - 1)
    q = (psi + delta) / (2 * psi)  # chance a discordant case is one the worse agent loses
    reject = binom.sf(m - c - 1, m, q)  # the worse agent loses m - c or more of them
    if alternative == "two-sided":
        reject = reject + binom.cdf(c, m, q)
    return float(np.sum(binom.pmf(m, n, psi) * np.clip(reject, 0, 1)))


def _exact_paired_n(start: float, psi: float, delta: float, alpha: float, power: float, alternative: Alternative) -> int:
    """The n, searched by bisection from the normal approximation, where exact McNemar power reaches ``power``.

    Exact power rises with n in a saw-tooth; bisection finds an n whose power reaches the target
    while n − 1's does not.
    """
    def enough(n: int) -> bool:
        return mcnemar_power(n, discordance=psi, mde=delta, alpha=alpha, alternative=alternative) >= power

    low, high = max(2, math.floor(start * 0.9)), max(3, math.ceil(start))
    while enough(low) and low > 2:
        low, high = max(2, low // 2), low
    while not enough(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def _guenther(z_a: float, paired: bool) -> float:
    """Guenther's (1981) correction of a normal-formula n for a t-test's estimated SD."""
    return z_a**2 / 2 if paired else z_a**2 / 4


def _independent_discordance(p0: float, delta: float) -> float:
    """ψ when the two agents' passes are independent: the largest discordance for these rates (conservative)."""
    p1 = _other_rate(p0, delta)
    return p0 * (1 - p1) + p1 * (1 - p0)


def _check_design(p0: float | None, sd: float | None, discordance: float | None, paired: bool) -> None:
    if (p0 is None) == (sd is None):
        raise ConfigError("give p0 (the baseline rate of a 0/1 metric) or sd (the SD of a continuous metric), not both")
    if p0 is not None:
        _check_probability("p0", p0)
    if sd is not None and not (float(sd) > 0 and math.isfinite(float(sd))):
        raise ConfigError(f"sd={sd!r}: must be a positive number")
    if discordance is not None:
        if p0 is None or not paired:
            raise ConfigError("discordance applies to a paired 0/1 metric only (give p0 and paired=True)")
        _check_probability("discordance", discordance)


def _describe(design: str, discordance: float | None, p0: float | None, mde: float, trials: int, icc: float) -> str:
    parts = []
    if design.startswith("paired 0/1"):
        if discordance is None:
            psi = _independent_discordance(p0 or 0.0, mde)
            parts.append(f"agents disagree on {psi:.0%} of cases (independent passes; give the discordance "
                         "measured between two runs to plan fewer)")
        else:
            parts.append(f"agents disagree on {discordance:.0%} of cases")
    if trials > 1:
        parts.append(f"{trials} trials per case with intra-case correlation {icc:g}")
    return "; ".join(parts)


def sample_size(
    *,
    mde: float,
    p0: float | None = None,
    sd: float | None = None,
    paired: bool = True,
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: Alternative = "two-sided",
    trials: int = 1,
    icc: float = 0.5,
    components: NoiseSplit | None = None,
) -> SampleSize:
    """The number of cases needed to detect a change of ``mde`` with the given power.

    A 0/1 metric: give ``p0``, its current rate (e.g. 0.8), and ``mde``, the change in rate to
    detect (0.05 = five points). Paired (the default: both agents on the same cases, as in
    ``compare``) uses the discordance, the share of cases where the agents disagree; without one
    it assumes independent passes, which is the most cases you could need. A continuous metric:
    give ``sd``, the SD of the per-case differences (paired) or of the metric (unpaired).
    ``trials`` runs per case and ``icc`` their intra-case correlation shrink the cases needed
    (module docs). ``components``: the noise measured by source (``cmp.noise()`` /
    ``lf.stats.split_variance``); its intra-case correlation, judge
    samples included, replaces ``icc``. Formulas and references are in the module docs.
    """
    _check_design(p0, sd, discordance, paired)
    if components is not None:
        icc = components.icc()
    mde = float(mde)
    if not (mde > 0 and math.isfinite(mde)):
        raise ConfigError(f"mde={mde!r}: the change to detect must be a positive number")
    if p0 is not None and mde >= 1:
        raise ConfigError(f"mde={mde!r}: a change in a rate must be below 1")
    z_a, z_b = _z(alpha, power, alternative)
    f = design_effect(trials, icc)
    n = _raw_n(mde, z_a, z_b, p0=p0, discordance=discordance, sd=sd, paired=paired)
    if not math.isfinite(n):
        raise ConfigError(
            f"a change of {mde:g} cannot be detected with discordance {discordance:g}: two agents that disagree "
            f"on a share ψ of cases differ by at most ψ; raise the discordance or lower mde"
            if discordance is not None
            else f"a change of {mde:g} from p0={p0:g} leaves the range 0..1"
        )
    if paired and p0 is not None and trials == 1:
        # One trial keeps case scores 0/1: plan for the exact McNemar test (compare's score test is no less powerful)
        # test's exact power (Connor's normal approximation overstates it by a few points).
        psi = discordance if discordance is not None else _independent_discordance(p0, mde)
        n = _exact_paired_n(n, psi, mde, alpha, power, alternative)
    # Guenther's term counts cases (the t-test's degrees of freedom), so it comes after the design effect.
    cases = max(2, math.ceil(f * n + (_guenther(z_a, paired) if sd is not None else 0.0) - 1e-9))
    kind = "0/1" if p0 is not None else "continuous"
    design = f"{'paired' if paired else 'unpaired'} {kind}" + (" (McNemar)" if paired and p0 is not None else "")
    return SampleSize(
        cases=cases,
        runs=cases * trials,
        design=design,
        mde=mde,
        p0=p0,
        discordance=discordance,
        sd=sd,
        alpha=alpha,
        power=power,
        alternative=alternative,
        trials=trials,
        icc=icc,
        assumptions=_describe(design, discordance, p0, mde, trials, icc),
    )


def minimum_detectable_effect(
    n: int,
    *,
    p0: float | None = None,
    sd: float | None = None,
    paired: bool = True,
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: Alternative = "two-sided",
    trials: int = 1,
    icc: float = 0.5,
) -> float:
    """The smallest change ``n`` cases detect with the given power (the formulas of :func:`sample_size` solved for Δ).

    NaN when no change in range can be detected at this n (e.g. a discordance too low for it).
    """
    from scipy.optimize import brentq

    _check_design(p0, sd, discordance, paired)
    if not isinstance(n, (int,)) or n < 2:
        if isinstance(n, float) and float(n).is_integer() and n >= 2:
            n = int(n)
        else:
            raise ConfigError(f"n={n!r}: needs at least 2 cases")
    z_a, z_b = _z(alpha, power, alternative)
    f = design_effect(trials, icc)
    if sd is not None:
        # The continuous formula with Guenther's correction, solved for Δ.
        room = (n - _guenther(z_a, paired)) / f
        return (z_a + z_b) * sd * math.sqrt((1 if paired else 2) / room) if room > 0 else math.nan
    assert p0 is not None
    upper = discordance if (paired and discordance is not None) else (p0 if p0 >= 0.5 else 1 - p0)

    def gap(delta: float) -> float:
        return f * _raw_n(delta, z_a, z_b, p0=p0, discordance=discordance, sd=None, paired=paired) - n

    top = upper * (1 - 1e-12)
    if gap(top) > 0:
        return math.nan
    low = 1e-9
    if gap(low) <= 0:
        return low
    return float(brentq(gap, low, top, xtol=1e-10))


@dataclass(frozen=True)
class MeasuredDesign:
    """What two agents' saved runs say about the inputs of :func:`sample_size`."""

    binary: bool
    """Both agents' scores are 0/1."""
    p0: float
    """The baseline's mean over its runs."""
    discordance: float | None
    """0/1 scores: share of paired runs (same case, same trial) on which the agents disagree."""
    sd: float | None
    """Continuous scores: SD of the paired run-level differences."""
    icc: float | None
    """Share of the differences' variance that lies between cases (one-way ANOVA over trials); None with one trial."""
    cases: int
    trials: int

    def options(self) -> dict[str, float | None]:
        """The keywords of :func:`sample_size` these measurements give (``icc`` only when measured)."""
        out: dict[str, float | None] = (
            {"p0": min(max(self.p0, 0.01), 0.99), "discordance": self.discordance} if self.binary else {"sd": self.sd}
        )
        if self.icc is not None:
            out["icc"] = self.icc
        return out


def measure_design(new: np.ndarray, base: np.ndarray) -> MeasuredDesign:
    """Measure p0, the discordance (0/1) or SD (continuous) and the intra-case correlation from
    two (cases × trials) score matrices of the same cases; NaN runs are left out.

    The intra-case correlation is the one-way ANOVA estimator (MSB − MSW) / (MSB + (k − 1)·MSW)
    over the cases with every trial scored, clipped to [0, 1] (Shrout & Fleiss 1979, ICC(1)).
    """
    a, b = np.atleast_2d(np.asarray(new, dtype=float)), np.atleast_2d(np.asarray(base, dtype=float))
    if a.shape != b.shape:
        raise ConfigError(f"measure_design needs two matrices of one shape, got {a.shape} and {b.shape}")
    a, b = (a.T, b.T) if a.shape[0] == 1 else (a, b)
    both = ~(np.isnan(a) | np.isnan(b))
    if both.sum() < 2:
        raise ConfigError("measure_design needs at least two runs scored on both sides")
    d = (a - b)[both]
    values = np.concatenate([a[both], b[both]])
    binary = bool(np.isin(values, (0.0, 1.0)).all())
    k = a.shape[1]
    icc = None
    full = both.all(axis=1)
    if k > 1 and full.sum() >= 2:
        diffs = (a - b)[full]
        msb = k * float(np.var(diffs.mean(axis=1), ddof=1))
        msw = float(np.mean(np.var(diffs, axis=1, ddof=1)))
        denominator = msb + (k - 1) * msw
        icc = min(1.0, max(0.0, (msb - msw) / denominator)) if denominator > 0 else None
    return MeasuredDesign(
        binary=binary,
        p0=float(np.nanmean(b[both])),
        discordance=float(np.mean(d != 0)) if binary else None,
        sd=None if binary else float(np.std(d, ddof=1)),
        icc=icc,
        cases=int(both.any(axis=1).sum()),
        trials=k,
    )
