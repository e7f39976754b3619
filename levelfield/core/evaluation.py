"""The entry points: ``evaluate`` (and its async twin) and Vertex's ``EvalTask`` shape."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .dataset import EvalDataset, load_dataset
from .errors import DatasetError
from .metrics.base import Metric
from .metrics.registry import resolve_metrics
from .protocol import AgentRunnable
from .results import EvalResult
from .runner import RunConfig, run_agents, run_coroutine
from .scoring import RunScorer, context_for, score_rows
from .types import AgentOutput, AgentRun

__all__ = ["evaluate", "aevaluate", "EvalTask"]


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


async def aevaluate(
    dataset: Any,
    agent: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    name: str | None = None,
    concurrency: int = 8,
    timeout: float | None = 120.0,
    retries: int = 2,
    backoff: float = 0.5,
    trials: int = 1,
    progress: bool = True,
) -> EvalResult:
    """Async twin of :func:`evaluate`."""
    from ..adapters.auto import as_agent

    ds = load_dataset(dataset)
    resolved = resolve_metrics(metrics)
    config = RunConfig(
        concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff, trials=trials, progress=progress
    )
    if agent is None:
        runs = _saved_runs(ds)
        contexts = [context_for(case, None) for case in ds]
        # Saved rows count as runs, so saved failures score NaN like live ones.
        for ctx, run in zip(contexts, runs):
            ctx.failure = run.failure
        scores = await score_rows(contexts, resolved)
        return EvalResult(ds, runs, scores, resolved, agent_name=None, scored_saved_predictions=True)
    runnable: AgentRunnable = as_agent(agent, name=name)
    scorer = RunScorer(ds, resolved)
    runs = (await run_agents(ds, [runnable], config, on_run=scorer))[runnable.name]
    scores = await scorer.scores(runs)
    return EvalResult(ds, runs, scores, resolved, agent_name=runnable.name)


def evaluate(
    dataset: Any,
    agent: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    name: str | None = None,
    concurrency: int = 8,
    timeout: float | None = 120.0,
    retries: int = 2,
    backoff: float = 0.5,
    trials: int = 1,
    progress: bool = True,
) -> EvalResult:
    """Run ``agent`` on every case of ``dataset`` and score it; without an agent, score saved predictions.

    ``dataset``: a DataFrame, list of dicts, path or EvalDataset. ``agent``: anything ``as_agent``
    accepts (a function, a LangChain runnable, an A2A URL, an Agent Engine agent...). ``metrics``:
    names (``"trajectory_exact_match"``, ``"rouge_l_sum"``, ...) or metric objects.
    Each run has ``timeout`` seconds per attempt; errors the adapter marks transient are retried
    ``retries`` times with exponential ``backoff``; ``trials`` runs every case that many times.
    A run that fails is recorded as a failed row; the evaluation always completes.
    """
    return run_coroutine(
        aevaluate(
            dataset,
            agent,
            metrics,
            name=name,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            trials=trials,
            progress=progress,
        )
    )


class EvalTask:
    """Vertex AI's entry point: ``EvalTask(dataset, metrics).evaluate(runnable=agent)``."""

    def __init__(
        self,
        dataset: Any,
        metrics: Sequence[str | Metric] | None = None,
        *,
        experiment: str | None = None,
        **run_options: Any,
    ) -> None:
        self.dataset = load_dataset(dataset)
        self.metrics = resolve_metrics(metrics)
        self.experiment = experiment
        self.run_options: Mapping[str, Any] = run_options

    def evaluate(
        self,
        *,
        runnable: Any = None,
        experiment_run_name: str | None = None,
        **run_options: Any,
    ) -> EvalResult:
        """Run ``runnable`` (any agent ``as_agent`` accepts) on the dataset, or score saved predictions."""
        options = {**self.run_options, **run_options}
        return evaluate(self.dataset, runnable, self.metrics, **options)
