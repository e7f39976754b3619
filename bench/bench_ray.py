"""Benchmark: agent runs through Ray (``executor="ray"``) against the local runner, on this machine.

1. Overhead: 2,000 cases of a sync agent that sleeps 50 ms, with the same number of runs in flight
   both ways (local ``concurrency=W*C``; Ray ``W`` workers x ``concurrency_per_worker=C``). The
   difference in wall time, per run, is what going through Ray costs (actors starting, batches
   shipped, runs sent back, scored and journaled on the driver). ``ray.init`` is timed apart (once
   per process, or nothing when connecting to a running cluster).
2. Speed-up: a CPU-bound agent (a pure-Python loop of ~50 ms, which holds the GIL), local (one
   process: the loops take turns) against Ray with 2 workers (two processes).
3. Two nodes: a cluster started with ``ray start`` (``levelfield.testing.ray_cluster``, token auth
   on, 1 CPU a node), the CPU-bound agent on the head alone, then on head + a second node; and the
   per-run overhead of a no-op agent through the cluster (one run in flight, so each run pays the
   whole trip: batch sent, run, sent back, scored, journaled).
4. Driver memory: many tiny runs streamed back from the two nodes, with ``out=`` (journaled as
   they arrive, not held) and without (held in the result); each a fresh driver process, its peak
   RSS over a baseline taken once the dataset is built, for one trial and five of the same cases:
   the growth per run is what the driver keeps of each run.

Prints the figures. Run from the repository root when the machine is otherwise quiet:
``python bench/bench_ray.py [--cases 2000] [--cpu-cases 200] [--tiny-runs 50000] [--only local,nodes,memory]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import levelfield as lf  # noqa: E402

__all__ = ["sleepy_agent", "busy_agent", "noop_agent", "main"]

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


def noop_agent(prompt: str) -> str:
    """The overhead and memory benchmarks' agent: answers at once."""
    return prompt


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
    parser.add_argument("--tiny-runs", type=int, default=50_000, help="runs of the memory figure (default 50000)")
    parser.add_argument("--only", default="local,nodes,memory", help="which parts (default local,nodes,memory)")
    parser.add_argument("--driver-child", help=argparse.SUPPRESS)  # ADDRESS,COUNT,MODE: one memory figure
    args = parser.parse_args(argv)
    if args.driver_child:
        _measure_driver(args.driver_child)
        return 0
    parts = set(args.only.split(","))

    global LOOPS
    LOOPS = calibrate()
    if "local" in parts:
        _on_local_ray(args)
    if parts & {"nodes", "memory"}:
        _on_two_nodes(args, parts)
    return 0


def _on_local_ray(args: argparse.Namespace) -> None:
    import ray

    from levelfield.testing.ray_cluster import local_ray_options

    init_seconds, _ = _timed(lambda: ray.init(num_cpus=args.workers, log_to_driver=False, logging_level="ERROR",
                                              **local_ray_options()))  # on loopback, as the tests' Ray
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


def _on_two_nodes(args: argparse.Namespace, parts: set[str]) -> None:
    import ray

    from levelfield.testing.ray_cluster import LocalRayCluster, token_auth_here

    token_auth_here()
    nodes = LocalRayCluster(cpus_per_node=1, env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")])})
    try:
        nodes.start()
        if "nodes" in parts:
            _two_nodes_against_one(args, nodes)
        else:
            nodes.add_node()
        if "memory" in parts:
            _driver_memory(args, nodes)
    finally:
        ray.shutdown()
        nodes.stop()


def _two_nodes_against_one(args: argparse.Namespace, nodes: Any) -> None:
    data = _dataset(args.cpu_cases)
    on_nodes = lf.RayExecutor(address=nodes.address, concurrency_per_worker=2)
    lf.evaluate(_dataset(4), busy_agent, metrics=[], executor=on_nodes, progress=False)  # connected, warm
    one_s, _ = _timed(lambda: lf.evaluate(data, busy_agent, metrics=[], executor=on_nodes, progress=False))
    nodes.add_node()
    two_s, result = _timed(lambda: lf.evaluate(data, busy_agent, metrics=[], executor=on_nodes, progress=False))
    assert not any(run.failure for run in result.runs)
    print(f"\n{args.cpu_cases} runs of the CPU-bound agent on a cluster of `ray start` nodes (1 CPU each):")
    print(f"  1 node:  {one_s:.2f} s ({args.cpu_cases / one_s:.1f} runs/s)")
    print(f"  2 nodes: {two_s:.2f} s ({args.cpu_cases / two_s:.1f} runs/s), speed-up {one_s / two_s:.2f}x")
    n = 400
    single = lf.RayExecutor(address=nodes.address, num_workers=1, concurrency_per_worker=1)
    fixed_s, _ = _timed(lambda: lf.evaluate(_dataset(1), noop_agent, ["exact_match"], executor=single, progress=False))
    many_s, _ = _timed(lambda: lf.evaluate(_dataset(n), noop_agent, ["exact_match"], executor=single, progress=False))
    local_s, _ = _timed(lambda: lf.evaluate(_dataset(n), noop_agent, ["exact_match"], concurrency=1, progress=False))
    print(f"  per-run overhead, one run in flight ({n} runs of a no-op agent): "
          f"{1000 * (many_s - fixed_s) / (n - 1):.2f} ms a run on the cluster, {1000 * local_s / n:.2f} ms locally; "
          f"fixed cost of an evaluation on the cluster {fixed_s:.2f} s")


def _driver_memory(args: argparse.Namespace, nodes: Any) -> None:
    cases = args.tiny_runs // 5
    print(f"\nDriver memory, tiny runs streamed back from 2 nodes: {cases} cases, 1 trial then 5 (each figure a fresh\n"
          "driver process; the dataset is built and Ray connected before the baseline, so the growth from 1 to 5\n"
          "trials is what the driver keeps of each run):")
    for mode, label in (("journal", "out= (journaled, not held)"), ("held", "no out= (runs held in the result)"),
                        ("compare", "compare of 2 agents, out= (+ report)")):
        figures = [_driver_child(nodes.address, cases, trials, mode) for trials in (1, 5)]
        for f in figures:
            print(f"  {label:<34} {f['runs']:>8} runs: {f['seconds']:6.1f} s ({f['runs'] / f['seconds']:.0f} runs/s), "
                  f"peak RSS {f['peak']:.0f} MiB, +{f['peak'] - f['base']:.0f} MiB over the baseline")
        (one, five) = figures
        grown = ((five["peak"] - five["base"]) - (one["peak"] - one["base"])) * 1024 * 1024 / (five["runs"] - one["runs"])
        print(f"  {label:<34} growth: {grown:.0f} bytes a run")


def _driver_child(address: str, cases: int, trials: int, mode: str) -> dict[str, float]:
    import json
    import subprocess

    command = [sys.executable, __file__, "--driver-child", f"{address},{cases},{trials},{mode}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=str(ROOT))
    if done.returncode != 0:
        raise RuntimeError(f"the driver measuring {cases} x {trials} runs ({mode}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure_driver(spec: str) -> None:
    """One driver's figure: connect, build the dataset, then evaluate it on the cluster (a child process)."""
    import json

    import ray

    address, cases, trials, mode = spec.split(",")
    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    data = lf.load_dataset(_dataset(int(cases)))
    base = _rss_mib()
    executor = lf.RayExecutor(address=address, concurrency_per_worker=64)
    runs = int(cases) * int(trials)
    with tempfile.TemporaryDirectory() as out:
        if mode == "compare":
            agents = {"a": noop_agent, "b": noop_agent}
            seconds, cmp = _timed(lambda: lf.compare(data, agents, ["exact_match"], executor=executor, trials=int(trials),
                                                     out=out, progress=False))
            assert list(cmp.summary["runs"]) == [runs, runs] and (Path(out) / "report.html").exists()
            runs *= 2
        else:
            seconds, result = _timed(lambda: lf.evaluate(data, noop_agent, ["exact_match"], executor=executor,
                                                         trials=int(trials), out=out if mode == "journal" else None,
                                                         progress=False))
            assert result.summary_metrics["row_count"] == runs and result.summary_metrics["failure/count"] == 0
        print(json.dumps({"runs": runs, "seconds": seconds, "base": base, "peak": _peak_mib()}))


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return _peak_mib()


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    raise SystemExit(main())
