"""Runner overhead: 2,000 cases, an agent that sleeps 50 ms, concurrency 100.

Ideal wall time = cases / concurrency x 50 ms = 1.0 s. Prints the whole ``evaluate`` (runs and
scoring) over the ideal, for an async agent and a sync one (sync functions run in worker
threads, as many as ``concurrency``). Target <= 1.15. For scale: Vertex's EvalTask takes about
1.65x the ideal on this workload with its 100 threads.

    python bench/bench_runner.py [--cases 2000] [--concurrency 100] [--sleep 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import levelfield as lf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--sleep", type=float, default=0.05)
    args = parser.parse_args()
    pause = args.sleep
    cases = [
        {"prompt": f"turn off device_{i}", "reference": "done",
         "reference_trajectory": [{"tool_name": "set_device_info", "tool_input": {"device_id": f"device_{i}"}}]}
        for i in range(args.cases)
    ]
    dataset = lf.load_dataset(cases)

    async def async_agent(prompt: str) -> dict:
        await asyncio.sleep(pause)
        return {"response": "done", "predicted_trajectory": [
            {"tool_name": "set_device_info", "tool_input": {"device_id": prompt.rsplit(" ", 1)[1]}}]}

    def sync_agent(prompt: str) -> dict:
        time.sleep(pause)
        return {"response": "done", "predicted_trajectory": [
            {"tool_name": "set_device_info", "tool_input": {"device_id": prompt.rsplit(" ", 1)[1]}}]}

    ideal = args.cases / args.concurrency * pause
    print(f"{args.cases} cases, agent sleeps {pause * 1000:.0f} ms, concurrency {args.concurrency}: ideal {ideal:.2f} s")
    for label, agent in (("async agent", async_agent), ("sync agent ", sync_agent)):
        start = time.perf_counter()
        result = lf.evaluate(dataset, agent, metrics=["trajectory_exact_match", "exact_match"],
                             concurrency=args.concurrency, progress=False)
        wall = time.perf_counter() - start
        assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
        assert result.summary_metrics["failure/count"] == 0
        print(f"{label}: {wall:.3f} s  ratio {wall / ideal:.3f}  (target <= 1.15)")


if __name__ == "__main__":
    main()
