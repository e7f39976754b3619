"""Scoring runs as they finish (:class:`RunScorer`): the sync metrics a batch of finished runs at a
time while other runs are in flight, the judged ones together at the end."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from ...data.cost_limit import CostLimit
from ...data.dataset import EvalCase
from ...data.types import AgentRun
from ..metrics.base import Metric, Score, ScoringContext
from ..scoring import context_for, order_like, score_async, split_metrics
from .scorer import BatchScorer

__all__ = ["RunScorer", "is_trajectory_metric"]


def is_trajectory_metric(metric: Metric) -> bool:
    """Whether ``metric`` scores the agent's tool calls (it needs or reads a trajectory)."""
    return "reference_trajectory" in getattr(metric, "requires", ()) or "predicted_trajectory" in (
        getattr(metric, "reads", None) or ())


def _any_calls(run: AgentRun) -> bool:
    outputs = [run.output, *run.turns] if run.output is not None else list(run.turns)
    return any(o is not None and o.trajectory for o in outputs)


class RunScorer:
    """Scores runs as they finish, by the engine: sync metrics in batches of the runs that finished
    together (while other runs are still in flight, so scoring costs no wall time), judged metrics
    together at the end.

    Pass it as ``run_agents(..., on_run=scorer)``, then ``await scorer.scores(runs)``.
    """

    def __init__(self, dataset: Iterable[EvalCase], metrics: Sequence[Metric], *, concurrency: int = 16,
                 budget: CostLimit | None = None) -> None:
        self.budget = budget
        """The judges' spending limit (``judge_max_cost_usd``), when one was set."""
        self._cases = {c.case_id: c for c in dataset}
        self._metrics = list(metrics)
        self._engine = BatchScorer(self._metrics)
        _, self._async = split_metrics(metrics)
        self._concurrency = concurrency
        self._done: dict[tuple[str, str, int], tuple[ScoringContext | None, dict[str, Score]]] = {}
        self._deferred: list[AgentRun] = []
        self.hidden_calls: dict[str, str] = {}
        """Agents known not to expose their tool calls (an A2A preflight found none), each with what to say:
        their successful runs without a call get NaN with that explanation on trajectory metrics, not 0."""
        self.hidden_from: Callable[[], Mapping[str, str]] | None = None
        """More such agents, asked before each scoring (what the agents' answers so far showed)."""
        self._trajectory = [m.name for m in self._metrics if is_trajectory_metric(m)]

    def _score(self, runs: Sequence[AgentRun]) -> list[tuple[ScoringContext, dict[str, Score]]]:
        contexts = [context_for(self._cases[run.case_id], run) for run in runs]
        rows = self._engine.score_contexts(contexts)
        hidden = {**self.hidden_calls, **(self.hidden_from() if self.hidden_from is not None else {})}
        if hidden and self._trajectory:
            for run, row in zip(runs, rows):
                said = hidden.get(run.agent_name)
                if said is not None and not run.failure and not _any_calls(run):
                    for name in self._trajectory:
                        if name in row:
                            row[name] = Score(math.nan, explanation=said)
        return list(zip(contexts, rows))

    def _keep(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        scored = self._score(runs)
        for run, (ctx, row) in zip(runs, scored):
            # The context is kept only for the judged metrics scored at the end: a run's context
            # kept for nothing is garbage the collector scans again and again while runs are in flight.
            self._done[(run.agent_name, run.case_id, run.trial)] = (ctx if self._async else None, row)
        return [row for _, row in scored]

    @property
    def judged(self) -> bool:
        """Whether some metric is judged (scored together at the end, in :meth:`scores`)."""
        return bool(self._async)

    def score_now(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        """The sync metrics' scores of ``runs``, kept nowhere: for runs the caller journals and does not hold."""
        return [row for _, row in self._score(runs)] if runs else []

    def keep(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        """Score ``runs``' sync metrics now, in one batch, keeping them for :meth:`scores`; returns them."""
        return self._keep(runs) if runs else []

    def __call__(self, run: AgentRun) -> dict[str, Score]:
        """Score ``run``'s sync metrics now (a batch of one); returns them (judged metrics come in :meth:`scores`)."""
        return self._keep([run])[0]

    def defer(self, run: AgentRun) -> None:
        """Score ``run`` once the event loop has run what is ready now (the next runs started),
        together with the other runs deferred meanwhile: scoring then fills the loop's idle time
        instead of delaying the runs that finished with it."""
        self._deferred.append(run)
        if len(self._deferred) == 1:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is None:  # no loop: score now (outside the except, so a metric's error carries no RuntimeError)
                self._score_deferred()
            else:
                loop.call_soon(self._score_deferred)

    def _score_deferred(self) -> None:
        runs, self._deferred = self._deferred, []
        if runs:
            self._keep(runs)

    async def scores(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        """Every metric's score of ``runs``, in their order."""
        self._score_deferred()
        keys = [(r.agent_name, r.case_id, r.trial) for r in runs]
        left = [r for r, key in zip(runs, keys) if key not in self._done]
        if left:
            self._keep(left)  # runs finished before this scorer saw them (a resumed journal's): one batch
        scored = [self._done.pop(key) for key in keys]
        rows = [row for _, row in scored]
        if self._async:
            contexts = [ctx if ctx is not None else context_for(self._cases[r.case_id], r) for r, (ctx, _) in zip(runs, scored)]
            await score_async(rows, contexts, self._async, self._concurrency, self.budget)
            rows = [order_like(row, self._metrics) for row in rows]
        return rows
