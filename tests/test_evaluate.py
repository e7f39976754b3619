"""End to end: the sample function agents, Vertex's EvalTask shape, saved predictions and exports."""

import json

import pandas as pd
import pytest

import levelfield as lf
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

SAMPLE = "samples/home_automation/dataset.jsonl"
TRAJECTORY = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
              "trajectory_precision", "trajectory_recall"]


def essential(instance):
    return {"essential": float(bool(instance["predicted_trajectory"]) or not instance["reference_trajectory"])}


def test_issue_example_runs_end_to_end():
    ds = lf.load_dataset(SAMPLE)
    result = lf.evaluate(ds, careful_agent, metrics=[
        *TRAJECTORY, lf.metrics.TrajectorySingleToolUse(tool_name="set_temperature"),
        "rouge_l_sum", "bleu", "exact_match", lf.metrics.CustomMetric(name="essential", metric_function=essential),
    ], progress=False)
    table, summary = result.metrics_table, result.summary_metrics
    for col in ["prompt", "reference", "reference_trajectory", "response", "predicted_trajectory",
                "latency_in_seconds", "failure", "trajectory_exact_match/score", "essential/score"]:
        assert col in table.columns
    assert summary["row_count"] == len(ds)
    for name in TRAJECTORY:
        assert summary[f"{name}/mean"] == 1.0
    assert 0 < summary["trajectory_single_tool_use/mean"] < 1
    assert summary["failure/mean"] == 0.0 and summary["latency_in_seconds/mean"] > 0


def test_the_two_sample_agents_differ():
    careful = lf.evaluate(SAMPLE, careful_agent, metrics=TRAJECTORY, progress=False).summary_metrics
    hasty = lf.evaluate(SAMPLE, hasty_agent, metrics=TRAJECTORY, progress=False).summary_metrics
    assert hasty["trajectory_exact_match/mean"] < careful["trajectory_exact_match/mean"]
    assert hasty["trajectory_exact_match/mean"] < hasty["trajectory_any_order_match/mean"]
    assert hasty["trajectory_recall/mean"] < 1.0


def test_sample_dataset_holds_the_vertex_doc_examples():
    cases = {c.prompt: c.reference_trajectory for c in lf.load_dataset(SAMPLE)}
    trajectories = [[c.to_vertex() for c in t] for t in cases.values()]
    assert [{"tool_name": "set_device_info", "tool_input": {"device_id": "device_2", "updates": {"status": "OFF"}}}] in trajectories
    assert [{"tool_name": "get_user_preferences", "tool_input": {"user_id": "user_y"}},
            {"tool_name": "set_temperature", "tool_input": {"location": "Living Room", "temperature": 23}}] in trajectories


def test_eval_task_matches_evaluate():
    df = pd.read_json(SAMPLE, lines=True)
    task = lf.EvalTask(dataset=df, metrics=TRAJECTORY)
    via_task = task.evaluate(runnable=hasty_agent, progress=False)
    direct = lf.evaluate(df, hasty_agent, metrics=TRAJECTORY, progress=False)
    for name in TRAJECTORY:
        assert via_task.summary_metrics[f"{name}/mean"] == direct.summary_metrics[f"{name}/mean"]


def test_saved_predictions_are_scored_without_an_agent():
    df = pd.DataFrame({
        "prompt": ["a", "b"],
        "reference_trajectory": [[{"tool_name": "x", "tool_input": {}}], [{"tool_name": "y", "tool_input": {}}]],
        "predicted_trajectory": [[{"tool_name": "x", "tool_input": {}}], [{"tool_name": "z", "tool_input": {}}]],
        "response": ["r", "s"], "reference": ["r", "t"],
    })
    result = lf.evaluate(df, metrics=["trajectory_exact_match", "exact_match"])
    assert list(result.metrics_table["trajectory_exact_match/score"]) == [1.0, 0.0]
    assert list(result.metrics_table["response"]) == ["r", "s"]
    assert result.summary_metrics["exact_match/mean"] == 0.5


def test_saved_failures_stay_failures():
    df = pd.DataFrame({"prompt": ["a", "b"], "response": ["r", None], "reference": ["r", "r"],
                       "failure": [0, 1], "latency_in_seconds": [0.5, 2.0]})
    result = lf.evaluate(df, metrics=["exact_match"])
    assert result.summary_metrics["failure/count"] == 1
    assert result.summary_metrics["exact_match/nan_count"] == 1
    assert result.summary_metrics["latency_in_seconds/mean"] == 1.25


def test_scoring_nothing_is_an_error():
    with pytest.raises(lf.DatasetError, match="no agent was given and no row has a 'response'"):
        lf.evaluate([{"prompt": "a"}])


def test_exports_round_trip(tmp_path):
    result = lf.evaluate(SAMPLE, hasty_agent, metrics=TRAJECTORY, progress=False)
    jsonl = [json.loads(line) for line in result.to_jsonl(tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(jsonl) == len(result.runs)
    assert jsonl[0]["output"]["trajectory"][0]["tool_name"] == "set_device_info"
    assert "trajectory_exact_match/score" in jsonl[0]["scores"]
    # The CSV is itself a dataset with saved predictions: re-scoring gives the same numbers.
    rescored = lf.evaluate(result.to_csv(tmp_path / "table.csv"), metrics=TRAJECTORY)
    for name in TRAJECTORY:
        assert rescored.summary_metrics[f"{name}/mean"] == pytest.approx(result.summary_metrics[f"{name}/mean"])


def test_async_function_agent_and_agent_output_return():
    async def agent(prompt):
        return lf.AgentOutput(response="ok", trajectory=[lf.ToolCall(tool_name="a")],
                              usage=lf.Usage(input_tokens=3, output_tokens=2, total_tokens=5))

    result = lf.evaluate([{"prompt": "p", "reference_trajectory": [{"tool_name": "a"}]}], agent,
                         metrics=["trajectory_exact_match"], progress=False)
    assert result.metrics_table["trajectory_exact_match/score"][0] == 1.0
    assert result.summary_metrics["total_tokens/sum"] == 5


def test_string_return_is_a_response_with_empty_trajectory():
    result = lf.evaluate([{"prompt": "p", "reference": "hi", "reference_trajectory": []}], lambda p: "hi",
                         metrics=["exact_match", "trajectory_exact_match"], progress=False)
    assert result.metrics_table[["exact_match/score", "trajectory_exact_match/score"]].iloc[0].tolist() == [1.0, 1.0]


def test_function_gets_history_when_it_asks_for_it():
    got = []

    def agent(prompt, history):
        got.append([m.content for m in history])
        return "ok"

    lf.evaluate([{"request": {"query": "second", "history": [{"role": "user", "content": "first"}]}}], agent,
                metrics=[], progress=False)
    assert got == [["first"]]


def test_as_agent_keeps_runnables_and_wraps_callables():
    class Mine:
        name = "mine"

        async def arun(self, request):
            return lf.AgentOutput(response="x")

    mine = Mine()
    assert lf.as_agent(mine) is mine
    assert lf.as_agent(careful_agent).name == "careful_agent"
    with pytest.raises(TypeError, match="cannot make an agent of int"):
        lf.as_agent(3)
    with pytest.raises(TypeError, match="http\\(s\\):// A2A URL"):
        lf.as_agent("not a url")

