"""pass^k, τ²'s headline number, with an interval, and the tasks whose verdict flips between trials.

pass^k of one task is the chance that k trials all pass, estimated without bias from n ≥ k trials with c
passes as C(c, k) / C(n, k) (``lf.stats.pass_hat_k``); the agent's pass^k is its mean over tasks, and its
interval is ``lf.stats.mean_interval`` over the per-task values (a bootstrap over tasks: it covers the
mean over the population of tasks the benchmark's tasks stand for).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import stats

__all__ = ["pass_hat_k_table", "trial_matrix"]


def trial_matrix(source: Any, metric: str, agent: str | None = None) -> tuple[list[str], np.ndarray]:
    """Task ids and the (tasks × trials) matrix of ``metric`` from a Comparison (one agent) or an EvalResult."""
    if hasattr(source, "trial_scores"):
        return list(source.case_ids), np.asarray(source.trial_scores(metric, agent), dtype=float)
    table = source.metrics_table
    wide = table.pivot_table(index="case_id", columns="trial", values=f"{metric}/score", aggfunc="first", dropna=False)
    order = list(dict.fromkeys(table["case_id"]))
    wide = wide.reindex(order)
    return order, wide.to_numpy(dtype=float)


def pass_hat_k_table(source: Any, *, metric: str = "tau2_reward", k: int | None = None,
                     confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """One row per agent: ``pass^k``, its interval, the tasks counted, and the tasks whose verdict flipped
    between trials (``flips``, ``flip_share``, ``flipped``: their ids)."""
    agents = list(source.agents) if hasattr(source, "agents") else [getattr(source, "agent_name", None) or "agent"]
    rows = {}
    for agent in agents:
        ids, matrix = trial_matrix(source, metric, agent if hasattr(source, "trial_scores") else None)
        trials = matrix.shape[1] if matrix.ndim == 2 else 1
        kk = trials if k is None else int(k)
        if kk < 1 or kk > trials:
            raise ValueError(f"pass^k with k={kk}: the runs hold {trials} trial(s) a task; k must be 1..{trials}")
        valid = ~np.isnan(matrix)
        n, c = valid.sum(axis=1), np.nansum(matrix, axis=1)
        per_task = stats.pass_hat_k(n, c, kk)
        per_task = np.atleast_1d(per_task)
        interval = stats.mean_interval(per_task[~np.isnan(per_task)], confidence, seed)
        flipped = [ids[i] for i in np.flatnonzero(stats.flaky_cases(matrix))]
        rows[agent] = {f"pass^{kk}": interval.estimate, "ci_low": interval.low, "ci_high": interval.high,
                       "tasks": interval.n, "trials": trials, "flips": len(flipped),
                       "flip_share": len(flipped) / len(ids) if ids else float("nan"), "flipped": flipped}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "agent"
    table.attrs.update(metric=metric, confidence=confidence)
    return table
