"""Scoring one row with every metric; a metric that cannot score a row gives NaN, never a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .dataset import EvalCase
from .metrics.base import NAN, Metric, Score, ScoringContext, as_float
from .types import AgentRun

__all__ = ["context_for", "score_rows"]


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


async def score_rows(
    contexts: Sequence[ScoringContext], metrics: Sequence[Metric], *, concurrency: int = 16
) -> list[dict[str, Any]]:
    """One dict of ``<metric>/...`` columns per context, in order."""
    rows: list[dict[str, Any]] = [{} for _ in contexts]
    sync_metrics = [m for m in metrics if not getattr(m, "is_async", False)]
    async_metrics = [m for m in metrics if getattr(m, "is_async", False)]
    for metric in sync_metrics:
        name = f"{metric.name}/score"
        for row, ctx in zip(rows, contexts):
            if not metric.computable(ctx):
                row[name] = NAN
                continue
            try:
                row.update(_columns(metric, metric.score(ctx)))
            except Exception as exc:  # a metric bug must not lose the run
                row.update(_failed(metric, exc))
    if async_metrics:
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

        await asyncio.gather(*(one(m, r, c) for m in async_metrics for r, c in zip(rows, contexts)))
    return rows
