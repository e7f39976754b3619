"""Planning, the regression gate and judge correction, measured: planned n against simulated power,
the gate's false-alarm rate and power, corrected-interval coverage, and the time each step takes.

    python bench/bench_stats_gate.py [--draws 4000] [--seeds 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

import levelfield as lf
from levelfield._core.stats.change import adjust, measure_change
from levelfield._core.stats.judge_correction import correct_rate
from levelfield._core.stats.planning import mcnemar_power


def paired_rate_power(n: int, psi: float, delta: float, draws: int, rng: np.random.Generator) -> float:
    counts = rng.multinomial(n, [(psi - delta) / 2, (psi + delta) / 2, 1 - psi], size=draws)
    wins, losses = counts[:, 0], counts[:, 1]
    p = np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(wins, losses), wins + losses, 0.5))
    return float((p < 0.05).mean())


def gate_rate(n: int, drop: float, seeds: int) -> float:
    fired = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        base = (rng.random(n) < 0.8).astype(float)
        new = (rng.random(n) < 0.8 - drop).astype(float)
        change = measure_change(new, base, metric="m", agent="new", baseline="main", interval=False)
        fired += adjust([change])[0].regression
    return fired / seeds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    print("Planning: planned n, exact power at n, simulated power at n (target 0.80)")
    for p0, mde, psi in [(0.8, 0.05, 0.15), (0.8, 0.10, None), (0.6, 0.10, 0.30)]:
        start = time.perf_counter()
        plan = lf.stats.sample_size(p0=p0, mde=mde, discordance=psi)
        took = time.perf_counter() - start
        d = psi if psi is not None else p0 * (1 - (p0 - mde)) + (p0 - mde) * (1 - p0)
        exact = mcnemar_power(plan.cases, discordance=d, mde=mde)
        sim = paired_rate_power(plan.cases, d, mde, args.draws, rng)
        print(f"  paired 0/1 p0={p0} mde={mde} discordance={d:.2f}: n={plan.cases}  exact {exact:.4f}  "
              f"simulated {sim:.4f}  ({took * 1000:.1f} ms to plan)")
    plan = lf.stats.sample_size(sd=0.3, mde=0.1)
    diffs = rng.normal(-0.1, 0.3, size=(args.draws, plan.cases))
    print(f"  paired continuous sd=0.3 mde=0.1: n={plan.cases}  simulated (Wilcoxon) "
          f"{(sps.wilcoxon(diffs, axis=1).pvalue < 0.05).mean():.4f}")

    n = lf.stats.sample_size(p0=0.8, mde=0.10).cases
    start = time.perf_counter()
    null = gate_rate(n, 0.0, args.seeds)
    drop = gate_rate(n, 0.10, args.seeds)
    took = time.perf_counter() - start
    print(f"Gate at n={n}: fires on identical agents in {null:.3f} of {args.seeds} seeds, on a 10-point drop in "
          f"{drop:.3f} ({took / (2 * args.seeds) * 1000:.2f} ms per gate decision without the interval)")
    base = (rng.random(n) < 0.8).astype(float)
    new = (rng.random(n) < 0.7).astype(float)
    start = time.perf_counter()
    for _ in range(10):
        measure_change(new, base, metric="m", agent="new", baseline="main")
    print(f"  one change with its bootstrap interval: {(time.perf_counter() - start) / 10 * 1000:.1f} ms")

    covered = judged = 0
    runs = 500
    start = time.perf_counter()
    for _ in range(runs):
        truth = rng.random(4000) < 0.4
        verdict = np.where(truth, rng.random(4000) < 0.9, rng.random(4000) > 0.8).astype(float)
        human = np.full(4000, np.nan)
        idx = rng.choice(4000, 600, replace=False)
        human[idx] = truth[idx]
        c = correct_rate(verdict, human)
        covered += c.low <= 0.4 <= c.high
        judged += c.judged_low <= 0.4 <= c.judged_high
    took = time.perf_counter() - start
    print(f"Judge correction (Se 0.9, Sp 0.8, 600 of 4000 labelled, true rate 0.4), {runs} runs: corrected interval "
          f"covers {covered / runs:.3f}, judged interval {judged / runs:.3f} ({took / runs * 1000:.2f} ms each)")


if __name__ == "__main__":
    main()
