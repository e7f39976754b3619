"""A simulated clock and endpoints for the adaptive limit's decisions (issue #56): no wall clock read or waited on.

:func:`simulate` plays ``cases`` requests through ``concurrency`` slots, each taking one
:class:`~levelfield._core.run.limits.EndpointLimit` slot per call as ``levelfield._core.run.retry`` does
(``acquire``, then ``success`` or ``ended_with`` a rate-limit error, its wait slept, the call sent again),
against a simulated endpoint. The limit reads a clock the simulation moves (its module's ``time`` and the
event loop's), so its timers (the ramp, a pause) fire at simulated times, and every latency is exact.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import types
from dataclasses import dataclass, field

from levelfield._core.errors import RateLimitedError
from levelfield._core.run import limits as limits_module
from levelfield._core.run.limits import EndpointLimit

__all__ = ["Gate", "FirstCallGate", "Outcome", "Open", "QueuedGate", "simulate"]

HOP = 0.001
"""Seconds a request or an answer takes on the wire, each way."""


class Open:
    """An endpoint that refuses nothing: each call takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.admitted = self.refused = self.peak = self.held = 0

    def refusal_hop(self, key: int) -> float:
        """Seconds a refusal of request ``key`` takes back."""
        return HOP

    def arrive(self, key: int, now: float) -> tuple[float, float | None] | None:
        """At ``now`` a call of request ``key`` arrives: (seconds until it answers, None) when admitted, else None
        (refused at once) or (0, Retry-After) for a refusal that says when to come back."""
        self.admitted += 1
        self.held += 1
        self.peak = max(self.peak, self.held)
        return self.seconds, None

    def leave(self, now: float) -> None:
        self.held -= 1


class Gate(Open):
    """``ConcurrencyLimited``: admits ``capacity`` calls at once, refuses (429) any past them."""

    def __init__(self, capacity: int, seconds: float, retry_after: float | None = None) -> None:
        super().__init__(seconds)
        self.capacity = capacity
        self.retry_after = retry_after

    def arrive(self, key: int, now: float) -> tuple[float, float | None] | None:
        if self.held >= self.capacity:
            self.refused += 1
            return None if self.retry_after is None else (0.0, self.retry_after)
        return super().arrive(key, now)


class FirstCallGate(Open):
    """``FirstCallRefused``: refuses each request's first call (with ``retry_after``, when given), admits it after."""

    def __init__(self, seconds: float, retry_after: float | None = None, shuffled: bool = False) -> None:
        super().__init__(seconds)
        self.retry_after = retry_after
        self.shuffled = shuffled
        self.seen: set[int] = set()

    def refusal_hop(self, key: int) -> float:
        # ``shuffled``: refusals come back in another order than their calls went (4 ms spread).
        return HOP * (1 + (7 * key) % 5) if self.shuffled else HOP

    def arrive(self, key: int, now: float) -> tuple[float, float | None] | None:
        if key not in self.seen:
            self.seen.add(key)
            self.refused += 1
            return None if self.retry_after is None else (0.0, self.retry_after)
        return super().arrive(key, now)


class QueuedGate(Gate):
    """``QueuedAhead``: a slow intake ahead of a gate admitting ``capacity``: the first ``slow_for`` requests pass
    it one at a time, ``intake`` seconds each, then whatever waits there rushes the gate at once."""

    def __init__(self, capacity: int, seconds: float, slow_for: int = 100, intake: float = 0.008) -> None:
        super().__init__(capacity, seconds)
        self.slow_for = slow_for
        self.intake = intake
        self.passed = 0
        self.free_at = 0.0

    def queued(self, now: float) -> float:
        """Seconds a request arriving at ``now`` waits in the intake."""
        if self.passed >= self.slow_for:
            return 0.0
        self.passed += 1
        self.free_at = max(self.free_at, now) + self.intake
        return self.free_at - now


@dataclass
class Outcome:
    seconds: float
    """Simulated seconds from the first call to the last answer."""
    requests: int
    refused: int
    peak: int
    """The most calls the endpoint held at once."""
    limit: EndpointLimit
    windows: list[float] = field(default_factory=list)
    """The limit's window after each answer."""

    @property
    def share(self) -> float:
        return self.refused / self.requests


def simulate(monkeypatch, endpoint: Open, *, cases: int, concurrency: int, adaptive: bool = True,
             learned: int | None = None, carried: int | None = None) -> Outcome:
    """``cases`` requests through ``concurrency`` slots and one adaptive limit (ceiling ``concurrency``); ``learned``,
    ``carried``: what an earlier run kept of the endpoint (``levelfield._core.run.learned``)."""
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(limits_module, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    order = itertools.count()

    async def go() -> Outcome:
        loop = asyncio.get_running_loop()
        monkeypatch.setattr(loop, "time", lambda: clock.now)
        limit = EndpointLimit("e", concurrency, adaptive=adaptive, learned=learned, carried=carried)
        due: list[tuple[float, int, asyncio.Future[None]]] = []
        windows: list[float] = []

        async def sleep(seconds: float) -> None:
            waiter = loop.create_future()
            heapq.heappush(due, (clock.now + seconds, next(order), waiter))
            await waiter

        async def request(key: int) -> None:
            absorbed = 0
            while True:
                await limit.acquire()
                await sleep(HOP)
                if isinstance(endpoint, QueuedGate):
                    await sleep(endpoint.queued(clock.now))
                verdict = endpoint.arrive(key, clock.now)
                if verdict is not None and verdict[1] is None:
                    await sleep(verdict[0])
                    endpoint.leave(clock.now)
                    await sleep(HOP)
                    limit.success()
                    windows.append(limit.window)
                    return
                await sleep(endpoint.refusal_hop(key))
                retry_after = None if verdict is None else verdict[1]
                wait = limit.ended_with(RateLimitedError("429 Too Many Requests", retry_after=retry_after), absorbed, 60.0)
                if not adaptive:  # a fixed concurrency: the run's retry, after its Retry-After
                    wait = retry_after or 0.0
                assert wait is not None, f"request {key}'s call refused {absorbed + 1} times: its run would fail"
                absorbed += 1
                if wait > 0:
                    await sleep(wait)

        keys = iter(range(cases))

        async def slot() -> None:
            for key in keys:
                await request(key)

        tasks = [asyncio.ensure_future(slot()) for _ in range(min(concurrency, cases))]
        while not all(t.done() for t in tasks):
            # What the last event freed runs (calls end, slots take their next call, waiters wake one another)
            # before the clock moves: until nothing new is scheduled for a few turns of the loop.
            quiet, seen = 0, -1
            while quiet < 4:
                await asyncio.sleep(0)
                quiet = quiet + 1 if len(due) == seen else 0
                seen = len(due)
            timers = [t.when() for t in (limit._timer, limit._ramp_timer) if t is not None and not t.cancelled()]
            nxt = min(([due[0][0]] if due else []) + timers, default=None)
            if nxt is None:
                continue
            clock.now = max(clock.now, nxt)
            while due and due[0][0] <= clock.now:
                heapq.heappop(due)[2].set_result(None)
        await asyncio.gather(*tasks)
        return Outcome(clock.now, endpoint.admitted + endpoint.refused, endpoint.refused, endpoint.peak, limit, windows)

    return asyncio.run(go())
