"""Blocking calls off the event loop, on daemon threads that a hung call cannot pin down.

``run_sync`` is how adapters call sync frameworks; ``run_coroutine`` is how the sync entry points
(``evaluate``, ``compare``) run the async engine, on a loop whose default executor is the same
daemon threads (LangChain runs sync tools there) and whose tasks cannot let a ``SystemExit``
escape the loop. ``quick_handoffs`` shortens the interpreter's switch interval while runs are in
flight, so those threads are not kept waiting for the GIL.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import itertools
import queue
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from ..errors import ContainedBaseException, contained
from .failures import cancelled_from_outside, message_of
from .interrupts import user_interrupted

__all__ = ["run_sync", "run_coroutine", "stopping", "STOP_GRACE", "ContainedBaseException", "contained", "quick_handoffs", "HANDOFF_INTERVAL"]

T = TypeVar("T")


class _DaemonThreads:
    """Daemon threads that run blocking calls, one call per thread at a time.

    A thread is started whenever no idle one is waiting, so a call that hangs (its run timed out
    and was abandoned) never makes another call wait for a thread: the runner's semaphore, not
    this pool, bounds the calls in flight. Idle threads end after ``idle_seconds``. The threads
    are daemons and nobody joins them, unlike ``concurrent.futures`` (whose exit hook waits for
    every worker), so a hung call cannot keep the interpreter from exiting.
    """

    def __init__(self, idle_seconds: float = 30.0) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0  # threads waiting on the queue, minus the work items put there for them
        self._idle_seconds = idle_seconds
        self._names = itertools.count(1)

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work()`` (which reports its own outcome and must not raise) on an idle or new thread."""
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._queue.put(work)
                return
        name = f"levelfield-sync-{next(self._names)}"
        threading.Thread(target=self._serve, args=(work,), name=name, daemon=True).start()

    def _serve(self, work: Callable[[], None] | None) -> None:
        while work is not None:
            try:
                work()
            except BaseException:  # noqa: BLE001 - work items deliver their own outcome
                pass
            work = None
            with self._lock:
                self._idle += 1
            while work is None:
                try:
                    work = self._queue.get(timeout=self._idle_seconds)
                except queue.Empty:
                    with self._lock:
                        if self._queue.empty():  # nothing was put for this thread: retire it
                            self._idle -= 1
                            return


_threads = _DaemonThreads()


class _Inbox:
    """Outcomes of blocking calls on their way back to one event loop, delivered in batches.

    ``call_soon_threadsafe`` per finished call writes a byte to the loop's self-pipe each time (a
    system call that releases the GIL, which then has to be won back from the other agent
    threads). Calls that finish while a delivery is pending join it instead: one wake-up of the
    loop for all of them.
    """

    __slots__ = ("_loop", "_lock", "_items", "_scheduled", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)  # the registry below must not keep a finished loop alive
        self._lock = threading.Lock()
        self._items: list[tuple[asyncio.Future, tuple[bool, Any]]] = []
        self._scheduled = False

    def put(self, future: asyncio.Future, outcome: tuple[bool, Any]) -> None:
        """Deliver ``outcome`` to ``future`` on its loop (called from a worker thread)."""
        with self._lock:
            self._items.append((future, outcome))
            if self._scheduled:
                return
            self._scheduled = True
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the loop is gone")
            loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop is closed: nobody waits for these calls any more
            with self._lock:
                self._items.clear()
                self._scheduled = False

    def _deliver(self) -> None:
        with self._lock:
            items, self._items = self._items, []
            self._scheduled = False
        for future, outcome in items:
            if not future.done():  # cancelled: the run timed out and went on without this call
                future.set_result(outcome)


_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = weakref.WeakKeyDictionary()


def _inbox(loop: asyncio.AbstractEventLoop) -> _Inbox | None:
    try:
        inbox = _inboxes.get(loop)
        if inbox is None:
            inbox = _inboxes[loop] = _Inbox(loop)
    except TypeError:  # a loop that cannot be weakly referenced (a C-implemented one): no batching
        return None
    return inbox


def _settle(future: asyncio.Future, outcome: tuple[bool, Any]) -> None:
    if not future.done():  # cancelled: the run timed out and went on without this call
        future.set_result(outcome)


STOP_GRACE = 0.05
"""Seconds a call in flight when the user stops the evaluation may take to return and still be kept."""


async def _returned_at_stop(returned: list[tuple[bool, Any]]) -> tuple[bool, Any] | None:
    """When the user stopped the evaluation (Ctrl-C, SIGTERM) while this call was awaited: its answer,
    if the call had returned (or returns within ``STOP_GRACE``), so that its run is journaled rather
    than paid for again on resume. None otherwise (a timeout, a call still working, one that raised:
    the cancellation goes on, and resume runs it)."""
    if not (cancelled_from_outside() and user_interrupted()):
        return None
    loop = asyncio.get_running_loop()
    until = loop.time() + STOP_GRACE
    while not returned and loop.time() < until:
        await asyncio.sleep(0.005)
    return returned[0] if returned and returned[0][0] else None


TURN_EVERY = 0.0003
"""Seconds of the event loop's work after which it lets the agents' threads have the interpreter (see ``_Turns``)."""


def _release_the_gil() -> None:
    time.sleep(0)  # releases the GIL and takes it back: a waiting thread may take it meanwhile


class _Turns:
    """The event loop's turns given to the agents' threads, at most one every ``every`` seconds.

    While the loop works through a burst of finished runs (each ~0.1 ms of Python), the threads it
    just handed calls to, and the threads whose calls have returned, wait for the GIL: CPython
    lets a waiting thread in only after the switch interval, one at a time, and at 100 calls in
    flight that wait was ~1.3 ms each way, every run (``bench/bench_runner_parts.py``'s "per
    round"). Releasing the GIL for a moment (``time.sleep(0)``) after handing a call over lets
    them in sooner. Once per ``every`` at most, because each turn costs the loop a few
    microseconds: at every hand-off, a 20 ms agent's runs took 1.37x the floor instead of 1.21x;
    at most every 0.3 ms, 1.19x (and 50 ms: 1.08x -> 1.04x).
    """

    __slots__ = ("every", "clock", "give", "_last")

    def __init__(self, every: float, clock: Callable[[], float] = time.perf_counter,
                 give: Callable[[], None] | None = None) -> None:
        self.every = every
        self.clock = clock
        self.give = give if give is not None else _release_the_gil
        self._last = float("-inf")

    def offer(self) -> None:
        """Give the other threads a turn if the last one was ``every`` seconds ago or more."""
        if self.clock() - self._last >= self.every:
            self.give()
            self._last = self.clock()


_turns = _Turns(TURN_EVERY)


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking call in a daemon worker thread and await its result.

    If the awaiting run is cancelled (its timeout), the call is abandoned: its thread finishes
    whenever the call returns, holding no slot of the runner meanwhile. If the user stops the
    evaluation, a call that has returned gives its answer all the same (its run is journaled; the
    cancellation stays requested on the task, see :func:`stopping`).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    inbox = _inbox(loop)
    returned: list[tuple[bool, Any]] = []  # the outcome, as soon as the call is over (read at a stop)

    def work() -> None:
        try:
            outcome: tuple[bool, Any] = (True, call())
        except BaseException as exc:  # noqa: BLE001 - SystemExit & co. become the run's failure
            outcome = (False, exc)
        returned.append(outcome)
        if inbox is not None:
            inbox.put(future, outcome)
            return
        try:
            loop.call_soon_threadsafe(_settle, future, outcome)
        except RuntimeError:  # the loop is closed: nobody waits for this call any more
            pass

    _threads.submit(work)
    _turns.offer()  # the thread just woken (and any whose call returned) may start now
    # The outcome travels boxed: an asyncio future refuses StopIteration as an exception.
    try:
        ok, value = await future
    except asyncio.CancelledError:
        kept = await _returned_at_stop(returned)
        if kept is None:
            raise
        ok, value = kept
    if ok:
        return value
    raise contained(value)


HANDOFF_INTERVAL = 0.001
"""The interpreter's thread switch interval (seconds) while runs are in flight (CPython's default is 0.005)."""

_handoff_lock = threading.Lock()
_handoff_users = 0  # evaluations in flight that asked for quick hand-offs
_handoff_restore: float | None = None  # the interval to put back when the last one ends


@contextlib.contextmanager
def quick_handoffs() -> Iterator[None]:
    """A shorter thread switch interval while runs are in flight; the previous one afterwards.

    A thread whose blocking call returned (an agent's ``time.sleep``, its HTTP request), and the
    one handed the next call, both need the GIL, which the event loop's thread keeps for the
    whole switch interval while it handles the other runs that finished: at CPython's 5 ms every
    run of a sync agent waits for that. At 1 ms they get it sooner (measured on 2,000 x 50 ms sync
    runs, 100 in flight: 1.115 -> 1.089 x ideal; bench/bench_runner.py). An interval already
    shorter is kept; one the user set meanwhile is not undone. Nested and concurrent evaluations
    share one setting, restored when the last of them ends.
    """
    global _handoff_users, _handoff_restore
    with _handoff_lock:
        if _handoff_users == 0:
            current = sys.getswitchinterval()
            _handoff_restore = current if current > HANDOFF_INTERVAL else None
            if _handoff_restore is not None:
                sys.setswitchinterval(HANDOFF_INTERVAL)
        _handoff_users += 1
    try:
        yield
    finally:
        with _handoff_lock:
            _handoff_users -= 1
            if _handoff_users == 0 and _handoff_restore is not None:
                if sys.getswitchinterval() == HANDOFF_INTERVAL:  # else the user set another meanwhile: theirs stays
                    sys.setswitchinterval(_handoff_restore)
                _handoff_restore = None


class _DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """The default executor of the loops levelfield creates (``loop.run_in_executor(None, ...)``,
    which LangChain uses for sync tools): calls go to the daemon threads, and shutting it down
    never waits for a call that hangs."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)  # the base class starts no thread until its own submit

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001
                future.set_exception(contained(exc))
            else:
                future.set_result(result)

        _threads.submit(work)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to wait for: abandoned calls finish (or not) on their own daemon threads."""


def stopping() -> bool:
    """Whether the evaluation this task runs in was stopped (a cancellation requested from outside that a
    call kept from ending the task, :func:`run_sync`): it must start nothing more and end as cancelled."""
    return cancelled_from_outside()


async def _contain_exit(coro: Any) -> Any:
    try:
        return await coro
    except SystemExit as exc:
        raise ContainedBaseException(exc, message_of(exc)) from exc
    except KeyboardInterrupt as exc:
        if user_interrupted():
            raise  # the user's Ctrl-C: it stops the evaluation
        raise ContainedBaseException(exc, message_of(exc)) from exc


def _containing_task_factory(loop: asyncio.AbstractEventLoop, coro: Any, **options: Any) -> asyncio.Task:
    # asyncio re-raises a SystemExit out of the event loop from any task, ending every run at once.
    # Frameworks run agent code in tasks of their own (LangGraph's async tools): in those, it
    # becomes an ordinary exception, so it fails that run only.
    task = asyncio.Task(_contain_exit(coro), loop=loop, **options)
    close = getattr(coro, "close", None)
    if close is not None:
        # A task cancelled before its first step (the loop stopped by Ctrl-C) never starts the
        # wrapper, so ``coro`` would be reported as never awaited: close it (a no-op once it ran).
        task.add_done_callback(lambda _: close())
    return task


def _shutdown_without_thread(executor: _DaemonExecutor) -> Callable[..., Awaitable[None]]:
    """The loop's ``shutdown_default_executor`` for a loop whose default executor is ``executor``.

    asyncio's starts a thread to call the executor's ``shutdown(wait=True)`` and waits for it
    (0.2-5 ms at the end of every ``evaluate``); the daemon threads' shutdown waits for nothing,
    so while the default executor is still ``executor`` there is nothing to start. Another one set
    meanwhile (``loop.set_default_executor``) is shut down as asyncio does. The loop is looked up
    when called, not kept, so the loop holds no cycle through this function.
    """

    async def shutdown_default_executor(*args: Any, **kwargs: Any) -> None:
        loop = asyncio.get_running_loop()
        if getattr(loop, "_default_executor", None) is executor:
            return
        await type(loop).shutdown_default_executor(loop, *args, **kwargs)

    return shutdown_default_executor


async def _on_daemon_executor(coro: Awaitable[T]) -> T:
    loop = asyncio.get_running_loop()
    executor = _DaemonExecutor()
    loop.set_default_executor(executor)
    with contextlib.suppress(AttributeError):  # a loop whose attributes cannot be set (uvloop's) keeps its own
        loop.shutdown_default_executor = _shutdown_without_thread(executor)  # type: ignore[method-assign, assignment]
    if loop.get_task_factory() is None:
        loop.set_task_factory(_containing_task_factory)
    return await coro


def run_coroutine(coro: Awaitable[T]) -> T:
    """Run a coroutine to completion from sync code, also inside a running loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        # Not inside the except block: a coroutine resumed there sees its RuntimeError as the exception being
        # handled, and every exception raised in a task that handles none gets it as its __context__. An A2A
        # connection that broke then said "(RuntimeError: no running event loop)" as its innermost cause.
        return asyncio.run(_on_daemon_executor(coro))
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(_on_daemon_executor(coro))
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="levelfield-run")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
