"""The comparison entry points: ``compare`` (and its async twin) run every agent on every case and pair them.

They check what the user passed (agents, statistics options, a baseline, early stopping, a judge to
certify), run it through the adapter-free engine in ``levelfield._core``, and hand back a
:class:`~levelfield.Comparison`, logged and gated; with ``faults=`` each agent runs clean
and under the faults. What they share with ``evaluate`` (agents from specs, executors, option
checks, short errors) lives in :mod:`levelfield._entry.shared`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from .._core.data.config import RunConfig, RunOptions, run_config
from .._core.errors import ConfigError, ConfigTypeError
from .._core.results.lock import holding
from .._core.run.threads import run_coroutine
from .._core.score.metrics.registry import resolve_metrics
from .shared import (
    agent_of,
    as_simulator,
    check_agent_concurrency,
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

if TYPE_CHECKING:
    from .._core.data.protocol import AgentRunnable
    from .._core.run.early_stop import EarlyStop
    from .._core.score.metrics.base import Metric
    from .._core.stats.config import StatsConfig
    from ..comparison._comparison import Comparison
    from ..judge.config import JudgeConfig

__all__ = ["compare", "acompare"]


def _stats_from(stats: StatsConfig | None, options: dict[str, Any], where: str) -> StatsConfig:
    """``stats`` checked; a statistics option given as a keyword is refused with the object to put it in."""
    from .._core.stats.config import STATS_OPTIONS, stats_config

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
    from .._core.run.early_stop import EarlyStop
    from .._core.stats.sequential import StopRule

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
        runnables.append(agent_of(agent, name, config))
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
    return await short_errors_async(_compare(dataset, agents, metrics, config=config, stats=stats, baseline=baseline,
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

    By default a failed run scores 0, and the paired test is McNemar's score test for 0/1 metrics (Tango's
    interval beside it), the paired t test otherwise, Holm-adjusted across the pairs that can differ. A failed run never stops the
    comparison; bad input raises a ``LevelfieldError`` from here, before any agent runs.

    Args:
        dataset: The cases, as ``lf.evaluate`` takes them (a DataFrame, rows, a path, an ``lf.EvalDataset``).
        agents: ``{"name": agent}`` (or a list, named by their adapters), each anything ``lf.as_agent``
            accepts or a spec string (``"module:attr"``, an ``http(s)://`` A2A URL, an Agent Engine
            resource name).
        metrics: Metric names or objects; None: the default set.
        config: Run options as one ``lf.RunConfig``; a keyword in ``options`` wins over it.
        stats: Statistics options as one ``lf.StatsConfig`` (``failed_runs``, ``confidence``, ``test``,
            ``seed``, ``reducer``, ``alpha``, ``margin``, ``judge_scores``); given as keywords they are refused.
        baseline: Saved runs that join as one more agent without running again (an earlier ``out``
            folder, an ``lf.EvalResult`` or ``{"main": folder}``), paired by case id and trial. Its judged
            scores are kept only when the same evaluators gave them (judge model and settings, prompt,
            rubrics, metric version); otherwise the comparison is refused naming what differs.
        fail_if_worse: Metric names (a list, or ``"m1,m2"``): raise ``lf.RegressionError`` when an agent
            is significantly worse than the baseline (Holm-adjusted p below ``stats.alpha``, by more
            than ``stats.margin``; see ``lf.gate.check_regressions``).
        stop_early: True (or a metric name; default the first metric): run the cases in a random order
            fixed by ``stats.seed`` and stop starting runs once every pair of agents is decided by an
            always-valid sequential test at ``stats.alpha``; ``cmp.stopped_early`` says where and why,
            and a later ``resume=True`` without it runs the remaining cases.
        simulator: A simulated user that plays the conversation-scenario cases (every agent meets the same user).
        experiment: An MLflow experiment name: each agent's run is logged to MLflow tracking.
        judge: The judge of the metric names that need one (a chat model, ``"provider:model"``, a
            function or an agent; see ``lf.evaluate``).
        judge_config: How those metrics ask their judge (``lf.JudgeConfig``).
        tools: Level every agent's tools the same way: an ``lf.ToolCassette`` (or its path) replays
            recorded tool answers, so every agent sees the same ones (see ``lf.tools``).
        faults: ``lf.Faults(rate=..., kinds=..., seed=...)``: every agent runs the cases twice, clean and
            under the seeded tool faults; the clean comparison is returned, with ``cmp.faulted`` (the one
            under faults) and ``cmp.robustness`` (each agent's drop); with ``out=DIR`` the faulted runs
            are recorded in ``DIR/faulted``.
        require_certified_judge: True, or an ``lf.certify_judge`` result: ``fail_if_worse`` gates a judged
            metric only when its judge is certified on the agents' rows against ``human_labels``, else
            raises ``lf.UncertifiedJudgeError`` naming the metric and why.
        human_labels: Pass/fail labels by humans (a CSV or JSON Lines file of ``case_id,human_label``, or
            the dataset's ``human_label`` column) for ``require_certified_judge``.
        allow_different_evaluators: Join a baseline scored by other evaluators anyway: it warns and labels
            the comparison (``cmp.evaluator_notes``).
        **options: Run options by keyword, the fields of ``lf.RunConfig`` (see ``lf.evaluate``, which
            names each): ``concurrency``, ``timeout``, ``retries``, ``backoff``, ``trials``, ``progress``,
            ``agent_concurrency`` (``{"name": n}`` caps one agent further), ``out`` (the run record, tables,
            summary and ``report.html`` are written there), ``resume``, ``overwrite``, ``isolation``,
            ``workers``, ``executor``, ``max_response_bytes``, ``adaptive``, ``requests_per_minute``,
            ``tokens_per_minute``, ``prices``, ``max_cost_usd``, ``a2a_preflight``, ``a2a_probe``, ``judge_max_cost_usd``.

    Returns:
        An ``lf.Comparison``: ``summary``, ``pairwise(metric)``, ``verdict()``; ``print(cmp)`` says it.

    Raises:
        LevelfieldError: Bad input, before any agent runs; ``RegressionError`` when ``fail_if_worse`` finds
            a significant drop.
    """
    return short_errors(lambda: run_coroutine(acompare(
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
        from .._core.stats.judge_correction import check_label_cases, read_human_labels

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
    if stop_early:
        raise ConfigError("faults= runs every case clean and under faults to pair them; stop_early does not combine "
                          "with it yet: leave stop_early out, or run the faults alone with lf.evaluate(..., faults=...)")
    if certify is not None:
        certify = certify.read(load_dataset(dataset))  # a bad labels file fails before any agent runs
    from ..comparison._record import FAULTED_FOLDER

    faulted_cfg = cfg if cfg.out_dir is None else cfg.replace(out=cfg.out_dir / FAULTED_FOLDER)
    clean = await _compare(dataset, agents, metrics, config=cfg, stats=settings, baseline=baseline, fail_if_worse=None,
                           stop_early=False, simulator=simulator, experiment=None, judge=judge, judge_config=judge_config, tools=tools, faults=None,
                           options={}, kind=kind, allow_different_evaluators=allow_different_evaluators)
    faulted = await _compare(dataset, agents, metrics, config=faulted_cfg, stats=settings, baseline=None,
                             fail_if_worse=None, stop_early=False, simulator=simulator, experiment=None, judge=judge, judge_config=judge_config,
                             tools=tools, faults=faults, options={}, kind=kind, paired_with_clean=False)
    clean = clean.with_context(faulted=faulted, faults=repr(faults))  # its robustness: how each agent holds up
    if cfg.out_dir is not None:
        from .. import report

        report.save(clean, cfg.out_dir)  # again: the report now holds how each agent holds up
    return _logged_and_gated(clean, experiment, fail_if_worse, certify)


def compare_as(kind: str, dataset: Any, agents: Mapping[str, Any] | Sequence[Any], metrics: Sequence[str | Metric] | None,
               *, config: RunConfig | None = None, stats: StatsConfig | None = None, baseline: Any = None,
               stop_early: bool | str = False, simulator: Any = None, experiment: str | None = None,
               tools: Any = None, faults: Any = None, allow_different_evaluators: bool = False) -> Comparison:
    """:func:`compare`, with the run recorded as made by ``kind`` (the record's ``run_kind``): the
    command line's ``eval --agent`` with ``--baseline`` or ``--faults`` (its runs compared with saved
    ones, or clean with faulted ones) runs its one agent through here as ``evaluate``. Not public."""
    return short_errors(lambda: run_coroutine(short_errors_async(_compare(
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
    require_experiment_logging(experiment)
    settings = _stats_from(stats, options, "compare")
    cfg = run_config(config, _function=compare, **options)
    if faults is not None and paired_with_clean:
        return await _compare_clean_and_faulted(
            dataset, agents, metrics, cfg=cfg, settings=settings, baseline=baseline, fail_if_worse=fail_if_worse,
            stop_early=stop_early, simulator=simulator, experiment=experiment, judge=judge, judge_config=judge_config, tools=tools,
            faults=faults, kind=kind, certify=certify, allow_different_evaluators=allow_different_evaluators)
    ds = load_dataset(dataset)
    if certify is not None:
        certify = certify.read(ds)  # the labels read and checked against the cases before any agent runs
    resolved = resolve_metrics(metrics, judge=judge, judge_config=judge_config_of(judge_config))
    runnables = _resolve_agents(agents, cfg)
    executor = executor_of(cfg, simulator)
    check_agent_concurrency(cfg, runnables, resolved)
    levelled = levelling_of(tools, faults, cfg, runnables)
    runnables = levelled.agents
    early = _early_stop(stop_early, settings, ds, resolved, runnables, cfg, executor, simulator, baseline)
    joined = None
    if baseline is not None:
        # Loaded before any agent runs, so a bad baseline fails fast.
        from ..comparison._baseline import prepare_baseline

        joined = await prepare_baseline(baseline, ds, resolved, taken=[r.name for r in runnables], trials=cfg.trials,
                                        tools=levelled.header, allow_different_evaluators=allow_different_evaluators)
    from .._core.run.engine import run_and_score

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
        from ..comparison._comparison import Comparison
        from ..comparison._context import ComparisonContext

        context = ComparisonContext(
            kind=kind, baseline=joined, evaluator_notes=list(joined.evaluator_notes) if joined is not None else [],
            tool_levelling=levelled.report(results), tools_header=levelled.header,
            stopped_early=early.report() if early is not None else None)
        cmp = Comparison(ds, results, resolved, config=cfg, stats=settings, context=context)
        if cfg.out_dir is not None:
            from .. import report

            report.save(cmp, cfg.out_dir)
    warn_if_always_failed(cmp.results)
    # The baseline's rows were judged when it ran: only this run's judges are checked.
    warn_if_judges_unreadable({a: r for a, r in cmp.results.items() if joined is None or a != joined.name}, resolved)
    return _logged_and_gated(cmp, experiment, fail_if_worse, certify)


def _logged_and_gated(cmp: Comparison, experiment: str | None, fail_if_worse: Any, certify: Any = None) -> Comparison:
    """``cmp`` logged to its MLflow experiment and checked by its gate (``RegressionError`` when it fails)."""
    if experiment is not None:
        from .experiment import log_comparison

        log_experiment(lambda: log_comparison(cmp, experiment), experiment)
    if fail_if_worse:
        from .._core.errors import RegressionError
        from ..gate import check_regressions

        gate = check_regressions(cmp, fail_if_worse, **(certify.options() if certify is not None else {}))
        if gate.failed:
            raise RegressionError(gate, cmp)
    return cmp
