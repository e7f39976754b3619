"""Where the runner's time over the bare floor goes (issue #56): one latency, 2,000 cases, concurrency 100.

``bench/bench_runner.py`` says how far ``lf.evaluate`` with the defaults is from the bare floor; this says
where that distance is, so the next change to the runner aims at the part that costs. Rows, the median of
``--repeats`` interleaved rounds, side by side:

- **bare thread pool** (sync) / **bare asyncio** (async): the floor, as in ``bench_runner.py``;
- **bare loop + run_sync** (sync only): 100 asyncio tasks, each call made with levelfield's own
  ``run_sync`` (a daemon thread, the outcome handed back to the loop): the two thread hand-offs of
  every sync run, with no runner around them;
- **runner, nothing to score**: ``lf.evaluate(ds, agent, [], concurrency=100)`` with an agent that
  returns the text ``"done"``: the run machinery (plan, slots, limits, retries, timeouts, clean-up);
- **runner, defaults**: the bench's agent (a response and a tool call) and metrics
  (``trajectory_exact_match``, ``exact_match``), then ``result.summary_metrics``: what a user gets.

For each runner row, from the agent's own clock: the milliseconds from the call of ``evaluate`` to the
first agent call ("before"), from the last agent return to ``evaluate`` returning ("after"), then
``summary_metrics`` ("summary"): fixed costs, paid once a run however long it is; and the span from the
first call to the last return against the floor's, divided by the calls each slot makes in a row
("per round"): the cost paid every round, which grows with the number of rounds.

    python bench/bench_runner_parts.py [--sleep 0.05] [--cases 2000] [--concurrency 100] [--repeats 5] [--agents sync,async]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The same rows, answer and metrics as bench_runner.py: the two benches time one workload.
from bench_runner import METRICS, _rows  # noqa: E402
from bench_runner import _call as _answer  # noqa: E402


class _Clock:
    """The agent's own record of when its calls started and returned."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0

    def start(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def end(self) -> None:
        self.last = max(self.last, time.perf_counter())

    def reset(self) -> None:
        self.first, self.last = None, 0.0


def _agents(pause: float, clock: _Clock) -> dict[str, dict[str, Callable[..., Any]]]:
    def sync_full(prompt: str) -> dict:
        clock.start()
        time.sleep(pause)
        clock.end()
        return _answer(prompt)

    def sync_text(prompt: str) -> str:
        clock.start()
        time.sleep(pause)
        clock.end()
        return "done"

    async def async_full(prompt: str) -> dict:
        clock.start()
        await asyncio.sleep(pause)
        clock.end()
        return _answer(prompt)

    async def async_text(prompt: str) -> str:
        clock.start()
        await asyncio.sleep(pause)
        clock.end()
        return "done"

    return {"sync": {"full": sync_full, "text": sync_text}, "async": {"full": async_full, "text": async_text}}


def _thread_floor(cases: int, concurrency: int, pause: float) -> float:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: time.sleep(pause), range(cases)))
    return time.perf_counter() - start


def _loop_floor(cases: int, concurrency: int, pause: float, call: Callable[[], Any] | None) -> float:
    """100 tasks sharing the cases; each awaits ``asyncio.sleep`` (call None) or ``run_sync(call)``."""
    from levelfield._core.run.threads import run_sync

    async def main() -> None:
        left = iter(range(cases))

        async def slot() -> None:
            for _ in left:
                if call is None:
                    await asyncio.sleep(pause)
                else:
                    await run_sync(call)

        await asyncio.gather(*(slot() for _ in range(concurrency)))

    start = time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sleep", type=float, default=0.05, help="the agent's latency, seconds (default 0.05)")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--agents", default="sync,async", help="sync, async or both (default)")
    args = parser.parse_args()
    import levelfield as lf

    pause, cases, concurrency = args.sleep, args.cases, args.concurrency
    kinds = [k.strip() for k in args.agents.split(",") if k.strip() in ("sync", "async")]
    if not kinds:
        raise SystemExit("--agents: sync, async or sync,async")
    dataset = lf.load_dataset(_rows(cases))
    clock = _Clock()
    agents = _agents(pause, clock)
    rounds = cases / concurrency
    ideal = rounds * pause
    load = os.getloadavg()[0]
    print(f"{cases} cases, agent sleeps {pause * 1000:.0f} ms, concurrency {concurrency}: ideal {ideal:.2f} s "
          f"({rounds:.0f} rounds); median of {args.repeats} interleaved runs; load average {load:.2f}")

    def sleep_call() -> None:
        time.sleep(pause)

    walls: dict[str, list[float]] = {}
    parts: dict[str, list[tuple[float, float, float, float]]] = {}  # before, span, after, summary
    runner_rows = {"runner, nothing to score": ("text", []), "runner, defaults": ("full", METRICS)}
    for kind in kinds:  # warm-up: imports, the daemon threads, the endpoint known as carrying its concurrency
        for shape, metrics in runner_rows.values():
            lf.evaluate(dataset[:200], agents[kind][shape], metrics, concurrency=concurrency, progress=False)
    for _ in range(args.repeats):
        for kind in kinds:
            if kind == "sync":
                walls.setdefault("sync: bare thread pool", []).append(_thread_floor(cases, concurrency, pause))
                walls.setdefault("sync: bare loop + run_sync", []).append(
                    _loop_floor(cases, concurrency, pause, sleep_call))
            else:
                walls.setdefault("async: bare asyncio", []).append(_loop_floor(cases, concurrency, pause, None))
            for label, (shape, metrics) in runner_rows.items():
                clock.reset()
                start = time.perf_counter()
                result = lf.evaluate(dataset, agents[kind][shape], metrics, concurrency=concurrency, progress=False)
                returned = time.perf_counter()
                summary = result.summary_metrics
                done = time.perf_counter()
                assert summary["failure/count"] == 0 and clock.first is not None
                key = f"{kind}: {label}"
                walls.setdefault(key, []).append(done - start)
                parts.setdefault(key, []).append(
                    (clock.first - start, clock.last - clock.first, returned - clock.last, done - returned))

    for kind in kinds:
        floor_key = "sync: bare thread pool" if kind == "sync" else "async: bare asyncio"
        floor = statistics.median(walls[floor_key])
        print(f"\n{kind} agent                          wall s   x floor   before ms  after ms  summary ms  per round ms")
        for key, seconds in walls.items():
            if not key.startswith(f"{kind}:"):
                continue
            wall = statistics.median(seconds)
            line = f"  {key[len(kind) + 2:]:<34} {wall:6.3f}   {wall / floor:6.3f}"
            if key in parts:
                before, span, after, summ = (statistics.median(p[i] for p in parts[key]) for i in range(4))
                # The floor's span is its wall (its fixed costs are a pool or a loop starting and ending).
                line += (f"   {before * 1000:8.1f}  {after * 1000:8.1f}  {summ * 1000:10.1f}  "
                         f"{(span - floor) / rounds * 1000:12.2f}")
            print(line)
    print(f"\nfixed costs (before + after + summary) are paid once an evaluation; 'per round' is the span from the first "
          f"call to the last return, less the floor's wall, per round of {concurrency} calls; load average "
          f"{load:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
