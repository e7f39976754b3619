"""Benchmark: agent runs through Ray (``executor="ray"``) against the local runner, on this machine.

1. Overhead: 2,000 cases of a sync agent that sleeps 50 ms, with the same number of runs in flight
   both ways (local ``concurrency=W*C``; Ray ``W`` workers x ``concurrency_per_worker=C``). The
   difference in wall time, per run, is what going through Ray costs (actors starting, batches
   shipped, runs sent back, scored and journaled on the driver). ``ray.init`` is timed apart (once
   per process, or nothing when connecting to a running cluster).
2. Speed-up: a CPU-bound agent (a pure-Python loop of ~50 ms, which holds the GIL), local (one
   process: the loops take turns) against Ray with 2 workers (two processes).

Prints the figures. Run from the repository root when the machine is otherwise quiet:
``python bench/bench_ray.py [--cases 2000] [--cpu-cases 200]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import levelfield as lf  # noqa: E402

__all__ = ["sleepy_agent", "busy_agent", "main"]

SLEEP_SECONDS = 0.050
LOOPS = 1_000_000  # set by calibrate() to ~50 ms of pure Python on this machine


def sleepy_agent(prompt: str) -> str:
    """The overhead benchmark's agent: a blocking 50 ms wait (an HTTP call, a tool), then an echo."""
    time.sleep(SLEEP_SECONDS)
    return f"echo: {prompt}"


def _spin(loops: int) -> int:
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


def busy_agent(prompt: str) -> str:
    """The speed-up benchmark's agent: ~50 ms of pure-Python work (a local model, a parser, a solver)."""
    return f"{prompt}: {_spin(LOOPS)}"


def calibrate(target: float = 0.050) -> int:
    """Loop count that takes ``target`` seconds here (median of a few tries)."""
    loops = 200_000
    start = time.perf_counter()
    _spin(loops)
    per_loop = (time.perf_counter() - start) / loops
    return max(1, int(target / per_loop))


def _dataset(n: int) -> list[dict[str, Any]]:
    return [{"case_id": f"c{i}", "prompt": f"case {i}", "reference": f"echo: case {i}"} for i in range(n)]


def _timed(call: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases of the 50 ms sleeping agent (default 2000)")
    parser.add_argument("--cpu-cases", type=int, default=200, help="cases of the ~50 ms CPU-bound agent (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (default 2)")
    parser.add_argument("--per-worker", type=int, default=8, help="runs in flight per Ray worker (default 8)")
    args = parser.parse_args(argv)

    import ray

    global LOOPS
    LOOPS = calibrate()
    init_seconds, _ = _timed(lambda: ray.init(num_cpus=args.workers, include_dashboard=False,
                                              log_to_driver=False, logging_level="ERROR"))
    in_flight = args.workers * args.per_worker
    on_ray = lf.RayExecutor(num_workers=args.workers, concurrency_per_worker=args.per_worker)
    metrics = ["exact_match"]
    print(f"ray.init (a local Ray, {args.workers} CPUs): {init_seconds:.2f} s, once per process")

    # 1. Overhead per run, same runs in flight.
    data = _dataset(args.cases)
    local_s, local = _timed(lambda: lf.evaluate(data, sleepy_agent, metrics, concurrency=in_flight, progress=False))
    ray_s, remote = _timed(lambda: lf.evaluate(data, sleepy_agent, metrics, executor=on_ray, progress=False))
    assert remote.summary_metrics["exact_match/mean"] == local.summary_metrics["exact_match/mean"] == 1.0
    ideal = args.cases * SLEEP_SECONDS / in_flight
    print(f"\n{args.cases} runs of a 50 ms sleeping agent, {in_flight} in flight (ideal {ideal:.2f} s):")
    print(f"  local: {local_s:.2f} s ({args.cases / local_s:.0f} runs/s)")
    print(f"  ray:   {ray_s:.2f} s ({args.cases / ray_s:.0f} runs/s), {args.workers} workers x {args.per_worker}")
    small_s, _ = _timed(lambda: lf.evaluate(_dataset(1), sleepy_agent, metrics, executor=on_ray, progress=False))
    fixed = max(0.0, small_s - SLEEP_SECONDS)
    extra = ray_s - local_s
    print(f"  fixed cost of a Ray evaluation (actors start, dataset and agent shipped; timed with 1 run): {fixed:.2f} s")
    print(f"  overhead through Ray: {extra:+.2f} s in all = {1000 * extra / args.cases:+.2f} ms of wall time per run; "
          f"without the fixed cost {1000 * (extra - fixed) / args.cases:+.2f} ms per run "
          f"({1000 * (extra - fixed) * in_flight / args.cases:+.1f} ms in each of the {in_flight} slots)")

    # 2. Speed-up of CPU-bound agents with 2 workers.
    data = _dataset(args.cpu_cases)
    one = time.perf_counter()
    busy_agent("warm-up")
    one = time.perf_counter() - one
    local_s, _ = _timed(lambda: lf.evaluate(data, busy_agent, metrics=[], concurrency=in_flight, progress=False))
    ray_s, _ = _timed(lambda: lf.evaluate(data, busy_agent, metrics=[], executor=on_ray, progress=False))
    print(f"\n{args.cpu_cases} runs of a CPU-bound agent ({1000 * one:.0f} ms of pure Python each):")
    print(f"  local: {local_s:.2f} s ({args.cpu_cases / local_s:.1f} runs/s)")
    print(f"  ray:   {ray_s:.2f} s ({args.cpu_cases / ray_s:.1f} runs/s), {args.workers} workers")
    print(f"  speed-up: {local_s / ray_s:.2f}x")
    ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
