"""Did a change make an agent better or worse? One metric's change against a baseline, and the words for it.

:func:`measure_change` tests one metric of a new agent against a baseline on paired cases;
:func:`adjust` applies Holm's correction across a family of such changes and gives each its
verdict; :func:`describe_change` is the one place the verdict is put into words, for the CLI, the
report and error messages alike ("worse than main by 6.1 points [2.0, 10.2], p=0.004 — regression").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ..errors import ConfigError
from . import inference as stats
from .paired import TwoSampleInference, detectable_difference, paired_inference
from .planning import minimum_detectable_effect

__all__ = ["Change", "Verdict", "measure_change", "measure_unpaired_change", "adjust", "describe_change",
           "detectable_difference"]

Verdict = Literal["regression", "improvement", "no significant change", "within margin", "not testable"]


@dataclass(frozen=True)
class Change:
    """One metric of one agent against a baseline, on the cases both have a score for."""

    metric: str
    agent: str
    baseline: str
    n: int
    """Paired cases."""
    difference: float
    """Mean of agent − baseline over paired cases."""
    low: float
    high: float
    """Interval of the difference: the inversion of the change's own test at the level it was decided
    (``level``), so it lies beyond 0 (beyond −margin, with a margin) exactly when the change is significant."""
    p_value: float
    """The paired test's two-sided p; with a margin, the non-inferiority p (:func:`stats.noninferiority_p`)."""
    p_adjusted: float
    """``p_value`` after Holm's correction across the family (equal to it until :func:`adjust`)."""
    test: str
    alpha: float
    margin: float
    mde: float
    """The smallest change these cases could detect with ``power`` at ``alpha`` (before Holm; NaN when nothing varies)."""
    power: float
    points: bool
    """True when the metric lies in [0, 1], so differences read as points (× 100)."""
    verdict: Verdict = "not testable"
    n_baseline: int | None = None
    """For an unpaired change (:func:`measure_unpaired_change`): the baseline's values; ``n`` is then the new sample's."""
    level: float = math.nan
    """Confidence of the interval: 1 − alpha alone, 1 − the Holm level after :func:`adjust`."""
    inference: Any = field(default=None, repr=False, compare=False)
    """The test as a function of the shift (:mod:`levelfield._core.stats.paired`), to recompute the interval."""

    @property
    def significant(self) -> bool:
        return self.p_adjusted < self.alpha

    @property
    def regression(self) -> bool:
        return self.verdict == "regression"


def measure_change(
    new: Sequence[float] | np.ndarray,
    base: Sequence[float] | np.ndarray,
    *,
    metric: str,
    agent: str,
    baseline: str,
    test: stats.PairedTestName = "auto",
    alpha: float = 0.05,
    margin: float = 0.0,
    power: float = 0.8,
    seed: int = 0,
    interval: bool = True,
) -> Change:
    """Test per-case scores ``new[i]`` against ``base[i]`` (same case); verdict from its own p until :func:`adjust`.

    ``interval=False`` skips the bootstrap interval (NaN) when only the verdict is needed.
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha={alpha!r}: must be between 0 and 1")
    x, y = np.asarray(new, dtype=float), np.asarray(base, dtype=float)
    t = stats.paired_test(x, y, test=test, confidence=1 - alpha, seed=seed, interval=False)
    inference = paired_inference(x, y, test=test, seed=seed)
    p = _margin_p(inference, margin, inference._centre() if inference.n else math.nan) if margin > 0 else t.p_value
    low, high = inference.interval(alpha) if interval and inference.n else (math.nan, math.nan)
    values = np.concatenate([x[~np.isnan(x)], y[~np.isnan(y)]])
    points = values.size > 0 and bool(((values >= 0) & (values <= 1)).all())
    change = Change(
        metric=metric,
        agent=agent,
        baseline=baseline,
        n=t.n,
        difference=t.difference,
        low=low,
        high=high,
        p_value=p,
        p_adjusted=p,
        test=t.test,
        alpha=alpha,
        margin=float(margin),
        mde=detectable_difference(inference, alpha=alpha, power=power),
        power=power,
        points=points,
        level=1 - alpha,
        inference=inference if interval else None,
    )
    return replace(change, verdict=_verdict(change))


def _margin_p(inference: Any, margin: float, centre: float) -> float:
    """The non-inferiority p: the test of "the difference is −margin", counted when the cases lie
    below −margin (two-sided scale), so p < alpha exactly when the interval lies wholly below −margin."""
    if math.isnan(centre):
        return math.nan
    return inference.p_at(-margin) if centre < -margin else 1.0


def measure_unpaired_change(
    new: Sequence[float] | np.ndarray,
    base: Sequence[float] | np.ndarray,
    *,
    metric: str,
    agent: str,
    baseline: str,
    alpha: float = 0.05,
    margin: float = 0.0,
    power: float = 0.8,
) -> Change:
    """Test the scores of one sample of cases against another's (different cases: a window of
    production traffic against a baseline period); verdict from its own p until :func:`adjust`.

    The gate's logic without the pairing: the permutation test of the difference of the two means
    (Fisher's comparison of proportions for 0/1 metrics), with the interval that inverts it
    (:class:`~levelfield._core.stats.paired.TwoSampleInference`); with a margin, the same test of
    "the difference is −margin".
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha={alpha!r}: must be between 0 and 1")
    x, y = np.asarray(new, dtype=float), np.asarray(base, dtype=float)
    t = stats.two_sample_test(x, y, confidence=1 - alpha)
    inference = TwoSampleInference(x[~np.isnan(x)], y[~np.isnan(y)])
    p = _margin_p(inference, margin, inference.difference) if margin > 0 else inference.p_at(0.0)
    low, high = inference.interval(alpha)
    values = np.concatenate([x[~np.isnan(x)], y[~np.isnan(y)]])
    points = values.size > 0 and bool(((values >= 0) & (values <= 1)).all())
    change = Change(
        metric=metric, agent=agent, baseline=baseline, n=t.n, difference=t.difference, low=low, high=high,
        p_value=p, p_adjusted=p, test=inference.test if t.test != "none" else "none", alpha=alpha,
        margin=float(margin), mde=_unpaired_mde(x, y, t, alpha=alpha, power=power), power=power, points=points,
        n_baseline=t.n_baseline, level=1 - alpha, inference=inference,
    )
    return replace(change, verdict=_verdict(change))


def _unpaired_mde(x: np.ndarray, y: np.ndarray, t: stats.TwoSampleTest, *, alpha: float, power: float) -> float:
    """The smallest difference two independent samples of these sizes detect (NaN if nothing varies)."""
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    if t.n < 2 or t.n_baseline < 2:
        return math.nan
    # Unequal groups as the equal-group size with the same 1/n1 + 1/n2.
    n = int(2 * t.n * t.n_baseline / (t.n + t.n_baseline))
    if n < 2:
        return math.nan
    try:
        if t.test == "fisher":
            p0 = float(y.mean())
            return minimum_detectable_effect(n, p0=p0, paired=False, alpha=alpha, power=power) if 0 < p0 < 1 else math.nan
        sd = float(np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2))
        return minimum_detectable_effect(n, sd=sd, paired=False, alpha=alpha, power=power) if sd > 0 else math.nan
    except ConfigError:
        return math.nan


def _verdict(c: Change) -> Verdict:
    if c.n == 0 or math.isnan(c.p_adjusted):
        return "not testable"
    if c.margin > 0:
        if c.p_adjusted < c.alpha:
            return "regression"
        return "within margin" if c.difference < 0 else "no significant change"
    if c.p_adjusted < c.alpha and c.difference != 0:
        return "regression" if c.difference < 0 else "improvement"
    return "no significant change"


def adjust(changes: Sequence[Change]) -> list[Change]:
    """The changes with Holm-adjusted p-values across all of them, verdicts from the adjusted p, and
    each interval recomputed at the level Holm decided that change at (so it agrees with the verdict)."""
    p_values = [c.p_value for c in changes]
    adjusted = stats.holm(p_values)
    alpha = changes[0].alpha if changes else 0.05
    levels = stats.family_levels(p_values, np.zeros(len(changes)), alpha)
    out = []
    for c, p, level in zip(changes, adjusted, levels):
        c = replace(c, p_adjusted=float(p))
        if c.inference is not None and not math.isnan(c.p_value):
            low, high = c.inference.interval(float(level))
            c = replace(c, low=low, high=high, level=1 - float(level))
        out.append(replace(c, verdict=_verdict(c)))
    return out


def _amount(value: float, points: bool) -> str:
    text = f"{value * 100:.1f}" if points else f"{value:.3g}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0" for a bound at 0


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def describe_change(change: Change) -> str:
    """The change in words: "worse than main by 6.1 points [2.0, 10.2], p=0.004 — regression".

    A non-significant change says what these cases could have detected: "no significant change
    (−1.2 points [−4.0, 1.6], p=0.412); could detect ≥ 8.0 points at this n". p is Holm-adjusted.
    """
    c = change
    unit = " points" if c.points else ""
    base = c.baseline
    if c.verdict == "not testable":
        if c.n_baseline is not None:
            return f"not testable against {base}: {c.n} scores here, {c.n_baseline} in {base}"
        return f"not testable against {base}: no case has a score on both sides"
    identical = getattr(c.inference, "wins", None) == 0 and getattr(c.inference, "losses", None) == 0
    if c.difference == 0 and ((c.low == 0 and c.high == 0) or identical):
        cases = f"{c.n} cases and {c.n_baseline} in {base}" if c.n_baseline is not None else f"all {c.n} paired cases"
        could = ""
        if math.isfinite(c.high) and c.high > 0:
            could = f" (these cases could miss a change of up to {_amount(c.high, c.points)}{' points' if c.points else ''})"
        return f"no change: same score as {base} on {cases}{could}"
    size = abs(c.difference)
    if c.difference < 0:
        low, high = -c.high, -c.low
        direction = f"worse than {base} by {_amount(size, c.points)}{unit}"
    elif c.difference > 0:
        low, high = c.low, c.high
        direction = f"better than {base} by {_amount(size, c.points)}{unit}"
    else:
        low, high = c.low, c.high
        direction = f"same as {base}"
    interval = "" if math.isnan(low) else f" [{_amount(low, c.points)}, {_amount(high, c.points)}]"
    measured = f"{direction}{interval}, {_p(c.p_adjusted)}"
    margin = f"{_amount(c.margin, c.points)}{' point' if c.points else ''}"
    if c.verdict == "regression":
        beyond = f", beyond the {margin} margin" if c.margin > 0 else ""
        return f"{measured}{beyond} — regression"
    if c.verdict == "improvement":
        return f"{measured} — improvement"
    if c.verdict == "within margin":
        return f"{measured}; not shown to exceed the {margin} margin — no regression"
    detect = "" if math.isnan(c.mde) else f"; could detect ≥ {_amount(c.mde, c.points)}{unit} at this n"
    return f"no significant change ({measured}){detect}"
