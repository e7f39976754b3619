"""Benchmark: fixed concurrency against adaptive concurrency, on an A2A server that admits 8 in flight.

A real A2A server (levelfield's own, on 127.0.0.1) answers each request after ``--delay`` seconds
and answers HTTP 429 to any request beyond ``--limit`` in flight (``ConcurrencyLimited``, with or
without ``Retry-After``). The same evaluation runs with ``--concurrency`` (64) fixed
(``adaptive=False``, today's behaviour: retries with backoff) and adaptive (the default). Printed
for each: wall time, its ratio to the ideal (cases / limit * delay), 429s and their share of
requests, failed runs, and the concurrency the adaptive limit ran at.

The "storm" rows run the same evaluation against a server with no limit in flight that refuses
each request's first call (``FirstCallRefused``, a per-request 429, not a capacity signal): the
adaptive limit must not collapse on it, so its time is set beside the fixed concurrency's. The
"storm, Retry-After" rows are issue #56's case: ``--storm-cases`` (100) at ``--storm-concurrency`` (32),
each request's first call answered 429 with ``Retry-After: 2`` and its retry admitted (the defaults took
192 s there, a fixed concurrency 11.9 s). Target for both storms: adaptive <= 1.5x the fixed time.
Each storm pair runs ``--repeats`` times interleaved (medians).

    python bench/bench_rate_limits.py [--cases 400] [--limit 8] [--delay 0.1] [--concurrency 64] [--repeats 3]
    python bench/bench_rate_limits.py --quick     (the storms only, 2 repeats: a minute or two)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import levelfield as lf
from levelfield.adapters.a2a.server import build_app, start_asgi
from levelfield.testing import ConcurrencyLimited, FirstCallRefused


def run(args: argparse.Namespace, adaptive: bool, retry_after: float | None, concurrency: int | None = None,
        storm: bool = False, cases: int | None = None) -> dict:
    async def agent(prompt: str) -> str:
        await asyncio.sleep(args.delay)
        return f"echo {prompt}"

    made: list[ConcurrencyLimited] = []

    def make(url: str) -> ConcurrencyLimited:
        app = build_app(agent, url=url, name="limited")
        made.append(FirstCallRefused(app, retry_after=retry_after) if storm
                    else ConcurrencyLimited(app, args.limit, retry_after=retry_after))
        return made[0]

    cases = cases or args.cases
    dataset = [{"prompt": f"case {i}", "reference": f"echo case {i}"} for i in range(cases)]
    with start_asgi(make) as server:
        start = time.perf_counter()
        result = lf.evaluate(dataset, lf.as_agent(server.url), metrics=["exact_match"], concurrency=concurrency or args.concurrency,
                             adaptive=adaptive, retries=args.retries, progress=False, timeout=60)
        seconds = time.perf_counter() - start
    limited = made[0]
    stats = [s for s in result.limits if s.endpoint.startswith("a2a")]
    return {
        "seconds": seconds,
        "ideal": cases / (concurrency or args.concurrency if storm else args.limit) * args.delay,
        "429": limited.refused,
        "requests": limited.admitted + limited.refused,
        "failed": sum(r.failure for r in result.runs),
        "ran_at": stats[0].mean_in_flight if stats else float("nan"),
        "peak": limited.peak,
        "limit": stats[0].limit if stats else concurrency or args.concurrency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--retries", type=int, default=2, help="the run's retries (RunConfig default 2)")
    parser.add_argument("--storm-cases", type=int, default=100)
    parser.add_argument("--storm-concurrency", type=int, default=32)
    parser.add_argument("--storm-retry-after", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each storm pair, interleaved (medians)")
    parser.add_argument("--quick", action="store_true", help="the two storms only, 2 repeats")
    args = parser.parse_args()
    if args.quick:
        args.repeats = min(args.repeats, 2)
    import os
    # Every run a first contact: no limit learned by an earlier run of this bench (or yours) applies.
    os.environ["LEVELFIELD_CACHE_DIR"] = __import__("tempfile").mkdtemp(prefix="levelfield-bench-")

    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    header = f"{'mode':<48}{'wall s':>8}{'x ideal':>9}{'429s':>7}{'% req':>7}{'failed':>8}{'ran at':>8}{'limit':>7}"

    def show(mode: str, row: dict) -> None:
        share = 100 * row["429"] / max(row["requests"], 1)
        print(f"{mode:<48}{row['seconds']:>8.2f}{row['seconds'] / row['ideal']:>9.2f}{row['429']:>7}"
              f"{share:>6.1f}%{row['failed']:>8}{row['ran_at']:>8.1f}{row['limit']:>7}", flush=True)

    if not args.quick:
        print(f"{args.cases} cases, server admits {args.limit} in flight, {args.delay:g} s per answer, "
              f"concurrency {args.concurrency}; ideal {args.cases / args.limit * args.delay:.2f} s")
        print(header)
        # The best a user who knew the limit could do: concurrency = limit, fixed (no 429 at all). Its
        # time over the ideal is this machine's own cost per request (client and server share a process).
        show(f"fixed {args.limit} (knows the limit)", run(args, False, None, args.limit, False))
        for retry_after in (None, 1.0):
            for adaptive in (False, True):
                mode = f"{'adaptive' if adaptive else 'fixed'} {args.concurrency}, "
                show(mode + ("Retry-After 1" if retry_after else "no Retry-After"), run(args, adaptive, retry_after))
    storms = [(f"storm: {args.cases} cases at {args.concurrency}, no Retry-After", None, args.concurrency, args.cases),
              (f"storm: {args.storm_cases} cases at {args.storm_concurrency}, Retry-After {args.storm_retry_after:g}",
               args.storm_retry_after, args.storm_concurrency, args.storm_cases)]
    print(f"storms (each request's first call refused, its retry admitted), {args.repeats} interleaved repeats:")
    print(header)
    for label, retry_after, concurrency, cases in storms:
        walls: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):
            for adaptive in (False, True):
                row = run(args, adaptive, retry_after, concurrency, True, cases)
                walls[adaptive].append(row["seconds"])
                show(f"{label.split(',')[0]}{',' + label.split(',')[1]}: {'adaptive' if adaptive else 'fixed'}", row)
        ratio = statistics.median(walls[True]) / statistics.median(walls[False])
        print(f"{label}: adaptive takes {ratio:.2f}x the fixed concurrency's time (medians; target <= 1.5x)")
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
