"""The soft-label rate against threshold-then-correct, by simulation: coverage and mean interval width.

A judge of known calibration: its logit z ~ N(mu, sd²) gives p = sigmoid(z), and a human passes
a row with probability sigmoid(slope·logit(p) + shift). Each run judges ``--rows`` rows and has a
random share of them labelled by humans. For each setting it prints, over ``--runs`` runs, how
often the 95 % interval covers the true rate and its mean width, for the calibration-corrected
rate from the probabilities (``lf.stats.soft_rate``) and for Rogan–Gladen on the verdicts
p >= 0.5 (``lf.stats.correct_rate``), with the same labels.

    python bench/bench_soft_labels.py [--runs 1000] [--rows 1000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import levelfield as lf

SETTINGS = [
    # (name, mu, sd, slope, shift)
    ("calibrated judge", -0.4, 1.6, 1.0, 0.0),
    ("overconfident, shifted", -0.4, 1.6, 0.8, 0.3),
    ("weak judge", 0.0, 0.8, 1.0, 0.0),
    ("sharp judge", 0.5, 3.0, 1.0, 0.0),
]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _truth(mu: float, sd: float, slope: float, shift: float) -> float:
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(np.sum(w * _sigmoid(slope * (mu + sd * x) + shift)) / math.sqrt(2 * math.pi))


def simulate(runs: int, rows: int, share: float, mu: float, sd: float, slope: float, shift: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    labeled = max(3, int(rows * share))
    p = _sigmoid(rng.normal(mu, sd, (runs, rows)))
    y = (rng.random((runs, rows)) < _sigmoid(slope * np.log(p / (1 - p)) + shift)).astype(float)
    chosen = np.argsort(rng.random((runs, rows)), axis=1)[:, :labeled]
    human = np.full((runs, rows), np.nan)
    np.put_along_axis(human, chosen, np.take_along_axis(y, chosen, axis=1), axis=1)
    truth = _truth(mu, sd, slope, shift)
    soft = [lf.stats.soft_rate(p[r], human[r]) for r in range(runs)]
    hard = []
    for r in range(runs):
        try:
            hard.append(lf.stats.correct_rate((p[r] >= 0.5).astype(float), human[r]))
        except lf.ConfigError:  # the labels had no pass or no fail: Rogan–Gladen cannot be made
            hard.append(None)
    made = [h for h in hard if h is not None]
    return {
        "soft_cover": np.mean([s.low <= truth <= s.high for s in soft]),
        "soft_width": np.mean([s.high - s.low for s in soft]),
        "hard_cover": np.mean([h.low <= truth <= h.high for h in made]) if made else math.nan,
        "hard_width": np.nanmean([h.high - h.low for h in made]) if made else math.nan,
        "hard_made": len(made),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    print(f"{args.runs} runs of {args.rows} judged rows; nominal 95 % intervals")
    print(f"{'judge':<24}{'labels':>7}  {'soft cover':>10}{'width':>8}  {'RG cover':>9}{'width':>8}")
    start = time.perf_counter()
    for name, mu, sd, slope, shift in SETTINGS:
        for share in (0.05, 0.10, 0.20):
            f = simulate(args.runs, args.rows, share, mu, sd, slope, shift)
            print(f"{name:<24}{share:>7.0%}  {f['soft_cover']:>10.3f}{f['soft_width']:>8.3f}  "
                  f"{f['hard_cover']:>9.3f}{f['hard_width']:>8.3f}")
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
