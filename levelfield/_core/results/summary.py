"""A result's summary: the metric means, spreads and failures of its scores (:func:`summarize`),
the judges' costs, and what its runs cost (:func:`run_costs`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..data.prices import Cost, PriceTable, cost_note, total_cost, usage_cost
from ..data.types import AgentRun
from ..score.metrics.base import Score
from .columns import COST_KEYS as _COST_KEYS
from .columns import CostColumns, cost_items
from .columns import mean as _mean
from .columns import score_cost as _cost
from .columns import std as _std

__all__ = ["summarize", "run_costs", "judge_costs", "summary_columns", "floats", "number"]


_PLAIN = {float, int, type(None)}  # exactly these types (not bool, not NumPy's scalars): what floats reads without pandas


def floats(values: Any) -> np.ndarray:
    if isinstance(values, list) and set(map(type, values)) <= _PLAIN:
        # Scores as metrics give them (floats, ints, None for none): NumPy reads them as pandas would, None as NaN.
        return np.array(values, dtype=float)
    import pandas as pd  # loaded when runs are summarized, not with every result (saved rows have running sums)

    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)


def summarize(table: Mapping[str, Any], metric_names: Sequence[str]) -> dict[str, Any]:
    """Vertex-style metric summary: ``row_count``, ``<metric>/mean|std|nan_count``, judge costs.

    ``table`` maps column names to columns: a DataFrame, or a dict of lists. What the runs cost
    (latency, failures, tokens) comes from :func:`run_costs`.
    """
    import pandas as pd

    summary: dict[str, Any] = {"row_count": len(next(iter(table.values()), [])) if not isinstance(table, pd.DataFrame) else len(table)}
    for name in metric_names:
        if f"{name}/score" not in table:
            continue
        col = floats(table[f"{name}/score"])
        summary[f"{name}/mean"] = _mean(col)
        summary[f"{name}/std"] = _std(col)
        summary[f"{name}/nan_count"] = int(np.isnan(col).sum())
        if f"{name}/failed" in table:
            summary[f"{name}/failure_count"] = int(sum(v is True or v == 1 for v in table[f"{name}/failed"]))
        if f"{name}/agreement" in table:
            # The judge's consistency: how often its samples agreed, over the rows it was asked several times.
            agreement = floats(table[f"{name}/agreement"])
            summary[f"{name}/agreement/mean"] = _mean(agreement)
        # Judged metrics: the judge's own cost, kept apart from the agent's tokens and latency.
        for key in ("total_tokens", "input_tokens", "output_tokens", "judge_calls", "judge_latency"):
            if f"{name}/{key}" in table:
                cost = floats(table[f"{name}/{key}"])
                if np.any(~np.isnan(cost)):
                    summary[f"{name}/{key}/sum"] = float(np.nansum(cost))
        if f"{name}/cost_usd" in table:
            # Rows the judge spent tokens on whose price is unknown make the sum unknown, never zero.
            dollars = floats(table[f"{name}/cost_usd"])
            spent = floats(table[f"{name}/total_tokens"]) if f"{name}/total_tokens" in table else dollars
            unknown = np.isnan(dollars) & ~np.isnan(spent)
            summary[f"{name}/cost_usd/sum"] = float("nan") if unknown.any() else float(np.nansum(dollars))
    return summary


def run_costs(runs: Sequence[AgentRun], prices: PriceTable | None = None) -> dict[str, Any]:
    """What runs cost, the one place it is computed (see :func:`levelfield._core.results.columns.cost_items`):
    latency, failures, the agent's tokens and dollars; and for simulated conversations the simulated
    user's failures and cost, counted apart."""
    out = cost_items(CostColumns.of(runs, prices))
    conversations = [r.conversation for r in runs if r.conversation is not None]
    if conversations:
        # Simulator faults are not agent failures: counted apart, their runs left out of the scores.
        out["simulator_failure/count"] = sum(c.simulator_failure for c in conversations)
        sim = [c.simulator_usage.total_tokens for c in conversations if c.simulator_usage is not None]
        if sim:
            out["simulator_total_tokens/sum"] = float(sum(sim))
            costs = [usage_cost(c.simulator_usage, prices or {}) for c in conversations]
            out.update({k: v for k, v in _cost_items("simulator_cost_usd", costs).items() if not k.endswith("/mean")})
    return out


def _cost_items(key: str, costs: Sequence[Cost]) -> dict[str, Any]:
    """``<key>/mean`` and ``/sum`` of the reported costs, and ``<key>/note`` when some are unknown."""
    total, mean, _ = total_cost(costs)
    out: dict[str, Any] = {f"{key}/mean": mean, f"{key}/sum": total}
    note = cost_note(costs)
    if note is not None:
        out[f"{key}/note"] = note
    return out


def summary_columns(rows: Sequence[Mapping[str, Score]], names: Sequence[str],
                     prices: PriceTable | None = None) -> dict[str, list[Any]]:
    """The columns :func:`summarize` reads (``/score``, ``/failed``, judge costs), straight from the
    Score objects: the same values ``Score.columns`` writes, without building every row's columns."""
    out: dict[str, list[Any]] = {}
    for name in names:
        scores = [row.get(name) for row in rows]
        if all(score is None for score in scores):
            continue
        out[f"{name}/score"] = [None if score is None else score.value for score in scores]
        if any(score is not None and score.failed for score in scores):
            out[f"{name}/failed"] = [True if score is not None and score.failed else None for score in scores]
        if not any(score is not None and (score.extra or score.usage is not None) for score in scores):
            continue  # no judge costs (the common case): nothing more to read
        for key in _COST_KEYS:
            costs = [_cost(score, key) for score in scores]
            if any(cost is not None for cost in costs):
                out[f"{name}/{key}"] = costs
        if any(score is not None and score.usage is not None for score in scores):
            out[f"{name}/cost_usd"] = judge_costs([s.usage if s is not None else None for s in scores], prices)
    return out


def judge_costs(usages: Sequence[Any], prices: PriceTable | None) -> list[float]:
    """Each row's judge cost in dollars (NaN: unknown, or no usage reported)."""
    return [usage_cost(u, prices or {}).usd if u is not None else math.nan for u in usages]


def number(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")
