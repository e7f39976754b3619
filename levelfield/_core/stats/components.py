"""Where the noise comes from: a metric's variance split into cases, trials and judge samples.

A score ``y[i, j, k]`` of case ``i``, trial ``j`` (the agent run again) and judge sample ``k`` (the
judge asked again) is modelled as nested random effects,

    y[i, j, k] = μ + c[i] + t[i, j] + e[i, j, k],   var c = σ²_case, var t = σ²_trial, var e = σ²_judge,

and the components are estimated by the method of moments (the nested one-way ANOVA of Searle,
Casella & McCulloch, *Variance Components*, 1992, ch. 3 and 4): the judge's from the spread of
samples within a run, the agent's from the spread of run means within a case less the judge's
share of it, the cases' from the spread of case means less both. A component below zero is
reported as 0. Intervals are percentile bootstraps over cases (cases are the sampling unit).

The variance of a mean over ``n`` cases, ``k`` trials and ``s`` samples is
``σ²_case/n + σ²_trial/(n·k) + σ²_judge/(n·k·s)``: :meth:`NoiseSplit.advice` says which of more
cases, more trials or more judge samples narrows the interval most per unit of cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

__all__ = ["NoiseSplit", "split_variance", "SOURCES"]

SOURCES = ("case", "trial", "judge")


def _components(y: np.ndarray) -> tuple[float, float, float]:
    """(σ²_case, σ²_trial, σ²_judge) of a cases × trials × samples array (NaN where missing)."""
    _, trials, samples = y.shape
    judge = math.nan
    if samples > 1:
        counts = np.sum(~np.isnan(y), axis=2)
        with np.errstate(all="ignore"):
            within = np.nanvar(y, axis=2, ddof=1)
        within = within[counts >= 2]
        judge = float(np.mean(within)) if within.size else math.nan
    with np.errstate(all="ignore"):
        runs = np.nanmean(y, axis=2)  # one value per (case, trial)
    s = samples if samples > 1 else 1
    judge_part = 0.0 if math.isnan(judge) else judge / s
    trial = math.nan
    if trials > 1:
        counts = np.sum(~np.isnan(runs), axis=1)
        with np.errstate(all="ignore"):
            spread = np.nanvar(runs, axis=1, ddof=1)
        spread = spread[counts >= 2]
        trial = max(0.0, float(np.mean(spread)) - judge_part) if spread.size else math.nan
    with np.errstate(all="ignore"):
        means = np.nanmean(runs, axis=1)
    means = means[~np.isnan(means)]
    if means.size < 2:
        return math.nan, trial, judge
    k = trials
    trial_part = 0.0 if math.isnan(trial) else trial / k
    case = max(0.0, float(np.var(means, ddof=1)) - trial_part - judge_part / k)
    return case, trial, judge


@dataclass(frozen=True)
class NoiseSplit:
    """A metric's variance split by source, with bootstrap intervals; NaN where a source has no replicates."""

    cases: int
    trials: int
    samples: int
    case: float
    trial: float
    judge: float
    intervals: dict[str, tuple[float, float]]
    """Source -> (low, high) at the requested confidence."""

    def value(self, source: str) -> float:
        return {"case": self.case, "trial": self.trial, "judge": self.judge}[source]

    def shares(self) -> dict[str, float]:
        """Each source's share of the variance of one run's score (the sources that were measured)."""
        parts = {s: self.value(s) for s in SOURCES if not math.isnan(self.value(s))}
        total = sum(parts.values())
        return {s: (v / total if total > 0 else math.nan) for s, v in parts.items()}

    @property
    def dominant(self) -> str | None:
        shares = self.shares()
        return max(shares, key=lambda s: shares[s]) if shares and not any(math.isnan(v) for v in shares.values()) else None

    def icc(self, samples: int | None = None) -> float:
        """The intra-case correlation of run means (``samples`` judge samples each): the share of a
        run's variance that lies between cases, as :func:`levelfield.stats.sample_size` takes it."""
        s = samples or self.samples
        within = (0.0 if math.isnan(self.trial) else self.trial) + (0.0 if math.isnan(self.judge) else self.judge / s)
        total = self.case + within
        return self.case / total if total > 0 else 1.0

    def mean_variance(self, cases: int, trials: int, samples: int) -> float:
        """The variance of a mean over ``cases`` cases with ``trials`` trials and ``samples`` judge samples each."""
        trial = 0.0 if math.isnan(self.trial) else self.trial
        judge = 0.0 if math.isnan(self.judge) else self.judge
        return self.case / cases + trial / (cases * trials) + judge / (cases * trials * samples)

    def advice(self, *, run_cost: float = 1.0, judge_cost: float = 1.0) -> str:
        """Which of one more case, trial or judge sample narrows the interval most per unit of cost, in words.

        A case costs ``trials`` runs and ``trials·samples`` judge calls; a trial per case, ``cases``
        runs and ``cases·samples`` judge calls; a sample, ``cases·trials`` judge calls.
        """
        if math.isnan(self.case):
            return ""
        if any(math.isnan(v) for v in self.shares().values()):
            # No variance to split (every run scored the same): shares would be 0/0.
            return "No noise to split: every run scored the same."
        n, k, s = self.cases, self.trials, self.samples
        judged = not math.isnan(self.judge)
        per_call = judge_cost if judged else 0.0
        now = self.mean_variance(n, k, s)
        options = {"cases": ((now - self.mean_variance(n + 1, k, s)) / (k * (run_cost + s * per_call)))}
        if not math.isnan(self.trial) or k > 1:
            options["trials"] = (now - self.mean_variance(n, k + 1, s)) / (n * (run_cost + s * per_call))
        if judged:
            options["judge samples"] = (now - self.mean_variance(n, k, s + 1)) / (n * k * per_call)
        best = max(options, key=lambda o: options[o])
        shares = self.shares()
        names = {"case": "between cases", "trial": "the agent's own run-to-run variation",
                 "judge": "the judge's sample-to-sample variation"}
        said = ", ".join(f"{names[src]} {share:.0%}" for src, share in sorted(shares.items(), key=lambda x: -x[1]))
        top = self.dominant
        lead = f"Most of the noise is {names[top]}" if top else "The noise splits"
        return f"{lead} ({said}); more {best} narrow the interval most per unit of cost."


def split_variance(values: np.ndarray, *, confidence: float = 0.95, seed: int = 0, resamples: int = 400) -> NoiseSplit:
    """The :class:`NoiseSplit` of scores shaped cases × trials (× judge samples), NaN where missing."""
    y = np.asarray(values, dtype=float)
    if y.ndim == 2:
        y = y[:, :, None]
    if y.ndim != 3:
        raise ConfigError(f"split_variance needs cases x trials (x samples) scores, got shape {y.shape}")
    y = y[~np.all(np.isnan(y), axis=(1, 2))]
    case, trial, judge = _components(y)
    rng = np.random.default_rng(seed)
    boots = []
    if y.shape[0] >= 2:
        for _ in range(resamples):
            boots.append(_components(y[rng.integers(0, y.shape[0], y.shape[0])]))
    arr = np.array(boots, dtype=float) if boots else np.full((1, 3), np.nan)
    lo, hi = (1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100
    intervals = {}
    for i, source in enumerate(SOURCES):
        column = arr[:, i][~np.isnan(arr[:, i])]
        intervals[source] = (float(np.percentile(column, lo)), float(np.percentile(column, hi))) if column.size else (math.nan, math.nan)
    return NoiseSplit(y.shape[0], y.shape[1], y.shape[2], case, trial, judge, intervals)
