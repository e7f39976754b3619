"""Benchmark: what the timeout of a sync custom metric costs per row.

A sync ``CustomMetric`` runs its function on a worker thread so that its timeout holds however the
function blocks (``timeout=120`` by default); ``timeout=None`` calls it on the scoring thread, with
no timeout. This scores the same rows both ways with a trivial function (the worst case: the
hand-off is all there is) and with one that does about 50 microseconds of work, best of 3 each,
and prints the seconds, the microseconds added per row and the ratio.

Run from the repository root: ``python bench/bench_custom_metric.py [--rows 20000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import levelfield as lf  # noqa: E402


def trivial(instance):
    return 1.0


def some_work(instance):
    text = instance["response"] * 40
    return float(sum(text.count(w) for w in ("answer", "the", "a", "1")) > 0)


def best_of(rows, fn, timeout, runs=3):
    metric = lf.metrics.CustomMetric("m", fn, timeout=timeout)
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        lf.evaluate(rows, metrics=[metric], progress=False)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = [{"prompt": f"p{i}", "response": f"answer {i}"} for i in range(args.rows)]
    print(f"{args.rows} rows; best of 3")
    print(f"{'function':<12} {'no timeout (s)':>15} {'timeout (s)':>12} {'us/row added':>13} {'ratio':>6}")
    for name, fn in (("trivial", trivial), ("some work", some_work)):
        bare, timed = best_of(rows, fn, None), best_of(rows, fn, 120.0)
        print(f"{name:<12} {bare:>15.2f} {timed:>12.2f} {1e6 * (timed - bare) / args.rows:>13.1f} {timed / bare:>6.2f}")


if __name__ == "__main__":
    main()
