"""User-written metrics with Vertex AI's ``CustomMetric(name, metric_function)`` signature."""

from __future__ import annotations

import inspect
import math
import queue
import threading
from collections.abc import Callable
from typing import Any

from .base import Metric, Score, ScoringContext, as_float

__all__ = ["CustomMetric", "DEFAULT_METRIC_TIMEOUT"]

DEFAULT_METRIC_TIMEOUT = 120.0
"""Seconds one call of a custom metric function may take (the same default as an agent's turn)."""


class _Caller:
    """One daemon thread that runs a sync metric function's calls, one at a time.

    The scoring thread waits for each call at most ``timeout`` seconds. A call that takes longer is
    abandoned with its thread (a daemon: it cannot keep the interpreter from exiting) and the next
    call gets a new thread, so one hung row never holds up the others.
    """

    def __init__(self) -> None:
        self._queues: tuple[queue.SimpleQueue[Any], queue.SimpleQueue[Any]] | None = None

    def _start(self) -> tuple[queue.SimpleQueue[Any], queue.SimpleQueue[Any]]:
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def serve() -> None:
            while True:
                fn, arg = inbox.get()
                try:
                    outbox.put((True, fn(arg)))
                except BaseException as exc:  # noqa: BLE001 - SystemExit & co. are the row's failure
                    outbox.put((False, exc))

        threading.Thread(target=serve, name="levelfield-metric", daemon=True).start()
        self._queues = inbox, outbox
        return self._queues

    def call(self, fn: Callable[[Any], Any], arg: Any, timeout: float) -> Any:
        inbox, outbox = self._queues or self._start()
        inbox.put((fn, arg))
        try:
            ok, value = outbox.get(timeout=timeout)
        except queue.Empty:
            self._queues = None  # that thread is stuck in the call: the next call starts another
            raise TimeoutError(f"the metric function gave no result within its timeout of {timeout:g} s "
                               "(CustomMetric(..., timeout=...) to allow longer)") from None
        if ok:
            return value
        from ...errors import contained

        raise contained(value)


class CustomMetric(Metric):
    """``metric_function(instance) -> {name: score, ...}``; other keys become ``<name>/<key>`` columns.

    The instance is the row as a dict: prompt, reference, response, predicted_trajectory,
    reference_trajectory (lists of ``{"tool_name", "tool_input"}``) and the dataset's other columns.
    A function that raises (any exception, even ``SystemExit``; ``KeyboardInterrupt`` too from a sync
    function, whose thread no Ctrl-C reaches), omits its score or takes longer than ``timeout``
    seconds gives NaN for that row and the error in ``<name>/error``; the evaluation goes on. A sync
    function runs on a worker thread so that its timeout holds however it blocks; ``timeout=None``
    calls it directly, with no timeout.
    """

    def __init__(self, name: str, metric_function: Callable[[dict[str, Any]], Any], *,
                 timeout: float | None = DEFAULT_METRIC_TIMEOUT) -> None:
        from ...errors import MetricError

        if not callable(metric_function):
            raise MetricError(f"CustomMetric {name!r}: metric_function must be callable")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not (timeout > 0 and math.isfinite(timeout))):
            raise MetricError(f"CustomMetric {name!r}: timeout={timeout!r}: give seconds more than 0, "
                              "or None for no timeout")
        self.name = name
        self.metric_function = metric_function
        self.timeout = timeout
        self.is_async = inspect.iscoroutinefunction(metric_function)  # type: ignore[misc]  # per instance: its function decides
        self._caller = _Caller()

    def __getstate__(self) -> dict[str, Any]:  # sent to worker processes: without the thread
        state = dict(self.__dict__)
        state.pop("_caller", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._caller = _Caller()

    def _read(self, out: Any) -> Score:
        if isinstance(out, dict):
            if self.name not in out:
                return Score(
                    float("nan"),
                    failed=True,
                    extra={"error": f"the returned dict has no key {self.name!r} (keys: {sorted(out)})"},
                )
            extra = {k: v for k, v in out.items() if k != self.name and k != "explanation"}
            return Score(as_float(out[self.name]), explanation=out.get("explanation"), extra=extra)
        return Score(as_float(out))

    def score(self, ctx: ScoringContext) -> Score:
        if self.timeout is None:
            return self._read(self.metric_function(ctx.instance()))
        return self._read(self._caller.call(self.metric_function, ctx.instance(), self.timeout))

    async def ascore(self, ctx: ScoringContext) -> Score:
        if not self.is_async:
            return self.score(ctx)
        import asyncio

        async def boxed() -> tuple[bool, Any]:
            # SystemExit must not leave the coroutine raw: asyncio re-raises it from a task out of the
            # event loop, sinking the evaluation. A KeyboardInterrupt on the event loop's thread may be
            # the user's Ctrl-C: it still stops the evaluation.
            try:
                return True, await self.metric_function(ctx.instance())
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except BaseException as exc:  # noqa: BLE001 - the row's failure
                return False, exc

        try:
            ok, out = await (boxed() if self.timeout is None else asyncio.wait_for(boxed(), self.timeout))
        except asyncio.TimeoutError:
            raise TimeoutError(f"the metric function gave no result within its timeout of {self.timeout:g} s "
                               "(CustomMetric(..., timeout=...) to allow longer)") from None
        if not ok:
            from ...errors import contained

            raise contained(out)
        return self._read(out)

