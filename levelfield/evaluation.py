"""The entry points: ``evaluate`` (and its async twin), Vertex's ``EvalTask`` shape, and
``compare``. They turn what the user passed into agents (``as_agent``, agent specs) and hand
them to the adapter-free engine in ``levelfield.core``.

Run options (concurrency, timeout, retries, backoff, trials, progress, agent_concurrency, out,
resume, overwrite) are the fields of :class:`~levelfield.core.config.RunConfig`, given as
``config=RunConfig(...)`` and/or as keywords; their defaults are defined there, once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import Unpack

from .adapters.auto import as_agent
from .adapters.spec import load_agent_spec
from .comparison import Comparison, FailedRuns
from .core import stats
from .core.config import RunConfig, RunOptions, run_config
from .core.errors import ConfigError, ConfigTypeError
from .core.evaluation import run_and_score, score_saved
from .core.metrics.base import Metric
from .core.metrics.registry import resolve_metrics
from .core.protocol import AgentRunnable
from .core.results import EvalResult
from .core.runner import run_coroutine
from .formats import load_dataset

__all__ = ["evaluate", "aevaluate", "EvalTask", "compare", "acompare"]


async def aevaluate(
    dataset: Any,
    agent: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    name: str | None = None,
    config: RunConfig | None = None,
    **options: Unpack[RunOptions],
) -> EvalResult:
    """Async twin of :func:`evaluate`."""
    cfg = run_config(config, **options)
    ds = load_dataset(dataset)
    resolved = resolve_metrics(metrics)
    if agent is None:
        result = await score_saved(ds, resolved, cfg)
    else:
        if isinstance(agent, str):
            agent = load_agent_spec(agent)
        runnable: AgentRunnable = as_agent(agent, name=name)
        result = (await run_and_score(ds, [runnable], resolved, cfg, kind="evaluate"))[runnable.name]
    if cfg.out_dir is not None:
        result.save(cfg.out_dir)
    return result


def evaluate(
    dataset: Any,
    agent: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    name: str | None = None,
    config: RunConfig | None = None,
    **options: Unpack[RunOptions],
) -> EvalResult:
    """Run ``agent`` on every case of ``dataset`` and score it; without an agent, score saved predictions.

    ``dataset``: a DataFrame, list of dicts, path or EvalDataset. ``agent``: anything ``as_agent``
    accepts (a function, a LangChain runnable, an A2A URL, an Agent Engine agent...) or a spec
    string (``"pkg.mod:attr"``). ``metrics``: names (``"trajectory_exact_match"``, ``"rouge_l_sum"``,
    ...) or metric objects. Run options (see ``RunConfig``): each run has ``timeout`` seconds per
    attempt; errors the adapter marks transient are retried ``retries`` times with exponential
    ``backoff``; ``trials`` runs every case that many times; ``out="dir"`` journals every run as it
    finishes and writes the results there; ``resume=True`` runs only what that journal lacks.
    A run that fails is recorded as a failed row; the evaluation always completes.
    """
    return run_coroutine(aevaluate(dataset, agent, metrics, name=name, config=config, **options))


class EvalTask:
    """Vertex AI's entry point: ``EvalTask(dataset, metrics).evaluate(runnable=agent)``."""

    def __init__(
        self,
        dataset: Any,
        metrics: Sequence[str | Metric] | None = None,
        *,
        experiment: str | None = None,
        config: RunConfig | None = None,
        **options: Unpack[RunOptions],
    ) -> None:
        self.dataset = load_dataset(dataset)
        self.metrics = resolve_metrics(metrics)
        self.experiment = experiment
        self.config = run_config(config, **options)

    def evaluate(
        self,
        *,
        runnable: Any = None,
        experiment_run_name: str | None = None,
        config: RunConfig | None = None,
        **options: Unpack[RunOptions],
    ) -> EvalResult:
        """Run ``runnable`` (any agent ``as_agent`` accepts) on the dataset, or score saved predictions."""
        return evaluate(self.dataset, runnable, self.metrics, config=run_config(config or self.config, **options))


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
    config: RunConfig | None = None,
    failed_runs: FailedRuns = "zero",
    confidence: float = 0.95,
    test: stats.PairedTestName = "auto",
    seed: int = 0,
    reducer: stats.Reducer = "mean",
    **options: Unpack[RunOptions],
) -> Comparison:
    """Async twin of :func:`compare`."""
    cfg = run_config(config, **options)
    ds = load_dataset(dataset)
    resolved = resolve_metrics(metrics)
    runnables = _resolve_agents(agents)
    unknown = sorted(set(cfg.agent_concurrency) - {r.name for r in runnables})
    if unknown:
        raise ConfigError(f"agent_concurrency names unknown agents: {', '.join(unknown)}")
    settings = {"failed_runs": failed_runs, "confidence": confidence, "test": test, "seed": seed, "reducer": reducer}
    # Check the statistics settings before any agent runs.
    Comparison(ds, {}, resolved, trials=cfg.trials, **settings)
    results = await run_and_score(ds, runnables, resolved, cfg, kind="compare", settings=settings)
    cmp = Comparison(ds, results, resolved, trials=cfg.trials, config=cfg, **settings)
    if cfg.out_dir is not None:
        cmp.save(cfg.out_dir)
    return cmp


def compare(
    dataset: Any,
    agents: Mapping[str, Any] | Sequence[Any],
    metrics: Sequence[str | Metric] | None = None,
    *,
    config: RunConfig | None = None,
    failed_runs: FailedRuns = "zero",
    confidence: float = 0.95,
    test: stats.PairedTestName = "auto",
    seed: int = 0,
    reducer: stats.Reducer = "mean",
    **options: Unpack[RunOptions],
) -> Comparison:
    """Run every agent on every case of ``dataset`` and score them with the same metrics.

    ``agents``: ``{"name": agent}`` where an agent is anything ``as_agent`` accepts or a spec
    string (``"module:attr"``, an ``http(s)://`` A2A URL, an Agent Engine resource name).
    All runs share one budget of ``concurrency`` runs in flight; ``agent_concurrency={"name": n}``
    caps one agent further (a rate-limited endpoint). ``trials=k`` runs every case k times and
    adds pass@k, pass^k and flaky counts; ``reducer`` says how a case's trials become one value
    (``mean``, ``max``, ``min``, ``median``). ``failed_runs``: ``"zero"`` (a failed run scores 0)
    or ``"exclude"`` (left out); see ``levelfield.comparison``. ``test``: the paired test,
    ``auto`` = exact McNemar for 0/1 metrics, Wilcoxon signed-rank otherwise. ``out``/``resume``:
    the run journal, as in :func:`evaluate`; the report is written there too.
    """
    return run_coroutine(
        acompare(
            dataset, agents, metrics, config=config, failed_runs=failed_runs, confidence=confidence,
            test=test, seed=seed, reducer=reducer, **options,
        )
    )
