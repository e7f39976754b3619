"""The evaluation entry points: ``evaluate`` (and its async twin) and Vertex's ``EvalTask`` shape.

They turn what the user passed into agents (``as_agent``, agent specs) and hand them to the
adapter-free engine in ``levelfield._core``; what they do for one agent (agents from specs, executors,
option checks, short errors, warnings) :mod:`levelfield._entry.comparing` does for ``compare`` too, through the
helpers they share (:mod:`levelfield._entry.shared`).

Run options (concurrency, timeout, retries, backoff, trials, progress, agent_concurrency, out,
resume, overwrite, isolation, executor) are the fields of
:class:`~levelfield._core.data.config.RunConfig`, given as ``config=RunConfig(...)`` and/or as
keywords; their defaults are defined there, once. A comparison's statistics options are the fields
of :class:`~levelfield._core.stats.config.StatsConfig`, given as ``stats=StatsConfig(...)``.

Each sync entry point is its async twin run to completion: one implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from .._core.data.config import RunConfig, RunOptions, run_config
from .._core.errors import ConfigError
from .._core.results.lock import holding
from .._core.run.notices import MissingReferenceWarning, unscored_metrics, warn_user
from .._core.run.threads import run_coroutine
from .._core.score.metrics.registry import resolve_metrics
from ..executors import resolve_executor, ships_agents
from ..executors.saved import check_out, score_saved_rows, takes_columnar_path
from .shared import (
    agent_of,
    as_simulator,
    check_agent_concurrency,
    check_judge_budget,
    executor_of,
    judge_config_of,
    levelling_of,
    load_dataset,
    log_experiment,
    require_experiment_logging,
    short_errors,
    short_errors_async,
    warn_if_always_failed,
    warn_if_judges_unreadable,
)

# Scoring saved rows needs none of the rest (the runner, adapters, simulator and judges, Ray, the
# statistics of a comparison): each loads in the function that uses it, so that the first
# ``lf.evaluate(path, metrics=...)`` of a process does not pay for them (issue #46).
if TYPE_CHECKING:
    from .._core.data.protocol import AgentRunnable
    from .._core.results.result import EvalResult
    from .._core.score.metrics.base import Metric
    from .._core.stats.config import StatsConfig
    from ..judge.config import JudgeConfig


__all__ = ["evaluate", "aevaluate", "EvalTask"]


def _saved_batch_by_batch(dataset: Any, metrics: Sequence[Metric], cfg: RunConfig) -> EvalResult | None:
    """Saved predictions scored batch by batch (on Ray Data with ``executor="ray"``); None when
    they are scored row by row (small inputs, judged metrics; see ``levelfield.executors.saved``)."""
    # A dataset load_dataset read from a DataFrame, rows or a file takes the same route as that source:
    # its rows were checked when loaded; the columnar scorer reads them without building cases again.
    source = getattr(dataset, "loaded_from", None)
    dataset = dataset if source is None else source
    executor = resolve_executor(cfg.executor) if ships_agents(cfg.executor) else None
    ray: Any = None
    if executor is not None:
        from ..executors import ray as ray_module

        ray = ray_module
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
    return await short_errors_async(_evaluate(dataset, agent, metrics, name=name, config=config, human_labels=human_labels,
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

    A run that fails is recorded as a failed row and never stops the evaluation (a warning says so
    when every run failed); bad input (dataset, metric, agent spec, option) raises a
    ``LevelfieldError`` from here, before any agent runs.

    Args:
        dataset: The cases: a DataFrame, a list of dicts, a file path (JSON Lines, CSV, Parquet, an ADK
            eval set...) or an ``lf.EvalDataset``. Without ``agent``, its rows hold the saved predictions.
        agent: Anything ``lf.as_agent`` accepts (a function, a LangChain runnable, an ADK agent, an
            A2A URL, an Agent Engine agent...) or a spec string (``"pkg.mod:attr"``). None: score the
            saved predictions in ``dataset``.
        metrics: Metric names (``"trajectory_exact_match"``, ``"rouge_l_sum"``, ...) or metric objects
            (``lf.metrics``); None: the default set.
        name: The agent's name in the result (default: the adapter's).
        config: Run options as one ``lf.RunConfig``; a keyword in ``options`` wins over it.
        human_labels: Pass/fail labels by humans on some cases (a CSV or JSON Lines file with
            ``case_id`` and ``human_label``, a DataFrame or ``{case_id: label}``): each judged 0/1 metric
            then gets a judge-corrected rate in ``result.judge_corrections`` and ``<metric>/corrected_mean``
            in the summary. A ``human_label`` column in the dataset does the same unasked.
        simulator: A simulated user (``lf.UserSimulator(model)``, ``lf.testing.ScriptedUser(...)``) that
            plays the dataset's conversation-scenario cases; without one they are skipped.
        experiment: An MLflow experiment name: the result is logged to MLflow tracking
            (``levelfield[mlflow]``).
        judge: A chat model, ``"provider:model"``, a function or an agent: the judge of the metric names
            that need one (``metrics=["final_response_match_v2", "safety_v1"]``).
        judge_config: How those metrics ask their judge (``lf.JudgeConfig(samples=3, timeout=30)``); a
            metric object takes its own.
        tools: Level the agent's tools: an ``lf.ToolCassette`` (or its path) replays recorded tool
            answers, so every run sees the same ones (see ``lf.tools``).
        faults: ``lf.Faults(rate=..., kinds=..., seed=...)``: seeded tool faults injected into the
            agent's tool calls (timeouts, errors, malformed answers), to see how it holds up.
        stats: ``lf.StatsConfig`` for the judge correction only (``confidence``, and
            ``judge_scores="probability"`` to correct from the judge's probabilities of a pass); its
            other options are for comparisons (``lf.compare``) and are refused here.
        **options: Run options by keyword: the fields of ``lf.RunConfig``, each documented there:
            ``concurrency``, ``timeout`` (seconds per attempt), ``retries`` and ``backoff`` (transient
            errors), ``trials`` (runs of every case), ``progress``, ``agent_concurrency``, ``out`` (a
            folder: every run journaled as it finishes, the results written there), ``resume`` (run
            only what that journal lacks), ``overwrite``, ``isolation`` (``"process"``: a crash fails
            one run only), ``workers`` (processes scoring saved predictions), ``executor`` (``"ray"``
            or ``lf.RayExecutor(...)``: runs on a Ray cluster, the same results), ``max_response_bytes``,
            ``adaptive``, ``requests_per_minute``, ``tokens_per_minute``, ``prices``, ``max_cost_usd``,
            ``a2a_preflight``, ``a2a_probe`` and ``judge_max_cost_usd``.

    Returns:
        An ``lf.EvalResult``: ``summary_metrics``, ``metrics_table``, the runs and their scores.

    Raises:
        LevelfieldError: Bad input (``DatasetError``, ``MetricError``, ``ConfigError``, ...), naming
            what and where, before any agent runs.
    """
    return short_errors(lambda: run_coroutine(aevaluate(
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
    require_experiment_logging(experiment)
    settings = None if stats is None else _evaluate_stats(stats)  # None: the defaults (loaded only if needed)
    cfg = run_config(config, _function=evaluate, **options)
    resolved = resolve_metrics(metrics, judge=judge, judge_config=judge_config_of(judge_config))
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
    check_judge_budget(cfg, resolved)
    if agent is None and (tools is not None or faults is not None):
        raise ConfigError("tools=/faults= level the tools of agents' runs; scoring saved predictions runs no agent")
    with holding(cfg.out_dir):  # one writer per out folder, from reading its journal to saving the results
        if agent is None and simulator is None and human_labels is None:
            result = _saved_batch_by_batch(dataset, resolved, cfg)
        if result is None:
            result = await _run_evaluation(dataset, agent, resolved, name=name, cfg=cfg, human_labels=human_labels,
                                           simulator=simulator, tools=tools, faults=faults, settings=settings)
    warn_if_judges_unreadable({result.agent_name or "saved": result}, resolved)
    if experiment is not None:
        from .experiment import log_evaluation

        log_experiment(lambda: log_evaluation(result, experiment), experiment)
    return result


async def _run_evaluation(
    dataset: Any, agent: Any, metrics: list[Metric], *, name: str | None, cfg: RunConfig, human_labels: Any, simulator: Any,
    tools: Any = None, faults: Any = None, settings: StatsConfig | None = None,
) -> EvalResult:
    from .._core.run.engine import run_and_score, score_saved
    from .._core.stats.config import StatsConfig
    from .._core.stats.judge_correction import (
        check_label_cases,
        correct_judged,
        judged_binary_metrics,
        read_human_labels,
    )

    ds = load_dataset(dataset)
    settings = settings or StatsConfig()
    correcting: dict[str, Any] = {"confidence": settings.confidence, "judge_scores": settings.judge_scores}
    labels = read_human_labels(human_labels) if human_labels is not None else None
    if labels is not None:
        check_label_cases(labels, ds)  # bad labels fail before any agent runs
    if agent is None and simulator is not None:
        raise ConfigError("simulator=... plays the user of a conversation with an agent: pass agent=... too")
    executor = executor_of(cfg, simulator)
    if agent is None:
        if cfg.out_dir is not None:
            check_out(cfg.out_dir, cfg)  # before scoring: a folder of other files or results is not replaced unasked
        result = await score_saved(ds, metrics, cfg)
    else:
        runnable: AgentRunnable = agent_of(agent, name, cfg)
        check_agent_concurrency(cfg, [runnable], metrics)
        levelled = levelling_of(tools, faults, cfg, [runnable])
        try:
            result = (await run_and_score(ds, levelled.agents, metrics, cfg, kind="evaluate",
                                          simulator=as_simulator(simulator), executor=executor,
                                          tools=levelled.header))[runnable.name]
        finally:
            levelled.close()
        levelled.attach({runnable.name: result})
        warn_if_always_failed({runnable.name: result})
    if labels is not None:
        result.judge_corrections = correct_judged(result, labels, **correcting)
    elif any("human_label" in c.metadata for c in ds) and judged_binary_metrics(result):
        # A 'human_label' column in the dataset corrects the judged metrics without being asked.
        result.judge_corrections = correct_judged(result, **correcting)
    if cfg.out_dir is not None:
        result.save(cfg.out_dir)
    return result


class EvalTask:
    """Vertex AI's entry point: ``EvalTask(dataset, metrics, experiment=...).evaluate(runnable=agent)``.

    Args:
        dataset: The cases, as ``lf.evaluate`` takes them (a DataFrame, rows, a path, an
            ``lf.EvalDataset``); with saved predictions in its rows, ``evaluate()`` without a
            runnable scores them. Bad input fails here, before any agent runs.
        metrics: Metric names or objects; None: the default set.
        experiment: An MLflow experiment each ``evaluate`` logs its result to (``levelfield[mlflow]``).
        config: The task's run options as one ``lf.RunConfig``; a keyword in ``options`` wins over it.
        **options: Run options by keyword, the fields of ``lf.RunConfig`` (see ``lf.evaluate``).
    """

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

        Args:
            runnable: The agent (anything ``lf.as_agent`` accepts, or a ``"pkg.mod:attr"`` spec); None:
                score the saved predictions in the task's dataset.
            experiment_run_name: The MLflow run's name when the task has an ``experiment`` (default:
                the agent's name).
            config: Run options for this evaluation; those it sets away from their defaults replace
                the task's.
            **options: Run options by keyword, the fields of ``lf.RunConfig``; they win over both.

        Returns:
            An ``lf.EvalResult``, logged to the task's MLflow experiment when it has one.
        """
        experiment = self.experiment
        short_errors(lambda: require_experiment_logging(experiment))
        cfg = run_config(_overlay(self.config, config), **options)
        saved = self._data if runnable is None and self._dataset is None else self.dataset
        result = evaluate(saved, runnable, self.metrics, config=cfg)
        if experiment is not None:
            from .experiment import log_evaluation

            log_experiment(lambda: log_evaluation(result, experiment, run_name=experiment_run_name), experiment)
        return result


def _overlay(base: RunConfig, given: RunConfig | None) -> RunConfig:
    """``base`` with the options ``given`` sets away from their defaults (a task's own config is kept)."""
    if given is None:
        return base
    default = RunConfig()
    changed = {f.name: getattr(given, f.name) for f in fields(RunConfig) if getattr(given, f.name) != getattr(default, f.name)}
    return base.replace(**changed)


def _evaluate_stats(stats: StatsConfig | None) -> StatsConfig:
    """``evaluate``'s statistics options: only those of the judge correction apply; any other is refused."""
    from .._core.stats.config import STATS_OPTIONS, StatsConfig, stats_config

    settings = stats_config(stats)
    default = StatsConfig()
    other = [f"{k}={getattr(settings, k)!r}" for k in STATS_OPTIONS
             if k not in ("confidence", "judge_scores") and getattr(settings, k) != getattr(default, k)]
    if other:
        raise ConfigError(f"evaluate(stats=...): {', '.join(other)} apply to comparisons; evaluate uses only "
                          "confidence and judge_scores (for the judge correction): pass the others to lf.compare")
    return settings
