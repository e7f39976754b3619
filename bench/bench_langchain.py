"""Overhead of evaluating a LangGraph agent through levelfield vs invoking the graph directly.

Runs the sample LangGraph agent (scripted model, no network) on the home-automation dataset
N times both ways with the same concurrency, and prints wall times, their ratio (target <= 1.2)
and the per-run overhead in milliseconds.

    python bench/bench_langchain.py [--runs 500] [--concurrency 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

import levelfield as lf
from samples.home_automation.agents.langgraph_agent import make_graph

DATASET = Path(__file__).resolve().parent.parent / "samples" / "home_automation" / "dataset.jsonl"


def prompts(runs: int) -> list[str]:
    rows = [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]
    return [rows[i % len(rows)]["prompt"] for i in range(runs)]


Timing = tuple[float, float]
"""(wall seconds, CPU seconds of this process): CPU time is steadier on a busy machine."""


def direct(graph, items: list[str], concurrency: int) -> Timing:
    """Time of invoking the graph on every prompt, at most ``concurrency`` at once."""

    async def all_runs() -> None:
        limit = asyncio.Semaphore(concurrency)

        async def one(prompt: str) -> None:
            async with limit:
                await graph.ainvoke({"messages": [("user", prompt)]}, {"recursion_limit": 50})

        await asyncio.gather(*(one(p) for p in items))

    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(all_runs())
    return time.perf_counter() - wall, time.process_time() - cpu


def through_levelfield(graph, items: list[str], concurrency: int) -> Timing:
    """Time of the same runs through lf.evaluate (runner, adapter, trajectory callbacks, results)."""
    dataset = [{"case_id": f"r{i}", "prompt": p} for i, p in enumerate(items)]
    wall, cpu = time.perf_counter(), time.process_time()
    result = lf.evaluate(dataset, graph, metrics=[], concurrency=concurrency, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failures = sum(r.failure for r in result.runs)
    if failures:
        raise SystemExit(f"{failures} runs failed; the benchmark needs every run to succeed")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many timings per side")
    args = parser.parse_args()

    graph = make_graph()
    items = prompts(args.runs)
    direct(graph, items[:20], args.concurrency)  # warm up imports and caches
    through_levelfield(graph, items[:20], args.concurrency)

    direct_times, lf_times = [], []
    for _ in range(args.repeats):  # interleaved so drift affects both sides alike
        direct_times.append(direct(graph, items, args.concurrency))
        lf_times.append(through_levelfield(graph, items, args.concurrency))
    print(f"runs={args.runs} concurrency={args.concurrency} best of {args.repeats}")
    for index, label in ((0, "wall"), (1, "cpu")):
        d = min(t[index] for t in direct_times)
        lf_best = min(t[index] for t in lf_times)
        print(f"[{label}] direct graph.ainvoke : {d:.3f} s ({d / args.runs * 1000:.2f} ms/run)")
        print(f"[{label}] levelfield.evaluate  : {lf_best:.3f} s ({lf_best / args.runs * 1000:.2f} ms/run)")
        print(f"[{label}] ratio {lf_best / d:.3f} (target <= 1.2), overhead per run {(lf_best - d) / args.runs * 1000:.3f} ms")


if __name__ == "__main__":
    main()
