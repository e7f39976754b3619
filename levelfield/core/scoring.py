"""Scoring one row with every metric; a metric that cannot score a row gives NaN, never a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from .dataset import EvalCase
from .metrics.base import NAN, Metric, Score, ScoringContext, as_float
from .types import AgentRun

__all__ = ["context_for", "score_rows", "score_sync", "RunScorer"]


def context_for(case: EvalCase, run: AgentRun | None) -> ScoringContext:
    """The scoring context of one case: the saved prediction when ``run`` is None, else the run's output."""
    if run is None:
        response, trajectory, failure = case.response, case.predicted_trajectory or [], bool(
            case.metadata.get("failure") in (True, 1, "1", "true", "True")
        )
        run_turns = []
    else:
        out = run.output
        response = out.response if out is not None else None
        trajectory = out.trajectory if out is not None else []
        failure = run.failure
        run_turns = run.turns
    turns = []
    if case.turns:
        for i, turn in enumerate(case.turns):
            got = run_turns[i] if i < len(run_turns) else (run.output if run and len(case.turns) == 1 else None)
            turns.append(
                {
                    "prompt": turn.prompt,
                    "reference": turn.reference,
                    "reference_trajectory": turn.reference_trajectory,
                    "response": got.response if got else None,
                    "predicted_trajectory": got.trajectory if got else [],
                }
            )
    return ScoringContext(
        case_id=case.case_id,
        prompt=case.prompt,
        response=response,
        predicted_trajectory=list(trajectory),
        reference=case.reference,
        reference_trajectory=case.reference_trajectory,
        history=list(case.history),
        metadata=case.metadata,
        failure=failure,
        turns=turns,
    )


def _columns(metric: Metric, result: Any) -> dict[str, Any]:
    if isinstance(result, Score):
        cols: dict[str, Any] = {f"{metric.name}/score": as_float(result.value)}
        if result.explanation is not None:
            cols[f"{metric.name}/explanation"] = result.explanation
        for key, value in result.extra.items():
            cols[f"{metric.name}/{key}"] = value
        if result.failed:
            cols[f"{metric.name}/failed"] = True
        if result.usage is not None:
            cols[f"{metric.name}/total_tokens"] = result.usage.total_tokens
        return cols
    return {f"{metric.name}/score": as_float(result)}


def _failed(metric: Metric, exc: BaseException) -> dict[str, Any]:
    return {
        f"{metric.name}/score": NAN,
        f"{metric.name}/error": f"{type(exc).__name__}: {exc}",
        f"{metric.name}/failed": True,
    }


def score_sync(ctx: ScoringContext, metrics: Sequence[Metric]) -> dict[str, Any]:
    """The columns of the sync metrics for one row."""
    row: dict[str, Any] = {}
    for metric in metrics:
        if not metric.computable(ctx):
            row[f"{metric.name}/score"] = NAN
            continue
        try:
            row.update(_columns(metric, metric.score(ctx)))
        except Exception as exc:  # a metric bug must not lose the run
            row.update(_failed(metric, exc))
    return row


async def _score_async(
    rows: Sequence[dict[str, Any]], contexts: Sequence[ScoringContext], metrics: Sequence[Metric], concurrency: int
) -> None:
    limit = asyncio.Semaphore(concurrency)

    async def one(metric: Metric, row: dict[str, Any], ctx: ScoringContext) -> None:
        if not metric.computable(ctx):
            row[f"{metric.name}/score"] = NAN
            return
        async with limit:
            try:
                row.update(_columns(metric, await metric.ascore(ctx)))
            except Exception as exc:
                row.update(_failed(metric, exc))

    await asyncio.gather(*(one(m, r, c) for m in metrics for r, c in zip(rows, contexts)))


def _split(metrics: Sequence[Metric]) -> tuple[list[Metric], list[Metric]]:
    sync = [m for m in metrics if not getattr(m, "is_async", False)]
    return sync, [m for m in metrics if getattr(m, "is_async", False)]


async def score_rows(
    contexts: Sequence[ScoringContext], metrics: Sequence[Metric], *, concurrency: int = 16
) -> list[dict[str, Any]]:
    """One dict of ``<metric>/...`` columns per context, in order."""
    sync_metrics, async_metrics = _split(metrics)
    rows = [score_sync(ctx, sync_metrics) for ctx in contexts]
    if async_metrics:
        await _score_async(rows, contexts, async_metrics, concurrency)
    return rows


class RunScorer:
    """Scores runs as they finish: sync metrics at once, while other runs are still in flight
    (so scoring costs no wall time), async (judged) metrics together at the end.

    Pass it as ``run_agents(..., on_run=scorer)``, then ``await scorer.scores(runs)``.
    """

    def __init__(self, dataset: Iterable[EvalCase], metrics: Sequence[Metric], *, concurrency: int = 16) -> None:
        self._cases = {c.case_id: c for c in dataset}
        self._sync, self._async = _split(metrics)
        self._concurrency = concurrency
        self._done: dict[tuple[str, str, int], tuple[ScoringContext, dict[str, Any]]] = {}

    def _score(self, run: AgentRun) -> tuple[ScoringContext, dict[str, Any]]:
        ctx = context_for(self._cases[run.case_id], run)
        return ctx, score_sync(ctx, self._sync)

    def __call__(self, run: AgentRun) -> None:
        self._done[(run.agent_name, run.case_id, run.trial)] = self._score(run)

    async def scores(self, runs: Sequence[AgentRun]) -> list[dict[str, Any]]:
        """The score columns of ``runs``, in their order."""
        scored = [self._done.pop((r.agent_name, r.case_id, r.trial), None) or self._score(r) for r in runs]
        rows = [row for _, row in scored]
        if self._async:
            await _score_async(rows, [ctx for ctx, _ in scored], self._async, self._concurrency)
        return rows
