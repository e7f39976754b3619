"""The regression gate: simulated false alarms and power, the margin, Holm across metrics, and the words."""

import numpy as np
import pytest

import levelfield as lf
from levelfield import RegressionError
from levelfield._core.errors import ConfigError, MetricError
from levelfield._core.stats.change import Change, adjust, describe_change, measure_change
from levelfield._core.stats.planning import mcnemar_power
from levelfield.gate import baseline_changes, changes_table, check_regressions

SEEDS = range(200)
P0 = 0.8


def gate_fires(seed: int, n: int, drop: float, *, metrics: int = 1, margin: float = 0.0) -> bool:
    """One simulated CI run: per metric, two agents pass each case at random (the new one ``drop`` lower);
    the gate's statistics exactly as ``check_regressions`` runs them (without the interval it only prints)."""
    rng = np.random.default_rng(seed)
    changes = []
    for k in range(metrics):
        base = (rng.random(n) < P0).astype(float)
        new = (rng.random(n) < P0 - drop).astype(float)
        changes.append(measure_change(new, base, metric=f"m{k}", agent="new", baseline="main", margin=margin,
                                      interval=False))
    return any(c.regression for c in adjust(changes))


def test_identical_agents_fail_the_gate_in_at_most_5_percent_of_seeds():
    n = lf.stats.sample_size(p0=P0, mde=0.10).cases
    assert np.mean([gate_fires(s, n, 0.0) for s in SEEDS]) <= 0.05


def test_identical_agents_on_three_gated_metrics_still_fail_at_most_5_percent():
    # Holm keeps the family-wise rate: three chances to fire, one alpha.
    n = lf.stats.sample_size(p0=P0, mde=0.10).cases
    assert np.mean([gate_fires(s, n, 0.0, metrics=3) for s in SEEDS]) <= 0.05


def test_a_true_10_point_drop_at_the_planned_n_fails_the_gate_with_the_planned_power():
    n = lf.stats.sample_size(p0=P0, mde=0.10, power=0.8).cases
    # Independent passes at 0.8 and 0.7 disagree on 0.8·0.3 + 0.7·0.2 = 38% of cases.
    assert mcnemar_power(n, discordance=0.38, mde=0.10) >= 0.80  # exact power of the gate's test
    rate = np.mean([gate_fires(s, n, 0.10) for s in SEEDS])
    # 200 seeds estimate a power of 0.80 within ±2.8 points (one SE); the planning tolerance is ±5.
    assert rate >= 0.75


def test_a_drop_inside_the_margin_does_not_fail_the_gate():
    n = 2000
    fired = np.mean([gate_fires(s, n, 0.02, margin=0.05) for s in range(50)])
    assert fired <= 0.05


def test_a_drop_well_beyond_the_margin_fails_the_gate():
    n = 2000
    assert np.mean([gate_fires(s, n, 0.15, margin=0.05) for s in range(50)]) >= 0.95


def change(**fields) -> Change:
    base = dict(metric="trajectory_exact_match", agent="new", baseline="main", n=400, difference=-0.061,
                low=-0.102, high=-0.020, p_value=0.004, p_adjusted=0.004, test="mcnemar", alpha=0.05, margin=0.0,
                mde=0.08, power=0.8, points=True, verdict="regression")
    base.update(fields)
    return Change(**base)


def test_a_regression_reads_with_difference_interval_and_p():
    assert describe_change(change()) == "worse than main by 6.1 points [2.0, 10.2], p=0.004 — regression"


def test_a_non_significant_change_says_what_could_have_been_detected():
    words = describe_change(change(difference=-0.012, low=-0.04, high=0.016, p_value=0.41, p_adjusted=0.41,
                                   verdict="no significant change"))
    assert words == ("no significant change (worse than main by 1.2 points [-1.6, 4.0], p=0.410); "
                     "could detect ≥ 8.0 points at this n")


def test_an_improvement_reads_as_one():
    words = describe_change(change(difference=0.05, low=0.02, high=0.08, verdict="improvement"))
    assert words == "better than main by 5.0 points [2.0, 8.0], p=0.004 — improvement"


def test_a_regression_beyond_the_margin_names_the_margin():
    assert describe_change(change(margin=0.02)).endswith("beyond the 2.0 point margin — regression")


def test_adjust_applies_holm_across_the_family():
    changes = [change(metric="a", p_value=0.02, p_adjusted=0.02), change(metric="b", p_value=0.04, p_adjusted=0.04)]
    adjusted = adjust(changes)
    assert [c.p_adjusted for c in adjusted] == pytest.approx([0.04, 0.04])
    assert [c.verdict for c in adjusted] == ["regression", "regression"]


# -- on a real comparison ----------------------------------------------------------------------------

CASES = [{"case_id": f"c{i}", "prompt": f"case {i}", "reference": "yes"} for i in range(40)]


def always_right(prompt):
    return "yes"


def wrong_on_half(prompt):
    return "no" if int(prompt.split()[1]) % 2 else "yes"


@pytest.fixture(scope="module")
def saved_main():
    return lf.evaluate(CASES, always_right, ["exact_match", "rouge_1"], progress=False)


def test_compare_with_fail_if_worse_raises_a_regression_error_naming_metric_difference_interval_p(saved_main):
    with pytest.raises(RegressionError) as err:
        lf.compare(CASES, {"new": wrong_on_half}, ["exact_match"], baseline={"main": saved_main},
                   fail_if_worse="exact_match", progress=False)
    assert str(err.value).startswith("exact_match (new): worse than main by 50.0 points [")
    assert "p<0.001 — regression" in str(err.value)
    assert err.value.comparison.agents == ["new", "main"]


def test_compare_with_fail_if_worse_returns_when_nothing_got_worse(saved_main):
    cmp = lf.compare(CASES, {"new": always_right}, ["exact_match"], baseline={"main": saved_main},
                     fail_if_worse=["exact_match"], progress=False)
    assert not check_regressions(cmp, ["exact_match"]).failed


def test_the_gate_on_two_agents_needs_to_know_which_is_the_baseline():
    cmp = lf.compare(CASES, {"a": always_right, "b": wrong_on_half}, ["exact_match"], progress=False)
    with pytest.raises(ConfigError, match="which agent is the baseline"):
        check_regressions(cmp, "exact_match")
    assert check_regressions(cmp, "exact_match", baseline="a").failed


def test_the_gate_rejects_a_metric_the_comparison_does_not_have(saved_main):
    cmp = lf.compare(CASES, {"new": always_right}, ["exact_match"], baseline={"main": saved_main}, progress=False)
    with pytest.raises(MetricError, match="rouge_l_sum is not a metric of this comparison"):
        check_regressions(cmp, "exact_match,rouge_l_sum")


def test_changes_table_carries_the_words_and_the_mde_for_the_report(saved_main):
    cmp = lf.compare(CASES, {"new": wrong_on_half}, ["exact_match", "rouge_1"], baseline={"main": saved_main},
                     progress=False)
    table = changes_table(baseline_changes(cmp))
    assert list(table["metric"]) == ["exact_match", "rouge_1"]
    assert table["verdict"].tolist() == ["regression", "regression"]
    assert table["words"].str.contains("worse than main by 50.0 points").all()


def test_pairwise_tables_report_the_minimum_detectable_effect():
    cmp = lf.compare(CASES, {"a": always_right, "b": always_right, "c": wrong_on_half}, ["exact_match"],
                     progress=False)
    table = cmp.pairwise("exact_match").set_index(["agent_a", "agent_b"])
    assert np.isnan(table.loc[("a", "b"), "mde"])  # identical answers: nothing varies, nothing to size
    # a vs c: 20 of 40 cases discordant; the difference at which the score test's exact power at
    # ψ = 0.5 and n = 40 reaches 80 %, at the level Holm's strictest step uses for the 2 pairs that
    # can differ (a and b never do): 0.05 / 2.
    from levelfield._core.stats.paired import mcnemar_power

    mde = table.loc[("a", "c"), "mde"]
    assert mcnemar_power(40, 0.5, mde, 0.05 / 2) == pytest.approx(0.8, abs=1e-6)


def _power_over_every_outcome(n, psi, delta, alpha):
    """The score test's power summed over every (wins, losses) outcome of n pairs: the multinomial chance of
    each outcome the test rejects (the reference for the sum by number of differing pairs)."""
    from scipy.special import gammaln, xlogy
    from scipy.stats import norm

    z = float(norm.isf(alpha / 2))
    wins, losses = (g.ravel() for g in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    keep = (wins + losses <= n) & (wins + losses > 0)
    wins, losses = wins[keep], losses[keep]
    rejected = np.abs(wins - losses) > z * np.sqrt((wins + losses) * (n / (n - 1) if n > 1 else 1.0))
    won, lost = wins[rejected].astype(float), losses[rejected].astype(float)
    log_coef = gammaln(n + 1) - gammaln(won + 1) - gammaln(lost + 1) - gammaln(n - won - lost + 1)
    log_p = log_coef + xlogy(won, (psi + delta) / 2) + xlogy(lost, (psi - delta) / 2) + xlogy(n - won - lost, 1 - psi)
    return float(np.exp(log_p).sum())


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 39, 40, 101, 400])
def test_the_score_tests_power_equals_the_sum_over_every_outcome(n):
    from levelfield._core.stats.paired import mcnemar_power

    for psi in (0.0, 0.02, 0.15, 0.38, 0.5, 1.0):
        for share in (0.0, 0.25, -0.6, 1.0, -1.0):
            for alpha in (0.05, 0.025, 0.2):
                assert mcnemar_power(n, psi, psi * share, alpha) == pytest.approx(
                    _power_over_every_outcome(n, psi, psi * share, alpha), abs=1e-11), (n, psi, share, alpha)
    assert np.isnan(mcnemar_power(n, 0.2, 0.3, 0.05))  # a difference larger than the share that differs


def test_a_difference_at_least_the_mde_would_be_significant_after_holm():
    # The words "not significant; could detect >= X" must not sit next to a difference above X.
    cmp = lf.compare(CASES, {"a": always_right, "b": always_right, "c": wrong_on_half}, ["exact_match"],
                     progress=False)
    table = cmp.pairwise("exact_match")
    for row in table.itertuples():
        if not np.isnan(row.mde) and abs(row.difference) >= row.mde:
            assert row.significant, row


def test_a_gate_that_compared_no_case_refuses_to_pass(saved_main):
    # The baseline ran other cases than these: nothing is paired, so nothing can pass the gate.
    others = [{"case_id": f"new{i}", "prompt": f"case {i}", "reference": "yes"} for i in range(5)]
    with pytest.raises(ConfigError, match="no case has a score for both 'new' and 'main'"):
        lf.compare(others, {"new": always_right}, ["exact_match"], baseline={"main": saved_main},
                   fail_if_worse="exact_match", progress=False)
