"""How each agent holds up under tool faults: ``cmp.robustness``, the "How it holds up" read-out.

``compare(..., faults=lf.Faults(...))`` runs every agent twice on the same cases, with its tools as
they are and with the seeded faults; :func:`robustness_of` puts the two comparisons side by side.
The statistics are :mod:`levelfield._core.stats.robustness`'s: per agent and metric the paired drop
clean − faulted (failed runs score 0), its paired test and the interval that inverts it at the
level Holm decided it at across the agents (the comparison's own: Tango's for 0/1 scores, the paired t
otherwise), and each agent's failed runs clean and under faults; the fault kinds that went with the largest drops; and,
with trials, how often an agent's trials agree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .._core.stats.robustness import consistency_table, drop_table, fault_kind_table

__all__ = ["Robustness", "robustness_of", "consistency_parts"]


@dataclass
class Robustness:
    """The paired drop under faults per agent and metric (``drops``), the fault kinds met (``fault_kinds``)
    and the agreement of trials (``consistency``, clean runs; empty with one trial)."""

    drops: pd.DataFrame
    fault_kinds: pd.DataFrame
    consistency: pd.DataFrame
    confidence: float
    cases: int
    trials: int
    faults: str
    """How the faults were made (the schedule's description), for the read-out's heading."""
    left_out: dict[str, str] | None = None
    """Agents that could not be given faults (a remote A2A agent's tools run on its server), with why:
    they have no row, since a drop of 0 would say they held up when they were never tested."""

    def drop(self, agent: str, metric: str) -> pd.Series:
        """The drop row of one agent on one metric."""
        rows = self.drops[(self.drops["agent"] == agent) & (self.drops["metric"] == metric)]
        if rows.empty:
            raise KeyError(f"no drop for agent {agent!r} on metric {metric!r}")
        return rows.iloc[0]

    def lines(self) -> list[str]:
        """The read-out, a line each."""
        level = f"{self.confidence:.0%}"
        out = [f"How it holds up: each agent run clean and under {self.faults} on the same {self.cases} cases"
               f"{f' x {self.trials} trials' if self.trials > 1 else ''}; drop = clean - faulted, failed runs score 0; "
               f"intervals at the level Holm decided each drop at ({level} before the adjustment)"]
        width = max([len(str(a)) for a in self.drops["agent"]] + [5])
        mwidth = max([len(str(m)) for m in self.drops["metric"]] + [6])
        out.append(f"  {'agent':<{width}}  {'metric':<{mwidth}}  {'clean':>6}  {'faulted':>7}  {'drop':>7}  "
                   f"{'interval':<18}  {'p (Holm)':>8}")
        for _, row in self.drops.iterrows():
            failed = ""
            if "failed_faulted" in row and not math.isnan(float(row["failed_faulted"])):
                failed = (f"; failed runs {int(row['failed_clean'])}/{int(row['runs'])} clean, "
                          f"{int(row['failed_faulted'])}/{int(row['runs'])} under faults")
            interval = f"[{_num(row['ci_low'])}, {_num(row['ci_high'])}] {row['ci_level']:.1%}"
            if row["n"] == 0:
                said = "no case scored on both sides"
            elif row["significant"]:
                said = "drops under faults" if row["drop"] > 0 else "scores higher under faults"
            else:
                said = "no significant drop (the interval holds 0)"
            out.append(f"  {row['agent']:<{width}}  {row['metric']:<{mwidth}}  {_num(row['clean']):>6}  "
                       f"{_num(row['faulted']):>7}  {_signed(row['drop']):>7}  {interval:<18}  "
                       f"{_p(row['p_holm']):>8}  {said} (n={int(row['n'])}{failed})")
        for agent, why in (self.left_out or {}).items():
            out.append(f"  {agent}: left out, it could not be given faults ({why})")
        if len(self.fault_kinds):
            metric = self.fault_kinds.attrs.get("metric", "")
            for agent, rows in self.fault_kinds.groupby("agent", sort=False):
                kinds = ", ".join(f"{r.kind} {_signed(r.drop)} ({r.runs} run{'s' if r.runs != 1 else ''})"
                                  for r in rows.itertuples())
                out.append(f"  fault kinds met by {agent}, mean drop on {metric} of the runs that met each "
                           f"(a run can meet several): {kinds}")
        if len(self.consistency):
            for row in self.consistency.itertuples():
                parts = consistency_parts(row)
                if parts:
                    out.append(f"  consistency of {row.agent} over {row.trials} clean trials: {'; '.join(parts)} "
                               f"({self.consistency.attrs.get('confidence', self.confidence):.0%} exact intervals)")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def consistency_parts(row: Any) -> list[str]:
    """The agreement of one agent's trials in words (a row of ``Robustness.consistency``): outcome, tool calls."""
    parts = []
    if row.outcome_cases:
        parts.append(f"same {row.metric} in every trial on {row.outcome_agreement:.0%} "
                     f"[{row.outcome_ci_low:.0%}, {row.outcome_ci_high:.0%}] of {row.outcome_cases} cases")
    if row.trajectory_cases:
        parts.append(f"same tool calls on {row.trajectory_agreement:.0%} "
                     f"[{row.trajectory_ci_low:.0%}, {row.trajectory_ci_high:.0%}] of {row.trajectory_cases}")
    return parts


def _num(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3f}".replace("-0.000", "0.000")


def _signed(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    text = f"{value:+.3f}"
    return "0.000" if text in ("+0.000", "-0.000") else text


def _p(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _trajectory_key(run: Any) -> Any:
    output = getattr(run, "output", None)
    if getattr(run, "failure", False) or output is None:
        return None
    return tuple((call.tool_name, json.dumps(call.tool_input, sort_keys=True, default=str, ensure_ascii=False))
                 for call in output.trajectory)


def _faults_met(run: Any) -> frozenset[str]:
    events = getattr(run, "tool_events", None) or []
    return frozenset(str(e.get("fault")) for e in events if isinstance(e, dict) and e.get("fault"))


def robustness_of(clean: Any, faulted: Any, *, faults: str = "faults", seed: int = 0) -> Robustness:
    """The read-out of two comparisons of the same agents on the same cases, one clean and one under faults."""
    alpha = 1 - clean.confidence
    levelling = getattr(faulted, "tool_levelling", None) or {}
    left_out = {a: str(levelling[a].get("why") or "its tools were not levelled") for a in clean.agents
                if a in levelling and isinstance(levelling[a], dict) and levelling[a].get("levelled") is False
                and levelling[a].get("why") != "not recorded"}  # an older saved run says nothing: keep its rows
    agents = [a for a in clean.agents if a in faulted.agents and a not in left_out]
    if list(faulted.case_ids) != list(clean.case_ids):
        raise ValueError("the clean and the faulted comparison must hold the same cases in the same order")
    drops, kinds, agreement = [], [], []
    index = {cid: i for i, cid in enumerate(clean.case_ids)}
    for metric in clean.metric_names:
        c = {a: clean.trial_scores(metric, a, failed_runs="zero") for a in agents}
        f = {a: faulted.trial_scores(metric, a, failed_runs="zero") for a in agents}
        drops.append(drop_table(c, f, metric, alpha=alpha, seed=seed))
    primary = clean.metric_names[0] if clean.metric_names else None
    if primary is not None:
        pairs = []
        for agent in agents:
            matrix = clean.trial_scores(primary, agent, failed_runs="zero")
            result = faulted.results[agent]
            runs = [] if result.streamed else result.runs
            values = faulted.trial_scores(primary, agent, failed_runs="zero")
            for run in runs:
                i = index.get(run.case_id)
                met = _faults_met(run)
                if i is not None and met and run.trial < matrix.shape[1]:
                    pairs.append((agent, met, float(matrix[i, run.trial]), float(values[i, run.trial])))
        kinds_table = fault_kind_table(pairs)
        kinds_table.attrs["metric"] = primary
        kinds.append(kinds_table)
        if clean.trials > 1:
            outcomes = {a: clean.trial_scores(primary, a, failed_runs="zero") for a in agents}
            trajectories: dict[str, list[list[Any]]] = {}
            for agent in agents:
                result = clean.results[agent]
                per_case: list[list[Any]] = [[None] * clean.trials for _ in clean.case_ids]
                for run in [] if result.streamed else result.runs:
                    i = index.get(run.case_id)
                    if i is not None and run.trial < clean.trials:
                        per_case[i][run.trial] = _trajectory_key(run)
                trajectories[agent] = per_case
            agreement.append(consistency_table(outcomes, trajectories, primary, confidence=clean.confidence))
    drop_frame = pd.concat(drops, ignore_index=True) if drops else drop_table({}, {}, "", alpha=alpha)
    if len(drop_frame):
        runs = {a: _run_count(clean, a) for a in agents}
        drop_frame["runs"] = drop_frame["agent"].map(lambda a: runs[a][1])
        drop_frame["failed_clean"] = drop_frame["agent"].map(lambda a: runs[a][0])
        drop_frame["failed_faulted"] = drop_frame["agent"].map(lambda a: _run_count(faulted, a)[0])
    kinds_frame = kinds[0] if kinds else fault_kind_table([])
    consistency = agreement[0] if agreement else pd.DataFrame()
    return Robustness(drop_frame, kinds_frame, consistency, clean.confidence, len(clean.case_ids), clean.trials, faults,
                      left_out or None)


def _run_count(cmp: Any, agent: str) -> tuple[int, int]:
    """(failed runs, runs) of one agent in a comparison, from its summary."""
    row = cmp.summary.loc[agent]
    return int(row.get("failures", 0) or 0), int(row.get("runs", 0) or 0)
