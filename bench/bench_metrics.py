"""Scoring speed of the trajectory metrics.

100,000 cases of 1-8 tool calls each (predicted and reference), every trajectory metric scored
through the real scoring path, compared with the floor of reading the same calls once:
``json.dumps(call, sort_keys=True)`` of every predicted and reference call. Target: ratio <= 5.
Both wall and CPU time are printed: on a shared machine the CPU-time ratio is the steadier one.

    python bench/bench_metrics.py [--cases 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

import levelfield as lf
from levelfield._core.score.batch import score_rows
from levelfield._core.score.metrics.base import ScoringContext

TOOLS = ["get_device_info", "set_device_info", "get_temperature", "set_temperature", "get_user_preferences"]
ROOMS = ["Living Room", "Bedroom", "Kitchen"]


def random_call(rnd: random.Random) -> dict:
    tool = rnd.choice(TOOLS)
    if tool.endswith("device_info"):
        args = {"device_id": f"device_{rnd.randint(1, 5)}"}
        if tool.startswith("set"):
            args["updates"] = {"status": rnd.choice(["ON", "OFF"])}
    elif tool.endswith("temperature"):
        args = {"location": rnd.choice(ROOMS)}
        if tool.startswith("set"):
            args["temperature"] = rnd.choice([19, 21, 23, 23.0])
    else:
        args = {"user_id": rnd.choice(["user_x", "user_y"])}
    return {"tool_name": tool, "tool_input": args}


def make_cases(n: int, seed: int = 7) -> list[tuple[list[dict], list[dict]]]:
    rnd = random.Random(seed)
    cases = []
    for _ in range(n):
        reference = [random_call(rnd) for _ in range(rnd.randint(1, 8))]
        predicted = list(reference)
        roll = rnd.random()
        if roll < 0.2:
            rnd.shuffle(predicted)
        elif roll < 0.4:
            predicted.insert(rnd.randrange(len(predicted) + 1), random_call(rnd))
        elif roll < 0.55:
            predicted.pop(rnd.randrange(len(predicted)))
        elif roll < 0.7:
            predicted[rnd.randrange(len(predicted))] = random_call(rnd)
        predicted = predicted[:8] or [random_call(rnd)]
        cases.append((predicted, reference))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    args = parser.parse_args()
    raw = make_cases(args.cases)
    calls = [[lf.ToolCall(**c) for c in p] for p, _ in raw], [[lf.ToolCall(**c) for c in r] for _, r in raw]
    n_calls = sum(len(p) + len(r) for p, r in raw)
    metrics = lf.metrics.resolve_metrics([
        "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
        "trajectory_precision", "trajectory_recall",
    ]) + [lf.metrics.TrajectorySingleToolUse(tool_name="set_temperature")]

    start, cpu_start = time.perf_counter(), time.process_time()
    for predicted, reference in raw:
        for c in predicted:
            json.dumps(c, sort_keys=True)
        for c in reference:
            json.dumps(c, sort_keys=True)
    floor, floor_cpu = time.perf_counter() - start, time.process_time() - cpu_start

    start, cpu_start = time.perf_counter(), time.process_time()
    contexts = [
        ScoringContext(case_id=str(i), prompt=None, response=None, predicted_trajectory=p, reference_trajectory=r)
        for i, (p, r) in enumerate(zip(*calls))
    ]
    rows = asyncio.run(score_rows(contexts, metrics))
    scoring, scoring_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    assert len(rows) == args.cases

    subset = [lf.metrics.TrajectoryRecall(matcher=lf.ToolCallMatcher(args="subset"), name="recall_subset")]
    start = time.perf_counter()
    sample = contexts[: args.cases // 10]
    for ctx in sample:
        ctx._alignments.clear()
    asyncio.run(score_rows(sample, subset))
    general = (time.perf_counter() - start) * 10

    print(f"cases: {args.cases:,}  calls: {n_calls:,}  metrics: {len(metrics)} trajectory metrics")
    print(f"floor (json.dumps(sort_keys=True) of every call): {floor:.3f} s")
    print(f"all trajectory metrics, default matcher:          {scoring:.3f} s  ({scoring / args.cases * 1e6:.1f} us/case)")
    print(f"ratio to floor:                                   {scoring / floor:.2f}  (target <= 5)")
    print(f"CPU time: floor {floor_cpu:.3f} s, scoring {scoring_cpu:.3f} s, ratio {scoring_cpu / floor_cpu:.2f}")
    print(f"recall with a subset matcher (general matching), extrapolated from {len(sample):,} cases: {general:.3f} s")


if __name__ == "__main__":
    main()
