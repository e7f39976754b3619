"""The event loop's turns given to the agents' threads (threads._Turns): at most one every TURN_EVERY
seconds, decided on a simulated clock; run_sync offers one on the loop's thread after each hand-off."""

from __future__ import annotations

import asyncio
import threading

import pytest

import levelfield as lf
from levelfield._core.run import threads
from levelfield._core.run.threads import TURN_EVERY, _Turns


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_turn_is_given_at_first_then_only_once_every_interval():
    clock, given = FakeClock(), []
    turns = _Turns(0.0003, clock=clock, give=lambda: given.append(clock.now))
    turns.offer()  # the first offer: no turn was given yet
    for step in (0.0001, 0.0001, 0.00005):  # 0.25 ms after it: too soon
        clock.now += step
        turns.offer()
    assert given == [100.0]
    clock.now += 0.00005  # 0.3 ms after the last turn: the next one
    turns.offer()
    turns.offer()  # at the same instant: no second turn
    assert given == pytest.approx([100.0, 100.0003])


def test_the_interval_counts_from_when_the_turn_ended():
    clock, given = FakeClock(), []

    def slow_give() -> None:  # the other threads held the interpreter for 1 ms
        given.append(clock.now)
        clock.now += 0.001

    turns = _Turns(0.0003, clock=clock, give=slow_give)
    turns.offer()
    clock.now += 0.0002  # 0.2 ms after the turn ended, 1.2 ms after it began
    turns.offer()
    assert len(given) == 1


def test_the_default_turn_releases_the_interpreter_and_the_interval_is_short():
    assert threads._turns.give is threads._release_the_gil and threads._turns.every == TURN_EVERY
    assert 0 < TURN_EVERY < 0.001  # shorter than the switch interval set while runs are in flight (1 ms)
    threads._release_the_gil()  # returns at once


def test_sync_runs_offer_turns_from_the_loops_thread_and_async_runs_none(monkeypatch):
    offers: list[int] = []
    turns = _Turns(0.0, give=lambda: offers.append(threading.get_ident()))  # a turn at every offer
    monkeypatch.setattr(threads, "_turns", turns)
    loop_threads: set[int] = set()

    async def async_agent(prompt):
        loop_threads.add(threading.get_ident())
        return prompt

    cases = [{"case_id": f"c{i}", "prompt": f"p{i}", "reference": f"p{i}"} for i in range(6)]
    result = lf.evaluate(cases, async_agent, ["exact_match"], progress=False, concurrency=3)
    assert result.summary_metrics["exact_match/mean"] == 1.0 and offers == []

    def sync_agent(prompt):
        return prompt

    async def both():
        loop_threads.add(threading.get_ident())
        return await lf.aevaluate(cases, sync_agent, ["exact_match"], progress=False, concurrency=3)

    result = asyncio.run(both())
    assert result.summary_metrics["exact_match/mean"] == 1.0
    assert len(offers) == 6 and set(offers) <= loop_threads  # one per call, each on an event loop's thread
