"""What ``evaluate`` and ``compare`` both do before and after the engine runs: agents from what the
user passed (objects, specs), their tools levelled, where the runs execute, the options checked against
the agents and metrics, short errors, the warnings after a run, and experiment logging."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._core.errors import ConfigError, LevelfieldError
from .._core.run.notices import warn_user
from .._core.score.metrics.registry import nearest_name
from ..comparison._failures import (
    AllRunsFailedWarning,
    JudgeAnswersUnreadableWarning,
    failure_groups,
    unreadable_judges,
)
from ..executors import resolve_executor, ships_agents

if TYPE_CHECKING:
    from .._core.data.config import RunConfig
    from .._core.data.protocol import AgentRunnable
    from .._core.results.result import EvalResult
    from .._core.run.runner import Executor
    from .._core.score.metrics.base import Metric
    from ..judge.config import JudgeConfig

__all__ = [
    "load_dataset", "as_simulator", "short_errors", "short_errors_async", "warn_if_always_failed",
    "warn_if_judges_unreadable", "require_experiment_logging", "log_experiment", "agent_of", "levelling_of",
    "executor_of", "check_agent_concurrency", "judge_config_of", "check_judge_budget",
]

T = TypeVar("T")


def load_dataset(data: Any) -> Any:
    """``levelfield.formats.load_dataset``, loaded when first called."""
    from ..formats.files import load_dataset as load

    return load(data)


def as_simulator(simulator: Any) -> Any:
    """``levelfield.simulation.as_simulator``, loaded when first called."""
    if simulator is None:
        return None
    from ..simulation import as_simulator as simulator_of

    return simulator_of(simulator)


def short_errors(call: Callable[[], T]) -> T:
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


async def short_errors_async(call: Awaitable[T]) -> T:
    """:func:`short_errors` for the async entry points."""
    try:
        return await call
    except LevelfieldError as exc:
        if os.environ.get("LEVELFIELD_DEBUG"):
            raise
        raise exc.with_traceback(None) from None


def warn_if_always_failed(results: Mapping[str, EvalResult]) -> None:
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


def warn_if_judges_unreadable(results: Mapping[str, EvalResult], metrics: Sequence[Metric]) -> None:
    # A judge whose answers no parser reads leaves NaN on every row: said once per metric, never silent.
    for found in unreadable_judges(results, metrics):
        warn_user(JudgeAnswersUnreadableWarning(found.message()))


def require_experiment_logging(experiment: str | None) -> None:
    # Checked before any agent runs, so a missing extra does not cost a whole evaluation.
    if experiment is not None:
        from .experiment import check_experiment_name, require_mlflow

        check_experiment_name(experiment)
        require_mlflow()


def log_experiment(log: Callable[[], Any], experiment: str) -> None:
    # The evaluation is done and paid for: a tracking store that refuses it must not lose it.
    try:
        log()
    except Exception as exc:  # noqa: BLE001 - any store or network failure
        warn_user(f"could not log to MLflow experiment {experiment!r} ({type(exc).__name__}: {exc}); "
              "the result is returned as usual", RuntimeWarning)


def agent_of(agent: Any, name: str | None, config: RunConfig) -> AgentRunnable:
    # A spec string ("pkg.mod:attr", a URL) is loaded here; when agents run in other processes
    # (process isolation, Ray) it stays a spec, so each worker builds the agent itself.
    from ..adapters.auto import as_agent
    from ..adapters.spec import SpecAgent, agent_from_spec

    if isinstance(agent, str):
        if ships_agents(config.executor):
            return SpecAgent(agent, name=name)
        return agent_from_spec(agent, name=name, isolation=config.isolation)
    return as_agent(agent, name=name)


def levelling_of(tools: Any, faults: Any, cfg: RunConfig, runnables: Sequence[AgentRunnable]) -> Any:
    """The agents with their tools levelled (``tools=``, ``faults=``; see ``levelfield.tools``)."""
    from ..tools.setup import levelling

    return levelling(tools, faults, cfg, runnables, ships=ships_agents(cfg.executor))


def executor_of(config: RunConfig, simulator: Any) -> Executor | None:
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


def check_agent_concurrency(cfg: RunConfig, runnables: Sequence[AgentRunnable],
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
        check_judge_budget(cfg, metrics)


def judge_config_of(judge_config: JudgeConfig | None) -> JudgeConfig | None:
    """``judge_config`` checked to be an ``lf.JudgeConfig``; the judge package is loaded only when one is given."""
    if judge_config is None:
        return None
    from ..judge.config import judge_config as checked

    return checked(judge_config)


def check_judge_budget(cfg: RunConfig, metrics: Sequence[Metric]) -> None:
    if cfg.judge_max_cost_usd is not None and not any(getattr(m, "is_async", False) for m in metrics):
        raise ConfigError(f"judge_max_cost_usd={cfg.judge_max_cost_usd:g} limits what judged metrics spend, and none of "
                          f"the metrics is judged ({', '.join(m.name for m in metrics) or 'none given'}); "
                          "max_cost_usd limits the agents' runs")
