"""Sequential comparisons: compare(stop_early=...) stops once every pair is decided, and its error
rates hold (pinned by simulation over many seeds, with cheap agents)."""

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

import levelfield as lf
from levelfield._core.stats.sequential import MAX_BET, Bettor, SequentialMonitor
from levelfield.cli.main import main as cli_main

CASES = [{"case_id": f"c{i}", "prompt": f"p{i}", "reference_trajectory": [{"tool_name": "t", "tool_input": {"i": i}}]}
         for i in range(300)]


def _answer(prompt, miss_every):
    i = int(prompt[1:])
    return {"response": "", "predicted_trajectory": [] if i % miss_every == 0 else [{"tool_name": "t", "tool_input": {"i": i}}]}


def good(prompt):
    return _answer(prompt, 10)  # misses 1 case in 10


def good_too(prompt):
    return _answer(prompt, 10)


def poor(prompt):
    return _answer(prompt, 3)  # misses 1 case in 3


def run_pair(p_a, p_b, n, seed, *, margin=0.0, alpha=0.05):
    rng = np.random.default_rng(seed)
    a, b = (rng.random(n) < p_a).astype(float), (rng.random(n) < p_b).astype(float)
    monitor = SequentialMonitor(["a", "b"], [str(i) for i in range(n)], alpha=alpha, margin=margin)
    for i in range(n):
        monitor.add("a", str(i), a[i])
        monitor.add("b", str(i), b[i])
        if monitor.done:
            break
    return monitor


# -- the test by betting ------------------------------------------------------------------------------


def test_a_bettors_wealth_is_the_product_of_its_bets_worked_by_hand():
    bettor = Bettor()
    for x in (1.0, 1.0, -1.0, 0.0):
        bettor.update(x)
    # bets: 0 (nothing seen), then mean/second moment of what was seen, capped at MAX_BET:
    # after [1]: 1/1 -> 0.5; after [1, 1]: 1 -> 0.5; after [1, 1, -1]: (1/3)/1 = 1/3.
    expected = (1 + 0 * 1) * (1 + MAX_BET * 1) * (1 - MAX_BET * 1) * (1 + (1 / 3) * 0)
    assert bettor.wealth == pytest.approx(expected)
    assert bettor.peak == pytest.approx(1.5)


def test_identical_agents_are_never_declared_different():
    monitor = SequentialMonitor(["a", "b"], [str(i) for i in range(50)])
    for i in range(50):
        monitor.add("a", str(i), 1.0)
        monitor.add("b", str(i), 1.0)
    assert monitor.pairs[0].decision == "futile" and monitor.pairs[0].p_value == 1.0


def test_a_pair_is_futile_exactly_when_the_cases_left_cannot_reach_the_threshold():
    # No difference so far (wealth 1 each): the best reachable evidence with r cases left is
    # (1.5**r + 1) / 2; it falls under 1/alpha = 20 once 1.5**r < 39, i.e. r <= 9.
    r_last = max(r for r in range(40) if (1.5 ** r + 1) / 2 < 20)
    n = 30
    monitor = SequentialMonitor(["a", "b"], [str(i) for i in range(n)])
    for i in range(n):
        monitor.add("a", str(i), 0.5)
        monitor.add("b", str(i), 0.5)
    assert monitor.pairs[0].decided_at == n - r_last
    assert monitor.decided_at == n - r_last


def test_with_a_margin_equal_agents_are_decided_equivalent_when_both_sides_are_rejected():
    margin = 0.1
    step = 1 + MAX_BET * margin / (1 + margin)  # every case, each one-sided bettor multiplies its wealth by this
    first = 1 + math.ceil(math.log(20) / math.log(step))  # the first case carries no bet (nothing seen yet)
    monitor = SequentialMonitor(["a", "b"], [str(i) for i in range(500)], margin=margin)
    for i in range(500):
        monitor.add("a", str(i), 1.0)
        monitor.add("b", str(i), 1.0)
        if monitor.done:
            break
    assert monitor.pairs[0].decision == "equivalent" and monitor.decided_at == first


def test_cases_enter_the_analysis_in_the_fixed_order_whatever_order_runs_finish_in():
    monitor = SequentialMonitor(["a", "b"], ["x", "y", *(str(i) for i in range(100))])
    monitor.add("a", "y", 1.0)
    monitor.add("b", "y", 0.0)
    assert monitor.analysed == 0  # y waits for x
    monitor.add("a", "x", 1.0)
    monitor.add("b", "x", 0.0)
    assert monitor.analysed == 2 and monitor.pairs[0].n == 2


# -- error rates, by simulation --------------------------------------------------------------------


def test_on_equally_good_agents_the_false_stop_rate_is_at_most_alpha():
    seeds = 400
    false = sum(run_pair(0.7, 0.7, 200, seed).pairs[0].decision == "significant" for seed in range(seeds))
    # alpha = 0.05; allow three binomial standard errors of Monte Carlo noise above it.
    assert false / seeds <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / seeds)


def test_with_three_agents_the_family_wise_false_stop_rate_is_at_most_alpha():
    seeds, n = 200, 150
    false = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        scores = {a: (rng.random(n) < 0.6).astype(float) for a in "abc"}
        monitor = SequentialMonitor(list("abc"), [str(i) for i in range(n)])
        for i in range(n):
            for a in "abc":
                monitor.add(a, str(i), scores[a][i])
        false += any(p.decision == "significant" for p in monitor.pairs)
    assert false / seeds <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / seeds)


def test_on_a_real_difference_the_power_is_at_least_the_fixed_n_tests_at_the_planned_n():
    p_a, p_b, dataset = 0.8, 0.6, 400
    discordance = p_a * (1 - p_b) + p_b * (1 - p_a)  # independent runs
    planned = lf.stats.sample_size(mde=p_a - p_b, p0=p_b, discordance=discordance, paired=True, power=0.8).cases
    seeds = 200
    # The fixed-n test at the planned n, by the same simulation: exact McNemar on the discordant cases.
    fixed = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        a, b = rng.random(planned) < p_a, rng.random(planned) < p_b
        wins, losses = int((a & ~b).sum()), int((~a & b).sum())
        fixed += wins + losses > 0 and sps.binomtest(wins, wins + losses).pvalue < 0.05
    monitors = [run_pair(p_a, p_b, dataset, seed) for seed in range(seeds)]
    sequential = sum(m.pairs[0].winner == "a" for m in monitors)
    assert sequential / seeds >= fixed / seeds - 0.02
    assert np.mean([m.decided_at or dataset for m in monitors]) < dataset / 2  # and it stops well before the end


# -- compare(stop_early=...) -----------------------------------------------------------------------


def test_compare_stops_early_with_the_verdict_of_the_full_run(tmp_path):
    early = lf.compare(CASES, {"good": good, "poor": poor}, ["trajectory_exact_match"], stop_early=True,
                       progress=False, out=tmp_path / "early")
    info = early.stopped_early
    assert info["stopped"] and info["cases_analysed"] < len(CASES) / 2
    assert info["runs_made"] < info["runs_planned"] / 2
    assert info["pairs"][0]["winner"] == "good" and info["pairs"][0]["decision"] == "significant"
    full = lf.compare(CASES, {"good": good, "poor": poor}, ["trajectory_exact_match"], progress=False)
    row = full.pairwise("trajectory_exact_match").iloc[0]
    assert bool(row["significant"]) and (row["difference"] > 0) == (row["agent_a"] == "good")
    assert "Stopped early after" in str(early) and "good beats poor" in str(early)
    page = (tmp_path / "early" / "report.html").read_text(encoding="utf-8")
    assert "Stopped early after" in page


def test_the_run_record_keeps_why_it_stopped_and_resume_without_it_runs_the_rest(tmp_path):
    calls = {"n": 0}

    def counted(prompt):
        calls["n"] += 1
        return good(prompt)

    early = lf.compare(CASES, {"good": counted, "poor": poor}, ["trajectory_exact_match"], stop_early=True,
                       progress=False, out=tmp_path)
    made = calls["n"]
    header = json.loads((tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["settings"]["stopped_early"]["cases_analysed"] == early.stopped_early["cases_analysed"]
    assert lf.Comparison.load(tmp_path).stopped_early == early.stopped_early
    rest = lf.compare(CASES, {"good": counted, "poor": poor}, ["trajectory_exact_match"], progress=False,
                      out=tmp_path, resume=True)
    assert calls["n"] == len(CASES)  # every case once: the runs made before stopping were not run again
    assert made < len(CASES) and len(rest.results["good"].runs) == len(CASES)


def test_the_same_seed_stops_at_the_same_case_and_another_seed_runs_another_order():
    def stop(seed):
        return lf.compare(CASES, {"good": good, "poor": poor}, ["trajectory_exact_match"], stop_early=True,
                          progress=False, stats=lf.StatsConfig(seed=seed)).stopped_early

    def analysed(report):  # all but the runs of later cases in flight at the stop: those are timing's (by design)
        return {key: value for key, value in report.items() if key not in ("runs_made", "runs_left_out")}

    first, again = stop(1), stop(1)
    assert analysed(first) == analysed(again)
    for report in (first, again):
        assert report["runs_made"] == report["runs_analysed"] + report["runs_left_out"]
    assert stop(1)["cases_analysed"] != stop(2)["cases_analysed"] or stop(1)["pairs"] != stop(2)["pairs"]


def test_stop_early_reduces_trials_per_case_and_pairs_them():
    cmp = lf.compare(CASES, {"good": good, "poor": poor}, ["trajectory_exact_match"], stop_early="trajectory_exact_match",
                     trials=2, progress=False)
    assert cmp.stopped_early["stopped"]
    runs = cmp.results["good"].runs
    assert {r.trial for r in runs} == {0, 1}


def test_identical_agents_with_a_margin_stop_as_equivalent():
    cmp = lf.compare(CASES, {"good": good, "again": good_too}, ["trajectory_exact_match"], stop_early=True,
                     progress=False, stats=lf.StatsConfig(margin=0.1))
    assert cmp.stopped_early["pairs"][0]["decision"] == "equivalent" and cmp.stopped_early["stopped"]


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(agents={"only": good}), lf.ConfigError, "at least two agents"),
    (dict(stop_early="rouge_l_sum"), lf.ConfigError, "not one of the metrics"),
    (dict(stop_early=3), lf.ConfigTypeError, "pass True"),
    (dict(executor="ray"), lf.ConfigError, "local runner"),
])
def test_stop_early_that_cannot_work_is_a_config_error_before_any_run(kwargs, error, words):
    def never(prompt):
        raise AssertionError("must not run")

    options = dict(agents={"a": never, "b": never}, stop_early=True)
    options.update(kwargs)
    agents = options.pop("agents")
    with pytest.raises(error, match=words):
        lf.compare(CASES, agents, ["trajectory_exact_match"], progress=False, **options)


def test_the_cli_stops_early_with_a_seed_and_says_how_much_it_saved(tmp_path, capsys, monkeypatch):
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in CASES), encoding="utf-8")
    code = cli_main(["compare", str(data), "-a", "good=tests.core.stats.test_sequential:good", "-a", "poor=tests.core.stats.test_sequential:poor",
                     "-m", "trajectory_exact_match", "--stop-early", "--seed", "3", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "Stopped early after" in out and "runs analysed): good beats poor" in out
    assert "cases run before stopping" in out
