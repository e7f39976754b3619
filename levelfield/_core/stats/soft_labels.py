"""Soft labels: a judged pass rate from the judge's probabilities, corrected by human labels, and the judge's calibration.

A binary judged metric keeps the judge's probability of a pass per row (``<metric>/p``). With
``StatsConfig(judge_scores="probability")`` the statistics use those probabilities instead of the
thresholded verdicts, and the judge correction uses them too.

**The estimator.** With human labels ``y`` on a random subset of ``n`` of the ``N`` judged rows, the
judge's probabilities are calibrated against the labels by a least-squares line ``g(p) = a + b·p``
fitted on the labelled rows, and the rate is the mean of the calibrated probabilities over every
judged row::

    θ = ȳ_L + b·(p̄_N − p̄_L),   b = Cov_L(y, p) / Var_L(p)

This is the regression estimator of two-phase (double) sampling (Cochran 1977, *Sampling
Techniques*, 3rd ed., §12.6): it is consistent whatever the judge's true calibration curve is (the
line only decides how much the probabilities help), so a miscalibrated judge biases nothing. Its
variance, with ``s_y²`` the labels' variance and ``s_e²`` the variance of the residuals ``y − g(p)``
on the labelled rows (n − 2 degrees of freedom)::

    Var(θ) = s_e²·(1/n − 1/N) + s_y²/N

and the interval is θ ± t(n − 2)·√Var. The better the probabilities predict the labels, the
smaller ``s_e²`` and the narrower the interval; thresholding them first (Rogan–Gladen on the
verdicts) throws that information away. ``tests/core/stats/test_soft_labels.py`` checks coverage and width by
simulation.

**Calibration.** Against the human labels: the Brier score (mean squared error of p), the
expected calibration error (ECE: the count-weighted mean gap between mean p and the observed pass
rate over equal-width bins) and the reliability table those bins make.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from ..results.result import EvalResult

__all__ = ["SoftRate", "Calibration", "soft_rate", "calibration", "soft_values", "checked_probabilities",
           "NO_PROBABILITY_HINT"]

NO_PROBABILITY_HINT = (
    "give the metric a judge that returns log-probabilities (e.g. ChatOpenAI(model=..., logprobs=True, "
    "top_logprobs=5)) or states a probability in its answer ({\"score\": \"1\", \"probability\": 0.83}), "
    "or use StatsConfig(judge_scores=\"verdict\")"
)


def checked_probabilities(values: Sequence[float] | np.ndarray, where: str) -> np.ndarray:
    """``values`` as floats (NaN = none), refused with the row named when one is outside [0, 1]."""
    p = np.asarray(values, dtype=float).ravel()
    bad = np.flatnonzero(~np.isnan(p) & ((p < 0) | (p > 1)))
    if bad.size:
        i = int(bad[0])
        raise ConfigError(f"{where}: probability {p[i]:g} on row {i} is outside [0, 1] ({bad.size} row(s) in all); "
                          "a judge's probability of a pass must be a fraction between 0 and 1")
    return p


@dataclass(frozen=True)
class SoftRate:
    """A pass rate from the judge's probabilities, calibrated against human labels, with its interval."""

    estimate: float
    low: float
    high: float
    slope: float
    """b: how much the labels' pass rate rises per unit of the judge's probability (1 = calibrated in slope)."""
    rows: int
    labeled: int


def soft_rate(
    probabilities: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    metric: str = "metric",
) -> SoftRate:
    """The calibration-corrected rate (see the module docs) of judged rows with probability
    ``probabilities`` (NaN: not judged) and human 0/1 labels ``human`` on some of them (NaN: none)."""
    from scipy.stats import t as student

    p = checked_probabilities(probabilities, f"{metric}: judge probabilities")
    y = np.asarray(human, dtype=float).ravel()
    if p.shape != y.shape:
        raise ConfigError(f"{metric}: {p.size} judge probabilities but {y.size} human labels; give one of each per row")
    judged = ~np.isnan(p)
    both = judged & ~np.isnan(y)
    rows, n = int(judged.sum()), int(both.sum())
    if n < 3:
        raise ConfigError(f"{metric}: {n} human label(s) on rows with a judge probability; the calibrated rate needs "
                          "at least 3 (label more rows, or use StatsConfig(judge_scores=\"verdict\"))")
    pl, yl = p[both], y[both]
    var_p = float(pl.var(ddof=1))
    slope = float(np.cov(pl, yl, ddof=1)[0, 1] / var_p) if var_p > 0 else 0.0
    estimate = float(yl.mean() + slope * (p[judged].mean() - pl.mean()))
    residuals = yl - yl.mean() - slope * (pl - pl.mean())
    s_e2 = float(residuals @ residuals) / (n - 2)
    s_y2 = float(yl.var(ddof=1))
    variance = s_e2 * max(1 / n - 1 / rows, 0.0) + s_y2 / rows
    half = float(student.ppf(0.5 + confidence / 2, n - 2)) * math.sqrt(variance)
    return SoftRate(
        estimate=min(1.0, max(0.0, estimate)),
        low=max(0.0, estimate - half),
        high=min(1.0, estimate + half),
        slope=slope,
        rows=rows,
        labeled=n,
    )


@dataclass(frozen=True)
class Calibration:
    """How well a judge's probabilities match human labels: Brier score, ECE and the reliability table."""

    metric: str
    labeled: int
    """Rows with both a judge probability and a human label."""
    brier: float
    """Mean of (p − label)²: 0 is perfect; 0.25 is what p = 0.5 everywhere scores."""
    ece: float
    """Expected calibration error: Σ (bin count / labeled) · |mean p − observed rate| over the bins."""
    bins: tuple[tuple[float, float, float, float, int], ...]
    """The reliability table, one row per non-empty bin: (low, high, mean p, observed rate, count)."""

    def table(self) -> pd.DataFrame:
        """The reliability diagram as a table: ``bin``, ``mean_p``, ``observed_rate``, ``count``."""
        import pandas as pd

        return pd.DataFrame(
            [{"bin": f"[{lo:.1f}, {hi:.1f}{']' if hi >= 1 else ')'}", "mean_p": mp, "observed_rate": rate, "count": c}
             for lo, hi, mp, rate, c in self.bins]
        )

    def describe(self) -> str:
        """The calibration in words, then the reliability table."""
        lines = [f"{self.metric}: judge calibration against {self.labeled} human labels: Brier {self.brier:.3f}, "
                 f"ECE {self.ece:.3f}",
                 f"  {'bin':<12}{'mean p':>8}{'observed':>10}{'rows':>6}"]
        for lo, hi, mp, rate, c in self.bins:
            shown = f"[{lo:.1f}, {hi:.1f}{']' if hi >= 1 else ')'}"
            lines.append(f"  {shown:<12}{mp:>8.2f}{rate:>10.2f}{c:>6d}")
        return "\n".join(lines)

    def summary_items(self) -> dict[str, float]:
        """``<metric>/judge_brier`` and ``<metric>/judge_ece``."""
        return {f"{self.metric}/judge_brier": self.brier, f"{self.metric}/judge_ece": self.ece}


def calibration(
    probabilities: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    *,
    bins: int = 10,
    metric: str = "metric",
) -> Calibration:
    """The judge's calibration on the rows that have both a probability and a human 0/1 label."""
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ConfigError(f"calibration bins={bins!r}: must be a whole number >= 1")
    p = checked_probabilities(probabilities, f"{metric}: judge probabilities")
    y = np.asarray(human, dtype=float).ravel()
    if p.shape != y.shape:
        raise ConfigError(f"{metric}: {p.size} judge probabilities but {y.size} human labels; give one of each per row")
    both = ~np.isnan(p) & ~np.isnan(y)
    p, y = p[both], y[both]
    if p.size == 0:
        raise ConfigError(f"{metric}: no row has both a judge probability and a human label; "
                          "the calibration needs labelled rows the judge gave a probability for")
    # Equal-width bins, the last one closed: p = 1 falls in the top bin.
    which = np.minimum((p * bins).astype(int), bins - 1)
    counts = np.bincount(which, minlength=bins)
    sum_p = np.bincount(which, weights=p, minlength=bins)
    sum_y = np.bincount(which, weights=y, minlength=bins)
    table = []
    ece = 0.0
    for b in np.flatnonzero(counts):
        mean_p, rate = sum_p[b] / counts[b], sum_y[b] / counts[b]
        ece += counts[b] / p.size * abs(mean_p - rate)
        table.append((b / bins, (b + 1) / bins, float(mean_p), float(rate), int(counts[b])))
    return Calibration(metric=metric, labeled=int(p.size), brier=float(np.mean((p - y) ** 2)), ece=float(ece),
                       bins=tuple(table))


def soft_values(result: EvalResult, metric: str) -> np.ndarray:
    """Each run's soft label for a binary judged metric, in run order: the judge's probability of a
    pass (``<metric>/p``), the 0/1 verdict where the judge gave no probability, NaN where unscored.

    Refused when no row has a probability (the judge gives verdicts only), or one is outside [0, 1].
    """
    verdicts = result.score_values(metric)
    p = np.array([_num(s.get(f"{metric}/p")) for s in result.scores], dtype=float)
    if p.shape != verdicts.shape:  # a result whose rows were not all kept: nothing to pair
        raise ConfigError(f"judge_scores='probability': the runs of {metric!r} have no per-row probabilities kept; "
                          "use StatsConfig(judge_scores=\"verdict\")")
    if np.isnan(p).all():
        raise ConfigError(f"judge_scores='probability': metric {metric!r} has no judge probability on any row "
                          f"(its judge gave verdicts only); {NO_PROBABILITY_HINT}")
    checked_probabilities(p, f"judge_scores='probability': {metric}/p")
    p[np.isnan(verdicts)] = np.nan  # a failed or unscored row has no label at all
    return np.where(np.isnan(p), verdicts, p)


def _num(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan
