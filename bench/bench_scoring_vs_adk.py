"""Scoring vs google-adk's TrajectoryEvaluator, side by side, at 1,000 to 1,000,000 rows.

The same in-memory cases (1-8 tool calls each, predicted and reference; ``bench_scale``'s
generator) are scored end to end by both, EXACT + IN_ORDER + ANY_ORDER:

* levelfield: ``lf.evaluate(rows, metrics=[trajectory_exact_match, trajectory_in_order_match,
  trajectory_any_order_match])``, then its ``summary_metrics`` and ``metrics_table``;
* google-adk: each row turned into a pair of ``Invocation``s, then its ``TrajectoryEvaluator``
  with ``match_type`` EXACT, IN_ORDER and ANY_ORDER on every pair.

Each size runs in a fresh process (best of 3 below 1,000,000 rows, once at 1,000,000). ADK at
1,000,000 rows is timed on the first ``--adk-subset`` rows and extrapolated linearly (said so
in the output). Then 1,000,000 saved rows from a JSON Lines file on one worker
(``bench_scale``'s ``score`` step: five trajectory metrics and exact_match, table streamed to
``out=``): wall time and peak memory, against the targets (<= 30 s, <= 1 GB).

    python bench/bench_scoring_vs_adk.py [--sizes 1000,5000,20000,1000000] [--adk-subset 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import TRAJECTORY, _case, adk_evaluators, adk_means, adk_pairs, generate, run_child  # noqa: E402  (the same cases as the scale bench)

METRICS = TRAJECTORY[:3]


def _rows(n: int) -> list[dict]:
    rnd = random.Random(7)
    return [_case(i, rnd) for i in range(n)]


def ours(n: int, repeats: int) -> dict:
    import levelfield as lf

    rows = _rows(n)
    times, means = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        result = lf.evaluate(rows, metrics=METRICS, progress=False)
        summary = result.summary_metrics
        table = result.metrics_table
        times.append(time.perf_counter() - start)
        means = [summary[f"{m}/mean"] for m in METRICS]
        assert len(table) == n
    return {"seconds": min(times), "rows": n, "means": means,
            "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}


def adk(n: int, timed: int, repeats: int) -> dict:
    """ADK on the first ``timed`` of n rows (all of them when timed >= n)."""
    import google.adk.evaluation.trajectory_evaluator  # noqa: F401  (imported before the clock starts)

    evaluators = adk_evaluators()
    rows = _rows(min(n, timed))
    times, means = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        means = adk_means(evaluators, adk_pairs(rows))
        times.append(time.perf_counter() - start)
    return {"seconds": min(times), "rows": len(rows), "means": means}


def _child(*args: str) -> dict:
    return run_child(__file__, *args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,5000,20000,1000000")
    parser.add_argument("--adk-subset", type=int, default=50_000)
    parser.add_argument("--saved-rows", type=int, default=1_000_000)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "levelfield-bench-scale"))
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "ours":
            result = ours(int(rest[0]), int(rest[1]))
        else:
            result = adk(int(rest[0]), int(rest[1]), int(rest[2]))
        print(json.dumps(result))
        return

    try:
        import google.adk  # noqa: F401
    except ImportError:
        raise SystemExit("google-adk is not installed (pip install google-adk): nothing to compare with") from None
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} cores; EXACT + IN_ORDER + ANY_ORDER, in-memory rows, end to end, cases/s")
    print(f"{'rows':>10} {'levelfield':>12} {'google-adk':>12} {'ratio':>7}")
    worst = None
    for n in (int(s) for s in args.sizes.split(",")):
        repeats = 1 if n >= 1_000_000 else 3
        mine = _child("ours", str(n), str(repeats))
        theirs = _child("adk", str(n), str(args.adk_subset), str(repeats))
        ours_rate = n / mine["seconds"]
        adk_rate = theirs["rows"] / theirs["seconds"]
        note = f"  (ADK timed on the first {theirs['rows']:,} rows, rate extrapolated)" if theirs["rows"] < n else ""
        ratio = ours_rate / adk_rate
        worst = ratio if worst is None else min(worst, ratio)
        print(f"{n:>10,} {ours_rate:>12,.0f} {adk_rate:>12,.0f} {ratio:>6.1f}x{note}")
        if theirs["rows"] == n and any(abs(a - b) > 1e-9 for a, b in zip(mine["means"], theirs["means"])):
            print(f"           means differ: levelfield {mine['means']} ADK {theirs['means']}")
    print(f"lowest ratio {worst:.1f}x (target >= 3x at every size)")

    jsonl, _ = generate(args.saved_rows, Path(args.data))
    metrics = ",".join([*TRAJECTORY, "exact_match"])
    scale = Path(__file__).resolve().parent / "bench_scale.py"
    out = subprocess.run([sys.executable, str(scale), "--child", "score", str(jsonl), "1", metrics, "0"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"saved-rows step failed:\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n{r['rows']:,} saved rows (JSONL, 5 trajectory metrics + exact_match, out=), one worker: "
          f"{r['seconds']:.1f} s (target <= 30 s), peak RSS {r['own_gb'] * 1000:.0f} MB (target <= 1,000 MB); "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
