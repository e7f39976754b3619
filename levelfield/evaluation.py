"""The entry points: ``evaluate`` (and its async twin), Vertex's ``EvalTask`` shape, and
``compare``. They turn what the user passed into agents (``as_agent``, agent specs) and hand
them to the adapter-free engine in ``levelfield._core``.

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
from ._core.errors import ConfigError, ConfigTypeError, LevelfieldError
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
    from ._core.run.early_stop import EarlyStop
    from ._core.run.runner import Executor
    from ._core.score.metrics.base import Metric
    from ._core.stats.config import StatsConfig
    from .comparison import Comparison
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

__all__ = ["evaluate", "aevaluate", "EvalTask", "compare", "acompare"]

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
    cfg = run_config(config, **options)
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


def _stats_from(stats: StatsConfig | None, options: dict[str, Any], where: str) -> StatsConfig:
    """``stats`` checked; a statistics option given as a keyword is refused with the object to put it in."""
    from ._core.stats.config import STATS_OPTIONS, stats_config

    given = {k: options[k] for k in options if k in STATS_OPTIONS}
    if given:
        text = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise ConfigError(f"{where}({text}): statistics options go in one object, stats=lf.StatsConfig({text}); "
                          "the keywords are run options (lf.RunConfig) only")
    return stats_config(stats)


def _early_stop(stop_early: bool | str, settings: StatsConfig, dataset: Any, metrics: Sequence[Metric],
                runnables: Sequence[AgentRunnable], cfg: RunConfig, executor: Any, simulator: Any,
                baseline: Any) -> EarlyStop | None:
    """The early-stopping rule of ``compare(stop_early=...)``, checked before any agent runs."""
    if stop_early is False or stop_early is None:
        return None
    if not isinstance(stop_early, (bool, str)):
        raise ConfigTypeError(f"stop_early={stop_early!r}: pass True (the first metric decides) or a metric name")
    if baseline is not None:
        raise ConfigError("stop_early does not combine with baseline=... yet: the baseline's runs are not re-run")
    from ._core.run.early_stop import EarlyStop
    from ._core.stats.sequential import StopRule

    metric = metrics[0].name if stop_early is True else stop_early
    rule = StopRule(metric, seed=settings.seed, alpha=settings.alpha, margin=settings.margin,
                    failed_runs=settings.failed_runs, reducer=settings.reducer)
    return EarlyStop(rule, dataset, metrics, [r.name for r in runnables], cfg, executor=executor,
                     simulator=as_simulator(simulator))


def _resolve_agents(agents: Any, config: RunConfig) -> list[Any]:
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
        runnables.append(_agent(agent, name, config))
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
    stats: StatsConfig | None = None,
    baseline: Any = None,
    fail_if_worse: str | Sequence[str] | None = None,
    stop_early: bool | str = False,
    simulator: Any = None,
    experiment: str | None = None,
    judge: Any = None,
    judge_config: JudgeConfig | None = None,
    tools: Any = None,
    faults: Any = None,
    require_certified_judge: Any = False,
    human_labels: Any = None,
    allow_different_evaluators: bool = False,
    **options: Unpack[RunOptions],
) -> Comparison:
    """Async twin of :func:`compare` (the same arguments, the same result)."""
    return await _short_errors_async(_compare(dataset, agents, metrics, config=config, stats=stats, baseline=baseline,
                                              fail_if_worse=fail_if_worse, stop_early=stop_early, simulator=simulator,
                                              experiment=experiment, judge=judge, judge_config=judge_config, tools=tools, faults=faults,
                                              options=dict(options),
                                              certify=_certify_request(require_certified_judge, human_labels,
                                                                       fail_if_worse),
                                              allow_different_evaluators=allow_different_evaluators))


def compare(
    dataset: Any,
    agents: Mapping[str, Any] | Sequence[Any],
    metrics: Sequence[str | Metric] | None = None,
    *,
    config: RunConfig | None = None,
    stats: StatsConfig | None = None,
    baseline: Any = None,
    fail_if_worse: str | Sequence[str] | None = None,
    stop_early: bool | str = False,
    simulator: Any = None,
    experiment: str | None = None,
    judge: Any = None,
    judge_config: JudgeConfig | None = None,
    tools: Any = None,
    faults: Any = None,
    require_certified_judge: Any = False,
    human_labels: Any = None,
    allow_different_evaluators: bool = False,
    **options: Unpack[RunOptions],
) -> Comparison:
    """Run every agent on every case of ``dataset`` and score them with the same metrics.

    ``agents``: ``{"name": agent}``, each anything ``as_agent`` accepts or a spec string
    (``"module:attr"``, an ``http(s)://`` A2A URL, an Agent Engine resource name).
    ``config`` / keywords: run options (``lf.RunConfig``: concurrency, timeout, retries, trials,
    out, resume, executor, ...); ``agent_concurrency={"name": n}`` caps one agent further.
    ``stats``: statistics options (``lf.StatsConfig``: failed_runs, confidence, test, seed, reducer,
    alpha, margin); by default a failed run scores 0 and the paired test is exact McNemar for 0/1
    metrics, Wilcoxon otherwise.
    ``baseline``: saved runs that join as one more agent without running again (an earlier ``out``
    folder, an ``EvalResult`` or ``{"main": folder}``), paired by case id and trial. Its judged scores
    are kept only when the same evaluators gave them (judge model and settings, prompt, rubrics, metric
    version; see ``result.evaluators``); otherwise the comparison is refused naming what differs, unless
    ``allow_different_evaluators=True``, which warns and labels the comparison (``cmp.evaluator_notes``).
    ``fail_if_worse=["metric", ...]`` raises ``RegressionError`` when an agent is significantly worse
    than the baseline (Holm-adjusted p < ``stats.alpha``, by more than ``stats.margin``).
    ``require_certified_judge=True`` (with ``human_labels=`` a CSV/JSONL of case_id,human_label, or the
    dataset's ``human_label`` column; or a ``JudgeCertification`` from :func:`levelfield.certify_judge`)
    lets ``fail_if_worse`` gate a judged metric only when its judge is certified on the agents' rows,
    else raises ``UncertifiedJudgeError`` naming the metric and why.
    ``stop_early=True`` (or a metric name; default the first metric) runs the cases in a random order
    fixed by ``stats.seed`` and stops starting runs once every pair of agents is decided by an
    always-valid sequential test at ``stats.alpha`` (significant; within ``stats.margin`` when one
    is given; or no longer reachable); ``cmp.stopped_early`` says where and why, and a later
    ``resume=True`` without it runs the remaining cases (see ``levelfield._core.stats.sequential``).
    ``simulator`` plays the conversation-scenario cases (every agent meets the same user).
    ``experiment="name"`` logs each agent's run to MLflow. ``out=`` writes the run record, tables,
    summary and ``report.html``. ``judge`` builds the metric names that need one, ``judge_config`` says how
    they ask it (see :func:`evaluate`).
    """
    return _short_errors(lambda: run_coroutine(acompare(
        dataset, agents, metrics, config=config, stats=stats, baseline=baseline, fail_if_worse=fail_if_worse,
        stop_early=stop_early, simulator=simulator, experiment=experiment, judge=judge, judge_config=judge_config, tools=tools, faults=faults,
        require_certified_judge=require_certified_judge, human_labels=human_labels,
        allow_different_evaluators=allow_different_evaluators, **options)))


class _CertifyRequest:
    """``compare(require_certified_judge=..., human_labels=...)``: what the gate needs to refuse an uncertified judge."""

    def __init__(self, certification: Any, human_labels: Any, *, checked: bool = False) -> None:
        self.certification = certification
        self.human_labels = human_labels
        self.checked = checked

    def read(self, dataset: Any) -> _CertifyRequest:
        """The labels read and checked against ``dataset`` (a bad file fails before any agent runs)."""
        if self.human_labels is None or self.checked:
            return self
        from ._core.stats.judge_correction import check_label_cases, read_human_labels

        labels = read_human_labels(self.human_labels)
        check_label_cases(labels, dataset)
        return _CertifyRequest(self.certification, labels, checked=True)

    def options(self) -> dict[str, Any]:
        return {"require_certified_judge": self.certification, "human_labels": self.human_labels}


def _certify_request(require_certified_judge: Any, human_labels: Any, fail_if_worse: Any) -> _CertifyRequest | None:
    """The gate's certification request, refused when it could not apply."""
    if not require_certified_judge:
        if human_labels is not None:
            raise ConfigError("compare(human_labels=...) is read by require_certified_judge=True (the judge certified "
                              "before fail_if_worse gates on it); to certify or correct a judge on its own, use "
                              "lf.certify_judge(result, labels) or lf.evaluate(..., human_labels=...)")
        return None
    if not fail_if_worse:
        raise ConfigError("require_certified_judge=True certifies the judge of a gated metric: give fail_if_worse=... too")
    return _CertifyRequest(require_certified_judge, human_labels)


FAULTED_FOLDER = "faulted"
"""Where ``compare(faults=..., out=DIR)`` records the runs under faults: ``DIR/faulted`` (the clean ones go to ``DIR``)."""


async def _compare_clean_and_faulted(
    dataset: Any, agents: Any, metrics: Any, *, cfg: RunConfig, settings: StatsConfig, baseline: Any,
    fail_if_worse: Any, stop_early: bool | str, simulator: Any, experiment: str | None, judge: Any,
    judge_config: JudgeConfig | None, tools: Any,
    faults: Any, kind: str, certify: Any = None, allow_different_evaluators: bool = False,
) -> Comparison:
    """Every agent run on the same cases clean (``tools`` alone) and under ``faults`` (on top of ``tools``):
    the clean comparison is the one returned (its verdict, summary and gate are the agents' quality),
    with ``.faulted`` (the comparison under faults) and ``.robustness`` (each agent's paired drop, the
    fault kinds met, the agreement of trials). With ``out=DIR`` the faulted runs have their own record in
    ``DIR/faulted``; ``resume=True`` resumes both."""
    from .robustness import robustness_of

    if stop_early:
        raise ConfigError("faults= runs every case clean and under faults to pair them; stop_early does not combine "
                          "with it yet: leave stop_early out, or run the faults alone with lf.evaluate(..., faults=...)")
    if certify is not None:
        certify = certify.read(load_dataset(dataset))  # a bad labels file fails before any agent runs
    faulted_cfg = cfg if cfg.out_dir is None else cfg.replace(out=cfg.out_dir / FAULTED_FOLDER)
    clean = await _compare(dataset, agents, metrics, config=cfg, stats=settings, baseline=baseline, fail_if_worse=None,
                           stop_early=False, simulator=simulator, experiment=None, judge=judge, judge_config=judge_config, tools=tools, faults=None,
                           options={}, kind=kind, allow_different_evaluators=allow_different_evaluators)
    faulted = await _compare(dataset, agents, metrics, config=faulted_cfg, stats=settings, baseline=None,
                             fail_if_worse=None, stop_early=False, simulator=simulator, experiment=None, judge=judge, judge_config=judge_config,
                             tools=tools, faults=faults, options={}, kind=kind, paired_with_clean=False)
    clean.faulted = faulted
    clean.robustness = robustness_of(clean, faulted, faults=repr(faults), seed=settings.seed)
    if cfg.out_dir is not None:
        from . import report

        report.save(clean, cfg.out_dir)  # again: the report now holds how each agent holds up
    return _logged_and_gated(clean, experiment, fail_if_worse, certify)


def compare_as(kind: str, dataset: Any, agents: Mapping[str, Any] | Sequence[Any], metrics: Sequence[str | Metric] | None,
               *, config: RunConfig | None = None, stats: StatsConfig | None = None, baseline: Any = None,
               stop_early: bool | str = False, simulator: Any = None, experiment: str | None = None,
               tools: Any = None, faults: Any = None, allow_different_evaluators: bool = False) -> Comparison:
    """:func:`compare`, with the run recorded as made by ``kind`` (the record's ``run_kind``): the
    command line's ``eval --agent`` with ``--baseline`` or ``--faults`` (its runs compared with saved
    ones, or clean with faulted ones) runs its one agent through here as ``evaluate``. Not public."""
    return _short_errors(lambda: run_coroutine(_short_errors_async(_compare(
        dataset, agents, metrics, config=config, stats=stats, baseline=baseline, fail_if_worse=None,
        stop_early=stop_early, simulator=simulator, experiment=experiment, tools=tools, faults=faults, options={},
        kind=kind, allow_different_evaluators=allow_different_evaluators))))


async def _compare(
    dataset: Any,
    agents: Mapping[str, Any] | Sequence[Any],
    metrics: Sequence[str | Metric] | None,
    *,
    config: RunConfig | None,
    stats: StatsConfig | None,
    baseline: Any,
    fail_if_worse: str | Sequence[str] | None,
    stop_early: bool | str,
    simulator: Any,
    experiment: str | None,
    judge: Any = None,
    judge_config: JudgeConfig | None = None,
    tools: Any = None,
    faults: Any = None,
    options: dict[str, Any],
    kind: str = "compare",
    paired_with_clean: bool = True,
    certify: Any = None,
    allow_different_evaluators: bool = False,
) -> Comparison:
    """The one implementation of ``compare`` and ``acompare``; ``kind`` names what made the run in its
    record (``evaluate`` when the command line's ``eval --agent --baseline``/``--faults`` runs one agent here).
    With ``faults``, each agent runs clean and under the faults (``paired_with_clean``; see
    :func:`_compare_clean_and_faulted`)."""
    _require_experiment_logging(experiment)
    settings = _stats_from(stats, options, "compare")
    cfg = run_config(config, **options)
    if faults is not None and paired_with_clean:
        return await _compare_clean_and_faulted(
            dataset, agents, metrics, cfg=cfg, settings=settings, baseline=baseline, fail_if_worse=fail_if_worse,
            stop_early=stop_early, simulator=simulator, experiment=experiment, judge=judge, judge_config=judge_config, tools=tools,
            faults=faults, kind=kind, certify=certify, allow_different_evaluators=allow_different_evaluators)
    ds = load_dataset(dataset)
    if certify is not None:
        certify = certify.read(ds)  # the labels read and checked against the cases before any agent runs
    resolved = resolve_metrics(metrics, judge=judge, judge_config=_judge_config(judge_config))
    runnables = _resolve_agents(agents, cfg)
    executor = _executor(cfg, simulator)
    _check_agent_concurrency(cfg, runnables, resolved)
    levelled = _levelling(tools, faults, cfg, runnables)
    runnables = levelled.agents
    early = _early_stop(stop_early, settings, ds, resolved, runnables, cfg, executor, simulator, baseline)
    joined = None
    if baseline is not None:
        # Loaded before any agent runs, so a bad baseline fails fast.
        from .baseline import prepare_baseline

        joined = await prepare_baseline(baseline, ds, resolved, taken=[r.name for r in runnables], trials=cfg.trials,
                                        tools=levelled.header, allow_different_evaluators=allow_different_evaluators)
    from ._core.run.engine import run_and_score

    with holding(cfg.out_dir):  # one writer per out folder, from reading its journal to saving the results
        try:
            results = await run_and_score(ds, runnables, resolved, cfg, kind=kind, settings=settings.to_dict(),
                                          simulator=as_simulator(simulator), executor=executor, stop_early=early,
                                          tools=levelled.header)
        finally:
            levelled.close()
        levelled.attach(results)
        if joined is not None:
            results[joined.name] = joined.result
        from .comparison import Comparison

        cmp = Comparison(ds, results, resolved, trials=cfg.trials, config=cfg, stats=settings)
        cmp.kind = kind
        cmp.baseline = joined
        if joined is not None:
            cmp.evaluator_notes = list(joined.evaluator_notes)
        cmp.tool_levelling = levelled.report(results)
        cmp.tools_header = levelled.header
        if early is not None:
            cmp.stopped_early = early.report()
        if cfg.out_dir is not None:
            from . import report

            report.save(cmp, cfg.out_dir)
    _warn_if_always_failed(cmp.results)
    # The baseline's rows were judged when it ran: only this run's judges are checked.
    _warn_if_judges_unreadable({a: r for a, r in cmp.results.items() if joined is None or a != joined.name}, resolved)
    return _logged_and_gated(cmp, experiment, fail_if_worse, certify)


def _logged_and_gated(cmp: Comparison, experiment: str | None, fail_if_worse: Any, certify: Any = None) -> Comparison:
    """``cmp`` logged to its MLflow experiment and checked by its gate (``RegressionError`` when it fails)."""
    if experiment is not None:
        from .experiment import log_comparison

        _log_experiment(lambda: log_comparison(cmp, experiment), experiment)
    if fail_if_worse:
        from ._core.errors import RegressionError
        from .gate import check_regressions

        gate = check_regressions(cmp, fail_if_worse, **(certify.options() if certify is not None else {}))
        if gate.failed:
            raise RegressionError(gate, cmp)
    return cmp
