"""Sequential comparisons (issue #34): error rates, power, cases saved, and what watching costs.

By simulation over ``--seeds`` seeds, with 0/1 scores drawn independently per agent and case:

- **false stops**: two (and three) equally good agents (p = 0.7); how often a pair is declared
  significant (target: at most alpha = 0.05);
- **power and cases used**: p = 0.8 vs 0.6 on a 400-case dataset; the fixed-n exact McNemar
  test at the n planned for 80% power (``lf.stats.sample_size``) against the sequential test over
  the whole dataset, and the mean number of cases the sequential test needed;
- **equivalence**: equal agents with ``margin=0.1``: how often, and after how many cases, they stop
  as equivalent;
- **end to end**: ``lf.compare(..., stop_early=True)`` of two function agents on 400 cases: runs
  made and saved, wall time against the full run.

    python bench/bench_sequential.py [--seeds 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

import levelfield as lf
from levelfield._core.stats.sequential import SequentialMonitor


def monitor_run(scores: dict[str, np.ndarray], n: int, margin: float = 0.0) -> SequentialMonitor:
    monitor = SequentialMonitor(list(scores), [str(i) for i in range(n)], margin=margin)
    for i in range(n):
        for agent, values in scores.items():
            monitor.add(agent, str(i), float(values[i]))
        if monitor.done:
            break
    return monitor


def draw(seed: int, rates: dict[str, float], n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {a: (rng.random(n) < p).astype(float) for a, p in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=500)
    args = parser.parse_args()
    seeds = range(args.seeds)

    for agents in (2, 3):
        names = "abc"[:agents]
        false = [any(p.decision == "significant" for p in monitor_run(draw(s, dict.fromkeys(names, 0.7), 200), 200).pairs)
                 for s in seeds]
        print(f"false stops, {agents} equal agents (p=0.7, 200 cases): {np.mean(false):.3f} (target <= 0.05)")

    p_a, p_b, n = 0.8, 0.6, 400
    psi = p_a * (1 - p_b) + p_b * (1 - p_a)
    planned = lf.stats.sample_size(mde=p_a - p_b, p0=p_b, discordance=psi, paired=True, power=0.8).cases
    fixed = []
    for s in seeds:
        d = draw(s, {"a": p_a, "b": p_b}, planned)
        wins, losses = int(((d["a"] == 1) & (d["b"] == 0)).sum()), int(((d["a"] == 0) & (d["b"] == 1)).sum())
        fixed.append(wins + losses > 0 and sps.binomtest(wins, wins + losses).pvalue < 0.05)
    started = time.perf_counter()
    monitors = [monitor_run(draw(s, {"a": p_a, "b": p_b}, n), n) for s in seeds]
    per_case = (time.perf_counter() - started) / sum(m.analysed for m in monitors)
    power = np.mean([m.pairs[0].winner == "a" for m in monitors])
    used = np.array([m.decided_at or n for m in monitors])
    print(f"p=0.8 vs 0.6: fixed-n McNemar at the planned n={planned}: power {np.mean(fixed):.3f}; sequential over "
          f"{n} cases: power {power:.3f}, cases used mean {used.mean():.0f}, median {np.median(used):.0f}, "
          f"90th percentile {np.percentile(used, 90):.0f}")
    print(f"monitor cost: {per_case * 1e6:.1f} us per case analysed (two agents, one pair)")

    eq = [monitor_run(draw(s, {"a": 0.7, "b": 0.7}, n), n, margin=0.1) for s in range(min(args.seeds, 200))]
    rate = np.mean([m.pairs[0].decision == "equivalent" for m in eq])
    stops = [m.decided_at for m in eq if m.pairs[0].decision == "equivalent"]
    print(f"equal agents, margin 0.1, {n} cases: decided equivalent in {rate:.3f} of runs, after "
          f"{np.mean(stops) if stops else float('nan'):.0f} cases on average")

    cases = [{"case_id": f"c{i}", "prompt": f"p{i}", "reference_trajectory": [{"tool_name": "t", "tool_input": {"i": i}}]}
             for i in range(n)]

    def agent(miss_every: int):
        def answer(prompt: str) -> dict:
            i = int(prompt[1:])
            time.sleep(0.002)
            calls = [] if i % miss_every == 0 else [{"tool_name": "t", "tool_input": {"i": i}}]
            return {"response": "", "predicted_trajectory": calls}
        return answer

    agents = {"good": agent(10), "poor": agent(3)}
    started = time.perf_counter()
    early = lf.compare(cases, agents, ["trajectory_exact_match"], stop_early=True, progress=False)
    early_s = time.perf_counter() - started
    started = time.perf_counter()
    lf.compare(cases, agents, ["trajectory_exact_match"], progress=False)
    full_s = time.perf_counter() - started
    info = early.stopped_early
    print(f"compare(stop_early=True), 2 agents x {n} cases: stopped after {info['cases_analysed']} cases, "
          f"{info['runs_made']} of {info['runs_planned']} runs made; {early_s:.2f} s against {full_s:.2f} s for all runs")


if __name__ == "__main__":
    main()
