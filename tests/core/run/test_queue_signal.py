"""Slow start, and its reading of a queue ahead of the endpoint, on a simulated clock (issue #42).

Each test drives an :class:`EndpointLimit` with real asyncio tasks while the limit reads a clock the test
moves: every call is answered at a time the simulated endpoint sets, in time order, so the latencies are
exact and the machine's load plays no part.
"""

from __future__ import annotations

import asyncio
import heapq
import types
from collections.abc import Callable

from levelfield._core.run import limits as limits_module
from levelfield._core.run.limits import EndpointLimit


def _drive(monkeypatch, calls: int, answer_at: Callable[[float], float],
           stall: tuple[float, float] | None = None,
           times: list[float] | None = None) -> tuple[EndpointLimit, list[float]]:
    """Run ``calls`` calls at ceiling 64; a call sent at ``t`` is answered at ``answer_at(t)``. ``stall``:
    (from, seconds) during which our process runs nothing: answers due then come back when it ends.
    The limit and its window after each answer (``times``: filled with the clock at each answer)."""
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(limits_module, "time", types.SimpleNamespace(monotonic=lambda: clock.now))

    async def go() -> tuple[EndpointLimit, list[float]]:
        limit = EndpointLimit("e", 64)
        # From 4 in flight, as slow start began before issue #56 (it starts at half the ceiling now): the rules of
        # growth and drain pinned over more round trips (tests/core/run/test_limit_decisions.py pins the start).
        limit.window = 4.0
        limit.history = [limit.limit]
        loop = asyncio.get_running_loop()
        due: list[tuple[float, int, asyncio.Future[None]]] = []

        async def call(n: int) -> None:
            await limit.acquire()
            answered = loop.create_future()
            heapq.heappush(due, (answer_at(clock.now), n, answered))
            await answered
            limit.success()

        tasks = [asyncio.create_task(call(n)) for n in range(calls)]
        windows = []
        while not all(t.done() for t in tasks):
            for _ in range(10):  # the answered call ends, and the calls it frees room for are sent
                await asyncio.sleep(0)
            if not due:
                continue
            at, _, answered = heapq.heappop(due)
            if stall is not None and stall[0] <= at < stall[0] + stall[1]:
                at = stall[0] + stall[1]
            clock.now = max(clock.now, at)
            answered.set_result(None)
            for _ in range(10):
                await asyncio.sleep(0)
            windows.append(limit.window)
            if times is not None:
                times.append(clock.now)
        await asyncio.gather(*tasks)
        return limit, windows

    return asyncio.run(go())


def test_slow_start_doubles_the_window_per_round_trip_on_an_endpoint_that_refuses_nothing(monkeypatch):
    # An agent answering in 20 ms that refuses nothing: one call more per answer while calls wait, so the window
    # doubles per round trip, 4 -> 8 -> 16 -> 32 -> 64 at 20, 40, 60 and 80 ms (the real-agent ramp test in
    # test_rate_limits.py reads this through a loaded machine's scheduling; here the rule alone is pinned).
    times: list[float] = []
    limit, windows = _drive(monkeypatch, 400, lambda sent: sent + 0.02, times=times)
    assert windows[:60] == [float(5 + n) for n in range(60)], windows[:60]
    reached = {w: round(times[windows.index(float(w))], 3) for w in (8, 16, 32, 64)}
    assert reached == {8: 0.02, 16: 0.04, 32: 0.06, 64: 0.08}, reached
    assert limit.rate_limited == 0 and set(windows[60:]) == {64.0}


def test_a_stall_of_our_own_process_neither_holds_nor_drains_slow_start(monkeypatch):
    # An agent answering in 20 ms that refuses nothing, and our process stalls for 200 ms (a loaded machine):
    # the answers of the calls in flight then come back late together, as a queue's would, but after a silence
    # no queue leaves. Read as a queue, they drained the window to 4 and slow start grew by half a call per
    # answer after (the ramp test took 1.5 times as long to reach its concurrency), or held it a window of
    # answers (60 answers became 80). Not read, slow start goes on as if the stall had not been.
    limit, windows = _drive(monkeypatch, 400, lambda sent: sent + 0.02, stall=(0.05, 0.2))
    assert limit.history == sorted(limit.history), limit.history  # never lowered
    assert windows.index(64.0) <= 60, windows  # slow start's 60 answers from 4 to 64, none lost


def _server(capacity: int, seconds: float) -> Callable[[float], float]:
    """An endpoint that serves ``capacity`` calls at once, ``seconds`` each, in the order they came: the rest
    wait in its queue (it refuses none)."""
    free = [0.0] * capacity

    def answer_at(sent: float) -> float:
        start = max(sent, heapq.heappop(free))
        heapq.heappush(free, start + seconds)
        return start + seconds

    return answer_at


def test_a_queue_ahead_of_the_endpoint_drains_the_window_to_about_what_it_serves(monkeypatch):
    # An endpoint serving 8 calls at once in 100 ms each (80 answers a second) queues the rest and refuses
    # none: the calls sent after the queue showed queue too, and the window drains to a few more than the
    # 8 it serves (1.25 x 80/s x 100 ms = 10), then stays near it instead of opening to the ceiling.
    limit, windows = _drive(monkeypatch, 400, _server(8, 0.1))
    assert limit.rate_limited == 0
    drained = next(i for i in range(1, len(windows)) if windows[i] < windows[i - 1])
    assert windows[drained] <= 12, windows[drained - 1:drained + 1]
    # Past it, slow start grows by half a call per answer, and the queue drains it again (a window of answers
    # late): it stays within three times what the endpoint serves.
    assert max(windows) < 32 and max(windows[drained:]) <= 24, windows


def test_after_a_drain_the_window_doubles_again_once_the_endpoint_serves_it_whole(monkeypatch):
    # The queue was passing (another client's burst at the endpoint): once a window of answers of calls sent
    # after the drain comes back at the lowest latency, the endpoint has room, and slow start doubles again
    # rather than growing by half a call per answer.
    queued = _server(8, 0.1)
    limit, windows = _drive(monkeypatch, 600, lambda sent: queued(sent) if sent < 1.0 else sent + 0.1)
    drained = next(i for i in range(1, len(windows)) if windows[i] < windows[i - 1])
    assert windows[drained] <= 12
    after = windows[drained:]
    assert 64.0 in after, after
    assert any(b - a == 1.0 for a, b in zip(after, after[1:])), after  # a call more per answer: doubling
