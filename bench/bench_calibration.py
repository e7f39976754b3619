"""Coverage, false positives, false "as good as" and power of the printed statistics, by simulation.

The long version of ``tests/core/stats/test_calibration.py``: the same simulated paired data, more
replications, printed as a table. Every figure comes from the public functions ``lf.compare`` reads
(``levelfield._core.stats.paired``; ``inference.mean_interval`` for one agent's mean).

    python bench/bench_calibration.py            # 2,000 replications per cell
    python bench/bench_calibration.py --reps 500

With R replications the Monte Carlo SE of a 95 % coverage is sqrt(.95 * .05 / R) (0.49 points at R = 2,000).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from levelfield._core.stats.inference import mean_interval  # noqa: E402
from levelfield._core.stats.paired import (  # noqa: E402
    detectable_difference,
    equivalent,
    mcnemar_power,
    paired_inference,
    t_power,
)

ALPHA = 0.05
SIZES = (10, 17, 40, 100, 300)
DIFFERENCES = (0.0, 0.05, 0.2, 0.5)


def binary_pairs(rng: np.random.Generator, n: int, p_a: float, p_b: float, correlated: bool) -> tuple[np.ndarray, np.ndarray]:
    """n paired 0/1 scores with P(A right) = p_a, P(B right) = p_b; correlated: B right whenever A is, as far as the
    rates allow (the most positive correlation), else independent. p_a = 1 is "one agent perfect"."""
    u = rng.random(n)
    a = (u < p_a).astype(float)
    b = (u < p_b).astype(float) if correlated else (rng.random(n) < p_b).astype(float)
    return a, b


def graded_pairs(rng: np.random.Generator, n: int, diff: float, kind: str) -> tuple[np.ndarray, np.ndarray, float]:
    """n paired scores in [0, 1] and their true mean difference. ``skewed``: A perfect (1.0) and B's
    shortfall exponential-like (most cases near 1, a long tail down); ``symmetric``: A and B Beta-distributed."""
    if kind == "skewed":
        mean_short = max(diff, 1e-3)
        # Beta(0.5, b) has a long right tail; mean 0.5 / (0.5 + b).
        short = rng.beta(0.5, 0.5 * (1 - mean_short) / mean_short, n)
        return np.ones(n), 1 - short, mean_short
    base = rng.beta(4, 4, n)
    noise = rng.normal(0, 0.15, n)
    a = np.clip(base + diff / 2 + noise / 2, 0, 1)
    b = np.clip(base - diff / 2 - noise / 2, 0, 1)
    truth = _graded_truth(diff)
    return a, b, truth


_TRUTH: dict[float, float] = {}


def _graded_truth(diff: float) -> float:
    """The true mean difference of the clipped symmetric design, by a large seeded simulation (clipping moves it)."""
    if diff not in _TRUTH:
        rng = np.random.default_rng(12345)
        base = rng.beta(4, 4, 2_000_000)
        noise = rng.normal(0, 0.15, 2_000_000)
        _TRUTH[diff] = float((np.clip(base + diff / 2 + noise / 2, 0, 1) - np.clip(base - diff / 2 - noise / 2, 0, 1)).mean())
    return _TRUTH[diff]


def binary_cell(rng, n, diff, design, reps):
    """Coverage of Tango's interval, rejections at 0, and the per-agent Wilson coverage."""
    if design == "A perfect":
        p_a, p_b, corr = 1.0, 1.0 - diff, False
    elif design == "independent":
        p_a, p_b, corr = 0.5 + diff / 2, 0.5 - diff / 2, False
    else:
        p_a, p_b, corr = 0.7 + diff / 2 if diff <= 0.5 else 0.95, 0.7 - diff / 2, True
    covered = rejected = mean_covered = 0
    for _ in range(reps):
        a, b = binary_pairs(rng, n, p_a, p_b, corr)
        inf = paired_inference(a, b)
        low, high = inf.interval(ALPHA)
        covered += low <= p_a - p_b <= high
        rejected += inf.p_value < ALPHA
        m = mean_interval(b, 1 - ALPHA)
        mean_covered += m.low <= p_b <= m.high
    return covered / reps, rejected / reps, mean_covered / reps


def graded_cell(rng, n, diff, kind, reps):
    covered = rejected = mean_covered = 0
    for _ in range(reps):
        a, b, truth = graded_pairs(rng, n, diff, kind)
        inf = paired_inference(a, b)
        low, high = inf.interval(ALPHA)
        covered += low <= truth <= high
        rejected += inf.p_value < ALPHA
        if kind == "skewed":
            m = mean_interval(b, 1 - ALPHA)
            mean_covered += m.low <= 1 - truth <= m.high
        else:
            mean_covered += 1
    return covered / reps, rejected / reps, mean_covered / reps


def tost_false_claims(rng, n, margin, drop, reps, binary=True):
    """How often "as good as within margin" is said when B's true drop is ``drop`` ≥ margin."""
    claims = 0
    for _ in range(reps):
        if binary:
            a, b = binary_pairs(rng, n, 1.0, 1.0 - drop, False)
        else:
            a, b, _ = graded_pairs(rng, n, drop, "skewed")
        claims += equivalent(paired_inference(b, a), margin, alpha=ALPHA)
    return claims / reps


def power_check(rng, n, psi, reps):
    """The "could detect" figure at discordance psi against the simulated power of the test there."""
    a = np.r_[np.ones(int(round(psi * n))), np.zeros(n - int(round(psi * n)))]
    mde = detectable_difference(paired_inference(a, np.zeros(n)), alpha=ALPHA)
    if math.isnan(mde):
        return math.nan, math.nan, math.nan
    psi_n = int(round(psi * n)) / n
    p12, p21 = (psi_n + mde) / 2, (psi_n - mde) / 2
    hits = 0
    for _ in range(reps):
        cells = rng.multinomial(n, [p12, p21, 1 - psi_n])
        a = np.r_[np.ones(cells[0]), np.zeros(cells[1]), np.zeros(cells[2])]
        b = np.r_[np.zeros(cells[0]), np.ones(cells[1]), np.zeros(cells[2])]
        hits += paired_inference(a, b).p_value < ALPHA
    return mde, mcnemar_power(n, psi_n, mde, ALPHA), hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    reps = args.reps
    rng = np.random.default_rng(2026)
    started = time.perf_counter()
    se = math.sqrt(0.95 * 0.05 / reps)
    print(f"{reps} replications per cell; Monte Carlo SE of a 95% coverage: {se * 100:.2f} points")
    print("\n0/1 metrics: Tango's interval of p_A - p_B (coverage), McNemar's score test (rejections at 0),"
          " Wilson for B's mean")
    print(f"{'design':<12} {'diff':>5} " + " ".join(f"{'n=' + str(n):>17}" for n in SIZES))
    for design in ("A perfect", "independent", "correlated"):
        for diff in DIFFERENCES:
            if design == "correlated" and diff > 0.5:
                continue
            cells = [binary_cell(rng, n, diff, design, reps) for n in SIZES]
            print(f"{design:<12} {diff:>5.2f} " + " ".join(
                f"{c * 100:5.1f} {r * 100:5.1f} {m * 100:5.1f}" for c, r, m in cells))
    print("\n(each cell: coverage %, rejections of 0 %, coverage of the per-agent interval %)")
    print("\ngraded metrics: paired t interval of the mean difference; t interval for B's mean (skewed)")
    print(f"{'design':<12} {'diff':>5} " + " ".join(f"{'n=' + str(n):>17}" for n in SIZES))
    for kind in ("symmetric", "skewed"):
        for diff in DIFFERENCES:
            if kind == "skewed" and diff == 0:
                continue
            cells = [graded_cell(rng, n, diff, kind, reps) for n in SIZES]
            print(f"{kind:<12} {diff:>5.2f} " + " ".join(
                f"{c * 100:5.1f} {r * 100:5.1f} {m * 100:5.1f}" for c, r, m in cells))
    print("\nTOST: false 'as good as within 15 points' with a true drop of 20 points (%; valid: <= 5)")
    for n in (17, 30, 100, 300):
        print(f"  n={n:<4} 0/1: {tost_false_claims(rng, n, 0.15, 0.20, reps) * 100:5.1f}   "
              f"graded: {tost_false_claims(rng, n, 0.15, 0.20, reps, binary=False) * 100:5.1f}")
    print("  at the margin (drop = margin = 15 points):")
    for n in (17, 100, 300):
        print(f"  n={n:<4} 0/1: {tost_false_claims(rng, n, 0.15, 0.15, reps) * 100:5.1f}")
    print("\n'could detect >= X' (80% power) against the simulated power of the score test at X")
    for n, psi in ((17, 0.5), (40, 0.3), (100, 0.2), (300, 0.1)):
        mde, exact, sim = power_check(rng, n, psi, reps)
        print(f"  n={n:<4} discordance {psi:.2f}: X = {mde:.3f}, exact power {exact * 100:.1f}%, simulated {sim * 100:.1f}%")
    for n in (10, 40, 300):
        effect = 0.5
        print(f"  t test n={n:<4} effect 0.5 SD: power {t_power(n, effect, ALPHA) * 100:.1f}%, simulated "
              f"{np.mean([paired_inference(rng.normal(effect, 1, n), np.zeros(n)).p_value < ALPHA for _ in range(reps)]) * 100:.1f}%")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
