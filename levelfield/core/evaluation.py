"""The evaluation engine: run agents on a dataset and score every run; adapter-free.

The public entry points (``lf.evaluate``, ``lf.compare``, ``EvalTask``) live in
``levelfield.evaluation``: they turn whatever the user passed into ``AgentRunnable``s and call
this engine, so ``core`` never imports an adapter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .dataset import EvalDataset
from .errors import DatasetError
from .metrics.base import Metric
from .protocol import AgentRunnable
from .results import EvalResult
from .runner import RunConfig, run_agents
from .scoring import RunScorer, context_for, score_rows
from .types import AgentOutput, AgentRun

__all__ = ["score_saved", "run_and_score"]


def _saved_runs(dataset: EvalDataset) -> list[AgentRun]:
    if not dataset.has_predictions:
        raise DatasetError(
            f"{dataset.source}: no agent was given and no row has a 'response' or 'predicted_trajectory' "
            "to score; pass an agent, or a dataset with saved predictions"
        )
    runs = []
    for case in dataset:
        latency = case.metadata.get("latency_in_seconds")
        try:
            latency = float(latency) if latency is not None else math.nan
        except (TypeError, ValueError):
            latency = math.nan
        failed = case.metadata.get("failure") in (True, 1, "1", "true", "True")
        output = None
        if not failed:
            output = AgentOutput(response=case.response or "", trajectory=case.predicted_trajectory or [])
        runs.append(
            AgentRun(
                case_id=case.case_id,
                agent_name="saved predictions",
                output=output,
                latency_in_seconds=latency,
                failure=failed,
            )
        )
    return runs


async def score_saved(dataset: EvalDataset, metrics: Sequence[Metric]) -> EvalResult:
    """Score the predictions a dataset already holds (``response``, ``predicted_trajectory``)."""
    runs = _saved_runs(dataset)
    contexts = [context_for(case, None) for case in dataset]
    # Saved rows count as runs, so saved failures score NaN like live ones.
    for ctx, run in zip(contexts, runs):
        ctx.failure = run.failure
    scores = await score_rows(contexts, metrics)
    return EvalResult(dataset, runs, scores, metrics, agent_name=None, scored_saved_predictions=True)


async def run_and_score(
    dataset: EvalDataset, agents: Sequence[AgentRunnable], metrics: Sequence[Metric], config: RunConfig
) -> dict[str, EvalResult]:
    """Every agent on every case and trial, each run scored as it finishes; one result per agent."""
    scorer = RunScorer(dataset, metrics)
    runs_by_agent = await run_agents(dataset, agents, config, on_run=scorer)
    every_run = [run for a in agents for run in runs_by_agent[a.name]]
    scores = await scorer.scores(every_run)
    results: dict[str, EvalResult] = {}
    start = 0
    for agent in agents:
        runs = runs_by_agent[agent.name]
        results[agent.name] = EvalResult(dataset, runs, scores[start : start + len(runs)], metrics, agent_name=agent.name)
        start += len(runs)
    return results
