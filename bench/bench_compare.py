"""How long compare()'s statistics and report take as the dataset grows (prints figures; not a test).

Four function agents answer N synthetic cases instantly, so the figures are levelfield's own
cost: running and scoring, the summary (Wilson/bootstrap intervals), pairwise tests with Holm,
and rendering the HTML report.
"""

from __future__ import annotations

import random
import sys
import time

import levelfield as lf
from levelfield.report import render_report


def make_cases(n: int) -> list[dict]:
    return [
        {"case_id": f"c{i}", "prompt": f"set {i}", "reference": f"set to {i}",
         "reference_trajectory": [{"tool_name": "set", "tool_input": {"v": i}}]}
        for i in range(n)
    ]


def make_agent(skill: float, seed: int):
    rng = random.Random(seed)

    def agent(prompt: str) -> dict:
        v = int(prompt.split()[1])
        ok = rng.random() < skill
        return {"response": f"set to {v if ok else v + 1}",
                "predicted_trajectory": [{"tool_name": "set", "tool_input": {"v": v if ok else -1}}]}

    return agent


def main(sizes: list[int]) -> None:
    metrics = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum"]
    print(f"{'cases':>6} {'runs':>6} {'compare s':>10} {'summary s':>10} {'pairwise s':>11} {'report s':>9} {'report KB':>10}")
    for n in sizes:
        agents = {f"agent{i}": make_agent(0.5 + 0.1 * i, i) for i in range(4)}
        t0 = time.perf_counter()
        cmp = lf.compare(make_cases(n), agents, metrics, progress=False, concurrency=16)
        t1 = time.perf_counter()
        _ = cmp.summary
        t2 = time.perf_counter()
        for m in metrics:
            cmp.pairwise(m)
        t3 = time.perf_counter()
        html = render_report(cmp)
        t4 = time.perf_counter()
        print(f"{n:>6} {n * 4:>6} {t1 - t0:>10.2f} {t2 - t1:>10.2f} {t3 - t2:>11.2f} {t4 - t3:>9.2f} {len(html) / 1024:>10.0f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100, 1000, 5000])
