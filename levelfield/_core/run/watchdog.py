"""A watchdog for async agents that block the event loop.

An async agent that makes a blocking call (``time.sleep``, a busy loop, a sync HTTP client) holds
the event loop's thread: no other run progresses and no timeout can fire, since timeouts are
callbacks of that same loop. The runner times each step of an agent's coroutine
(:class:`LoopWatchdog` ``begin``/``end``); a thread of the watchdog looks at the step in
progress a few times a second and, while it lasts:

- past ``STUCK_SECONDS``, warns (:class:`BlockingAgentWarning`) naming the agent and the case, so
  a hung evaluation is never silent;
- past the run's timeout, raises :class:`LoopBlocked` into the loop's thread (CPython's
  ``PyThreadState_SetAsyncExc``), which ends the step as soon as the agent's code runs Python
  again (a busy loop at once, ``time.sleep`` when it returns); the runner records the run as
  timed out. The exception can only surface inside the step or in ``end``, never in the loop's
  own code: the watchdog raises it while holding the lock ``end`` takes, and ``end`` checks.
"""

from __future__ import annotations

import ctypes
import threading
import time
import warnings

from ..errors import LevelfieldWarning

__all__ = ["LoopWatchdog", "LoopBlocked", "BlockingAgentWarning", "STUCK_SECONDS"]

STUCK_SECONDS = 5.0
"""A step running this long is named in a warning while it still runs."""
_INTERVAL = 0.05  # how often the watchdog looks at the step in progress


class BlockingAgentWarning(LevelfieldWarning, RuntimeWarning):
    """An async agent held the event loop: no other run progressed, and its timeout could not stop it."""


class LoopBlocked(BaseException):
    """Raised into the event loop's thread to end a step that overran its run's timeout.

    A ``BaseException``, so that an agent's ``except Exception`` does not swallow it; the runner
    catches it around the step and records a timeout."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> bool:
    """Ask CPython to raise ``exc`` in thread ``thread_id`` (None: cancel a pending one)."""
    try:
        setter = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except AttributeError:  # not CPython: the run ends when its blocking step returns
        return False
    target = ctypes.py_object(exc) if exc is not None else None
    return setter(ctypes.c_ulong(thread_id), target) == 1


class _Step:
    __slots__ = ("agent", "case", "timeout", "start", "raised")

    def __init__(self, agent: str, case: str, timeout: float | None) -> None:
        self.agent = agent
        self.case = case
        self.timeout = timeout
        self.start = time.monotonic()
        self.raised = False


class LoopWatchdog:
    """Watches the steps of agents' coroutines on one event loop's thread (see module doc).

    ``warned`` holds the agents already named in a :class:`BlockingAgentWarning` (one warning per
    agent and evaluation, shared with the runner's own end-of-step warning)."""

    def __init__(self, warned: set[str]) -> None:
        self._warned = warned
        self._lock = threading.Lock()
        self._step: _Step | None = None
        self._loop_thread = threading.get_ident()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def begin(self, agent: str, case: str, timeout: float | None) -> _Step:
        """A step of ``agent``'s coroutine starts on the loop's thread."""
        step = _Step(agent, case, timeout)
        self._step = step
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="levelfield-loop-watchdog", daemon=True)
            self._thread.start()
        return step

    def end(self, step: _Step) -> None:
        """The step is over; raises :class:`LoopBlocked` if the watchdog ended it (so it surfaces here)."""
        with self._lock:
            self._step = None
            raised = step.raised
        if raised:
            _raise_in(self._loop_thread, None)  # not pending any more: raised here instead
            raise LoopBlocked

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(_INTERVAL):
            step = self._step
            if step is None:
                continue
            elapsed = time.monotonic() - step.start
            if step.timeout is not None and elapsed >= step.timeout and not step.raised:
                with self._lock:
                    if self._step is step:
                        step.raised = _raise_in(self._loop_thread, LoopBlocked)
            if elapsed >= STUCK_SECONDS and step.agent not in self._warned:
                self._warned.add(step.agent)
                self._warn(step, elapsed)

    def _warn(self, step: _Step, seconds: float) -> None:
        if step.timeout is None:
            limit = "; the run has no timeout to end it"
        else:
            limit = f"; its run ends at its timeout ({step.timeout:g} s) only once the blocking call returns"
        try:
            warnings.warn(
                f"agent {step.agent!r} has blocked the event loop for {seconds:.0f} s so far (case {step.case!r}): "
                f"no other run progresses meanwhile{limit}. An async agent must not make blocking calls: make it a "
                "sync function (levelfield runs those in threads) or wrap the blocking call in asyncio.to_thread()",
                BlockingAgentWarning,
                stacklevel=1,
            )
        except Exception:  # noqa: BLE001 - warnings turned into errors must not kill the watchdog
            pass
