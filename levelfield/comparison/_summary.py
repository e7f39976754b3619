"""The summary of a comparison, one row per agent (``cmp.summary``): each metric's mean and interval by
the comparison's failed-run rule and the mean by the other, pass@k with trials, failures, latency,
tokens and costs. Reads the comparison through :class:`Summarised`, never importing it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from .._core.results.result import EvalResult
from .._core.score.metrics.base import FAILED_AS_ZERO, FAILED_LEFT_OUT
from .._core.stats import inference as stats
from .._core.stats.config import FailedRuns

__all__ = ["Summarised", "summary_row", "OTHER_MEAN"]

OTHER_MEAN = {"zero": FAILED_LEFT_OUT, "exclude": FAILED_AS_ZERO}
"""Summary key suffix of the mean by the rule a comparison does not use: ``<metric>/<suffix>``."""


class Summarised(Protocol):
    """What the summary reads of a comparison (``levelfield.Comparison`` has all of it)."""

    results: dict[str, EvalResult]

    @property
    def agents(self) -> list[str]: ...
    @property
    def metric_names(self) -> list[str]: ...
    @property
    def case_ids(self) -> list[str]: ...
    @property
    def trials(self) -> int: ...
    @property
    def failed_runs(self) -> FailedRuns: ...
    @property
    def confidence(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def reducer(self) -> stats.Reducer: ...
    def trial_scores(self, metric: str, agent: str, *, failed_runs: FailedRuns | None = None) -> np.ndarray: ...


def summary_row(cmp: Summarised, agent: str) -> dict[str, Any]:
    """One agent's row of ``cmp.summary`` (its columns are described there)."""
    row: dict[str, Any] = {}
    k = cmp.trials
    for metric in cmp.metric_names:
        matrix = cmp.trial_scores(metric, agent)
        interval = stats.mean_interval(stats.reduce_trials(matrix, cmp.reducer), cmp.confidence, cmp.seed)
        row[f"{metric}/mean"] = interval.estimate
        row[f"{metric}/ci_low"] = interval.low
        row[f"{metric}/ci_high"] = interval.high
        row[f"{metric}/n"] = interval.n
        other: FailedRuns = "exclude" if cmp.failed_runs == "zero" else "zero"
        other_cases = stats.reduce_trials(cmp.trial_scores(metric, agent, failed_runs=other), cmp.reducer)
        row[f"{metric}/{OTHER_MEAN[cmp.failed_runs]}"] = _nanmean(other_cases)
        if k > 1 and _is_pass_fail(cmp, metric):
            valid = ~np.isnan(matrix)
            n, c = valid.sum(axis=1), np.nansum(matrix, axis=1)
            scored = n > 0
            row[f"{metric}/pass@{k}"] = _nanmean(stats.pass_at_k(n[scored], c[scored], k))
            row[f"{metric}/pass^{k}"] = _nanmean(stats.pass_hat_k(n[scored], c[scored], k))
        if k > 1:
            row[f"{metric}/flaky"] = int(stats.flaky_cases(matrix).sum())
    result = cmp.results[agent]
    costs = result.run_costs()
    runs = len(result.run_failures())
    row["runs"] = runs
    row["failures"] = costs["failure/count"]
    row["failure_rate"] = costs["failure/mean"] if runs else math.nan
    for kind in ("protocol", "transport", "agent"):
        if f"failure/{kind}" in costs:  # A2A agents: whose fault the failures were
            row[f"{kind}_failures"] = costs[f"failure/{kind}"]
    for key in ("latency_in_seconds/mean", "latency_in_seconds/p50", "latency_in_seconds/p95",
                "input_tokens/mean", "output_tokens/mean", "total_tokens/mean", "cache_read_tokens/mean",
                "cache_write_tokens/mean", "reasoning_tokens/mean", "cache_share",
                "simulator_failure/count", "simulator_total_tokens/sum"):
        if key in costs:
            row[key] = costs[key]
    if "cost_usd/mean" in costs:
        row.update(_cost_columns(cmp, agent, costs))
    judged = result.summary_metrics
    for metric in cmp.metric_names:
        if f"{metric}/cost_usd/sum" in judged:
            row[f"{metric}/cost_usd/sum"] = judged[f"{metric}/cost_usd/sum"]
    return row


def _is_pass_fail(cmp: Summarised, metric: str) -> bool:
    """A 0/1 metric for every agent's every scored trial (so pass@k means something)."""
    matrices = [cmp.trial_scores(metric, a) for a in cmp.agents]
    scored = [m for m in matrices if not np.isnan(m).all()]
    return bool(scored) and all(stats.is_binary(m) for m in scored)


def _cost_columns(cmp: Summarised, agent: str, costs: Mapping[str, Any]) -> dict[str, Any]:
    """``cost_usd/mean`` (per run) with its interval over cases, ``/sum``, the simulator's sum, and
    ``cost_usd/note`` naming the models without a price (their agent's cost is NaN, never 0)."""
    result = cmp.results[agent]
    index = {cid: i for i, cid in enumerate(cmp.case_ids)}
    matrix = np.full((len(index), cmp.trials), np.nan)
    columns, order = result.cost_columns(), result.run_order()
    ids, trials = result.run_cases()
    for k, (case_id, trial) in enumerate(zip(ids, trials)):
        i = index.get(case_id)
        if i is not None and trial < cmp.trials:
            matrix[i, trial] = columns.run_cost(int(order[k]) if order is not None else k)
    out: dict[str, Any] = {"cost_usd/mean": costs["cost_usd/mean"], "cost_usd/ci_low": math.nan,
                           "cost_usd/ci_high": math.nan, "cost_usd/sum": costs["cost_usd/sum"]}
    if not math.isnan(costs["cost_usd/mean"]):
        # Per case (trials averaged), like the metrics; a bootstrap, since costs are never 0/1 rates.
        interval = stats.bootstrap_interval(stats.reduce_trials(matrix, "mean"), cmp.confidence, cmp.seed)
        out["cost_usd/ci_low"], out["cost_usd/ci_high"] = interval.low, interval.high
    for key in ("simulator_cost_usd/sum", "cost_usd/note"):
        if key in costs:
            out[key] = costs[key]
    return out


def _nanmean(values: Any) -> float:
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else math.nan
