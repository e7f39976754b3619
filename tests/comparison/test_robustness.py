"""The "How it holds up" read-out: paired drops under faults with intervals that agree with their tests,
the fault kinds met, and the agreement of trials; checked by simulation where a number is estimated."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest

import levelfield as lf
from levelfield._core.stats.robustness import consistency_table, drop_table, exact_share_interval, fault_kind_table
from levelfield.comparison._robustness import robustness_of


def simulate(rng, *, cases=20, trials=5, drop=0.15):
    """Clean runs pass with a per-case chance in [0.5, 1]; under faults each passing run fails with the
    chance that makes the expected drop ``drop`` on these cases. Returns (clean, faulted, true drop)."""
    p = rng.uniform(0.5, 1.0, cases)
    q = drop / p.mean()
    clean = (rng.random((cases, trials)) < p[:, None]).astype(float)
    faulted = (rng.random((cases, trials)) < (p * (1 - q))[:, None]).astype(float)
    return clean, faulted, float((p * q).mean())


def test_a_planted_drop_of_15_points_is_covered_and_told_from_0():
    rng = np.random.default_rng(7)
    clean, faulted, truth = simulate(rng)
    robust_clean, robust_faulted, _ = simulate(rng, drop=0.0)
    table = drop_table({"planted": clean, "robust": robust_clean}, {"planted": faulted, "robust": robust_faulted},
                       "task_success", alpha=0.05).set_index("agent")
    planted, robust = table.loc["planted"], table.loc["robust"]
    assert truth == pytest.approx(0.15)
    assert planted["ci_low"] <= 0.15 <= planted["ci_high"] and planted["ci_low"] > 0 and planted["significant"]
    assert not robust["significant"] and robust["ci_low"] <= 0 <= robust["ci_high"]
    assert planted["drop"] == pytest.approx(np.mean(clean.mean(axis=1) - faulted.mean(axis=1)))


def test_the_interval_covers_the_true_drop_at_the_nominal_rate():
    rng = np.random.default_rng(2026)
    covered = 0
    sims = 300
    for seed in range(sims):
        clean, faulted, truth = simulate(rng)
        row = drop_table({"a": clean}, {"a": faulted}, "m", alpha=0.05, seed=seed).iloc[0]
        covered += row["ci_low"] <= truth <= row["ci_high"]
    # 95 % nominal: at least 93 % (a binomial count of 300 at 0.95 is below 0.93 * 300 with chance < 4 %)
    assert covered / sims >= 0.93, covered


def test_each_interval_agrees_with_its_holm_decision():
    rng = np.random.default_rng(3)
    clean, faulted = {}, {}
    for i, drop in enumerate([0.0, 0.05, 0.1, 0.2, 0.3]):
        clean[f"a{i}"], faulted[f"a{i}"], _ = simulate(rng, drop=drop)
    table = drop_table(clean, faulted, "m", alpha=0.05)
    for row in table.itertuples():
        assert row.significant == (not row.ci_low <= 0 <= row.ci_high), row
        assert row.ci_level >= 0.95


def test_a_case_no_side_scored_is_left_out_and_all_missing_says_so():
    clean = np.array([[1.0, 1.0], [np.nan, np.nan], [1.0, 0.0]])
    faulted = np.array([[0.0, 0.0], [1.0, 1.0], [np.nan, np.nan]])
    row = drop_table({"a": clean}, {"a": faulted}, "m").iloc[0]
    assert row["n"] == 1 and row["drop"] == 1.0
    empty = drop_table({"a": np.full((2, 2), np.nan)}, {"a": np.zeros((2, 2))}, "m").iloc[0]
    assert empty["n"] == 0 and math.isnan(empty["drop"]) and not empty["significant"]


def test_fault_kinds_are_ranked_by_the_drop_of_the_runs_that_met_them():
    pairs = [("a", {"timeout"}, 1.0, 0.0), ("a", {"timeout", "error"}, 1.0, 0.0), ("a", {"error"}, 1.0, 1.0),
             ("a", {"empty"}, 0.0, 0.0), ("b", {"error"}, 1.0, math.nan)]
    table = fault_kind_table(pairs)
    assert table[["agent", "kind", "runs", "drop"]].values.tolist() == [
        ["a", "timeout", 2, 1.0], ["a", "error", 2, 0.5], ["a", "empty", 1, 0.0]]


def test_consistency_counts_cases_whose_trials_all_agree_with_exact_intervals():
    outcomes = {"a": np.array([[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, np.nan, np.nan]], dtype=float)}
    trajectories = {"a": [[("x",), ("x",), ("x",)], [("x",), ("y",), ("x",)], [(), (), ()], [None, None, None]]}
    row = consistency_table(outcomes, trajectories, "m").iloc[0]
    assert (row["outcome_agreement"], row["outcome_cases"]) == (2 / 3, 3)
    assert (row["trajectory_agreement"], row["trajectory_cases"]) == (2 / 3, 3)
    ci = binomtest(2, 3).proportion_ci(method="exact")
    assert (row["outcome_ci_low"], row["outcome_ci_high"]) == pytest.approx((ci.low, ci.high))
    assert math.isnan(exact_share_interval(0, 0)[0])


# -- from two comparisons ---------------------------------------------------------------------------

CASES = [{"prompt": f"Schalte Gerät {i} aus / 把设备{i}关掉", "reference": "ok",
          "reference_trajectory": [{"tool_name": "set_device", "tool_input": {"id": i}}]} for i in range(30)]


def agent(fails_every: int | None):
    def run(prompt: str) -> dict:
        i = int(prompt.split()[2])
        if fails_every is not None and i % fails_every == 0:
            raise RuntimeError("the tool timed out and the agent gave up")
        return {"response": "ok", "predicted_trajectory": [{"tool_name": "set_device", "tool_input": {"id": i}}]}
    return run


def test_robustness_of_two_comparisons_reads_the_drop_per_agent_and_metric():
    metrics = ["trajectory_exact_match", "exact_match"]
    clean = lf.compare(CASES, {"planted": agent(None), "robust": agent(None)}, metrics=metrics, progress=False)
    faulted = lf.compare(CASES, {"planted": agent(3), "robust": agent(None)}, metrics=metrics, progress=False)
    out = robustness_of(clean, faulted, faults="Faults(rate=0.1, seed=7)")
    planted = out.drop("planted", "trajectory_exact_match")
    assert planted["drop"] == pytest.approx(10 / 30) and planted["significant"]  # failed runs score 0
    assert planted["ci_low"] > 0 and planted["ci_low"] <= 10 / 30 <= planted["ci_high"]
    robust = out.drop("robust", "exact_match")
    assert robust["drop"] == 0 and not robust["significant"]
    text = str(out)
    assert "How it holds up" in text and "Faults(rate=0.1, seed=7)" in text and "30 cases" in text
    assert "drops under faults" in text and "no significant drop (the interval holds 0)" in text
    with pytest.raises(KeyError, match="no drop for agent 'nobody'"):
        out.drop("nobody", "exact_match")


def test_no_case_differing_is_not_an_interval_of_0_to_0():
    # 0/1 scores: Tango's interval with no differing case, ±z²/(n·(n − 1)/n + z²)-wide (corrected score statistic).
    from levelfield._core.stats.paired import tango_interval

    same = np.ones((30, 1))
    row = drop_table({"a": same}, {"a": same}, "m", alpha=0.05).iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tango_interval(0, 0, 30, 0.05)) and not row["significant"]
    assert row["ci_high"] > 0.1
    # Graded scores: no case differs, and a mean drop of |δ| needs that share of cases to differ.
    graded = np.full((30, 2), 0.5)
    row = drop_table({"a": graded}, {"a": graded}, "m", alpha=0.05).iloc[0]
    bound = 1 - 0.025 ** (1 / 30)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((-bound, bound)) and not row["significant"]


def test_an_agent_that_could_not_be_given_faults_is_left_out_saying_why():
    from types import SimpleNamespace

    import pandas as pd

    from levelfield.comparison._robustness import robustness_of

    scores = {"local": np.ones((4, 1)), "remote": np.ones((4, 1))}
    summary = pd.DataFrame({"failures": [1, 0], "runs": [4, 4]}, index=["local", "remote"])

    def side(failures: int):
        table = summary.copy()
        table.loc["local", "failures"] = failures
        return SimpleNamespace(
            confidence=0.95, agents=["local", "remote"], case_ids=["c0", "c1", "c2", "c3"], metric_names=["m"],
            trials=1, summary=table, results={a: SimpleNamespace(streamed=True, runs=[]) for a in scores},
            trial_scores=lambda metric, agent, failed_runs="zero": scores[agent],
            tool_levelling={"local": {"levelled": True}, "remote": {"levelled": False, "why": "a remote A2A agent"}})

    out = robustness_of(side(0), side(3))
    assert list(out.drops["agent"]) == ["local"]
    assert out.left_out == {"remote": "a remote A2A agent"}
    text = "\n".join(out.lines())
    assert "remote: left out, it could not be given faults (a remote A2A agent)" in text
    assert "failed runs 0/4 clean, 3/4 under faults" in text


def test_the_report_and_the_printed_comparison_show_how_it_holds_up(tmp_path):
    from levelfield.report import render as render_report

    metrics = ["trajectory_exact_match"]
    options = {"metrics": metrics, "trials": 2, "progress": False}
    clean = lf.compare(CASES, {"planted": agent(None), "robust": agent(None)}, **options)
    faulted = lf.compare(CASES, {"planted": agent(3), "robust": agent(None)}, **options)
    clean = clean.with_context(faulted=faulted, faults="Faults(rate=0.1, seed=7) <b>")  # its robustness, made with it
    html = render_report(clean)
    assert '<section id="robustness"><h2>How it holds up</h2>' in html and 'href="#robustness"' in html
    assert "Faults(rate=0.1, seed=7) &lt;b&gt;" in html and "<b>\"" not in html  # escaped
    assert "drops under faults" in html and "no significant drop" in html
    assert "over 2 clean trials" in html
    assert "How it holds up" in str(clean)
    assert "How it holds up" not in str(faulted) and 'id="robustness"' not in render_report(faulted)


# -- end to end: compare(faults=...) runs every agent clean and faulted ------------------------------

CITIES = ["Lisboa", "北京", "München", "東京", "São Paulo", "Zürich"]
ROWS = [{"case_id": f"c{i}", "prompt": f"{CITIES[i % len(CITIES)]} #{i}", "reference": f"sunny in {CITIES[i % len(CITIES)]} #{i}"}
        for i in range(60)]


def weather(city: str) -> str:
    return f"sunny in {city}"


def planted_agent(prompt: str, tools: Any = {"weather": weather}) -> str:  # noqa: B006 (levelfield passes tools=)
    try:
        return tools["weather"](city=prompt)
    except Exception:  # noqa: BLE001 - gives up on the first tool error
        return "Sorry, I could not find out."


def careful_agent(prompt: str, tools: Any = {"weather": weather}) -> str:  # noqa: B006 (levelfield passes tools=)
    for _ in range(4):  # tries again: each call is another draw of the schedule
        try:
            return tools["weather"](city=prompt)
        except Exception:  # noqa: BLE001
            continue
    return "Sorry, I could not find out."


def test_compare_with_faults_reports_a_planted_drop_and_a_robust_agent(tmp_path):
    faults = lf.Faults(rate=0.15, kinds=("error",), seed=11)
    cmp = lf.compare(ROWS, {"planted": planted_agent, "careful": careful_agent}, ["exact_match"], faults=faults,
                     trials=2, progress=False, retries=0, out=tmp_path / "out")
    assert cmp.faulted is not None and cmp.summary.loc["planted", "exact_match/mean"] == 1.0  # the clean runs
    met = sum(1 for r in cmp.faulted.results["planted"].runs for e in r.tool_events if e["fault"] == "error")
    planted = cmp.robustness.drop("planted", "exact_match")
    assert planted["drop"] == pytest.approx(met / 120)  # each faulted call costs the planted agent its case
    assert planted["ci_low"] > 0 and planted["ci_low"] <= 0.15 <= planted["ci_high"] and planted["significant"]
    careful = cmp.robustness.drop("careful", "exact_match")
    assert not careful["significant"] and careful["ci_low"] <= 0 <= careful["ci_high"]
    kinds = cmp.robustness.fault_kinds.set_index(["agent", "kind"])
    assert kinds.loc[("planted", "error"), "drop"] == 1.0 and kinds.loc[("careful", "error"), "drop"] == 0.0
    # both agents met the same faults on the same first calls
    first = {a: [(r.case_id, r.trial, r.tool_events[0]["fault"]) for r in cmp.faulted.results[a].runs]
             for a in ("planted", "careful")}
    assert sorted(first["planted"]) == sorted(first["careful"])
    # the record keeps both sides; loading it gives the same read-out, and the report shows it
    loaded = lf.Comparison.load(tmp_path / "out")
    assert loaded.robustness is not None
    assert loaded.robustness.drops[["agent", "metric", "drop", "ci_low", "ci_high"]].equals(
        cmp.robustness.drops[["agent", "metric", "drop", "ci_low", "ci_high"]])
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "How it holds up" in html and "Faults(rate=0.15" in html
    with pytest.raises(lf.ConfigError, match="stop_early does not combine"):
        lf.compare(ROWS, {"planted": planted_agent, "careful": careful_agent}, ["exact_match"], faults=faults,
                   stop_early=True, progress=False)


def test_view_shows_how_each_agent_holds_up_on_the_run_page(tmp_path):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from levelfield.view import create_app

    lf.compare(ROWS[:20], {"planted": planted_agent, "careful": careful_agent}, ["exact_match"],
               faults=lf.Faults(rate=0.3, kinds=("error",), seed=5), progress=False, retries=0,
               out=tmp_path / "runs" / "robust")
    client = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))
    page = client.get("/run?run=runs/robust").text
    assert '<section id="robustness"><h2>How it holds up</h2>' in page and "drops under faults" in page
