"""Runner overhead: 2,000 cases, an agent that sleeps 50 ms, concurrency 100.

Ideal wall time = cases / concurrency x 50 ms = 1.0 s. Prints the whole ``evaluate`` (runs and
scoring) over the ideal, for an async agent and a sync one (sync functions run on daemon
threads, one per call in flight, reused). Target <= 1.15. For scale: Vertex's EvalTask takes about
1.65x the ideal on this workload with its 100 threads.

Then the journal's cost: the same workload with ``out=`` (every run appended to runs.jsonl as it
finishes, then the record, metrics table and summary written at the end) against the same
results saved once at the end without a journal (``evaluate`` then ``result.save``), and against
``evaluate`` writing nothing; the median of ``--repeats`` alternating runs each. Target <= 1.03
against saving at the end.

    python bench/bench_runner.py [--cases 2000] [--concurrency 100] [--sleep 0.05] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import levelfield as lf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
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

    print(f"journal cost (median of {args.repeats} alternating runs each):")
    with tempfile.TemporaryDirectory() as tmp:
        for label, agent in (("async agent", async_agent), ("sync agent ", sync_agent)):
            walls: dict[str, list[float]] = {"nothing": [], "save": [], "journal": []}
            for _ in range(args.repeats):
                for mode in walls:
                    options = {"out": tmp, "overwrite": True} if mode == "journal" else {}
                    start = time.perf_counter()
                    result = lf.evaluate(dataset, agent, metrics=["trajectory_exact_match", "exact_match"],
                                         concurrency=args.concurrency, progress=False, **options)
                    if mode == "save":
                        result.save(f"{tmp}/saved")
                    walls[mode].append(time.perf_counter() - start)
            med = {mode: statistics.median(w) for mode, w in walls.items()}
            print(f"{label}: no output {med['nothing']:.3f} s, save at the end {med['save']:.3f} s, "
                  f"journal (out=) {med['journal']:.3f} s; journal / save at the end {med['journal'] / med['save']:.3f} "
                  f"(target <= 1.03), journal / no output {med['journal'] / med['nothing']:.3f}")

if __name__ == "__main__":
    main()
