"""The loop ``run_coroutine`` (the sync ``evaluate``'s) makes: how it ends."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest

import levelfield as lf
from levelfield._core.run.threads import run_coroutine


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads started while the test runs."""
    names: list[str] = []
    start = threading.Thread.start

    def recording(self: threading.Thread) -> None:
        names.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", recording)
    return names


def test_the_loop_ends_without_a_thread_to_shut_down_the_daemon_executor(started: list[str]) -> None:
    async def work() -> int:
        # The default executor (levelfield's daemon threads) is used, so asyncio would shut it down on a thread.
        return await asyncio.get_running_loop().run_in_executor(None, lambda: 7)

    assert run_coroutine(work()) == 7
    # At most the call's own daemon thread (none when an idle one took the call), and nothing at the loop's end.
    assert all(name.startswith("levelfield-sync-") for name in started), started


def test_a_sync_evaluation_starts_only_the_agents_threads(started: list[str]) -> None:
    def agent(prompt: str) -> str:
        return "ok"

    result = lf.evaluate([{"prompt": "a", "reference": "ok"}, {"prompt": "b", "reference": "ok"}], agent,
                         ["exact_match"], progress=False)
    assert result.summary_metrics["exact_match/mean"] == 1.0
    assert all(name.startswith("levelfield-") for name in started), started


def test_a_default_executor_set_by_the_coroutine_is_still_shut_down_and_waited_for() -> None:
    finished: list[str] = []
    pool = concurrent.futures.ThreadPoolExecutor(1)

    def slow() -> None:
        time.sleep(0.05)
        finished.append("slow")

    async def work() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(pool)
        pool.submit(slow)  # still running when the coroutine returns: the shutdown waits for it

    run_coroutine(work())
    assert finished == ["slow"]
    with pytest.raises(RuntimeError):
        pool.submit(time.sleep, 0)


def test_async_generators_left_open_are_closed_and_the_loop_is_closed() -> None:
    closed: list[str] = []
    loops: list[asyncio.AbstractEventLoop] = []

    async def numbers():
        try:
            yield 1
            yield 2
        finally:
            closed.append("numbers")

    async def work() -> int:
        loops.append(asyncio.get_running_loop())
        generator = numbers()
        first = await generator.__anext__()
        loops.append(generator)  # type: ignore[arg-type]  # kept alive until the loop ends, left suspended
        return first

    assert run_coroutine(work()) == 1
    assert closed == ["numbers"]
    assert loops[0].is_closed()


def test_inside_a_running_loop_it_ends_its_own_loop_the_same_way(started: list[str]) -> None:
    async def inner() -> int:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: 3)

    async def outer() -> int:
        return run_coroutine(inner())  # from a running loop (Jupyter): on a thread of its own

    assert asyncio.run(outer()) == 3
    # asyncio.run's own loop has no default executor of levelfield's: nothing of it to shut down either.
    assert all(name.startswith("levelfield-") for name in started), started
