"""The evaluation entry points: ``evaluate`` (and its async twin) and Vertex's ``EvalTask`` shape.

They turn what the user passed into agents (``as_agent``, agent specs) and hand them to the
adapter-free engine in ``levelfield._core``; what they do for one agent (agents from specs, executors,
option checks, short errors, warnings) :mod:`levelfield.comparing` does for ``compare`` too.

Run options (concurrency, timeout, retries, backoff, trials, progress, agent_concurrency, out,
resume, overwrite, isolation, executor) are the fields of
:class:`~levelfield._core.data.config.RunConfig`, given as ``config=RunConfig(...)`` and/or as
keywords; their defaults are defined there, once. A comparison's statistics options are the fields
of :class:`~levelfield._core.stats.config.StatsConfig`, given as ``stats=StatsConfig(...)``.

Each sync entry point is its async twin run to completion: one implementation.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import Unpack

from ._core.data.config import RunConfig, RunOptions, run_config
from ._core.errors import ConfigError, LevelfieldError
from ._core.results.lock import holding
from ._core.run.notices import MissingReferenceWarning, unscored_metrics, warn_user
from ._core.run.threads import run_coroutine
from ._core.score.metrics.registry import nearest_name, resolve_metrics
from .executors import resolve_executor, ships_agents
from .executors.saved import check_out, score_saved_rows, takes_columnar_path
from .failure_summary import AllRunsFailedWarning, JudgeAnswersUnreadableWarning, failure_groups, unreadable_judges

# Scoring saved rows needs none of the rest (the runner, adapters, simulator and judges, Ray, the
# statistics of a comparison): each loads in the function that uses it, so that the first
# ``lf.evaluate(path, metrics=...)`` of a process does not pay for them (issue #46).
if TYPE_CHECKING:
    from ._core.data.protocol import AgentRunnable
    from ._core.results.result import EvalResult
    from ._core.run.runner import Executor
    from ._core.score.metrics.base import Metric
    from ._core.stats.config import StatsConfig
    from .judge.config import JudgeConfig


def load_dataset(data: Any) -> Any:
    """``levelfield.formats.load_dataset``, loaded when first called."""
    from .formats.files import load_dataset as load

    return load(data)


def as_simulator(simulator: Any) -> Any:
    """``levelfield.simulation.as_simulator``, loaded when first called."""
    if simulator is None:
        return None
    from .simulation import as_simulator as simulator_of

    return simulator_of(simulator)

__all__ = ["evaluate", "aevaluate", "EvalTask"]

T = TypeVar("T")


def _short_errors(call: Callable[[], T]) -> T:
    """Run an entry point's body; a levelfield error surfaces from the entry point itself.

    Without this, a bad dataset row or agent spec ends in thirty lines of asyncio frames
    above a message that already says what and where. ``LEVELFIELD_DEBUG=1`` keeps them.
    """
    try:
        return call()
    except LevelfieldError as exc:
        if os.environ.get("LEVELFIELD_DEBUG"):
            raise
        raise exc.with_traceback(None) from None


async def _short_errors_async(call: Awaitable[T]) -> T:
    """:func:`_short_errors` for the async entry points."""
    try:
        return await call
    except LevelfieldError as exc:
        if os.environ.get("LEVELFIELD_DEBUG"):
            raise
        raise exc.with_traceback(None) from None


def _warn_if_always_failed(results: Mapping[str, EvalResult]) -> None:
    # The runs are kept (an evaluation never loses one), but a silent all-NaN table misleads.
    for agent, result in results.items():
        failed = result.run_failures()  # journaled runs are not read back for this: only the failed ones
        if len(failed) and failed.all():
            group = failure_groups({agent: result.failures})[0]
            warn_user(
                AllRunsFailedWarning(
                    f"every run of agent {agent!r} failed ({len(failed)} runs); most often "
                    f"{group.error_type} x{group.count}, e.g. case {group.case_id}: {group.example}"
                )
            )


def _warn_if_judges_unreadable(results: Mapping[str, EvalResult], metrics: Sequence[Metric]) -> None:
    # A judge whose answers no parser reads leaves NaN on every row: said once per metric, never silent.
    for found in unreadable_judges(results, metrics):
        warn_user(JudgeAnswersUnreadableWarning(found.message()))


def _require_experiment_logging(experiment: str | None) -> None:
    # Checked before any agent runs, so a missing extra does not cost a whole evaluation.
    if experiment is not None:
        from .experiment import check_experiment_name, require_mlflow

        check_experiment_name(experiment)
        require_mlflow()


def _log_experiment(log: Callable[[], Any], experiment: str) -> None:
    # The evaluation is done and paid for: a tracking store that refuses it must not lose it.
    try:
        log()
    except Exception as exc:  # noqa: BLE001 - any store or network failure
        warn_user(f"could not log to MLflow experiment {experiment!r} ({type(exc).__name__}: {exc}); "
              "the result is returned as usual", RuntimeWarning)


def _saved_batch_by_batch(dataset: Any, metrics: Sequence[Metric], cfg: RunConfig) -> EvalResult | None:
    """Saved predictions scored batch by batch (on Ray Data with ``executor="ray"``); None when
    they are scored row by row (small inputs, judged metrics; see ``levelfield.executors.saved``)."""
    # A dataset load_dataset read from a DataFrame, rows or a file takes the same route as that source:
    # its rows were checked when loaded; the columnar scorer reads them without building cases again.
    source = getattr(dataset, "loaded_from", None)
    dataset = dataset if source is None else source
    executor = resolve_executor(cfg.executor) if ships_agents(cfg.executor) else None
    ray = None
    if executor is not None:
        from .executors import ray
    if (ray is not None and isinstance(executor, ray.RayExecutor) and ray.scores_on_ray_data(dataset)
            and takes_columnar_path(dataset, metrics, cfg.replace(workers=2))):  # at any size: Ray was asked for
        # A saved-predictions file scored on Ray Data, with the same columnar scorer.
        result = ray.score_saved_on_ray(executor, dataset, metrics, cfg)
    elif takes_columnar_path(dataset, metrics, cfg):
        # Saved predictions in a file or in memory: scored batch by batch, in bounded memory.
        result = score_saved_rows(dataset, metrics, cfg)
    else:
        return None
    for text in unscored_metrics(result.summary_metrics, metrics, result.source):
        warn_user(MissingReferenceWarning(text))
    return result


async def aevaluate(
    dataset: Any,
    agent: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    name: str | None = None,
    config: RunConfig | None = None,
    human_labels: Any = None,
    simulator: Any = None,
    experiment: str | None = None,
    judge: Any = None,
    judge_config: JudgeConfig | None = None,
    tools: Any = None,
    faults: Any = None,
    stats: StatsConfig | None = None,
    **options: Unpack[RunOptions],
) -> EvalResult:
    """Async twin of :func:`evaluate` (the same arguments, the same result)."""
    return await _short_errors_async(_evaluate(dataset, agent, metrics, name=name, config=config, human_labels=human_labels,
                                               simulator=simulator, experiment=experiment, judge=judge, judge_config=judge_config, tools=tools,
                                               faults=faults, options=dict(options), stats=stats))


def evaluate(
    dataset: Any,
    agent: Any = None,
    metrics: Sequence[str | Metric] | None = None,
    *,
    name: str | None = None,
    config: RunConfig | None = None,
    human_labels: Any = None,
    simulator: Any = None,
    experiment: str | None = None,
    judge: Any = None,
    judge_config: JudgeConfig | None = None,
    tools: Any = None,
    faults: Any = None,
    stats: StatsConfig | None = None,
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
    ``human_labels``: pass/fail labels by humans on some cases (a CSV/JSONL file with ``case_id``
    and ``human_label``, a DataFrame or ``{case_id: label}``); each judged 0/1 metric then gets a
    judge-corrected rate in ``result.judge_corrections`` and ``<metric>/corrected_mean`` in the
    summary (``levelfield._core.stats.judge_correction``). A ``human_label`` column in the dataset does
    the same without this option. ``stats=lf.StatsConfig(judge_scores="probability", confidence=...)``
    corrects from the judge's probabilities of a pass instead of its verdicts (its other options
    are for comparisons: ``lf.compare``).
    ``isolation="process"`` runs the agent in worker processes, so a crash (a segfault,
    ``os._exit``) fails that run only; the agent must then be picklable or a ``"pkg.mod:attr"`` spec.
    ``executor="ray"`` (or ``lf.RayExecutor(address=..., num_workers=...)``) runs the agent on a
    Ray cluster (see :mod:`levelfield.executors.ray`); journal, scores and results stay here and
    are the same as a local run's.
    ``simulator``: a user simulator (``lf.UserSimulator(model)``, ``lf.testing.ScriptedUser(...)``)
    that plays the dataset's conversation-scenario cases; without one they are skipped.
    A failed run never stops the evaluation (a warning says so when every run failed); bad input
    (dataset, metric, agent spec, option) raises a ``LevelfieldError`` from here, before any agent
    runs. ``experiment="name"`` logs the result to MLflow tracking (see :mod:`levelfield.experiment`).
    ``judge`` (a chat model, ``"provider:model"``, a function or an agent) builds the metric names
    that need one, e.g. ``metrics=["final_response_match_v2", "safety_v1"]``; ``judge_config=lf.JudgeConfig(
    samples=3, timeout=30)`` says how those metrics ask it (a metric object takes its own ``judge_config``).
    """
    return _short_errors(lambda: run_coroutine(aevaluate(
        dataset, agent, metrics, name=name, config=config, human_labels=human_labels, simulator=simulator,
        experiment=experiment, judge=judge, judge_config=judge_config, tools=tools, faults=faults, stats=stats, **options)))


async def _evaluate(
    dataset: Any,
    agent: Any,
    metrics: Sequence[str | Metric] | None,
    *,
    name: str | None,
    config: RunConfig | None,
    human_labels: Any,
    simulator: Any,
    experiment: str | None,
    judge: Any = None,
    judge_config: JudgeConfig | None = None,
    tools: Any = None,
    faults: Any = None,
    options: dict[str, Any],
    stats: StatsConfig | None = None,
) -> EvalResult:
    """The one implementation of ``evaluate`` and ``aevaluate``."""
    _require_experiment_logging(experiment)
    settings = None if stats is None else _evaluate_stats(stats)  # None: the defaults (loaded only if needed)
    cfg = run_config(config, _function=evaluate, **options)
    resolved = resolve_metrics(metrics, judge=judge, judge_config=_judge_config(judge_config))
    result = None
    if agent is None and cfg.max_cost_usd is not None:
        raise ConfigError("max_cost_usd limits agents' runs; scoring saved predictions runs no agent "
                          "(judge_max_cost_usd limits the judges)")
    if agent is None and cfg.agent_concurrency:
        raise ConfigError("agent_concurrency caps agents' runs; scoring saved predictions runs no agent")
    if agent is None and cfg.trials != 1:
        raise ConfigError(f"trials={cfg.trials} runs the agent on every case that many times; scoring saved predictions "
                          "runs no agent (each saved row is scored once, its trial kept as saved)")
    if agent is None and cfg.isolation != "none":
        raise ConfigError(f"isolation={cfg.isolation!r} runs agents in worker processes; scoring saved predictions runs "
                          "no agent (workers= sets the processes that score them)")
    _check_judge_budget(cfg, resolved)
    if agent is None and (tools is not None or faults is not None):
        raise ConfigError("tools=/faults= level the tools of agents' runs; scoring saved predictions runs no agent")
    with holding(cfg.out_dir):  # one writer per out folder, from reading its journal to saving the results
        if agent is None and simulator is None and human_labels is None:
            result = _saved_batch_by_batch(dataset, resolved, cfg)
        if result is None:
            result = await _run_evaluation(dataset, agent, resolved, name=name, cfg=cfg, human_labels=human_labels,
                                           simulator=simulator, tools=tools, faults=faults, settings=settings)
    _warn_if_judges_unreadable({result.agent_name or "saved": result}, resolved)
    if experiment is not None:
        from .experiment import log_evaluation

        _log_experiment(lambda: log_evaluation(result, experiment), experiment)
    return result


async def _run_evaluation(
    dataset: Any, agent: Any, metrics: list[Metric], *, name: str | None, cfg: RunConfig, human_labels: Any, simulator: Any,
    tools: Any = None, faults: Any = None, settings: StatsConfig | None = None,
) -> EvalResult:
    from ._core.run.engine import run_and_score, score_saved
    from ._core.stats.config import StatsConfig
    from ._core.stats.judge_correction import (
        check_label_cases,
        correct_judged,
        judged_binary_metrics,
        read_human_labels,
    )

    ds = load_dataset(dataset)
    settings = settings or StatsConfig()
    correcting = {"confidence": settings.confidence, "judge_scores": settings.judge_scores}
    labels = read_human_labels(human_labels) if human_labels is not None else None
    if labels is not None:
        check_label_cases(labels, ds)  # bad labels fail before any agent runs
    if agent is None and simulator is not None:
        raise ConfigError("simulator=... plays the user of a conversation with an agent: pass agent=... too")
    executor = _executor(cfg, simulator)
    if agent is None:
        if cfg.out_dir is not None:
            check_out(cfg.out_dir, cfg)  # before scoring: a folder of other files or results is not replaced unasked
        result = await score_saved(ds, metrics, cfg)
    else:
        runnable: AgentRunnable = _agent(agent, name, cfg)
        _check_agent_concurrency(cfg, [runnable], metrics)
        levelled = _levelling(tools, faults, cfg, [runnable])
        try:
            result = (await run_and_score(ds, levelled.agents, metrics, cfg, kind="evaluate",
                                          simulator=as_simulator(simulator), executor=executor,
                                          tools=levelled.header))[runnable.name]
        finally:
            levelled.close()
        levelled.attach({runnable.name: result})
        _warn_if_always_failed({runnable.name: result})
    if labels is not None:
        result.judge_corrections = correct_judged(result, labels, **correcting)
    elif any("human_label" in c.metadata for c in ds) and judged_binary_metrics(result):
        # A 'human_label' column in the dataset corrects the judged metrics without being asked.
        result.judge_corrections = correct_judged(result, **correcting)
    if cfg.out_dir is not None:
        result.save(cfg.out_dir)
    return result


class EvalTask:
    """Vertex AI's entry point: ``EvalTask(dataset, metrics, experiment=...).evaluate(runnable=agent)``."""

    def __init__(
        self,
        dataset: Any,
        metrics: Sequence[str | Metric] | None = None,
        *,
        experiment: str | None = None,
        config: RunConfig | None = None,
        **options: Unpack[RunOptions],
    ) -> None:
        self.metrics = resolve_metrics(metrics)
        self.experiment = experiment
        self.config = run_config(config, **options)
        self._data = dataset
        self._dataset = None
        if not takes_columnar_path(dataset, self.metrics, self.config):
            self._dataset = load_dataset(dataset)  # bad input fails here, before any agent runs

    @property
    def dataset(self) -> Any:
        """The task's cases (loaded on first use when the saved rows are scored batch by batch)."""
        if self._dataset is None:
            self._dataset = load_dataset(self._data)
        return self._dataset

    def evaluate(
        self,
        *,
        runnable: Any = None,
        experiment_run_name: str | None = None,
        config: RunConfig | None = None,
        **options: Unpack[RunOptions],
    ) -> EvalResult:
        """Run ``runnable`` (any agent ``as_agent`` accepts) on the dataset, or score saved predictions.

        With ``experiment`` set on the task, the result is logged to that MLflow experiment, in a
        run named ``experiment_run_name`` (default: the agent's name).
        """
        experiment = self.experiment
        _short_errors(lambda: _require_experiment_logging(experiment))
        cfg = run_config(_overlay(self.config, config), **options)
        saved = self._data if runnable is None and self._dataset is None else self.dataset
        result = evaluate(saved, runnable, self.metrics, config=cfg)
        if experiment is not None:
            from .experiment import log_evaluation

            _log_experiment(lambda: log_evaluation(result, experiment, run_name=experiment_run_name), experiment)
        return result


def _overlay(base: RunConfig, given: RunConfig | None) -> RunConfig:
    """``base`` with the options ``given`` sets away from their defaults (a task's own config is kept)."""
    if given is None:
        return base
    default = RunConfig()
    changed = {f.name: getattr(given, f.name) for f in fields(RunConfig) if getattr(given, f.name) != getattr(default, f.name)}
    return base.replace(**changed)


def _agent(agent: Any, name: str | None, config: RunConfig) -> AgentRunnable:
    # A spec string ("pkg.mod:attr", a URL) is loaded here; when agents run in other processes
    # (process isolation, Ray) it stays a spec, so each worker builds the agent itself.
    from .adapters.auto import as_agent
    from .adapters.spec import SpecAgent, agent_from_spec

    if isinstance(agent, str):
        if ships_agents(config.executor):
            return SpecAgent(agent, name=name)
        return agent_from_spec(agent, name=name, isolation=config.isolation)
    return as_agent(agent, name=name)


def _levelling(tools: Any, faults: Any, cfg: RunConfig, runnables: Sequence[AgentRunnable]) -> Any:
    """The agents with their tools levelled (``tools=``, ``faults=``; see ``levelfield.tools``)."""
    from .tools.setup import levelling

    return levelling(tools, faults, cfg, runnables, ships=ships_agents(cfg.executor))


def _executor(config: RunConfig, simulator: Any) -> Executor | None:
    """Where the runs execute; None: this process (the local runner)."""
    if not ships_agents(config.executor):
        return None
    if config.max_cost_usd is not None:
        raise ConfigError(f"max_cost_usd limits the runs this process starts; it does not combine with "
                          f"executor={config.executor!r} yet: run with the local executor to set a budget")
    if simulator is not None:
        raise ConfigError(f"simulator=... plays conversations in this process; it does not combine with "
                          f"executor={config.executor!r} yet: run the scenario cases locally")
    return resolve_executor(config.executor)


def _check_agent_concurrency(cfg: RunConfig, runnables: Sequence[AgentRunnable],
                             metrics: Sequence[Metric] | None = None) -> None:
    """Refuse options that do not apply to these agents and metrics, naming the option and why: an option
    that passes silently looks like it worked."""
    names = [r.name for r in runnables]
    unknown = sorted(set(cfg.agent_concurrency) - set(names))
    if unknown:
        raise ConfigError(f"agent_concurrency names unknown agents: {', '.join(unknown)} "
                          f"(the agents are: {', '.join(names)})")
    endpoints = {*names, "judge", "simulator"}
    for option in ("requests_per_minute", "tokens_per_minute"):
        value = getattr(cfg, option)
        if isinstance(value, Mapping):
            for key in sorted(set(value) - endpoints, key=str):
                raise ConfigError(f"{option} names {key!r}, which is no agent of this run.{nearest_name(str(key), endpoints)} "
                                  f"(give agent names, 'judge' or 'simulator': {', '.join(sorted(endpoints))})")
    if cfg.workers != 1:
        raise ConfigError(f"workers={cfg.workers} sets the processes that score saved predictions; with an agent it would "
                          "do nothing: runs in flight are set by concurrency= (isolation='process' runs agents in "
                          "processes, executor='ray' on a cluster)")
    if metrics is not None:
        _check_judge_budget(cfg, metrics)


def _judge_config(judge_config: JudgeConfig | None) -> JudgeConfig | None:
    """``judge_config`` checked to be an ``lf.JudgeConfig``; the judge package is loaded only when one is given."""
    if judge_config is None:
        return None
    from .judge.config import judge_config as checked

    return checked(judge_config)


def _check_judge_budget(cfg: RunConfig, metrics: Sequence[Metric]) -> None:
    if cfg.judge_max_cost_usd is not None and not any(getattr(m, "is_async", False) for m in metrics):
        raise ConfigError(f"judge_max_cost_usd={cfg.judge_max_cost_usd:g} limits what judged metrics spend, and none of "
                          f"the metrics is judged ({', '.join(m.name for m in metrics) or 'none given'}); "
                          "max_cost_usd limits the agents' runs")


def _evaluate_stats(stats: StatsConfig | None) -> StatsConfig:
    """``evaluate``'s statistics options: only those of the judge correction apply; any other is refused."""
    from ._core.stats.config import STATS_OPTIONS, StatsConfig, stats_config

    settings = stats_config(stats)
    default = StatsConfig()
    other = [f"{k}={getattr(settings, k)!r}" for k in STATS_OPTIONS
             if k not in ("confidence", "judge_scores") and getattr(settings, k) != getattr(default, k)]
    if other:
        raise ConfigError(f"evaluate(stats=...): {', '.join(other)} apply to comparisons; evaluate uses only "
                          "confidence and judge_scores (for the judge correction): pass the others to lf.compare")
    return settings
