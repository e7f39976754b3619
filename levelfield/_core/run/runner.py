"""The execution engine: every case of a dataset through one or more agents, nothing lost.

Runs are async with a bounded number in flight (a fixed set of slots taking jobs in plan order,
within each agent's own limit), each case played once per trial by ``levelfield._core.run.case``
(its turns retried, each attempt timed out and watched: ``levelfield._core.run.attempt``);
every case and trial yields an ``AgentRun``, whatever the agent did: an agent that raises
anything (``SystemExit``, its own ``CancelledError``, an exception whose message cannot be
read...), hangs or answers nonsense is a failed run, and the other runs go on. Only the user's
Ctrl-C (or a cancellation of the evaluation itself) stops it.

Sync agents run on daemon threads (``levelfield._core.run.threads.run_sync``): a call that outlives
its timeout is left behind, so it neither holds one of the ``concurrency`` slots nor keeps the
process from exiting. With ``RunConfig(isolation="process")`` agents run in worker processes instead
(``levelfield._core.run.isolation``), so a crash in native code or ``os._exit`` kills a worker, not the
evaluation.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import math
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..data.config import RunConfig, prices_of
from ..data.cost_limit import RunBudget, input_size
from ..data.dataset import EvalCase, EvalDataset
from ..data.protocol import AgentRunnable
from ..data.types import AgentRun, clean_run
from . import budget, endpoints
from .attempt import _deadline_queues, _Deadlines, _loop_watchdog, _warned_blocking
from .case import run_case
from .interrupts import user_interrupted
from .interrupts import watching as watching_interrupts
from .isolation import ProcessIsolation
from .notices import BudgetWarning, warn_user
from .scope import CURRENT_SCOPE, RunScope
from .threads import STOP_GRACE, quick_handoffs, stopping
from .tracebacks import print_first_failure
from .watchdog import BlockingAgentWarning, LoopWatchdog

__all__ = ["run_agents", "spending_limit", "interleaved_plan", "BlockingAgentWarning", "Executor", "OnRun", "PlayScenario",
           "fewer_collections", "YOUNG_COLLECTION"]

T = TypeVar("T")
C = TypeVar("C")


_LIMITS_READ_EVERY = 0.05
"""Seconds between two readings of the endpoints' limits for the progress bar (which is redrawn at most every 0.1 s)."""


class _Progress:
    """The progress bar: runs done, failures, and the busiest endpoint's calls in flight / limit,
    rate-limited answers and time spent waiting on limits (read every ``_LIMITS_READ_EVERY``
    seconds, not at every run: the bar shows it no more often)."""

    def __init__(self, total: int, enabled: bool, desc: str, registry: endpoints.Limits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.failures = 0
        self.bar = None
        self._registry = registry
        self._shown: tuple[int, str] = (0, "")
        self._clock = clock
        self._read_at = -math.inf
        self._limits = ""
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="run", leave=False, dynamic_ncols=True)

    def update(self, run: AgentRun) -> None:
        if run.failure:
            self.failures += 1
        if self.bar is not None:
            if self._registry is not None:
                now = self._clock()
                if now - self._read_at >= _LIMITS_READ_EVERY:
                    self._read_at = now
                    self._limits = self._registry.summary()
            shown = (self.failures, self._limits)
            if shown != self._shown:
                self._shown = shown
                postfix: dict[str, Any] = {"failures": shown[0]} if shown[0] else {}
                if shown[1]:
                    postfix["in flight"] = shown[1]
                self.bar.set_postfix(postfix, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def interleaved_plan(agents: Sequence[T], cases: Iterable[C], trials: int) -> list[tuple[T, C, int]]:
    """The order runs start in: case by case, each trial, every agent (case 1 agent A, case 1 agent B,
    case 2 agent A, ...), so an interrupted comparison holds every agent's runs on the same cases."""
    return [(agent, case, trial) for case in cases for trial in range(trials) for agent in agents]


_WAIT = object()  # what _JobQueue.take() gives when every job left belongs to an agent at its own limit


class _JobQueue:
    """The jobs of an evaluation, handed to the runner's slots in plan order; an agent with its own
    limit (``agent_concurrency``) never has more in flight, and its waiting jobs let other agents'
    jobs go first."""

    def __init__(self, jobs: Sequence[tuple[AgentRunnable, EvalCase, int]], limits: Mapping[str, int]) -> None:
        self._limits = dict(limits)
        self._busy = dict.fromkeys(self._limits, 0)
        self._queues: dict[str, collections.deque[tuple[int, tuple[AgentRunnable, EvalCase, int]]]] = {}
        for index, job in enumerate(jobs):
            self._queues.setdefault(job[0].name, collections.deque()).append((index, job))
        self._waiters: list[asyncio.Future[None]] = []

    def take(self) -> Any:
        """The next (index, job) a slot may run, ``_WAIT`` when only agents at their limit have jobs left, or None.

        The earliest job in plan order among the agents free to run one: with the plan case by
        case, agents advance together, and an agent at its limit lets the others go on."""
        waiting = False
        best: str | None = None
        for name, jobs in self._queues.items():
            if not jobs:
                continue
            limit = self._limits.get(name)
            if limit is not None and self._busy[name] >= limit:
                waiting = True
                continue
            if best is None or jobs[0][0] < self._queues[best][0][0]:
                best = name
        if best is None:
            return _WAIT if waiting else None
        if best in self._busy:
            self._busy[best] += 1
        return self._queues[best].popleft()

    def release(self, agent: str) -> None:
        """A job of ``agent`` finished: a slot waiting for that agent's limit may take its next job."""
        if agent in self._busy:
            self._busy[agent] -= 1
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def wait(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter


YOUNG_COLLECTION = 10_000
"""Allocations between two passes of the garbage collector over its youngest objects while runs are in
flight (CPython's default: 700)."""

_collector_lock = threading.Lock()
_collector_users = 0  # evaluations in flight that asked for fewer collections
_collector_restore: tuple[int, ...] | None = None  # the thresholds to put back when the last one ends


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Fewer passes of the garbage collector while runs are in flight; the previous thresholds afterwards.

    Each pass holds the interpreter, so no run's answer is taken and no call started meanwhile. At
    CPython's threshold a run's objects in flight (its request, futures, frames: they live as long as the
    agent's call) are walked in pass after pass, and those of the runs kept walked again in the older
    generation: 2,000 runs of 50 ms, 100 in flight, made 80 passes and 30 ms of them. With a pass every
    ``YOUNG_COLLECTION`` allocations most of those objects are freed before any pass sees them (about 7
    passes, half the time; ``bench/bench_runner.py``). Garbage in reference cycles is still collected, a
    little later. A larger threshold is kept, as is a collector the user turned off; thresholds the user
    set meanwhile are not undone. Nested and concurrent evaluations share one setting, restored when the
    last of them ends.
    """
    global _collector_users, _collector_restore
    with _collector_lock:
        if _collector_users == 0:
            current = gc.get_threshold()
            _collector_restore = current if 0 < current[0] < YOUNG_COLLECTION else None
            if _collector_restore is not None:
                gc.set_threshold(YOUNG_COLLECTION, *current[1:])
        _collector_users += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_users -= 1
            if _collector_users == 0 and _collector_restore is not None:
                if gc.get_threshold() == (YOUNG_COLLECTION, *_collector_restore[1:]):  # else the user's stays
                    gc.set_threshold(*_collector_restore)
                _collector_restore = None


OnRun = Callable[[AgentRun], Awaitable[Any] | None]
"""Called with each fresh run as it finishes; what it returns, when not None, is awaited before
that slot's next run (a journal write)."""
PlayScenario = Callable[[AgentRunnable, EvalCase, int, RunConfig, str], Awaitable[AgentRun]]
"""Plays one conversation-scenario case (agent, case, trial, config, run id) to its run."""


_STOP_RECORDING = 5.0
"""Seconds the slots get, once the user stopped the evaluation, to record the runs whose calls had returned."""


async def run_agents(
    dataset: EvalDataset,
    agents: Sequence[AgentRunnable],
    config: RunConfig,
    *,
    on_run: OnRun | None = None,
    done: Mapping[tuple[str, str, int], AgentRun] | None = None,
    run_scenario: PlayScenario | None = None,
    only: Collection[tuple[str, str, int]] | None = None,
    slots: asyncio.Semaphore | None = None,
    stop: Callable[[], bool] | None = None,
    cost_limit: RunBudget | None = None,
) -> dict[str, list[AgentRun]]:
    """Every agent on every case and trial; runs per agent in dataset order, then trial order.

    Runs start case by case across agents (:func:`interleaved_plan`), within ``concurrency`` and
    each agent's ``agent_concurrency``.

    ``on_run(run)`` is called as each run finishes (e.g. to score it while others are in flight);
    when it returns an awaitable (a journal write), the slot's next run waits for it.
    ``done`` maps (agent name, case id, trial) to runs finished earlier (a resumed journal): they
    are returned as they are, not run again, and ``on_run`` is not called for them.
    ``run_scenario`` plays the conversation-scenario cases (a simulated user; see ``conversation``).
    ``config.max_cost_usd``: an agent's run starts only while its likely cost fits in what is left;
    an agent whose next run would not fit stops, the others go on (see
    ``levelfield._core.data.cost_limit.RunBudget``; ``cost_limit``: the caller's, to read afterwards).
    The runs not started are left out of what is returned.
    ``only`` (agent name, case id, trial) keys: run just these, and return just their runs (one
    batch of a remote executor's worker). ``slots``: the bound on runs in flight, shared with other
    calls (a worker running several batches at once); by default one of ``config.concurrency``.
    ``stop()``: asked before each run starts; once it says True no run starts (those in flight
    finish), and the runs never started are left out of what is returned.
    """
    dataset.require_prompts()
    done = done or {}
    isolation = None
    if config.isolation == "process":
        # Every agent is checked here (it must be picklable), before any run starts.
        isolation = ProcessIsolation(agents)
        agents = [isolation.wrap(a) for a in agents]
    run_id = uuid.uuid4().hex[:8]
    plan = interleaved_plan(agents, dataset, config.trials)
    if only is not None:
        wanted = set(only)
        plan = [job for job in plan if (job[0].name, job[1].case_id, job[2]) in wanted]
    jobs = [job for job in plan if (job[0].name, job[1].case_id, job[2]) not in done] if done else plan
    desc = agents[0].name if len(agents) == 1 else f"{len(agents)} agents"
    reused = len(plan) - len(jobs)
    if reused:  # a resume: what the journal already held is said, not run again
        desc = f"{desc}, {reused:,} of {len(plan):,} runs resumed from the journal"
    # The endpoints' limits: the caller's (the engine's, shared with the judge; a Ray worker's,
    # shared by its batches), else this evaluation's own.
    registry = endpoints.current() or endpoints.Limits.of(config)
    progress = _Progress(len(jobs), config.progress, desc, registry)
    queue = _JobQueue(jobs, {a.name: config.agent_concurrency[a.name] for a in agents if a.name in config.agent_concurrency})
    fresh: list[AgentRun | None] = [None] * len(jobs)
    # A spending limit: an agent whose next run would pass it starts no more (they are left out, to resume).
    limit = cost_limit
    if limit is None and config.max_cost_usd is not None:
        limit = spending_limit(config, agents, dataset, done)
    sizes: dict[str, int] = {} if limit is None else {c.case_id: input_size(c) for c in dataset}

    uncounted: dict[asyncio.Future[Any], list[AgentRun]] = {}  # runs waiting for their record, by record
    debug_first = [True] if os.environ.get("LEVELFIELD_DEBUG") else []  # print the first failure's traceback

    def count_recorded(recorded: asyncio.Future[Any]) -> None:
        runs = uncounted.pop(recorded, [])
        if not (recorded.cancelled() or recorded.exception()):
            for run in runs:
                progress.update(run)

    async def one(agent: AgentRunnable, case: EvalCase, trial: int, held: float,
                  records: list[asyncio.Future[Any]]) -> AgentRun:
        play: Callable[..., Awaitable[AgentRun]] = run_case
        if run_scenario is not None and case.conversation_scenario is not None:
            play = run_scenario
        scope = RunScope(agent.name, case.case_id, trial)
        token = CURRENT_SCOPE.set(scope)  # this task's context: levelled tools read which run they serve
        try:
            if isolation is None:
                run = await play(agent, case, trial, config, run_id)
            else:
                async with isolation.lease(agent.name, config.timeout):  # one worker for all the turns of a case
                    run = await play(agent, case, trial, config, run_id)
        finally:
            CURRENT_SCOPE.reset(token)
        if scope.tool_events is not None:
            run.tool_events = list(scope.tool_events)
        if scope.environment is not None:
            run.environment = _close_environment(scope.environment)
            # The session (a whole database for τ²) is let go now: the run's scope stays reachable until the
            # evaluation ends (contexts that copied it), and every run's session would be held with it.
            scope.environment = None
        run = clean_run(run)  # the one place runs enter: text every writer can encode from here on
        if run.failure and run.traceback and debug_first:
            debug_first.clear()  # the first failure only: the others are in the run record
            print_first_failure(run.agent_name, run.case_id, run.trial, run.traceback)
        if limit is not None:
            limit.settle(agent.name, sizes[case.case_id], held, run)
        if on_run is not None:
            recorded = on_run(run)
            if recorded is not None:
                # The run counts once it is recorded (its journal line durable). The slot's next run
                # starts meanwhile, and the slot waits for this record when that run ends.
                recorded = asyncio.ensure_future(recorded)
                counted = uncounted.get(recorded)
                if counted is None:  # runs recorded together (one journal write) share one callback
                    counted = uncounted[recorded] = []
                    recorded.add_done_callback(count_recorded)
                counted.append(run)
                records.append(recorded)
                return run
        progress.update(run)
        return run

    async def slot() -> None:
        # One of ``concurrency`` slots: runs jobs one after another until none is left. A fixed set
        # of slots costs far less per run than a task per job queued on a semaphore.
        records: list[asyncio.Future[Any]] = []  # the records (journal lines) of this slot's runs not yet awaited
        try:
            await slot_jobs(records)
        except BaseException:
            for recorded in records:
                recorded.add_done_callback(_heard)  # the slot's own failure is the one to raise
            raise
        for recorded in records:  # every run of the slot is recorded before it ends (a failed record raises)
            await recorded

    async def slot_jobs(records: list[asyncio.Future[Any]]) -> None:
        while True:
            # The run before the last is recorded by now (its line had a whole run's time to be
            # written): waited for here, so a failed write stops the slot one run later at most.
            while len(records) > 1:
                await records.pop(0)
            if stopping():  # the evaluation was stopped while this slot's last run was kept: no new run
                raise asyncio.CancelledError
            if stop is not None and stop():
                return
            taken = queue.take()
            if taken is None:
                return
            if taken is _WAIT:
                await queue.wait()
                continue
            index, (agent, case, trial) = taken
            held = 0.0
            if limit is not None:
                admitted = await limit.acquire(agent.name, sizes[case.case_id])
                if admitted is None:  # this agent's runs no longer fit: its jobs left are passed over
                    queue.release(agent.name)
                    continue
                held = admitted
            try:
                if slots is None:
                    fresh[index] = await one(agent, case, trial, held, records)
                else:
                    async with slots:  # shared with other calls: the bound is theirs and ours together
                        fresh[index] = await one(agent, case, trial, held, records)
            finally:
                queue.release(agent.name)

    warned = _warned_blocking.set(set())
    limits_token = endpoints.set_current(registry)
    absorbing = budget.set_absorbing(config.adaptive)
    response_cap = budget.set_response_cap(config.max_response_bytes)
    deadline_queues: dict[float, _Deadlines] = {}
    deadlines_token = _deadline_queues.set(deadline_queues)
    watchdog = LoopWatchdog(_warned_blocking.get() or set())
    watch_token = _loop_watchdog.set(watchdog)
    # Objects that exist before the runs start outlive them: keep the garbage collector from
    # re-scanning that whole heap mid-run (a full collection holds the GIL for tens of ms,
    # stalling every run in flight). They return to the collector when the runs end. The
    # objects the runs make are walked less often too (fewer_collections).
    gc.freeze()
    # Sync agents' threads get the GIL back sooner (quick_handoffs), and fewer collections hold it.
    with watching_interrupts(), quick_handoffs(), fewer_collections():
        slot_tasks = [asyncio.ensure_future(slot()) for _ in range(min(config.concurrency, len(jobs)))]
        try:
            await asyncio.gather(*slot_tasks)
        except asyncio.CancelledError:
            if user_interrupted():
                # The user stopped the evaluation: the slots whose call had returned keep that run (it is
                # journaled, not paid for again on resume; see run_sync) before they end.
                await asyncio.wait(slot_tasks, timeout=STOP_GRACE + _STOP_RECORDING)
            raise
        finally:
            for task in slot_tasks:
                task.cancel()  # a slot that failed (e.g. on_run raised) stops the others too
            gc.unfreeze()
            watchdog.stop()
            _loop_watchdog.reset(watch_token)
            _warned_blocking.reset(warned)
            budget.reset_response_cap(response_cap)
            budget.reset_absorbing(absorbing)
            endpoints.reset_current(limits_token)
            _deadline_queues.reset(deadlines_token)
            for deadlines in deadline_queues.values():
                deadlines.close()
            progress.close()
            if isolation is not None:
                await isolation.aclose()
    if limit is not None:
        _warn_unpriced(limit)
    out: dict[str, list[AgentRun]] = {a.name: [] for a in agents}
    if not done:  # nothing resumed: the jobs are the plan, and each job's run is in its place
        for (agent, _, _), run in zip(plan, fresh):
            if run is not None:  # None: never started (a budget reached, or stopped early)
                out[agent.name].append(run)
        return out
    runs = iter(fresh)
    for agent, case, trial in plan:
        kept = done.get((agent.name, case.case_id, trial))
        run = kept if kept is not None else next(runs)
        if run is not None:
            out[agent.name].append(run)
    return out


def _heard(future: asyncio.Future[Any]) -> None:
    """Retrieve a record's failure no one will wait for (asyncio would log it as never retrieved)."""
    if not future.cancelled():
        future.exception()


def spending_limit(config: RunConfig, agents: Sequence[AgentRunnable], dataset: EvalDataset,
                   done: Mapping[tuple[str, str, int], AgentRun] | None = None) -> RunBudget:
    """The agents' budget of ``config.max_cost_usd``; ``done`` (a resumed journal's runs) counts as spent."""
    assert config.max_cost_usd is not None
    cases = {c.case_id: c for c in dataset}
    earlier = [(run, input_size(cases[run.case_id]) if run.case_id in cases else 1) for run in (done or {}).values()]
    return RunBudget(config.max_cost_usd, prices_of(config) or {}, [a.name for a in agents], earlier)


def _warn_unpriced(limit: RunBudget) -> None:
    for agent, why in limit.unpriced.items():
        warn_user(BudgetWarning(
            f"max_cost_usd: the cost of some runs of agent {agent!r} is unknown ({why}), so the budget could "
            "not count them; pass prices={model: {'input_per_mtok': ..., 'output_per_mtok': ...}} to price them"))


class Executor(Protocol):
    """Where agent runs execute (``RunConfig.executor``): the local runner above or a cluster's
    (``levelfield.executors``). The results are the same whichever runs them."""

    def check(self, agents: Sequence[AgentRunnable]) -> None:
        """Raise a ConfigError naming an agent this executor cannot run, before any run starts."""

    async def run_agents(
        self,
        dataset: EvalDataset,
        agents: Sequence[AgentRunnable],
        config: RunConfig,
        *,
        on_run: OnRun | None = None,
        done: Mapping[tuple[str, str, int], AgentRun] | None = None,
        run_scenario: PlayScenario | None = None,
    ) -> dict[str, list[AgentRun]]:
        """As :func:`run_agents`: every run once, ``on_run`` called once per fresh run as it finishes
        (what it returns, when not None, is awaited before that slot's next run: a journal write).

        An executor whose class sets ``can_stream = True`` also takes ``keep=False``: the runs then
        go to ``on_run`` only (the engine journals them) and the lists returned are empty, so a
        million runs streaming back are not held twice."""


def _close_environment(session: Any) -> dict[str, Any] | None:
    """What a run's environment session keeps of its final state; a session that cannot say is noted, never
    the run lost."""
    try:
        kept = session.close()
    except Exception as exc:  # noqa: BLE001 - the run stands; its record says why the state is missing
        return {"error": f"{type(exc).__name__}: {exc}"}
    return kept if isinstance(kept, dict) or kept is None else {"state": repr(kept)}
