"""Planning, the regression gate and judge correction, measured: planned n against simulated power,
the gate's false-alarm rate and power, corrected-interval coverage, and the time each step takes.

The score test's exact power (``mcnemar_power``, behind "could detect >= X" and ``compare``'s ``mde``)
is timed beside the sum over every (wins, losses) outcome it replaced, at 400, 2,000 and 5,000 cases,
with the largest difference between the two.

    python bench/bench_stats_gate.py [--draws 4000] [--seeds 1000]
"""

from __future__ import annotations

import argparse
import functools
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


def outcome_region(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (wins, losses) outcome of n pairs the score test rejects, with its multinomial log-coefficient
    (levelfield built this once per (n, alpha) and kept it, before: three arrays of ~n²/2 floats)."""
    from scipy.special import gammaln

    z = float(sps.norm.isf(alpha / 2))
    wins, losses = (g.ravel() for g in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    keep = (wins + losses <= n) & (wins + losses > 0)
    wins, losses = wins[keep], losses[keep]
    rejected = np.abs(wins - losses) > z * np.sqrt((wins + losses) * n / (n - 1))
    won, lost = wins[rejected].astype(float), losses[rejected].astype(float)
    return won, lost, gammaln(n + 1) - gammaln(won + 1) - gammaln(lost + 1) - gammaln(n - won - lost + 1)


def power_over_every_outcome(region: tuple[np.ndarray, np.ndarray, np.ndarray], n: int, psi: float, delta: float) -> float:
    """The score test's power summed over every outcome it rejects (the way levelfield summed it before)."""
    from scipy.special import xlogy

    won, lost, log_coef = region
    log_p = log_coef + xlogy(won, (psi + delta) / 2) + xlogy(lost, (psi - delta) / 2) + xlogy(n - won - lost, 1 - psi)
    return float(np.exp(log_p).sum())


def power_timings() -> None:
    from levelfield._core.stats.paired import mcnemar_power as score_test_power

    print("Score test's exact power (psi 0.38, delta 0.08, alpha 0.05), best of 5 calls; the sum over every outcome")
    print("with its region built once and kept, as before (building it is timed apart):")
    for n in (400, 2000, 5000):
        start = time.perf_counter()
        region = outcome_region(n, 0.05)
        built = time.perf_counter() - start
        walls = {}
        for label, power in (("pairs", functools.partial(score_test_power, n, 0.38, 0.08, 0.05)),
                             ("outcomes", functools.partial(power_over_every_outcome, region, n, 0.38, 0.08))):
            best, value = float("inf"), float("nan")
            for _ in range(5):
                start = time.perf_counter()
                value = power()
                best = min(best, time.perf_counter() - start)
            walls[label] = (best, value)
        (new, a), (old, b) = walls["pairs"], walls["outcomes"]
        print(f"  n={n}: {new * 1000:.2f} ms by differing pairs, {old * 1000:.1f} ms over every outcome "
              f"({old / new:.0f}x; its region {built * 1000:.0f} ms, {sum(x.nbytes for x in region) / 1e6:.0f} MB); "
              f"power {a:.10f} / {b:.10f}, difference {abs(a - b):.1e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    power_timings()
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
