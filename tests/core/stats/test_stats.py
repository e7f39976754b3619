"""Statistics against known values: published Wilson intervals, SciPy's own results, textbook examples."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from levelfield._core.stats import inference as stats


def test_wilson_interval_matches_newcombe_1998_table():
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", method 4 (Wilson with
    # continuity correction); method 3 (without) dips to 91 % coverage at 10 cases, see test_calibration.
    assert wilson_bounds(81, 263) == pytest.approx((0.2535, 0.3682), abs=5e-5)
    assert wilson_bounds(15, 148) == pytest.approx((0.0598, 0.1644), abs=5e-5)
    assert wilson_bounds(0, 20) == pytest.approx((0.0, 0.2005), abs=5e-5)


def wilson_bounds(k, n):
    interval = stats.wilson_interval(k, n)
    return interval.low, interval.high


def test_mean_interval_uses_wilson_for_zero_one_values():
    interval = stats.mean_interval([1, 0, 1, 1, np.nan])
    assert (interval.method, interval.n, interval.estimate) == ("wilson", 4, 0.75)


def test_mean_interval_uses_students_t_for_other_values():
    values = np.array([0.4, 0.5, 0.6, 0.7])  # no skew: Hall's correction leaves Student's interval (inside [0, 1])
    interval = stats.mean_interval(values)
    assert interval.method == "t"
    expected = sps.t.interval(0.95, 3, loc=values.mean(), scale=sps.sem(values))
    assert (interval.low, interval.high) == pytest.approx(expected)


def test_bootstrap_interval_is_scipys_bca_interval_for_the_same_seed():
    values = np.array([0.1, 0.5, 0.7, 0.2, 0.9, 0.35, 0.8])
    expected = sps.bootstrap((values,), np.mean, n_resamples=9999, method="BCa", rng=np.random.default_rng(0))
    interval = stats.bootstrap_interval(values, seed=0)
    assert (interval.low, interval.high) == pytest.approx(
        (expected.confidence_interval.low, expected.confidence_interval.high)
    )


def test_bootstrap_interval_of_constant_values_is_that_value():
    interval = stats.bootstrap_interval([0.5, 0.5, 0.5])
    assert (interval.estimate, interval.low, interval.high) == (0.5, 0.5, 0.5)


def test_a_single_case_has_no_interval():
    interval = stats.bootstrap_interval([0.4])
    assert interval.estimate == 0.4 and math.isnan(interval.low) and interval.method == "none"


def test_case_means_average_trials_and_ignore_nan_trials():
    means = stats.case_means(np.array([[1, 0, 1], [0.5, np.nan, 1.0], [np.nan, np.nan, np.nan]]))
    assert means[:2] == pytest.approx([2 / 3, 0.75]) and math.isnan(means[2])


def test_mcnemar_is_the_score_test_on_discordant_cases():
    # 7 cases only A solved, 1 only B solved, 4 both: z = (7 − 1)/√8, two-sided normal p.
    a = [1] * 7 + [0] + [1] * 4
    b = [0] * 7 + [1] + [1] * 4
    result = stats.paired_test(a, b)
    assert result.test == "mcnemar"
    assert result.p_value == pytest.approx(2 * sps.norm.sf(6 / np.sqrt(8 * 12 / 11)))  # variance × n/(n − 1)
    assert (result.wins, result.ties, result.losses) == (7, 4, 1)


def test_wilcoxon_matches_scipys_documented_example():
    # SciPy's wilcoxon docs (Hollander & Wolfe's differences): exact p = 0.041259765625.
    d = np.array([6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75], dtype=float)
    result = stats.paired_test(d, np.zeros_like(d), test="wilcoxon")
    assert result.test == "wilcoxon"
    assert result.p_value == pytest.approx(0.041259765625)


def test_graded_scores_get_the_paired_t_test_of_their_mean_difference():
    a = np.array([0.9, 0.4, 0.7, 0.6, 0.8, 0.6])
    b = np.array([0.1, 0.5, 0.3, 0.2, 0.5, 0.3])  # differences 0.8, −0.1, 0.4, 0.4, 0.3, 0.3 ... made symmetric below
    a = b + np.array([0.1, 0.2, 0.3, 0.3, 0.4, 0.5])  # symmetric differences: Hall's correction is 0
    result = stats.paired_test(a, b)
    expected = sps.ttest_rel(a, b)
    assert result.test == "t"
    assert result.p_value == pytest.approx(expected.pvalue)
    ci = expected.confidence_interval(0.95)
    assert (result.low, result.high) == pytest.approx((ci.low, ci.high))


def test_paired_permutation_test_is_exact_for_small_samples():
    # Five positive differences: only the all-positive and all-negative sign patterns are as extreme, 2 of 32.
    result = stats.paired_test([1.5, 2.0, 1.2, 1.1, 3.0], [1.0, 1.0, 1.0, 1.0, 1.0], test="permutation")
    assert result.p_value == pytest.approx(2 / 32)


def test_identical_agents_have_p_value_one():
    assert stats.paired_test([0.2, 0.5, 1.0], [0.2, 0.5, 1.0]).p_value == 1.0


def test_paired_test_leaves_out_cases_missing_for_either_agent():
    result = stats.paired_test([1, np.nan, 0, 1], [0, 1, np.nan, 1])
    assert result.n == 2 and result.difference == pytest.approx(0.5)


def test_paired_difference_interval_covers_the_mean_difference():
    result = stats.paired_test([0.9, 0.8, 0.7, 0.95, 0.6, 0.85], [0.5, 0.6, 0.7, 0.4, 0.65, 0.3])
    assert result.low <= result.difference <= result.high


def test_holm_adjustment_matches_the_step_down_by_hand():
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.02, 0.03, 0.06, 0.06.
    adjusted = stats.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_and_keeps_nan_out_of_the_family():
    # Two valid p-values: 0.3 * 2 = 0.6, then 0.7 * 1 kept monotone; 0.6 * 2 would exceed 1.
    assert list(stats.holm([0.7, np.nan, 0.3])[[0, 2]]) == pytest.approx([0.7, 0.6])
    assert math.isnan(stats.holm([0.7, np.nan, 0.3])[1])
    assert list(stats.holm([0.9, 0.6])) == [1.0, 1.0]


def test_pass_at_k_is_the_unbiased_estimator():
    # 10 samples, 3 correct: pass@1 = 0.3, pass@2 = 1 - C(7,2)/C(10,2) = 1 - 21/45.
    assert stats.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert stats.pass_at_k(10, 3, 2) == pytest.approx(1 - 21 / 45)


def test_pass_at_k_with_k_trials_is_any_pass_and_pass_hat_k_is_all_pass():
    n, c = np.array([3, 3, 3]), np.array([0, 1, 3])
    assert list(stats.pass_at_k(n, c, 3)) == [0.0, 1.0, 1.0]
    assert list(stats.pass_hat_k(n, c, 3)) == [0.0, 0.0, 1.0]


def test_pass_at_k_is_undefined_with_fewer_trials_than_k():
    assert math.isnan(stats.pass_at_k(2, 1, 3))


def test_flaky_cases_are_those_whose_trials_disagree():
    matrix = np.array([[1, 1, 1], [1, 0, 1], [0, 0, np.nan], [np.nan, np.nan, np.nan]])
    assert list(stats.flaky_cases(matrix)) == [False, True, False, False]
