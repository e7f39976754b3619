"""Noise split by source: a metric's variance between cases, trials and judge samples, recovered
by simulation within its intervals, shown per agent by Comparison.noise(), in the report, and used
by sample-size planning."""

import math

import numpy as np
import pytest

import levelfield as lf
from levelfield.metrics import PointwiseMetric

TRUE = {"case": 0.04, "trial": 0.01, "judge": 0.02}


def simulate(seed, cases=300, trials=3, samples=3):
    rng = np.random.default_rng(seed)
    c = rng.normal(0, math.sqrt(TRUE["case"]), (cases, 1, 1))
    t = rng.normal(0, math.sqrt(TRUE["trial"]), (cases, trials, 1))
    e = rng.normal(0, math.sqrt(TRUE["judge"]), (cases, trials, samples))
    return 0.5 + c + t + e


def test_known_components_are_recovered_within_their_intervals_in_most_simulations():
    covered = {s: 0 for s in TRUE}
    runs = 20
    for seed in range(runs):
        split = lf.stats.split_variance(simulate(seed), seed=seed, resamples=200)
        for source, truth in TRUE.items():
            low, high = split.intervals[source]
            covered[source] += low <= truth <= high
    # 95% intervals: at least 80% of 20 simulations cover each true component (Monte Carlo slack).
    assert all(count >= 16 for count in covered.values()), covered


def test_the_estimates_are_the_method_of_moments_worked_by_hand():
    y = np.array([[[1.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [0.0, 1.0]]])  # 2 cases x 2 trials x 2 samples
    judge = np.mean([0.5, 0.0, 0.0, 0.5])                     # sample variances within each run
    runs = y.mean(axis=2)                                       # [[.5, 1], [0, .5]]
    trial = np.mean([np.var(r, ddof=1) for r in runs]) - judge / 2
    case = np.var(runs.mean(axis=1), ddof=1) - trial / 2 - judge / 4
    split = lf.stats.split_variance(y, resamples=10)
    assert (split.case, split.trial, split.judge) == pytest.approx((max(case, 0), max(trial, 0), judge))


def test_a_source_without_replicates_is_nan_and_the_advice_names_the_sources_measured():
    split = lf.stats.split_variance(simulate(0)[:, :1, :1])  # one trial, one sample
    assert math.isnan(split.trial) and math.isnan(split.judge) and split.case > 0
    assert split.dominant == "case"


def test_the_advice_weighs_what_each_source_narrows_against_what_it_costs():
    rng = np.random.default_rng(3)
    y = 0.5 + rng.normal(0, 0.02, (200, 1, 1)) + rng.normal(0, 0.4, (200, 2, 2))
    split = lf.stats.split_variance(y, resamples=50)
    assert split.dominant == "judge"
    # A judge call at a tenth of a run: one more sample on every run beats 83 more cases (same spend).
    assert "more judge samples narrow" in split.advice(run_cost=1.0, judge_cost=0.1)
    # At equal prices a case (2 runs + 4 judge calls) buys as much per unit as a sample round (400 calls), a bit more.
    assert "more cases narrow" in split.advice(run_cost=1.0, judge_cost=1.0)


def test_sample_size_takes_the_components_intra_case_correlation():
    split = lf.stats.split_variance(simulate(1), resamples=20)
    planned = lf.stats.sample_size(sd=0.3, mde=0.1, trials=3, components=split)
    assert planned.icc == pytest.approx(split.icc())
    assert planned.cases == lf.stats.sample_size(sd=0.3, mde=0.1, trials=3, icc=split.icc()).cases


CASES = [{"case_id": f"c{i}", "prompt": f"question {i}", "reference": "yes"} for i in range(30)]


def coin_judge_factory():
    calls = {"n": 0}

    def judge(prompt: str) -> str:  # a deterministic judge whose samples disagree now and then
        calls["n"] += 1
        return f'{{"score": {1 if calls["n"] % 3 else 0}, "explanation": "ok"}}'

    return judge


def flaky(prompt, _state={"n": 0}):  # noqa: B006 (state kept across calls on purpose)
    _state["n"] += 1
    return "yes" if _state["n"] % 4 else "no"


def test_comparison_noise_splits_trials_and_judge_samples_and_the_report_says_which_dominates(tmp_path):
    judged = PointwiseMetric(
        metric="says_yes",
        metric_prompt_template="Does the answer say yes? Answer with a JSON score 0 or 1.\n{response}",
        judge=coin_judge_factory(), judge_config=lf.JudgeConfig(samples=3),
    )
    cmp = lf.compare(CASES, {"flaky": flaky, "steady": lambda p: "yes"}, ["exact_match", judged], trials=2,
                     progress=False)
    table = cmp.noise()
    row = table[(table.agent == "flaky") & (table.metric == "exact_match")].iloc[0]
    assert row["trials"] == 2 and row["var_trial"] > 0 and math.isnan(row["var_judge"])
    judged_row = table[(table.agent == "steady") & (table.metric == "says_yes")].iloc[0]
    assert judged_row["samples"] == 3 and judged_row["var_judge"] > 0
    page = lf.report.write(cmp, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Where the noise comes from" in page and "narrow the interval most per unit of cost" in page


def test_without_trials_or_samples_the_report_has_no_noise_section(tmp_path):
    cmp = lf.compare(CASES, {"a": lambda p: "yes", "b": lambda p: "no"}, ["exact_match"], progress=False)
    assert "Where the noise comes from" not in lf.report.write(cmp, tmp_path / "r.html").read_text(encoding="utf-8")


def test_advice_of_agents_whose_every_run_scored_the_same_says_so_without_nan():
    from levelfield._core.stats.components import split_variance

    advice = split_variance(np.ones((6, 3))).advice()
    assert advice == "No noise to split: every run scored the same." and "nan" not in advice
