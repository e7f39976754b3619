"""compare(): every agent on every case, the summary, pairwise tests, per-case views, save and load."""

import asyncio
import math

import numpy as np
import pytest

import levelfield as lf
from levelfield import Comparison
from levelfield._core.score.diff import mark_trajectory
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

SAMPLE = "samples/home_automation/dataset.jsonl"
EXACT = "trajectory_exact_match"

CASES = [
    {"case_id": "a", "prompt": "turn on light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
    {"case_id": "b", "prompt": "turn off light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": False}}]},
    {"case_id": "c", "prompt": "say hi", "reference": "hi", "reference_trajectory": []},
    {"case_id": "d", "prompt": "no reference here"},
]


def right(prompt):
    if "light" in prompt:
        return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": "on " in prompt}}]}
    return {"response": "hi", "predicted_trajectory": []}


def crashes_on_off(prompt):
    if "off" in prompt:
        raise RuntimeError("light switch jammed")
    return right(prompt)


def wrong(prompt):
    return {"response": "nope", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": None}}]}


def compare(agents, **kw):
    kw.setdefault("progress", False)
    return lf.compare(CASES, agents, [EXACT, "exact_match"], **kw)


@pytest.fixture(scope="module")
def sample():
    return lf.compare(SAMPLE, {"careful": careful_agent, "hasty": hasty_agent},
                      [EXACT, "trajectory_recall", "rouge_l_sum"], progress=False)


def test_summary_has_one_row_per_agent_with_mean_and_interval(sample):
    s = sample.summary
    assert list(s.index) == ["careful", "hasty"]
    assert s.loc["careful", f"{EXACT}/mean"] == 1.0
    assert s.loc["hasty", f"{EXACT}/ci_low"] < s.loc["hasty", f"{EXACT}/mean"] < s.loc["hasty", f"{EXACT}/ci_high"]


def test_summary_mean_equals_the_evaluation_mean_when_nothing_fails(sample):
    for agent in sample.agents:
        assert sample.summary.loc[agent, "rouge_l_sum/mean"] == pytest.approx(
            sample.results[agent].summary_metrics["rouge_l_sum/mean"]
        )


def test_results_hold_each_agents_evaluation(sample):
    assert isinstance(sample.results["hasty"], lf.EvalResult)
    assert len(sample.results["hasty"].metrics_table) == 18


def test_per_case_is_a_case_by_agent_matrix_per_metric(sample):
    matrix = sample.per_case[EXACT]
    assert matrix.shape == (18, 2) and list(matrix.columns) == ["careful", "hasty"]
    assert matrix.loc["preferred_temperature_living_room"].tolist() == [1.0, 0.0]


def test_pairwise_uses_exact_mcnemar_for_zero_one_metrics(sample):
    row = sample.pairwise(EXACT).iloc[0]
    assert (row.agent_a, row.agent_b, row.test) == ("careful", "hasty", "mcnemar")
    assert row.wins + row.ties + row.losses == row.n == 18
    assert row.difference == pytest.approx(row.wins / 18 - row.losses / 18)


def test_pairwise_uses_the_paired_t_test_of_the_mean_difference_for_graded_metrics(sample):
    row = sample.pairwise("rouge_l_sum").iloc[0]
    assert row.test == "t" and row.estimand == "mean difference"


def test_pairwise_leaves_identical_agents_out_of_the_adjustment():
    cmp = compare({"right": right, "wrong": wrong, "also_right": right})
    table = cmp.pairwise(EXACT)
    assert len(table) == 3
    # right and also_right agree on every case: never significant, so not counted. The two others
    # differ on the three scored cases (the score test's z = 3/√(3 · 3/2) = √2, p = 0.157), which
    # cannot pass 0.05 either.
    assert table["in_family"].tolist() == [False, False, False]
    from scipy.stats import norm

    p = 2 * norm.sf(math.sqrt(2))
    assert table["p_value"].tolist() == pytest.approx([p, 1.0, p]) and table["p_holm"].isna().all()


def test_a_failed_run_scores_zero_and_is_counted():
    cmp = compare({"flaky": crashes_on_off})
    row = cmp.summary.loc["flaky"]
    assert row["failures"] == 1
    # a, c right; b failed -> 0; d has no reference trajectory -> left out.
    assert row[f"{EXACT}/mean"] == pytest.approx(2 / 3) and row[f"{EXACT}/n"] == 3
    assert cmp.summary.attrs["failed_runs"] == "zero"


def test_a_failed_run_stays_nan_where_the_metric_does_not_apply():
    def crashes_always(prompt):
        raise RuntimeError("down")

    cmp = compare({"down": crashes_always})
    assert math.isnan(cmp.per_case[EXACT].loc["d", "down"])
    assert cmp.per_case[EXACT].loc["a", "down"] == 0.0


def test_excluded_failures_leave_the_case_out_of_means_and_pairs():
    cmp = compare({"flaky": crashes_on_off, "right": right}, stats=lf.StatsConfig(failed_runs="exclude"))
    assert cmp.summary.loc["flaky", f"{EXACT}/mean"] == 1.0
    assert cmp.pairwise(EXACT).iloc[0].n == 2


def test_trials_give_pass_at_k_pass_hat_k_and_flaky_counts():
    calls = {"n": 0}

    def every_other_time(prompt):
        calls["n"] += 1
        if "on light" in prompt and calls["n"] % 2 == 0:
            return wrong(prompt)
        return right(prompt)

    # concurrency=1 keeps the call order, so case a alternates right/wrong over its 3 trials.
    cmp = compare({"x": every_other_time}, trials=3, concurrency=1)
    row = cmp.summary.loc["x"]
    assert row[f"{EXACT}/pass@3"] == 1.0
    assert row[f"{EXACT}/pass^3"] == pytest.approx(2 / 3)
    assert row[f"{EXACT}/flaky"] == 1
    assert cmp.per_case[EXACT].loc["a", "x"] == pytest.approx(2 / 3)


def test_agent_concurrency_caps_one_agent_within_the_shared_budget():
    state = {"now": 0, "peak": 0}

    async def tracked(prompt):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return right(prompt)

    compare({"capped": tracked, "free": right}, trials=3, concurrency=8, agent_concurrency={"capped": 1})
    assert state["peak"] == 1


def test_agents_can_be_given_as_spec_strings():
    cmp = lf.compare(SAMPLE, {"careful": "samples.home_automation.agents.function_agents:careful_agent"},
                     [EXACT], progress=False)
    assert cmp.summary.loc["careful", f"{EXACT}/mean"] == 1.0


def test_agents_given_as_a_list_need_distinct_names():
    with pytest.raises(ValueError, match="unique"):
        compare([right, right])


def test_mark_trajectory_marks_match_mismatch_extra_and_missing():
    ref = [lf.ToolCall(tool_name="get", tool_input={"id": 1}), lf.ToolCall(tool_name="set", tool_input={"v": 2}),
           lf.ToolCall(tool_name="log")]
    pred = [lf.ToolCall(tool_name="get", tool_input={"id": 1}), lf.ToolCall(tool_name="ping"),
            lf.ToolCall(tool_name="set", tool_input={"v": 3})]
    marked = mark_trajectory(pred, ref)
    assert [(m.status, m.predicted_index, m.reference_index) for m in marked] == [
        ("match", 0, 0), ("extra", 1, None), ("mismatch", 2, 1), ("missing", None, 2)]


def test_case_view_shows_every_agents_response_and_marked_calls():
    cmp = compare({"right": right, "wrong": wrong, "flaky": crashes_on_off})
    view = cmp.case_view("b")
    assert view.runs["right"][0].response == "done"
    assert [m.status for m in view.runs["wrong"][0].calls] == ["mismatch"]
    failed = view.runs["flaky"][0]
    assert failed.failure and "jammed" in failed.error and failed.scores[EXACT] == 0.0


def test_saved_comparison_loads_back_with_the_same_summary(tmp_path):
    cmp = compare({"right": right, "flaky": crashes_on_off}, trials=2)
    paths = lf.report.save(cmp, tmp_path)  # cmp.save writes the data; the report package adds report.html
    assert {p.name for p in paths.values()} == {"runs.jsonl", "metrics_table.csv", "summary.json", "report.html",
                                                "metrics_table.parquet", "summary.parquet"}  # Parquet: pyarrow is installed
    loaded = Comparison.load(tmp_path)
    assert loaded.agents == cmp.agents and loaded.trials == 2
    np.testing.assert_allclose(
        loaded.summary.drop(columns=[c for c in loaded.summary if c.startswith("latency")]).to_numpy(float),
        cmp.summary.drop(columns=[c for c in cmp.summary if c.startswith("latency")]).to_numpy(float),
    )
    assert loaded.case_view("b").runs["flaky"][0].error == cmp.case_view("b").runs["flaky"][0].error


def test_loading_a_directory_without_a_saved_run_names_what_is_missing(tmp_path):
    with pytest.raises(lf.LevelfieldError, match="runs.jsonl"):
        Comparison.load(tmp_path)


def test_judge_pairwise_judges_every_pair_of_agents():
    from levelfield.testing import ScriptedChatModel
    from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

    def prefer_the_longer(messages):
        # The judge sees both answers; say A wins when A's answer is the longer one.
        text = messages[-1].content
        a = text.split("Response A", 1)[-1].split("Response B", 1)[0]
        b = text.split("Response B", 1)[-1]
        return '{"preference": "A", "explanation": "longer"}' if len(a) >= len(b) else '{"preference": "B", "explanation": "longer"}'

    judge = ScriptedChatModel(prefer_the_longer)
    metric = lf.metrics.PairwiseMetric(metric="better", judge=judge, judge_config=lf.JudgeConfig(cache=False))
    cmp = lf.compare("samples/home_automation/dataset.jsonl", {"careful": careful_agent, "hasty": hasty_agent},
                     metrics=["trajectory_exact_match"], progress=False)
    table = cmp.judge_pairwise(metric)
    assert list(zip(table["agent_a"], table["agent_b"])) == [("careful", "hasty")]
    row = table.iloc[0]
    assert row["cases"] == 18
    assert row["a_win_rate"] + row["b_win_rate"] + row["tie_rate"] == pytest.approx(1.0)
    assert row["failure_count"] == 0
