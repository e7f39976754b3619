"""out='s two costs and what trades them (issue #56): the rows of the metrics table made while the runs
run (``TableAhead``), or made at the end.

With ``out=``, ``evaluate`` journals every run as it finishes, then saves the tables at the end. For an
async agent the journal's thread makes the tables' rows of each batch of runs it made durable, so the
save has less left to do; that thread wants the interpreter while the event loop does. This times,
interleaved in one process (medians of ``--repeats`` rounds; 2,000 cases, concurrency 100, an async agent):

- **no out=**: ``lf.evaluate(...)`` then ``result.summary_metrics``, the reference;
- **out=, rows ahead** (what a user gets): the same with ``out=dir``;
- **out=, rows at the end**: the same with the rows' thread left out (every row made by the save).

For each out= mode: the whole against no out= ("whole", target <= 1.10), the same less the seconds
``EvalResult.save`` took ("runner", the runner with its journal; target <= 1.03), the save itself, and
the milliseconds the garbage collector held the interpreter during the whole call. Each round's walls
are printed too: the spread between rounds is part of the answer.

    python bench/bench_rows_ahead.py [--sleep 0.02] [--repeats 9] [--cases 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The same rows, answer and metrics as bench_runner.py: the benches time one workload.
from bench_runner import METRICS, _cache_folder, _call, _rows  # noqa: E402

MODES = ["no out=", "out=, rows ahead", "out=, rows at the end"]


class _Collector:
    """The milliseconds the garbage collector ran (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sleep", type=float, default=0.02, help="the agent's latency in seconds (default 0.02)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()

    import levelfield as lf
    import levelfield._core.results.table_ahead as table_ahead

    dataset = lf.load_dataset(_rows(args.cases))
    pause = args.sleep

    async def agent(prompt: str) -> dict:
        await asyncio.sleep(pause)
        return _call(prompt)

    save = lf.EvalResult.save
    saving: list[float] = []

    def timed_save(self, directory):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return save(self, directory)
        finally:
            saving.append(time.perf_counter() - start)

    rows_ahead = table_ahead.TableAhead
    collector = _Collector()
    walls: dict[str, list[float]] = {}
    print(f"{args.cases} cases, async agent of {pause * 1000:.0f} ms, concurrency {args.concurrency}; "
          f"median of {args.repeats} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    lf.EvalResult.save = timed_save  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as tmp, _cache_folder(tmp):
            lf.evaluate(dataset[:200], agent, METRICS, concurrency=args.concurrency, progress=False)  # the limit known
            for _ in range(args.repeats):
                for mode in MODES:
                    options: dict = {} if mode == "no out=" else {"out": f"{tmp}/out", "overwrite": True}
                    # The engine makes its TableAhead from this module: a stand-in that makes none leaves
                    # every row to the save (as for a sync agent).
                    table_ahead.TableAhead = (lambda *a, **k: None) if mode.endswith("at the end") else rows_ahead  # type: ignore[assignment, misc]
                    saving.clear()
                    result = summary = None  # each call starts with the last one's result freed and collected
                    gc.collect()
                    collector.seconds = 0.0
                    start = time.perf_counter()
                    result = lf.evaluate(dataset, agent, METRICS, concurrency=args.concurrency, progress=False, **options)
                    summary = result.summary_metrics
                    wall = time.perf_counter() - start
                    assert summary["trajectory_exact_match/mean"] == 1.0 and summary["failure/count"] == 0
                    walls.setdefault(mode, []).append(wall)
                    walls.setdefault(f"{mode} gc", []).append(collector.seconds)
                    if saving:
                        walls.setdefault(f"{mode} save", []).append(saving[-1])
                        walls.setdefault(f"{mode} runner", []).append(wall - saving[-1])
    finally:
        lf.EvalResult.save = save  # type: ignore[method-assign]
        table_ahead.TableAhead = rows_ahead  # type: ignore[misc]

    base = statistics.median(walls["no out="])
    print(f"  {'':24s} {'wall':>8s} {'whole':>7s} {'runner':>7s} {'save':>8s} {'gc':>7s}")
    for mode in MODES:
        wall = statistics.median(walls[mode])
        line = f"  {mode:24s} {wall * 1000:6.0f}ms {wall / base:6.3f}x"
        if f"{mode} runner" in walls:
            line += (f" {statistics.median(walls[f'{mode} runner']) / base:6.3f}x"
                     f" {statistics.median(walls[f'{mode} save']) * 1000:6.1f}ms")
        else:
            line += f" {'':7s} {'':8s}"
        line += f" {statistics.median(walls[f'{mode} gc']) * 1000:5.1f}ms"
        print(line)
    print("  each round (ms):")
    for mode in MODES:
        print(f"    {mode:24s} " + " ".join(f"{w * 1000:4.0f}" for w in walls[mode]))
    print(f"  load average at the end {os.getloadavg()[0]:.2f}; targets: whole <= 1.10, runner <= 1.03")


if __name__ == "__main__":
    main()
