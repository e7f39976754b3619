"""Benchmark: what a levelled tool call costs, replayed from a cassette, beside a trivial live tool.

Each row times N calls of one tool in one run's scope (as the runner sets it), best of 3, and
prints microseconds per call side by side: the trivial live tool called directly; the same tool
levelled but live (no cassette: the call is counted and noted in ``tool_events``); answered from a
replay cassette (the tool never runs); replayed with a fault schedule drawn for every call. The
same for a LangChain ``@tool`` through ``invoke``, as a ``ToolNode`` calls it.

Run from the repository root: ``python bench/bench_tools.py [--calls 20000]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from levelfield import (
    Faults,  # noqa: E402
    ToolCassette,  # noqa: E402
)
from levelfield._core.run.scope import CURRENT_SCOPE, RunScope  # noqa: E402
from levelfield.tools.intercept_function import levelled_function  # noqa: E402
from levelfield.tools.level import Leveller  # noqa: E402


def lookup(key: str) -> str:
    """Look a key up (trivially)."""
    return "value of " + key


def timed(call, calls: int, leveller: Leveller | None, runs: int = 3) -> float:
    """Best seconds per call over ``runs`` runs of ``calls`` calls, in a fresh run scope each time."""
    best = float("inf")
    for _ in range(runs):
        scope = RunScope("bench", "c0", 0)
        scope.leveller = leveller
        token = CURRENT_SCOPE.set(scope)
        try:
            start = time.perf_counter()
            for _ in range(calls):
                call()
            best = min(best, (time.perf_counter() - start) / calls)
        finally:
            CURRENT_SCOPE.reset(token)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tools.jsonl"
        path.write_text(json.dumps({"levelfield_cassette": 1}) + "\n" + json.dumps(
            {"case": "c0", "tool": "lookup", "args": {"key": "k"}, "output": "value of k"}) + "\n", encoding="utf-8")
        replay = Leveller(ToolCassette(path), None)
        faulted = Leveller(ToolCassette(path), Faults(rate=0.0001, kinds=("empty",), seed=1))
        live = Leveller(None, None)
        fn = levelled_function(lookup)

        from langchain_core.tools import tool

        from levelfield.tools.intercept_langchain import levelled_tool

        lc_plain = tool(lookup)
        lc_levelled = levelled_tool(lc_plain)
        rows = [
            ("function tool", lambda: timed(lambda: lookup(key="k"), args.calls, None),
             lambda: timed(lambda: fn(key="k"), args.calls, live),
             lambda: timed(lambda: fn(key="k"), args.calls, replay),
             lambda: timed(lambda: fn(key="k"), args.calls, faulted)),
            ("LangChain @tool .invoke", lambda: timed(lambda: lc_plain.invoke({"key": "k"}), args.calls // 4, None),
             lambda: timed(lambda: lc_levelled.invoke({"key": "k"}), args.calls // 4, live),
             lambda: timed(lambda: lc_levelled.invoke({"key": "k"}), args.calls // 4, replay),
             lambda: timed(lambda: lc_levelled.invoke({"key": "k"}), args.calls // 4, faulted)),
        ]
        print(f"{'tool':<26}{'live, direct':>14}{'levelled live':>15}{'replayed':>11}{'replay+faults':>15}"
              "   (us per call)")
        for name, *measures in rows:
            values = [m() * 1e6 for m in measures]
            print(f"{name:<26}" + "".join(f"{v:>{w}.1f}" for v, w in zip(values, (14, 15, 11, 15)))
                  + f"   replay adds {values[2] - values[0]:.1f} us")


if __name__ == "__main__":
    main()
