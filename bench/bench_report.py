"""How long the HTML report takes to render, and how big it is, with huge responses (prints figures; not a test).

Three cases: a plain comparison; the same with one 10 MB response (it must be shortened, and
render about as fast); and eight agents (the widest layout). Statistics are computed before the
clock starts (they are cached on the comparison), so the figures are the rendering alone.
"""

from __future__ import annotations

import time
import warnings

import levelfield as lf
from levelfield.report import render_report

METRICS = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum", "exact_match"]


def cases(n: int) -> list[dict]:
    return [{"case_id": f"c{i}", "prompt": f"set {i}", "reference": f"set to {i}",
             "reference_trajectory": [{"tool_name": "set", "tool_input": {"v": i}}]} for i in range(n)]


def agent(prompt: str) -> dict:
    v = int(prompt.split()[1])
    return {"response": f"set to {v}", "predicted_trajectory": [{"tool_name": "set", "tool_input": {"v": v}}]}


def huge(prompt: str) -> dict:
    out = agent(prompt)
    if prompt == "set 0":
        out["response"] = "设" * 10_000_000  # 10 million characters (30 MB of UTF-8)
    return out


def measure(label: str, cmp: lf.Comparison, repeat: int = 3) -> None:
    render_report(cmp)  # warm the cached statistics and case views
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        page = render_report(cmp)
        times.append(time.perf_counter() - start)
    print(f"{label:<44} render {min(times) * 1000:8.1f} ms (best of {repeat})   page {len(page.encode()) / 1e6:6.2f} MB")


def main() -> None:
    warnings.simplefilter("ignore")
    for n in (100, 1000):
        ds = cases(n)
        measure(f"{n} cases, 2 agents", lf.compare(ds, {"a": agent, "b": agent}, METRICS, progress=False))
        measure(f"{n} cases, 2 agents, one 10 MB response",
                lf.compare(ds, {"a": agent, "b": huge}, METRICS, progress=False))
        measure(f"{n} cases, 8 agents",
                lf.compare(ds, {f"agent-{i}": agent for i in range(8)}, METRICS, progress=False), repeat=1)


if __name__ == "__main__":
    main()
