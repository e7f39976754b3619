"""Stopping a comparison early: finished runs fed to a sequential test, which says when every pair is decided.

:class:`EarlyStop` bridges the engine (``levelfield._core.run.engine``) and a
:class:`~levelfield._core.stats.sequential.SequentialMonitor`: cases start in the rule's random
order, each run is scored on the rule's metric, and no new run starts once every pair of agents
is decided; the results then hold the runs of the cases analysed, no more.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.config import RunConfig
from ..data.dataset import EvalDataset
from ..data.types import AgentRun
from ..errors import ConfigError
from ..score.metrics.base import Metric, Score
from ..stats.inference import reduce_trials
from ..stats.sequential import SequentialMonitor, StopRule

if TYPE_CHECKING:
    from .conversation import SimulatedUser
    from .runner import Executor

__all__ = ["EarlyStop"]


class EarlyStop:
    """The bridge between finished runs and a :class:`SequentialMonitor`: each run's score on the
    rule's metric, its trials reduced per case and a failed run scored by the failed-run rule, fed
    to the monitor; ``stop()`` tells the runner when every pair is decided."""

    def __init__(self, rule: StopRule, dataset: EvalDataset, metrics: Sequence[Metric], agents: Sequence[str],
                 config: RunConfig, *, executor: Executor | None = None, simulator: SimulatedUser | None = None) -> None:
        by_name = {m.name: m for m in metrics}
        if rule.metric not in by_name:
            raise ConfigError(f"stop_early={rule.metric!r}: not one of the metrics of this comparison "
                              f"({', '.join(by_name)})")
        self.metric = by_name[rule.metric]
        if getattr(self.metric, "is_async", False):
            raise ConfigError(f"stop_early={rule.metric!r}: a judged metric is scored at the end, not as runs finish; "
                              "stop on a metric scored locally (e.g. trajectory_exact_match)")
        from ..score.metrics.registry import SCORED_0_TO_1

        if rule.margin >= 1 and self.metric.name in SCORED_0_TO_1:
            raise ConfigError(f"stop_early with margin={rule.margin:g} on {rule.metric!r}, a score from 0 to 1: every "
                              "difference lies inside that margin, so every pair would stop at once as equivalent; give "
                              f"the margin as a share of 1 (e.g. {rule.margin / 100:g} for {rule.margin:g} points)")
        if len(agents) < 2:
            raise ConfigError("stop_early compares agents pair by pair: it needs at least two agents")
        if executor is not None:
            raise ConfigError("stop_early runs on the local runner; it does not combine with executor='ray' yet")
        if simulator is not None:
            raise ConfigError("stop_early does not combine with a simulator yet (its conversations are replayed in order)")
        self.rule = rule
        self.trials = config.trials
        self.agents = list(agents)
        # Scenario cases are skipped without a simulator (and a simulator is refused above).
        self.cases = {c.case_id: c for c in dataset if c.conversation_scenario is None}
        self.order = rule.order(list(self.cases))
        self.monitor = SequentialMonitor(self.agents, self.order, alpha=rule.alpha, margin=rule.margin,
                                         pairs=list(rule.pairs) if rule.pairs else None)
        self._trials: dict[tuple[str, str], dict[int, float]] = {}
        self.started_runs = 0
        self.left_out = 0
        """Runs made after the stop (in flight when it came), journaled but not analysed."""

    def run_order(self, dataset: EvalDataset) -> EvalDataset:
        """The dataset with its cases in the rule's random order (the order runs start in)."""
        return EvalDataset([self.cases[c] for c in self.order], source=dataset.source)

    def in_dataset_order(self, dataset: EvalDataset, runs: Mapping[str, list[AgentRun]]) -> dict[str, list[AgentRun]]:
        """Each agent's runs back in dataset order, then trial order (as every result is)."""
        index = {c.case_id: i for i, c in enumerate(dataset)}
        return {a: sorted(rs, key=lambda r: (index[r.case_id], r.trial)) for a, rs in runs.items()}

    def stop(self) -> bool:
        return self.monitor.done

    @property
    def stopped(self) -> bool:
        """Every pair was decided before the last case: the runs after the stop are not analysed."""
        return self.monitor.decided_at is not None and self.monitor.decided_at < len(self.order)

    @property
    def cases_analysed(self) -> int:
        """The cases the statistics (and the results) are over: the first ones of the seeded order,
        up to the case that decided the last pair; every case complete when it did not stop."""
        return self.monitor.decided_at if self.stopped else self.monitor.analysed  # type: ignore[return-value]

    def analysed_runs(self, runs: Mapping[str, list[AgentRun]]) -> dict[str, list[AgentRun]]:
        """``runs`` without those of the cases after the stop (in flight when it came; which ones
        depends on timing): what is left is the same whatever order the runs finished in."""
        if not self.stopped:
            return dict(runs)
        analysed = set(self.order[: self.cases_analysed])
        kept = {a: [r for r in rs if r.case_id in analysed] for a, rs in runs.items()}
        self.left_out = sum(len(rs) for rs in runs.values()) - sum(len(rs) for rs in kept.values())
        return kept

    def observe(self, run: AgentRun, scores: Mapping[str, Score]) -> None:
        if run.agent_name not in self.agents or run.case_id not in self.cases:
            return
        self.started_runs += 1
        score = scores.get(self.metric.name)
        value = math.nan if score is None else float(score.value)
        if run.failure:
            applies = self.metric.applies_to(self.cases[run.case_id])
            value = 0.0 if (self.rule.failed_runs == "zero" and applies) else math.nan
        trials = self._trials.setdefault((run.agent_name, run.case_id), {})
        trials[run.trial] = value
        if len(trials) == self.trials:
            reduced = reduce_trials(np.array([[trials[t] for t in sorted(trials)]]), self.rule.reducer)[0]
            self.monitor.add(run.agent_name, run.case_id, float(reduced))

    def report(self) -> dict[str, Any]:
        """What stopping early did (for the run record): ``cases_analysed``, the cases the statistics,
        the results and the summary's ``/n`` are over, and ``runs_analysed`` their runs (both a
        function of the seed and the scores, not of timing); ``runs_made`` every run made, including
        ``runs_left_out``, those of later cases in flight at the stop (journaled, not analysed); each
        pair's decision."""
        total = len(self.order)
        analysed = self.cases_analysed
        return {
            "rule": self.rule.to_dict(),
            "stopped": self.stopped,
            "cases_analysed": analysed,
            "cases": total,
            "runs_planned": total * len(self.agents) * self.trials,
            "runs_analysed": analysed * len(self.agents) * self.trials,
            "runs_made": self.started_runs,
            "runs_left_out": self.left_out,
            "verdict": self.monitor.summary(),
            "pairs": [{"a": p.a, "b": p.b, "decision": p.decision, "winner": p.winner, "p_value": p.p_value,
                       "n": p.n, "mean_difference": p.mean_difference} for p in self.monitor.pairs],
        }
