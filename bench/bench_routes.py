"""Saved-row scoring by every route, end to end in a fresh process, beside google-adk (issue #46).

The same saved rows (``bench_scale``'s generator: 1-8 tool calls a row, a response and a
reference text) are scored by three routes, each in its own process:

* ``path``: ``lf.evaluate("saved.jsonl", metrics=...)``;
* ``df``: ``lf.evaluate(pd.read_json("saved.jsonl", lines=True), metrics=...)``;
* ``load_dataset``: ``lf.evaluate(lf.load_dataset("saved.jsonl"), metrics=...)``;
* ``df_in_hand``: ``lf.evaluate(df, metrics=...)`` given a DataFrame already read (``pd.read_json``
  before the clock starts: a user on this route has pandas loaded and the DataFrame in memory);
* ``load_dataset_df``: ``lf.evaluate(lf.load_dataset(df), metrics=...)``, the DataFrame in hand too.

The two routes in hand count what levelfield does with the DataFrame it is given: ``import
levelfield``, the load and the scoring. The ``df`` route also counts ``import pandas`` and
``pd.read_json`` (about 0.6 s of which pandas' import is ~0.5 s on a 2-core machine: at 1,000 rows a
quarter of google-adk's whole time). Their peak memory is read from the moment the DataFrame is
read (the kernel's high-water mark reset then): the DataFrame held, and what levelfield adds on top.

What is timed, from the first line of the child process's work (the interpreter started and the
bench's own modules loaded, nothing of levelfield, pandas or google-adk): ``import levelfield``;
reading the rows as the route does (the ``df`` route imports pandas and runs ``pd.read_json``: what
a user pays to have the DataFrame; ``load_dataset`` checks every row); ``lf.evaluate``; and
``result.summary_metrics`` (the means compared with ADK's). That is the main figure. Then, in the
same process, ``result.metrics_table``, the per-row table as a pandas DataFrame (Vertex AI's
shape): the ``+ table`` figure is the time up to that point. A route that reads a file makes its
table (and imports pandas) only then; ADK's route has no table to make.

google-adk runs in its own process (import, read the file, build its ``Invocation``s, score one
case at a time as ADK does, the means): ``TrajectoryEvaluator`` EXACT + IN_ORDER + ANY_ORDER for the
trajectory metrics, ``RougeEvaluator`` (``response_match_score``) for ROUGE-1. ADK is timed on
the first ``--adk-subset`` rows at most and its rate extrapolated (said so). For each size:
seconds, rows/s, the ratio to ADK's rate (to the summary, and with the table), the seconds spent
reading (before ``lf.evaluate``), and the peak memory (VmHWM, at the end: with the table) of each
process, and what the route added to what the process held when it began (a DataFrame in hand); at the
largest size both against the file route's (target <= 1.5x). Every route
must give the same means; they are checked against ADK's. Each process's CPU time is printed
beside its wall time (on a shared machine it moves less with the load), after one warm-up round;
levelfield's modules are compiled to bytecode first, as an installed package's are.

    python bench/bench_routes.py [--sizes 1000,20000,100000] [--adk-subset 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import TRAJECTORY, adk_evaluators, adk_means, adk_pairs, generate, run_child  # noqa: E402

ROUTES = ("path", "df", "load_dataset", "df_in_hand", "load_dataset_df")
IN_HAND = ("df_in_hand", "load_dataset_df")
"""Routes timed from a DataFrame in hand: pandas imported and the rows read before the clock starts."""
SETS = {"trajectory": TRAJECTORY[:3], "rouge_1": ["response_match_score"]}


def _status_mb(field: str) -> float | None:
    """A memory figure of this process from /proc/self/status (``VmHWM``, ``VmRSS``), None without /proc."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1e3  # kB
    except OSError:
        pass
    return None


def _peak_mb() -> float:
    """This process's peak resident memory. On Linux its own (VmHWM): ``ru_maxrss`` keeps the peak of
    the process it was forked from across ``exec``, so a child of a large parent reports the parent's."""
    peak = _status_mb("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3 if peak is None else peak


def _rss_mb() -> float:
    """This process's resident memory now (VmRSS), 0 where /proc is not there."""
    return _status_mb("VmRSS") or 0.0


def _release_free_memory() -> None:
    """Hand the memory freed so far back to the system (glibc's ``malloc_trim``, pyarrow's pool), so the
    resident memory is what is alive: memory freed but kept by the allocator would be reused unseen."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        import pyarrow

        pyarrow.default_memory_pool().release_unused()
    except (ImportError, AttributeError):
        pass


def _reset_peak() -> None:
    """Start this process's peak resident memory again from what it holds now (Linux: writing 5 to
    clear_refs resets VmHWM), so the peak read at the end is the route's, on top of what it was given."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass


def ours(route: str, path: str, which: str) -> dict:
    """One route, timed as the module doc says: to the summary, then with the table."""
    frame = None
    if route in IN_HAND:
        import pandas as pd

        frame = pd.read_json(path, lines=True, dtype=False)
        _release_free_memory()  # what read_json freed would otherwise hide what levelfield allocates after it
        _reset_peak()  # read_json's own peak is the user's, before levelfield is given the DataFrame
    held = _rss_mb()  # what the process holds before the route: the interpreter (and the DataFrame in hand)
    start, cpu = time.perf_counter(), time.process_time()
    import levelfield as lf

    if route == "path":
        data = path
    elif route == "df":
        import pandas as pd

        data = pd.read_json(path, lines=True, dtype=False)
    elif route == "load_dataset":
        data = lf.load_dataset(path)
    elif route == "df_in_hand":
        data = frame
    else:
        data = lf.load_dataset(frame)
    read = time.perf_counter() - start
    metrics = SETS[which]
    result = lf.evaluate(data, metrics=metrics, progress=False)
    summary = result.summary_metrics
    seconds, summary_cpu = time.perf_counter() - start, time.process_time() - cpu
    table = result.metrics_table
    with_table, table_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert len(table) == summary["row_count"]
    means = [summary[f"{m}/mean"] for m in metrics]
    return {"seconds": seconds, "cpu": summary_cpu, "table_seconds": with_table, "table_cpu": table_cpu,
            "read_seconds": read, "rows": summary["row_count"], "means": means, "peak_mb": (peak := _peak_mb()),
            "added_mb": peak - held}


def adk(path: str, which: str, subset: int) -> dict:
    start, cpu = time.perf_counter(), time.process_time()
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            rows.append(json.loads(line))
            if len(rows) >= subset:
                break
    pairs = adk_pairs(rows)
    if which == "trajectory":
        means = adk_means(adk_evaluators(), pairs)
    else:
        from google.adk.evaluation.eval_metrics import EvalMetric
        from google.adk.evaluation.final_response_match_v1 import RougeEvaluator

        evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.5))
        means = [sum(evaluator.evaluate_invocations([a], [e]).overall_score for a, e in pairs) / len(pairs)]
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "rows": len(rows),
            "means": means, "peak_mb": _peak_mb()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,20000,100000")
    parser.add_argument("--adk-subset", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sets", default="trajectory,rouge_1")
    parser.add_argument("--child", nargs="*")
    parser.add_argument("--no-adk", action="store_true", help="skip google-adk (its rows take the longest)")
    parser.add_argument("--quick", action="store_true",
                        help="20,000 and 100,000 rows, the trajectory set, 2 repeats, no google-adk: a few minutes")
    parser.add_argument("--folder", default=None, 
                        help="where the saved rows are generated (default: a temporary folder)")
    args = parser.parse_args()
    if args.child is not None:
        kind, path, which, *rest = args.child
        answer = adk(path, which, int(rest[0])) if kind == "adk" else ours(kind, path, which)
        print(json.dumps(answer))
        return
    if args.quick:
        args.sizes, args.sets, args.repeats, args.no_adk = "20000,100000", "trajectory", min(args.repeats, 2), True
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = ROUTES if args.no_adk else (*ROUTES, "adk")
    # levelfield's modules as an installed package has them: compiled once. Without this, a shell with
    # PYTHONDONTWRITEBYTECODE=1 makes every child compile levelfield from source (~0.5 s) while pandas
    # and google-adk load from their installed .pyc files.
    compileall.compile_dir(str(ROOT / "levelfield"), quiet=1)
    print(f"load average {os.getloadavg()[0]:.2f} at the start; seconds are wall time, cpu the process's CPU "
          "time (less sensitive to other work on a shared machine); first figures: to the summary, "
          "'+ table': then the metrics table (a pandas DataFrame); 'read': wall seconds before lf.evaluate")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp)
        for which in args.sets.split(","):
            print(f"-- {which} ({', '.join(SETS[which])}), fresh process each, median of {args.repeats} interleaved")
            peaks: dict[str, float] = {}
            added: dict[str, float] = {}
            for n in sizes:
                jsonl, _ = generate(n, folder)
                runs: dict[str, list[dict]] = {}
                for kind in kinds:  # one warm-up round: the file cache, first-use costs
                    extra = [str(min(n, args.adk_subset))] if kind == "adk" else []
                    run_child(__file__, kind, str(jsonl), which, *extra)
                for _ in range(args.repeats):  # interleaved: a load change hits every route alike
                    for kind in kinds:
                        extra = [str(min(n, args.adk_subset))] if kind == "adk" else []
                        runs.setdefault(kind, []).append(run_child(__file__, kind, str(jsonl), which, *extra))
                if args.no_adk:  # the rates against ADK's are then against nothing: shown as nan
                    runs["adk"] = [{"rows": n, "seconds": float("nan"), "cpu": float("nan"), "means": runs["path"][0]["means"]}]
                adk_rate = statistics.median(r["rows"] / r["seconds"] for r in runs["adk"])
                adk_cpu_rate = statistics.median(r["rows"] / r["cpu"] for r in runs["adk"])
                adk_rows = runs["adk"][0]["rows"]
                means = runs["path"][0]["means"]
                for kind in ROUTES:
                    seconds, cpu, table_seconds, table_cpu, read, peak, adds = (
                        statistics.median(r[key] for r in runs[kind])
                        for key in ("seconds", "cpu", "table_seconds", "table_cpu", "read_seconds", "peak_mb", "added_mb"))
                    if n == sizes[-1]:
                        peaks[kind], added[kind] = peak, adds
                    # Row scores are the same; a mean may differ in its last bit (batches summed in another order).
                    same = all(abs(a - b) <= 1e-12 for r in runs[kind] for a, b in zip(r["means"], means))
                    print(f"{n:>8} rows  {kind:15s} {seconds:7.3f} s  {n / seconds:10,.0f} rows/s  "
                          f"{n / seconds / adk_rate:6.1f}x ADK  "
                          f"(cpu {cpu:6.3f} s, {n / cpu / adk_cpu_rate:5.1f}x ADK)  "
                          f"+ table {table_seconds:7.3f} s {n / table_seconds / adk_rate:5.1f}x ADK "
                          f"(cpu {table_cpu:6.3f} s, {n / table_cpu / adk_cpu_rate:5.1f}x)  "
                          f"read {read:6.3f} s  peak {peak:7.0f} MB (adds {adds:6.0f}){'' if same else '  MEANS DIFFER'}")
                # One rate for every route (issue #56): load_dataset(df) against evaluate(df), the DataFrame in hand.
                ratio = statistics.median(a["seconds"] / b["seconds"]
                                          for a, b in zip(runs["load_dataset_df"], runs["df_in_hand"]))
                cpu_ratio = statistics.median(a["cpu"] / b["cpu"] for a, b in zip(runs["load_dataset_df"], runs["df_in_hand"]))
                print(f"{n:>8} rows  evaluate(load_dataset(df)) / evaluate(df): {ratio:.2f}x wall, {cpu_ratio:.2f}x cpu "
                      f"(medians of the interleaved pairs; target <= 1.5x at 20,000 rows); load average "
                      f"{os.getloadavg()[0]:.2f}")
                note = "" if adk_rows == n else f" (timed on {adk_rows} rows, rate extrapolated)"
                agree = max(abs(a - b) for a, b in zip(means, runs["adk"][0]["means"])) if adk_rows == n else None
                adk_seconds = statistics.median(r["seconds"] for r in runs["adk"])
                adk_cpu = statistics.median(r["cpu"] for r in runs["adk"])
                tail = "" if agree is None else f"; largest difference of means from levelfield's {agree:.1e}"
                print(f"{n:>8} rows  {'google-adk':15s} {adk_seconds:7.3f} s  {adk_rate:10,.0f} rows/s  "
                      f"(cpu {adk_cpu:6.3f} s){note}{tail}")
            base = peaks["path"]
            print("peak memory at " + f"{sizes[-1]:,} rows against the file route's: "
                  + ", ".join(f"{k} {v / base:.2f}x" for k, v in peaks.items()) + " (target <= 1.5x)")
            # A route given a DataFrame holds it whatever levelfield does (pandas' object columns of nested
            # calls: several times the file route's whole peak at 100,000 rows): what levelfield adds on top.
            base = added["path"]
            print("memory levelfield adds at " + f"{sizes[-1]:,} rows (peak less what the process held when the "
                  "route began) against the file route's: "
                  + ", ".join(f"{k} {v / base:.2f}x" for k, v in added.items()))


if __name__ == "__main__":
    main()
