"""Benchmark: fixed concurrency against adaptive concurrency, on an A2A server that admits 8 in flight.

A real A2A server (levelfield's own, on 127.0.0.1) answers each request after ``--delay`` seconds
and answers HTTP 429 to any request beyond ``--limit`` in flight (``ConcurrencyLimited``, with or
without ``Retry-After``). The same evaluation runs with ``--concurrency`` (64) fixed
(``adaptive=False``, today's behaviour: retries with backoff) and adaptive (the default). Printed
for each: wall time, its ratio to the ideal (cases / limit * delay), 429s and their share of
requests, failed runs, and the concurrency the adaptive limit ran at.

The "storm" rows run the same evaluation against a server with no limit in flight that refuses
each request's first call (``FirstCallRefused``, a per-request 429, not a capacity signal): the
adaptive limit must not collapse on it, so its time is set beside the fixed concurrency's.

    python bench/bench_rate_limits.py [--cases 400] [--limit 8] [--delay 0.1] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import levelfield as lf
from levelfield.adapters.a2a.server import build_app, start_asgi
from levelfield.testing import ConcurrencyLimited, FirstCallRefused


def run(args: argparse.Namespace, adaptive: bool, retry_after: float | None, concurrency: int | None = None,
        storm: bool = False) -> dict:
    async def agent(prompt: str) -> str:
        await asyncio.sleep(args.delay)
        return f"echo {prompt}"

    made: list[ConcurrencyLimited] = []

    def make(url: str) -> ConcurrencyLimited:
        app = build_app(agent, url=url, name="limited")
        made.append(FirstCallRefused(app, retry_after=retry_after) if storm
                    else ConcurrencyLimited(app, args.limit, retry_after=retry_after))
        return made[0]

    dataset = [{"prompt": f"case {i}", "reference": f"echo case {i}"} for i in range(args.cases)]
    with start_asgi(make) as server:
        start = time.perf_counter()
        result = lf.evaluate(dataset, lf.as_agent(server.url), metrics=["exact_match"], concurrency=concurrency or args.concurrency,
                             adaptive=adaptive, retries=args.retries, progress=False, timeout=60)
        seconds = time.perf_counter() - start
    limited = made[0]
    stats = [s for s in result.limits if s.endpoint.startswith("a2a")]
    return {
        "seconds": seconds,
        "ideal": args.cases / (concurrency or args.concurrency if storm else args.limit) * args.delay,
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
    args = parser.parse_args()
    print(f"{args.cases} cases, server admits {args.limit} in flight, {args.delay:g} s per answer, "
          f"concurrency {args.concurrency}; ideal {args.cases / args.limit * args.delay:.2f} s")
    print(f"{'mode':<40}{'wall s':>8}{'x ideal':>9}{'429s':>7}{'% req':>7}{'failed':>8}{'ran at':>8}{'limit':>7}")
    # The best a user who knew the limit could do: concurrency = limit, fixed (no 429 at all). Its
    # time over the ideal is this machine's own cost per request (client and server share a process).
    modes = [(f"fixed {args.limit} (knows the limit)", False, None, args.limit, False)]
    for retry_after in (None, 1.0):
        for adaptive in (False, True):
            mode = f"{'adaptive' if adaptive else 'fixed'} {args.concurrency}, "
            modes.append((mode + ("Retry-After 1" if retry_after else "no Retry-After"), adaptive, retry_after, None, False))
    for adaptive in (False, True):
        modes.append((f"storm: {'adaptive' if adaptive else 'fixed'} {args.concurrency}, no Retry-After", adaptive, None, None, True))
    seconds = {}
    for mode, adaptive, retry_after, concurrency, storm in modes:
        row = run(args, adaptive, retry_after, concurrency, storm)
        seconds[(storm, adaptive)] = row["seconds"]
        share = 100 * row["429"] / max(row["requests"], 1)
        print(f"{mode:<40}{row['seconds']:>8.2f}{row['seconds'] / row['ideal']:>9.2f}{row['429']:>7}"
              f"{share:>6.1f}%{row['failed']:>8}{row['ran_at']:>8.1f}{row['limit']:>7}", flush=True)
    print(f"storm: adaptive takes {seconds[(True, True)] / seconds[(True, False)]:.2f}x the fixed concurrency's time")


if __name__ == "__main__":
    main()
