"""How an agent holds up: its paired drop under tool faults, the fault kinds behind it, and how its trials agree.

The same agent runs every case twice over, once with its tools as they are ("clean") and once with
seeded faults injected into them ("faulted"; ``levelfield.tools``). The faults are a pure function of
(seed, case, trial, tool, call), so every agent meets the same ones on the same calls.

- **Drop.** Per case, the mean over trials of each side (failed runs score 0: a fault that breaks
  the agent is the drop this measures); the drop is the mean of clean − faulted over the cases both
  sides scored. Its test and interval are the comparison's own (:mod:`levelfield._core.stats.paired`,
  ``auto``): McNemar's score test with Tango's interval when both sides are 0/1, the paired t test
  and interval of the mean drop otherwise, the interval inverting the test at the level Holm
  decided it at across the agents, one family per metric: the interval leaves out 0 exactly when
  the drop is significant. When no case differs, the interval still has a width: the drop that n
  cases without a single difference cannot rule out.
- **Fault kinds.** For the faulted runs that met a kind (at least one call answered by that fault),
  the mean drop against the same case and trial run clean, and how many runs it rests on. It says
  which kinds went with the largest drops, not that they caused them: a run can meet several.
- **Consistency.** With two or more trials: the share of cases whose trials all scored the same on
  a metric (outcome agreement) and whose trials all made the same tool calls (trajectory
  agreement), each with its exact (Clopper–Pearson) interval.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from .inference import family_adjusted, family_levels
from .paired import paired_inference

__all__ = ["DROP_COLUMNS", "drop_table", "fault_kind_table", "consistency_table", "exact_share_interval"]

DROP_COLUMNS = ["agent", "metric", "n", "clean", "faulted", "drop", "ci_low", "ci_high", "ci_level", "p_value",
                "p_holm", "significant"]


def _case_means(matrix: np.ndarray) -> np.ndarray:
    """Each case's mean over its scored trials (NaN when none was scored)."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim == 1:
        return m
    counts = (~np.isnan(m)).sum(axis=1)
    sums = np.where(np.isnan(m), 0.0, m).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def drop_table(clean: Mapping[str, np.ndarray], faulted: Mapping[str, np.ndarray], metric: str, *,
               alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """One row per agent: the paired drop clean − faulted on ``metric``.

    ``clean[agent]`` and ``faulted[agent]`` are (cases × trials) matrices of the same cases in the same
    order (or one value per case). Holm runs over the agents whose drop could reach significance
    (Tarone's family); ``ci_level`` is the level each interval is shown at.
    """
    agents = [a for a in clean if a in faulted]
    tests, sides = [], []
    for agent in agents:
        c, f = _case_means(clean[agent]), _case_means(faulted[agent])
        if c.shape != f.shape:
            raise ValueError(f"agent {agent!r}: {c.size} clean cases against {f.size} faulted ones")
        both = ~(np.isnan(c) | np.isnan(f))
        sides.append((float(c[both].mean()), float(f[both].mean())) if both.any() else (math.nan, math.nan))
        tests.append(paired_inference(c, f, test="auto", seed=seed))
    p_values = np.array([t.p_value for t in tests], dtype=float)
    p_mins = np.array([t.p_min() for t in tests], dtype=float)
    p_holm, _ = family_adjusted(p_values, p_mins, alpha) if tests else (np.array([]), np.array([]))
    levels = family_levels(p_values, p_mins, alpha) if tests else np.array([])
    rows = []
    for agent, t, (c_mean, f_mean), p, p_adj, level in zip(agents, tests, sides, p_values, p_holm, levels):
        low, high = t.interval(float(level)) if t.n else (math.nan, math.nan)
        low, high = max(low, -1.0), min(high, 1.0)  # scores in [0, 1]: no drop beyond the whole range
        rows.append({"agent": agent, "metric": metric, "n": t.n, "clean": c_mean, "faulted": f_mean, "drop": t.mean,
                     "ci_low": low, "ci_high": high, "ci_level": 1 - float(level), "p_value": float(p),
                     "p_holm": float(p_adj), "significant": bool(p_adj < alpha)})
    table = pd.DataFrame(rows, columns=DROP_COLUMNS)
    table.attrs.update(metric=metric, confidence=1 - alpha, test=tests[0].test if tests else "none")
    return table


def fault_kind_table(pairs: Sequence[tuple[str, frozenset[str] | set[str], float, float]]) -> pd.DataFrame:
    """Per agent and fault kind: ``runs`` (faulted runs that met the kind) and ``drop`` (their mean clean − faulted).

    ``pairs``: (agent, kinds the faulted run met, its clean counterpart's score, its score), one per
    faulted run with a clean run of the same case and trial; pairs with a NaN side are left out.
    Rows sorted by agent, then the largest drop first.
    """
    sums: dict[tuple[str, str], list[float]] = {}
    for agent, kinds, clean_value, faulted_value in pairs:
        if math.isnan(clean_value) or math.isnan(faulted_value):
            continue
        for kind in kinds:
            sums.setdefault((agent, kind), []).append(clean_value - faulted_value)
    rows = [{"agent": agent, "kind": kind, "runs": len(d), "drop": float(np.mean(d))}
            for (agent, kind), d in sums.items()]
    table = pd.DataFrame(rows, columns=["agent", "kind", "runs", "drop"])
    if len(table):
        table = table.sort_values(["agent", "drop", "kind"], ascending=[True, False, True], kind="stable")
    return table.reset_index(drop=True)


def exact_share_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson interval of a share ``k`` of ``n`` (SciPy's exact binomial interval)."""
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def _agreeing(rows: Sequence[Sequence[Hashable]]) -> tuple[int, int]:
    """(cases whose values all agree, cases with two or more values) over ``rows`` of per-trial values."""
    agree = total = 0
    for values in rows:
        seen = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if len(seen) < 2:
            continue
        total += 1
        agree += all(v == seen[0] for v in seen[1:])
    return agree, total


def consistency_table(outcomes: Mapping[str, np.ndarray], trajectories: Mapping[str, Sequence[Sequence[Hashable]]],
                      metric: str, *, confidence: float = 0.95) -> pd.DataFrame:
    """One row per agent: how often its trials agree, with exact intervals.

    ``outcomes[agent]``: a (cases × trials) matrix of ``metric``; ``trajectories[agent]``: per case, one
    hashable trajectory per trial (None for a run that made none known). Cases with fewer than two
    scored trials are left out of each share.
    """
    rows = []
    for agent, matrix in outcomes.items():
        m = np.asarray(matrix, dtype=float)
        k_out, n_out = _agreeing([tuple(row) for row in m.reshape(m.shape[0], -1)])
        k_traj, n_traj = _agreeing(list(trajectories.get(agent, [])))
        o_low, o_high = exact_share_interval(k_out, n_out, confidence)
        t_low, t_high = exact_share_interval(k_traj, n_traj, confidence)
        rows.append({"agent": agent, "metric": metric, "trials": int(m.shape[1]) if m.ndim == 2 else 1,
                     "outcome_agreement": k_out / n_out if n_out else math.nan, "outcome_ci_low": o_low,
                     "outcome_ci_high": o_high, "outcome_cases": n_out,
                     "trajectory_agreement": k_traj / n_traj if n_traj else math.nan, "trajectory_ci_low": t_low,
                     "trajectory_ci_high": t_high, "trajectory_cases": n_traj})
    table = pd.DataFrame(rows)
    table.attrs.update(metric=metric, confidence=confidence)
    return table
