"""The summary of scored batches kept as running aggregates (:class:`RunningSummary`): the row
path's summary keys and numbers, without holding the table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..metrics.base import FAILED_AS_ZERO
from .scorer import ScoredBatch

__all__ = ["RunningSummary"]

_NAN = float("nan")


def _moments(x: np.ndarray) -> tuple[int, float, float]:
    """(count, mean, sum of squared deviations) of the non-NaN values of ``x``."""
    known = x[~np.isnan(x)]
    if not len(known):
        return 0, 0.0, 0.0
    mean = float(known.mean())
    return len(known), mean, float(((known - mean) ** 2).sum())


class _Moments:
    """Count, mean and variance of a stream of batches (Chan et al.'s pairwise update: stable)."""

    __slots__ = ("n", "mean", "m2", "nan")

    def __init__(self) -> None:
        self.n, self.mean, self.m2, self.nan = 0, 0.0, 0.0, 0

    def add(self, x: np.ndarray) -> None:
        n_b, mean_b, m2_b = _moments(x)
        self.nan += len(x) - n_b
        if not n_b:
            return
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.n * n_b / n
        self.n = n

    def mean_or_nan(self) -> float:
        return self.mean if self.n else _NAN

    def std(self) -> float:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else _NAN


class RunningSummary:
    """The summary of scored batches, kept as running aggregates: the same keys and numbers as
    ``EvalResult.summary_metrics`` of the row path (``row_count``, ``<metric>/mean|std|nan_count``,
    ``<metric>/failure_count`` when a metric failed on a row, latency and failure), without
    holding the table. Latency quantiles keep the latencies (8 bytes a row that has one)."""

    def __init__(self, metric_names: Sequence[str]) -> None:
        self.metric_names = list(metric_names)
        self.rows = 0
        self.with_predictions = 0
        self._scores = {name: _Moments() for name in self.metric_names}
        self._failed = {name: 0 for name in self.metric_names}
        self._failed_applies = {name: 0 for name in self.metric_names}
        self._latency = _Moments()
        self._latencies: list[np.ndarray] = []
        self._failure = _Moments()
        self._failures = 0

    def add(self, batch: ScoredBatch) -> None:
        cols = batch.columns
        self.rows += len(batch)
        self.with_predictions += batch.with_predictions
        for name, moments in self._scores.items():
            moments.add(np.asarray(cols[f"{name}/score"], dtype=float))
        for name, count in batch.failed.items():
            self._failed[name] = self._failed.get(name, 0) + count
        for name, count in batch.failed_applies.items():
            self._failed_applies[name] = self._failed_applies.get(name, 0) + count
        latency = np.asarray(cols["latency_in_seconds"], dtype=float)
        self._latency.add(latency)
        known = latency[~np.isnan(latency)]
        if len(known):
            self._latencies.append(known)
        failure = np.asarray(cols["failure"], dtype=float)
        self._failure.add(failure)
        self._failures += int(failure.sum())

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row_count": self.rows}
        for name, m in self._scores.items():
            out[f"{name}/mean"] = m.mean_or_nan()
            out[f"{name}/std"] = m.std()
            out[f"{name}/nan_count"] = m.nan
            if self._failed.get(name):
                out[f"{name}/failure_count"] = self._failed[name]
            # Failed rows add zeros: the mean over the scored rows and them.
            zeros = self._failed_applies.get(name, 0)
            out[f"{name}/{FAILED_AS_ZERO}"] = m.mean * m.n / (m.n + zeros) if m.n + zeros else _NAN
        out["latency_in_seconds/mean"] = self._latency.mean_or_nan()
        out["latency_in_seconds/std"] = self._latency.std()
        known = np.concatenate(self._latencies) if self._latencies else np.array([])
        out["latency_in_seconds/p50"] = float(np.quantile(known, 0.5)) if len(known) else _NAN
        out["latency_in_seconds/p95"] = float(np.quantile(known, 0.95)) if len(known) else _NAN
        out["failure/mean"] = self._failure.mean_or_nan()
        out["failure/std"] = self._failure.std()
        out["failure/count"] = self._failures
        return out
