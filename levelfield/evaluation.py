"""The entry points: ``evaluate`` (and its async twin), Vertex's ``EvalTask`` shape, and
``compare``. They turn what the user passed into agents (``as_agent``, agent specs) and hand
them to the adapter-free engine in ``levelfield.core``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .adapters.auto import as_agent
from .adapters.spec import load_agent_spec
from .core import stats
from .core.comparison import Comparison, FailedRuns
from .core.dataset import load_dataset
from .core.evaluation import run_and_score, score_saved
from .core.metrics.base import Metric
from .core.metrics.registry import resolve_metrics
from .core.protocol import AgentRunnable
from .core.results import EvalResult
from .core.runner import RunConfig, run_coroutine
from .core.errors import ConfigError, ConfigTypeError

__all__ = ["evaluate", "aevaluate", "EvalTask", "compare", "acompare"]


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
    ds = load_dataset(dataset)
    resolved = resolve_metrics(metrics)
    config = RunConfig(
        concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff, trials=trials, progress=progress
    )
    if agent is None:
        return await score_saved(ds, resolved)
    runnable: AgentRunnable = as_agent(agent, name=name)
    return (await run_and_score(ds, [runnable], resolved, config))[runnable.name]


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


def _resolve_agents(agents: Any) -> list[Any]:
    if isinstance(agents, Mapping):
        items = list(agents.items())
    elif isinstance(agents, Sequence) and not isinstance(agents, str):
        items = [(None, a) for a in agents]
    else:
        raise ConfigTypeError("compare() takes agents as a dict {name: agent} (or a list of agents)")
    if not items:
        raise ConfigError("compare() needs at least one agent")
    runnables = []
    for name, agent in items:
        if isinstance(agent, str):
            agent = load_agent_spec(agent)
        runnables.append(as_agent(agent, name=name))
    names = [r.name for r in runnables]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"compare(): agent names must be unique; repeated: {', '.join(repeated)} (pass a dict to name them)")
    return runnables


async def acompare(
    dataset: Any,
    agents: Mapping[str, Any] | Sequence[Any],
    metrics: Sequence[str | Metric] | None = None,
    *,
    trials: int = 1,
    concurrency: int = 8,
    agent_concurrency: Mapping[str, int] | None = None,
    timeout: float | None = 120.0,
    retries: int = 2,
    backoff: float = 0.5,
    progress: bool = True,
    failed_runs: FailedRuns = "zero",
    confidence: float = 0.95,
    test: stats.PairedTestName = "auto",
    seed: int = 0,
) -> Comparison:
    """Async twin of :func:`compare`."""
    ds = load_dataset(dataset)
    resolved = resolve_metrics(metrics)
    runnables = _resolve_agents(agents)
    unknown = sorted(set(agent_concurrency or {}) - {r.name for r in runnables})
    if unknown:
        raise ConfigError(f"agent_concurrency names unknown agents: {', '.join(unknown)}")
    config = RunConfig(
        concurrency=concurrency,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        trials=trials,
        progress=progress,
        agent_concurrency=agent_concurrency,
    )
    results = await run_and_score(ds, runnables, resolved, config)
    return Comparison(
        ds, results, resolved, trials=trials, failed_runs=failed_runs, confidence=confidence, test=test, seed=seed
    )


def compare(
    dataset: Any,
    agents: Mapping[str, Any] | Sequence[Any],
    metrics: Sequence[str | Metric] | None = None,
    *,
    trials: int = 1,
    concurrency: int = 8,
    agent_concurrency: Mapping[str, int] | None = None,
    timeout: float | None = 120.0,
    retries: int = 2,
    backoff: float = 0.5,
    progress: bool = True,
    failed_runs: FailedRuns = "zero",
    confidence: float = 0.95,
    test: stats.PairedTestName = "auto",
    seed: int = 0,
) -> Comparison:
    """Run every agent on every case of ``dataset`` and score them with the same metrics.

    ``agents``: ``{"name": agent}`` where an agent is anything ``as_agent`` accepts or a spec
    string (``"module:attr"``, an ``http(s)://`` A2A URL, an Agent Engine resource name).
    All runs share one budget of ``concurrency`` runs in flight; ``agent_concurrency={"name": n}``
    caps one agent further (a rate-limited endpoint). ``trials=k`` runs every case k times and
    adds pass@k, pass^k and flaky counts. ``failed_runs``: ``"zero"`` (a failed run scores 0) or
    ``"exclude"`` (left out); see the module docs. ``test``: the paired test, ``auto`` = exact
    McNemar for 0/1 metrics, Wilcoxon signed-rank otherwise.
    """
    return run_coroutine(
        acompare(
            dataset,
            agents,
            metrics,
            trials=trials,
            concurrency=concurrency,
            agent_concurrency=agent_concurrency,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            progress=progress,
            failed_runs=failed_runs,
            confidence=confidence,
            test=test,
            seed=seed,
        )
    )
