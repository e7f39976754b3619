"""Sample-size planning: the formulas against hand computation, and the planned n against simulation (±5%)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

import levelfield as lf
from levelfield._core.errors import ConfigError
from levelfield._core.stats.planning import mcnemar_power

DRAWS = 4000  # simulated evaluations per check: the power estimate's SE is under 0.7 points


def test_unpaired_rate_matches_fleiss_formula_by_hand():
    # p0 = 0.8, p1 = 0.7: (1.95996·√(2·0.75·0.25) + 0.84162·√(0.16 + 0.21))² / 0.1² = 293.2 -> 294.
    assert lf.stats.sample_size(p0=0.8, mde=0.1, paired=False).cases == 294


def test_paired_mde_solves_connors_formula():
    # Connor (1987) with ψ = 0.15, Δ = 0.05: (1.95996·√0.15 + 0.84162·√0.1475)² / 0.05² = 468.6.
    assert lf.stats.minimum_detectable_effect(469, p0=0.8, discordance=0.15) == pytest.approx(0.05, abs=5e-5)


def test_paired_rate_needs_the_n_where_exact_mcnemar_power_reaches_the_target():
    plan = lf.stats.sample_size(p0=0.8, mde=0.05, power=0.8, paired=True, discordance=0.15)
    assert mcnemar_power(plan.cases, discordance=0.15, mde=0.05) >= 0.8
    assert mcnemar_power(plan.cases - 1, discordance=0.15, mde=0.05) < 0.8


def test_paired_rate_plan_has_the_planned_power_in_simulation():
    plan = lf.stats.sample_size(p0=0.8, mde=0.05, discordance=0.15)
    rng = np.random.default_rng(11)
    # Per evaluation: cases only A passed, only B passed, both or neither (A is 5 points worse).
    counts = rng.multinomial(plan.cases, [(0.15 - 0.05) / 2, (0.15 + 0.05) / 2, 0.85], size=DRAWS)
    wins, losses = counts[:, 0], counts[:, 1]
    # The exact McNemar p (SciPy's binomtest at ½ is symmetric: twice the smaller tail), vectorized.
    p = np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(wins, losses), wins + losses, 0.5))
    assert p[0] == pytest.approx(sps.binomtest(int(wins[0]), int(wins[0] + losses[0])).pvalue)
    assert abs((p < 0.05).mean() - 0.8) <= 0.05


def test_unpaired_rate_plan_has_the_planned_power_in_simulation():
    plan = lf.stats.sample_size(p0=0.8, mde=0.1, paired=False)
    rng = np.random.default_rng(12)
    n = plan.cases
    x, y = rng.binomial(n, 0.8, DRAWS) / n, rng.binomial(n, 0.7, DRAWS) / n
    pooled = (x + y) / 2
    z = (x - y) / np.sqrt(2 * pooled * (1 - pooled) / n)  # the two-proportion z-test the formula assumes
    assert abs((2 * sps.norm.sf(np.abs(z)) < 0.05).mean() - 0.8) <= 0.05


def test_paired_continuous_plan_has_the_planned_power_with_wilcoxon():
    plan = lf.stats.sample_size(sd=0.3, mde=0.1)
    rng = np.random.default_rng(13)
    differences = rng.normal(-0.1, 0.3, size=(DRAWS, plan.cases))
    p = sps.wilcoxon(differences, axis=1).pvalue  # the test compare runs on continuous metrics
    assert abs((p < 0.05).mean() - 0.8) <= 0.05


def test_unpaired_continuous_plan_has_the_planned_power():
    plan = lf.stats.sample_size(sd=0.25, mde=0.1, paired=False)
    rng = np.random.default_rng(14)
    a = rng.normal(0.6, 0.25, size=(DRAWS, plan.cases))
    b = rng.normal(0.5, 0.25, size=(DRAWS, plan.cases))
    assert abs((sps.ttest_ind(a, b, axis=1).pvalue < 0.05).mean() - 0.8) <= 0.05


def test_trials_plan_has_the_planned_power_when_case_effects_are_shared():
    # Each case's run-level difference: a case effect (share icc of the variance) plus trial noise.
    icc, k, sd = 0.3, 3, 0.4
    plan = lf.stats.sample_size(sd=sd, mde=0.1, trials=k, icc=icc)
    rng = np.random.default_rng(15)
    case = rng.normal(0, sd * math.sqrt(icc), size=(DRAWS, plan.cases, 1))
    trial = rng.normal(0, sd * math.sqrt(1 - icc), size=(DRAWS, plan.cases, k))
    case_means = (-0.1 + case + trial).mean(axis=2)
    p = sps.wilcoxon(case_means, axis=1).pvalue
    assert abs((p < 0.05).mean() - 0.8) <= 0.05


def test_trials_shrink_the_cases_by_the_design_effect():
    one = lf.stats.sample_size(sd=0.4, mde=0.1)
    three = lf.stats.sample_size(sd=0.4, mde=0.1, trials=3, icc=0.3)
    # Design effect on the normal formula, then Guenther's z²/2 for the t-test's estimated SD.
    assert three.cases == math.ceil(((1.959964 + 0.841621) * 0.4 / 0.1) ** 2 * (0.3 + 0.7 / 3) + 1.959964**2 / 2)
    assert three.cases < one.cases and three.runs == 3 * three.cases


def test_one_sided_plan_needs_fewer_cases():
    two = lf.stats.sample_size(sd=0.3, mde=0.05)
    one = lf.stats.sample_size(sd=0.3, mde=0.05, alternative="one-sided")
    assert one.cases < two.cases


def test_mde_is_the_inverse_of_the_continuous_sample_size():
    n = lf.stats.sample_size(sd=0.3, mde=0.05).cases
    assert lf.stats.minimum_detectable_effect(n, sd=0.3) == pytest.approx(0.05, rel=0.01)


def test_mde_is_nan_when_the_discordance_cannot_carry_any_detectable_change():
    assert math.isnan(lf.stats.minimum_detectable_effect(10, p0=0.8, discordance=0.01))


def test_paired_plan_without_discordance_assumes_independent_passes():
    plan = lf.stats.sample_size(p0=0.8, mde=0.1)
    assert "independent" in plan.assumptions
    assert plan.cases > lf.stats.sample_size(p0=0.8, mde=0.1, discordance=0.2).cases


@pytest.mark.parametrize(
    "options, words",
    [
        (dict(p0=0.8, sd=0.2, mde=0.05), "not both"),
        (dict(mde=0.05), "give p0"),
        (dict(p0=0.8, mde=0.05, discordance=0.02), "differ by at most"),
        (dict(p0=1.2, mde=0.05), "p0=1.2"),
        (dict(sd=0.2, mde=0.05, trials=2, icc=1.5), "icc=1.5"),
        (dict(sd=0.2, mde=0.05, discordance=0.2), "discordance applies"),
        (dict(p0=0.8, mde=-0.05), "mde=-0.05"),
    ],
)
def test_bad_plans_raise_a_config_error_naming_the_option(options, words):
    with pytest.raises(ConfigError, match=words):
        lf.stats.sample_size(**options)


def test_trials_of_a_0_1_metric_plan_has_the_planned_power_with_wilcoxon_on_case_means():
    # Cases differ in difficulty (pass chance 0.2..1.0), the new agent is 10 points worse on each,
    # so the difference does not vary between cases (icc 0) and three trials cut the cases to a third.
    rng = np.random.default_rng(16)
    a = rng.uniform(0.2, 1.0, 200_000)
    discordance = float(np.mean(a * (1.1 - a) + (a - 0.1) * (1 - a)))  # P(one trial passes, the other fails)
    plan = lf.stats.sample_size(p0=0.6, mde=0.1, discordance=discordance, trials=3, icc=0.0)
    pass_a = rng.uniform(0.2, 1.0, size=(2000, plan.cases, 1))
    new = (rng.random((2000, plan.cases, 3)) < pass_a - 0.1).mean(axis=2)
    old = (rng.random((2000, plan.cases, 3)) < pass_a).mean(axis=2)
    p = sps.wilcoxon(new, old, axis=1).pvalue  # case means are not 0/1: compare runs Wilcoxon
    assert abs((p < 0.05).mean() - 0.8) <= 0.05


def test_measure_design_reads_discordance_and_p0_from_paired_runs():
    base = np.array([[1.0], [1.0], [0.0], [1.0], [0.0]])
    new = np.array([[1.0], [0.0], [1.0], [1.0], [0.0]])
    measured = lf.stats.measure_design(new, base)
    assert (measured.binary, measured.discordance, measured.p0, measured.icc) == (True, 0.4, 0.6, None)


def test_measure_design_estimates_the_intra_case_correlation_by_one_way_anova():
    # Differences per case over 2 trials: case means 0, 1, 0.5 and within-case variances 0, 0, 0.5.
    new = np.array([[0.5, 0.5], [1.0, 1.0], [1.0, 0.0]])
    base = np.zeros((3, 2))
    msb, msw = 2 * np.var([0.5, 1.0, 0.5], ddof=1), np.mean([0.0, 0.0, 0.5])
    measured = lf.stats.measure_design(new, base)
    assert measured.icc == pytest.approx((msb - msw) / (msb + msw))
    assert measured.sd == pytest.approx(np.std([0.5, 0.5, 1, 1, 1, 0], ddof=1))


def test_plan_from_a_comparison_uses_what_it_measured():
    cases = [{"case_id": f"c{i}", "prompt": f"case {i}", "reference": "yes"} for i in range(20)]
    cmp = lf.compare(cases, {"a": lambda p: "yes", "b": lambda p: "no" if int(p.split()[1]) < 4 else "yes"},
                     ["exact_match"], progress=False)
    plan, measured = lf.gate.plan_from(cmp, "exact_match", mde=0.1)
    assert measured.discordance == 0.2  # 4 of 20 cases
    assert plan.cases == lf.stats.sample_size(p0=0.8, mde=0.1, discordance=0.2).cases
