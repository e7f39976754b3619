"""The evaluation engine: run agents on a dataset and score every run; adapter-free.

The public entry points (``lf.evaluate``, ``lf.compare``, ``EvalTask``) live in
``levelfield._entry``: they turn whatever the user passed into ``AgentRunnable``s and call
this engine, so ``core`` never imports an adapter.

With ``config.out`` every finished run is journaled to ``out/runs.jsonl`` (see ``record``) as it
finishes; with ``config.resume`` the runs already in that journal are kept, not run again (the
journal is opened by ``levelfield._core.run.journaling``). A comparison that stops early is fed
through ``levelfield._core.run.early_stop``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from ..data.config import RunConfig, prices_of
from ..data.cost_limit import BudgetReport, CostLimit, RunBudget
from ..data.dataset import EvalDataset
from ..data.protocol import AgentRunnable
from ..data.types import AgentRun
from ..errors import DatasetError
from ..results.columns import RunColumns
from ..results.journal import Journal
from ..results.record import RunKey
from ..results.result import EvalResult
from ..results.saved_run import saved_run
from ..score.batch import score_rows
from ..score.batch.runs import RunScorer
from ..score.batch.runs import is_trajectory_metric as _is_trajectory_metric
from ..score.metrics.base import Metric
from ..score.scoring import context_for
from . import endpoints
from .conversation import Conversations, SimulatedUser
from .early_stop import EarlyStop
from .isolation import check_picklable
from .journaling import open_journal
from .notices import (
    BudgetWarning,
    MissingReferenceWarning,
    NoToolCallsWarning,
    agents_without_tool_calls,
    missing_references,
    tool_call_tally,
    warn_user,
)
from .preflight import hidden_tool_calls, observed_hidden, run_preflights, with_traffic
from .runner import Executor, run_agents, spending_limit

__all__ = ["score_saved", "saved_runs", "run_and_score", "warn_missing_references"]


def saved_runs(dataset: EvalDataset) -> list[AgentRun]:
    """The runs of a dataset's saved predictions (no agent ran): one per case, failed where the row says so."""
    if not dataset.has_predictions:
        raise DatasetError(
            f"{dataset.source}: no agent was given and no row has a 'response' or 'predicted_trajectory' "
            "to score; pass an agent, or a dataset with saved predictions"
        )
    return [saved_run(case) for case in dataset]


def _skip_scenarios(dataset: EvalDataset) -> tuple[EvalDataset, dict[str, str]]:
    kept, skipped = dataset.without_scenarios()
    if skipped:
        warn_user(
            f"{dataset.source}: skipped {len(skipped)} conversation_scenario case(s) ({', '.join(list(skipped)[:5])}): "
            "they need a user simulator")
        if not len(kept):
            raise DatasetError(f"{dataset.source}: every case is a conversation_scenario; they need a user simulator")
    return kept, skipped


async def score_saved(dataset: EvalDataset, metrics: Sequence[Metric], config: RunConfig | None = None) -> EvalResult:
    """Score the predictions a dataset already holds (``response``, ``predicted_trajectory``)."""
    dataset, skipped = _skip_scenarios(dataset)
    runs = saved_runs(dataset)
    warn_missing_references(dataset, metrics)
    contexts = [context_for(case, None) for case in dataset]
    # Saved rows count as runs, so saved failures score NaN like live ones.
    for ctx, run in zip(contexts, runs):
        ctx.failure = run.failure
    budget = judge_budget(config)
    scores = await score_rows(contexts, metrics, budget=budget)
    _warn_judges_stopped(budget)
    result = EvalResult(dataset, runs, scores, metrics, agent_name=None, scored_saved_predictions=True, config=config)
    result.skipped = skipped
    return result


def warn_missing_references(dataset: EvalDataset, metrics: Sequence[Metric]) -> None:
    """A MissingReferenceWarning for each metric whose reference column some case lacks."""
    for missing in missing_references(list(dataset), metrics):
        warn_user(MissingReferenceWarning(missing.message(dataset.source)))


async def run_and_score(
    dataset: EvalDataset,
    agents: Sequence[AgentRunnable],
    metrics: Sequence[Metric],
    config: RunConfig,
    *,
    kind: str = "evaluate",
    settings: Mapping[str, Any] | None = None,
    simulator: SimulatedUser | None = None,
    executor: Executor | None = None,
    stop_early: EarlyStop | None = None,
    tools: Mapping[str, Any] | None = None,
) -> dict[str, EvalResult]:
    """Every agent on every case and trial, each run scored (and journaled) as it finishes; one result per agent.

    ``stop_early``: cases start in its random order and no new run starts once every pair of
    agents is decided (see ``levelfield._core.stats.sequential``); when it stopped, the results hold
    the runs of the cases it analysed, no more (runs of later cases that were in flight are
    journaled, and counted in its report, but left out), so they do not depend on timing.

    With a ``simulator``, conversation-scenario cases are played out with it (and replayed to the
    other agents); without one they are skipped with the reason. ``executor`` runs the agents
    elsewhere (a Ray cluster, see ``levelfield.executors``); journal, scoring and results stay
    here, so they are the same as with the local runner (the default).

    ``tools``: what levelled the agents' tools (cassette, fault schedule; ``levelfield.tools``), kept
    in the record's header; a resume with another is refused.
    """
    skipped: dict[str, str] = {}
    if simulator is None:
        dataset, skipped = _skip_scenarios(dataset)
    dataset.require_prompts()
    if config.isolation == "process":
        check_picklable(agents)  # before the journal exists: a bad agent must leave nothing behind
    if executor is not None:
        executor.check(agents)  # likewise: an agent the executor cannot ship fails before any run
    warn_missing_references(dataset, metrics)
    scorer = RunScorer(dataset, metrics, budget=judge_budget(config))
    # Before the first case: do the A2A agents speak the protocol? (Kept in the record; see preflight.py.)
    preflights = await run_preflights(dataset, agents, config)
    scorer.hidden_calls = hidden_tool_calls(preflights, dataset)
    if preflights:
        scorer.hidden_from = lambda: observed_hidden(agents, preflights)
    journal, done = open_journal(dataset, [a.name for a in agents], metrics, config, kind=kind, settings=settings,
                                 tools=tools, a2a_preflight=preflights)
    conversations = Conversations(simulator, done) if simulator is not None else None
    if stop_early is not None:
        for run in done.values():
            stop_early.observe(run, scorer(run))

    # Runs a cluster streams back that the journal holds are not held here too: each is scored and
    # journaled as it arrives, and only a few numbers of it are kept (``RunColumns``); the result
    # reads the runs back from the journal when asked. (Judged metrics, scored together at the end,
    # a simulator's replays and a sequential stop need the runs at hand: those keep them.)
    if (journal is not None and executor is not None and getattr(executor, "can_stream", False)
            and stop_early is None and simulator is None and not scorer.judged and journal.scores_current):
        results = await _stream(dataset, agents, metrics, config, executor, scorer, journal, done, skipped)
        return _with_preflights(results, with_traffic(preflights, agents))

    # With out= the runs that finish in one turn of the event loop are scored together (one pass of
    # the engine) and journaled together on the loop's next turn: a finished run hands its line off
    # and its slot waits until the line is durable. Explanations are made at the end, for the tables.
    if (journal is not None and kind == "evaluate" and not done and not scorer.judged
            and not any(getattr(a, "on_threads", False) for a in agents)):
        # The tables' rows made as the runs are journaled, off the loop (by the journal's thread, after
        # each batch it made durable): out= has less to do at the end. Not beside sync agents: their
        # threads and the loop want the interpreter as each call returns, and a thread of rows among
        # them slowed the runs (bench/bench_runner.py, 2,000 x 20 ms sync at 100 in flight, out= as a whole:
        # 1.30x the runs without out= with the rows made on the journal's thread, 1.22-1.24x without them).
        from ..results.table_ahead import TableAhead

        journal.ahead = TableAhead(list(dataset), metrics, config)
    arrived: list[AgentRun] = []
    recorded: asyncio.Future[None] | None = None

    def score_and_journal() -> None:
        nonlocal recorded
        runs, waiting = list(arrived), recorded
        arrived.clear()
        recorded = None
        assert waiting is not None and journal is not None
        try:
            flushed = None
            for run, scores in zip(runs, scorer.keep(runs)):
                flushed = journal.write(run, scores)
            journal.hand_over()  # to the journal's thread now: it serialises, writes and fsyncs them
        except Exception as exc:  # noqa: BLE001 - a metric or the journal failed: the runs waiting hear it
            waiting.set_exception(exc)
            return
        if flushed is None:
            waiting.set_result(None)
        else:
            flushed.add_done_callback(lambda f: _pass_on(f, waiting))

    def finished(run: AgentRun) -> Awaitable[None] | None:
        nonlocal recorded
        if stop_early is not None:
            scores = scorer(run)
            stop_early.observe(run, scores)
            return None if journal is None else journal.write(run, scores)
        if journal is None:
            scorer.defer(run)
            return None
        arrived.append(run)
        if recorded is None:
            loop = asyncio.get_running_loop()
            recorded = loop.create_future()
            loop.call_soon(score_and_journal)
        return recorded  # the slot's next run waits until this one is on disk

    # The agents' spending limit, read after the runs for what each agent spent and was kept from starting.
    spend = spending_limit(config, agents, dataset, done) if config.max_cost_usd is not None and executor is None else None
    # One set of endpoint limits for the whole evaluation: the agents' runs and the judge's calls.
    registry = endpoints.Limits.of(config)
    with endpoints.using(registry):
        try:
            if stop_early is None:
                if executor is None:
                    runs_by_agent = await run_agents(dataset, agents, config, on_run=finished, done=done,
                                                     run_scenario=conversations, cost_limit=spend)
                else:
                    runs_by_agent = await executor.run_agents(dataset, agents, config, on_run=finished, done=done,
                                                              run_scenario=conversations)
            else:
                runs_by_agent = await run_agents(stop_early.run_order(dataset), agents, config, on_run=finished,
                                                 done=done, run_scenario=conversations, stop=stop_early.stop,
                                                 cost_limit=spend)
                runs_by_agent = stop_early.analysed_runs(stop_early.in_dataset_order(dataset, runs_by_agent))
        finally:
            if journal is not None:
                journal.close()
        tallies = {agent: tool_call_tally(runs) for agent, runs in runs_by_agent.items()}
        _warn_no_tool_calls(tallies, metrics, dataset, {**scorer.hidden_calls, **observed_hidden(agents, preflights)})
        # Runs a decided sequential test never started are its to report; the rest were the budget's.
        stopped_early = stop_early is not None and stop_early.stop()
        ran = {(run.agent_name, run.case_id, run.trial) for runs in runs_by_agent.values() for run in runs} \
            if config.max_cost_usd is not None and not stopped_early else set()
        not_started = [] if stopped_early else _not_started(dataset, agents, config, ran)
        report = None if spend is None else _budget_report(spend, not_started)
        if report is not None and report.reached:
            _warn_budget_spent(config, report)
        every_run = [run for a in agents for run in runs_by_agent[a.name]]
        scores = await scorer.scores(every_run)
        _warn_judges_stopped(scorer.budget)
    registry.remember()
    rate_limits = registry.stats()
    results = {}  # typed where the streamed path sets it
    start = 0
    for agent in agents:
        runs = runs_by_agent[agent.name]
        results[agent.name] = EvalResult(
            dataset, runs, scores[start : start + len(runs)], metrics, agent_name=agent.name, config=config
        )
        results[agent.name].skipped = skipped
        results[agent.name].limits = rate_limits
        if journal is not None:
            if not done and not scorer.judged:
                # Every run is in the journal with the scores it records (judged ones come after the
                # journal line; a resumed journal may hold runs this result leaves out): save keeps it.
                results[agent.name].recorded_in(journal.path, journal.ahead)
        results[agent.name].not_started = [key for key in not_started if key[0] == agent.name]
        results[agent.name].budget = report
        start += len(runs)
    return _with_preflights(results, with_traffic(preflights, agents))


def _with_preflights(results: dict[str, EvalResult], preflights: Mapping[str, dict[str, Any]]) -> dict[str, EvalResult]:
    for name, found in preflights.items():
        if name in results:
            results[name].a2a_preflight = {name: found}
    return results


def _warn_no_tool_calls(tallies: Mapping[str, tuple[int, int]], metrics: Sequence[Metric], dataset: EvalDataset,
                        hidden: Mapping[str, str]) -> None:
    """The no-tool-call warning; for an A2A agent the preflight found exposing none, what it found instead."""
    for text in agents_without_tool_calls({a: t for a, t in tallies.items() if a not in hidden}, metrics, dataset):
        warn_user(NoToolCallsWarning(text))
    for agent, said in hidden.items():
        done, with_calls = tallies.get(agent, (0, 0))
        if done and not with_calls and any(_is_trajectory_metric(m) for m in metrics):
            warn_user(NoToolCallsWarning(f"agent {agent!r}: {said} — its trajectory metrics are NaN with that "
                                         "explanation, not 0"))


async def _stream(dataset: EvalDataset, agents: Sequence[AgentRunnable], metrics: Sequence[Metric], config: RunConfig,
                  executor: Executor, scorer: RunScorer, journal: Journal, done: Mapping[RunKey, AgentRun],
                  skipped: Mapping[str, str]) -> dict[str, EvalResult]:
    """``run_and_score`` for runs the journal holds and the driver does not: each run scored and
    journaled as it arrives, a few numbers of it kept (``RunColumns``), one journal-backed result per agent."""
    position = {c.case_id: i for i, c in enumerate(dataset)}
    names = [m.name for m in metrics]
    kept = {a.name: RunColumns(names, prices_of(config)) for a in agents}
    journal.track_offsets()
    earlier = list(done.values())
    for run, scores in zip(earlier, scorer.score_now(earlier)):  # a resumed journal's runs, as they are on disk
        kept[run.agent_name].add_run(run, scores, position[run.case_id], journal.earlier[(run.agent_name, run.case_id, run.trial)])
    # From here on only their keys matter (the runs not to make again): the runs themselves are let go.
    keys: dict[RunKey, Any] = dict.fromkeys(done)
    del earlier
    if isinstance(done, dict):
        done.clear()

    # The runs of a batch arrive together: they are scored together (one pass of the engine, not one
    # per run) on the loop's next turn, then journaled; each waits until its line is on disk.
    arrived: list[AgentRun] = []
    written: asyncio.Future[None] | None = None

    def finished(run: AgentRun) -> Awaitable[None] | None:
        nonlocal written
        arrived.append(run)
        if written is None:
            written = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(score_and_write)
        return written

    def score_and_write() -> None:
        nonlocal written
        runs, done_writing = list(arrived), written
        arrived.clear()
        written = None
        assert done_writing is not None
        try:
            flushed = None
            for run, scores in zip(runs, scorer.score_now(runs)):
                kept[run.agent_name].add_run(run, scores, position[run.case_id], -1 - journal.written)
                flushed = journal.write(run, scores)
            journal.hand_over()
        except Exception as exc:  # noqa: BLE001 - a metric or the journal failed: the runs waiting hear it
            done_writing.set_exception(exc)
            return
        if flushed is None:
            done_writing.set_result(None)
        else:
            flushed.add_done_callback(lambda f: _pass_on(f, done_writing))

    registry = endpoints.Limits.of(config)
    with endpoints.using(registry):
        try:
            await executor.run_agents(dataset, agents, config, on_run=finished, done=keys, keep=False)  # type: ignore[call-arg]
        finally:
            journal.close()
    assert journal.offsets is not None
    for columns in kept.values():
        columns.place(journal.offsets)
    tallies = {name: (columns.successful, columns.with_calls) for name, columns in kept.items()}
    _warn_no_tool_calls(tallies, metrics, dataset, scorer.hidden_calls)
    ids = [c.case_id for c in dataset]
    ran = ({(name, ids[case], trial) for name, columns in kept.items() for case, trial in zip(columns.case, columns.trial)}
           if config.max_cost_usd is not None else set())
    not_started = _not_started(dataset, agents, config, ran)  # a budget does not stream yet: none
    registry.remember()
    rate_limits = registry.stats()
    results: dict[str, EvalResult] = {}
    for agent in agents:
        result = EvalResult.from_journal(dataset, kept[agent.name], metrics, journal.path, agent_name=agent.name, config=config)
        result.skipped = dict(skipped)
        result.limits = rate_limits
        result.not_started = [key for key in not_started if key[0] == agent.name]
        results[agent.name] = result
    return results


def _pass_on(source: asyncio.Future[None], target: asyncio.Future[None]) -> None:
    """``target`` ends as ``source`` did (done, failed or cancelled)."""
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())  # type: ignore[arg-type]
    else:
        target.set_result(None)


def judge_budget(config: RunConfig | None) -> CostLimit | None:
    """The judges' spending limit of ``config`` (``judge_max_cost_usd``), or None."""
    if config is None or config.judge_max_cost_usd is None:
        return None
    return CostLimit(config.judge_max_cost_usd, prices_of(config) or {}, shared=False)


def _warn_judges_stopped(budget: CostLimit | None) -> None:
    if budget is None:
        return
    if budget.refused:
        warn_user(BudgetWarning(
            f"judge_max_cost_usd={budget.limit:g} reached: {budget.refused} judged score(s) were not asked for and "
            "score NaN (a judge failure); resume with a larger judge_max_cost_usd to judge them (answers already "
            "given come from the judge cache at no cost)"))
    for metric, why in budget.unpriced.items():
        warn_user(BudgetWarning(f"judge_max_cost_usd: the cost of metric {metric!r}'s judge is unknown ({why}), so the "
                                "budget could not count it; pass prices={...} to price it"))


def _not_started(dataset: EvalDataset, agents: Sequence[AgentRunnable], config: RunConfig,
                 ran: set[RunKey]) -> list[RunKey]:
    """The planned runs not started (a spending limit was reached; ``ran``: the keys of those that were), in plan order."""
    if config.max_cost_usd is None:
        return []
    return [(a.name, c.case_id, t) for c in dataset for t in range(config.trials) for a in agents
            if (a.name, c.case_id, t) not in ran]


def _budget_report(spend: RunBudget, not_started: Sequence[RunKey]) -> BudgetReport:
    counts: dict[str, int] = {}
    for agent, _, _ in not_started:
        counts[agent] = counts.get(agent, 0) + 1
    return spend.report(counts)


def _warn_budget_spent(config: RunConfig, report: BudgetReport) -> None:
    resume = (f"run again with out={str(config.out)!r}, resume=True (--resume) and a larger max_cost_usd (--max-cost) "
              "to finish them" if config.out is not None else "give out=... to keep the runs and resume later")
    agents = "\n".join(f"  {line}" for line in report.agent_lines())
    warn_user(BudgetWarning(
        f"{report.headline()} and left out of the results; {resume}. Per agent:\n{agents}"))
