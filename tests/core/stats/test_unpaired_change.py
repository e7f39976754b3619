"""The unpaired counterpart of the gate's test (a window of traffic against a baseline: different cases)."""

import math

import numpy as np

from levelfield._core.stats.change import describe_change, measure_unpaired_change
from levelfield._core.stats.inference import noninferiority_p_unpaired, two_sample_test


def test_fisher_on_the_lady_tasting_tea_gives_the_published_p():
    # Fisher (1935): 3 of 4 cups right on each side of a 2x2 table; two-sided p = 34/70.
    t = two_sample_test([1, 1, 1, 0], [1, 0, 0, 0])
    assert t.test == "fisher" and math.isclose(t.p_value, 34 / 70)
    assert (t.n, t.n_baseline) == (4, 4)


def test_mann_whitney_on_separated_samples_gives_the_exact_p():
    # All of one sample below the other: 2 of the 20 equally likely splits are this extreme.
    t = two_sample_test([0.1, 0.2, 0.3], [0.4, 0.5, 0.6])
    assert t.test == "mannwhitney" and math.isclose(t.p_value, 0.1)
    assert math.isclose(t.difference, -0.3)


def test_nan_scores_are_left_out_not_counted():
    t = two_sample_test([1, 0, math.nan], [1, 1, math.nan, math.nan])
    assert (t.n, t.n_baseline) == (2, 2)


def test_a_clear_drop_is_a_regression_and_the_same_rate_is_not():
    rng = np.random.default_rng(7)
    base = (rng.random(800) < 0.9).astype(float)
    worse = measure_unpaired_change((rng.random(300) < 0.6).astype(float), base, metric="m", agent="w", baseline="b")
    same = measure_unpaired_change((rng.random(300) < 0.9).astype(float), base, metric="m", agent="w", baseline="b")
    assert worse.verdict == "regression" and worse.n_baseline == 800
    assert same.verdict == "no significant change"
    assert "worse than b by" in describe_change(worse)


def test_a_drop_within_the_margin_is_no_regression():
    rng = np.random.default_rng(3)
    base = rng.normal(0.8, 0.05, 500).clip(0, 1)
    new = rng.normal(0.79, 0.05, 500).clip(0, 1)
    change = measure_unpaired_change(new, base, metric="m", agent="w", baseline="b", margin=0.05)
    assert change.verdict != "regression"
    assert noninferiority_p_unpaired(new - 0.2, base, 0.05) < 0.001  # far beyond the margin
