"""One attempt of an agent's turn: its timeout, and a watch on steps that block the event loop.

An agent's coroutine is awaited step by step (:class:`_Watched`): a step that holds the event loop
for long is named in a ``BlockingAgentWarning``, and one still running past the run's timeout is
ended from outside by the evaluation's watchdog (``levelfield._core.run.watchdog``). The timeouts
of one length share one timer (:class:`_Deadlines`). The runner (``levelfield._core.run.runner``)
sets the context variables below around an evaluation.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import time
import warnings
from collections.abc import Awaitable, Generator
from typing import Any, TypeVar

from ..data.protocol import AgentRequest, AgentRunnable
from ..data.types import AgentOutput
from ..errors import AgentOutputError
from . import budget
from .watchdog import BlockingAgentWarning, LoopBlocked, LoopWatchdog

__all__: list[str] = []  # private to the runner and a case's run: _attempt, and the context the runner sets

T = TypeVar("T")
_timeout_scope = getattr(asyncio, "timeout", None)  # Python 3.11+

# Agents already named in a BlockingAgentWarning during this evaluation (set by run_agents).
_warned_blocking: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("levelfield_warned_blocking", default=None)
_BLOCKING_SECONDS = 1.0  # a step longer than this (or than the timeout) is named in a warning
# The watchdog of the current evaluation's event loop (set by run_agents).
_loop_watchdog: contextvars.ContextVar[LoopWatchdog | None] = contextvars.ContextVar("levelfield_loop_watchdog", default=None)


class _Watched:
    """Awaits an agent's coroutine step by step, timing each step: a step that blocks the event
    loop for long cannot be preempted by any timeout, so the agent is named in a warning. While a
    step runs, the evaluation's watchdog (``levelfield._core.run.watchdog``) watches it: a step
    still running past the run's timeout is ended from outside and becomes a TimeoutError."""

    __slots__ = ("_awaitable", "_agent", "_case", "_timeout", "_warns")

    def __init__(self, awaitable: Awaitable[Any], agent: str, case_id: str, timeout: float | None,
                 warns: bool = True) -> None:
        self._awaitable = awaitable
        self._agent = agent
        self._case = case_id
        self._timeout = timeout
        self._warns = warns

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self._awaitable.__await__()
        clock = time.perf_counter
        watchdog = _loop_watchdog.get()
        longest = 0.0
        value: Any = None
        error: BaseException | None = None
        try:
            while True:
                start = clock()
                step = None if watchdog is None else watchdog.begin(self._agent, self._case, self._timeout)
                try:
                    try:
                        signal = steps.send(value) if error is None else steps.throw(error)
                    finally:
                        longest = max(longest, clock() - start)
                        if step is not None:
                            watchdog.end(step)  # type: ignore[union-attr]
                except StopIteration as stop:
                    return stop.value
                except LoopBlocked:
                    _close(steps)
                    raise TimeoutError from None
                value, error = None, None
                try:
                    value = yield signal
                except BaseException as exc:  # noqa: BLE001 - passed on to the agent, as await would
                    error = exc
        finally:
            limit = _BLOCKING_SECONDS if self._timeout is None else min(_BLOCKING_SECONDS, self._timeout)
            if longest >= limit:
                self._warn(longest)

    def _warn(self, seconds: float) -> None:
        if not self._warns:
            return
        warned = _warned_blocking.get()
        if warned is None or self._agent in warned:
            return
        warned.add(self._agent)
        limit = "" if self._timeout is None else f" and its timeout ({self._timeout:g} s) could not stop it"
        warnings.warn(
            f"agent {self._agent!r} blocked the event loop for {seconds:.1f} s in one step (case {self._case!r}): "
            f"no other run progressed meanwhile{limit}. An async agent must not make blocking calls: make it a "
            "sync function (levelfield runs those in threads) or wrap the blocking call in asyncio.to_thread()",
            BlockingAgentWarning,
            stacklevel=2,
        )


def _close(steps: Any) -> None:
    """Close an agent's coroutine that was ended from outside; whatever it raises is its own."""
    try:
        steps.close()
    except BaseException:  # noqa: BLE001 - the run is already over (timed out)
        pass


async def _guarded(awaitable: Awaitable[T]) -> tuple[bool, Any]:
    # Python 3.10's wait_for runs the agent in a task of its own, whose SystemExit would escape
    # to the event loop: catch everything but cancellation inside that task.
    try:
        return True, await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001
        return False, exc


class _Deadline:
    """One attempt's deadline in a :class:`_Deadlines` queue."""

    __slots__ = ("when", "task", "cancelling", "expired")

    def __init__(self, when: float, task: asyncio.Task, cancelling: int) -> None:
        self.when = when
        self.task: asyncio.Task | None = task  # None once the attempt is over
        self.cancelling = cancelling  # the task's cancel requests at the start (not ours)
        self.expired = False


class _Deadlines:
    """The timeouts of one length on one event loop (Python 3.11+), as one timer and a queue.

    Deadlines of one length come due in the order they were set, so the queue is sorted by
    construction: one timer armed for its head serves every attempt, where ``asyncio.timeout``
    pushes a timer handle per attempt onto the loop's heap and cancels it (measured: ~10 us an
    attempt against ~4 us here). An attempt past its deadline is cancelled in place and turned
    into a TimeoutError, as ``asyncio.timeout`` does.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self._loop = loop
        self._seconds = seconds
        self._queue: collections.deque[_Deadline] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None

    def start(self, task: asyncio.Task) -> _Deadline:
        queue = self._queue
        while queue and queue[0].task is None:  # attempts already over
            queue.popleft()
        entry = _Deadline(self._loop.time() + self._seconds, task, task.cancelling())
        queue.append(entry)
        if self._timer is None:
            self._timer = self._loop.call_at(entry.when, self._expire, entry.when)
        return entry

    def _expire(self, due: float) -> None:
        self._timer = None
        queue = self._queue
        while queue:
            entry = queue[0]
            if entry.task is None:
                queue.popleft()
            elif entry.when <= due:
                queue.popleft()
                entry.expired = True
                entry.task.cancel()
            else:
                self._timer = self._loop.call_at(entry.when, self._expire, entry.when)
                return

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._queue.clear()


# Deadline queues of the current evaluation, by timeout length (set by run_agents).
_deadline_queues: contextvars.ContextVar[dict[float, _Deadlines] | None] = contextvars.ContextVar(
    "levelfield_deadlines", default=None
)


async def _within(watched: _Watched, timeout: float) -> Any:
    queues = _deadline_queues.get()
    task = asyncio.current_task()
    if queues is None or task is None or not hasattr(task, "uncancel"):
        if _timeout_scope is not None:
            async with _timeout_scope(timeout):
                return await watched
        ok, output = await asyncio.wait_for(_guarded(watched), timeout)  # pragma: no cover - Python 3.10
        if not ok:  # pragma: no cover
            raise output
        return output  # pragma: no cover
    deadlines = queues.get(timeout)
    if deadlines is None:
        deadlines = queues[timeout] = _Deadlines(asyncio.get_running_loop(), timeout)
    entry = deadlines.start(task)
    try:
        return await watched
    except asyncio.CancelledError as exc:
        if entry.expired:
            entry.expired = False
            if task.uncancel() <= entry.cancelling:  # no other cancel request: ours, a timeout
                raise TimeoutError from exc
        raise
    finally:
        entry.task = None
        if entry.expired:  # the agent swallowed our cancellation and returned anyway
            task.uncancel()


async def _attempt(agent: AgentRunnable, request: AgentRequest, timeout: float | None) -> AgentOutput:
    started = time.perf_counter()
    # An agent whose steps are its framework's code (an ADK agent) says so: the warning's advice
    # (make it sync, or wrap the blocking call) is not its author's to follow.
    watched = _Watched(agent.arun(request), agent.name, request.case_id, timeout,
                       warns=getattr(agent, "warn_blocking", True) is not False)
    if timeout is None:
        output = await watched
    else:
        # The adapter may ask how long it has left (a server's Retry-After must fit in it).
        token = budget.set_deadline(timeout)
        try:
            output = await _within(watched, timeout)
        finally:
            budget.reset_deadline(token)
    if not isinstance(output, AgentOutput):
        raise AgentOutputError(
            f"agent {agent.name!r} returned {type(output).__name__} from arun(); an adapter must return AgentOutput"
        )
    # Each turn's own time (invocation_duration_v1 averages it per turn); the run's latency spans every turn.
    output.duration_seconds = round(time.perf_counter() - started, 6)
    return output
