"""adk-samples' data-science pattern scored as google-adk scores it: a root LlmAgent whose tool
(``call_db_agent``) runs a sub-agent through an ``AgentTool``, the sub-agent calling a tool of its
own (``run_sql``). ADK's own inference path (``EvaluationGenerator``) runs the same agents with the
same offline model, and ADK's own evaluators score its invocations; every ADK-named metric and
efficiency criterion levelfield gives must be theirs. The sub-agent's call is kept apart: attributed
to the sub-agent, counted by levelfield's own metrics, left out of ADK's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.evaluation.eval_case import Invocation  # noqa: E402
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion  # noqa: E402
from google.adk.evaluation.evaluation_generator import EvaluationGenerator  # noqa: E402
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator  # noqa: E402
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY  # noqa: E402
from google.adk.evaluation.simulation.static_user_simulator import StaticUserSimulator  # noqa: E402
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402

import levelfield as lf  # noqa: E402

FAST = {"progress": False, "retries": 0}
QUESTION = "How many orders shipped to Cusco in March?"
ANSWER = "42 orders shipped to Cusco in March."
SQL = "SELECT COUNT(*) FROM orders WHERE city = 'Cusco' AND month = 3"
EFFICIENCY = ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1"]


class ScriptLlm(BaseLlm):
    """An offline model: answer i of a turn is ``steps[i]`` (a text, or calls), each reporting its tokens."""

    model: str = "script"
    steps: list[Any] = []
    tokens: tuple[int, int] = (10, 3)

    async def generate_content_async(self, llm_request: Any, stream: bool = False):
        contents = llm_request.contents
        start = max((i for i, c in enumerate(contents) if c.role == "user" and any(p.text for p in c.parts or [])), default=-1)
        spec = self.steps[min(sum(1 for c in contents[start + 1:] if c.role == "model"), len(self.steps) - 1)]
        parts = ([types.Part(text=spec)] if isinstance(spec, str)
                 else [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in spec])
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=self.tokens[0], candidates_token_count=self.tokens[1], total_token_count=sum(self.tokens))
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage, model_version=self.model)


def run_sql(sql: str) -> str:
    """Run a SQL query against the orders database."""
    return "42"


def data_science_agent() -> LlmAgent:
    """The pattern of adk-samples' data-science agent: a function tool that runs the database agent as an AgentTool."""
    db_agent = LlmAgent(name="database_agent", model=ScriptLlm(steps=[[("run_sql", {"sql": SQL})], "42"], tokens=(7, 2)),
                        tools=[run_sql], instruction="Answer with SQL.")

    async def call_db_agent(question: str, tool_context: ToolContext) -> str:
        """Ask the database agent a question."""
        return await AgentTool(agent=db_agent).run_async(args={"request": question}, tool_context=tool_context)

    return LlmAgent(name="root_agent", model=ScriptLlm(steps=[[("call_db_agent", {"question": QUESTION})], ANSWER]),
                    tools=[call_db_agent], instruction="Route data questions to the database agent.")


def _expected() -> Invocation:
    return Invocation(
        user_content=types.Content(role="user", parts=[types.Part(text=QUESTION)]),
        final_response=types.Content(role="model", parts=[types.Part(text=ANSWER)]),
        intermediate_data={"tool_uses": [types.FunctionCall(name="call_db_agent", args={"question": QUESTION})]},
    )


def _adk_scores() -> dict[str, tuple[float, list[float]]]:
    """google-adk's own run of the agent (its EvaluationGenerator) scored by its own evaluators."""
    expected = [_expected()]
    user = StaticUserSimulator(static_conversation=[_expected()])
    actual = asyncio.run(EvaluationGenerator._generate_inferences_from_root_agent(data_science_agent(), user))
    assert len(actual) == 1
    out: dict[str, tuple[float, list[float]]] = {}
    evaluators = {
        "tool_trajectory_avg_score": TrajectoryEvaluator(eval_metric=EvalMetric(
            metric_name="tool_trajectory_avg_score", threshold=1.0,
            criterion=ToolTrajectoryCriterion(threshold=1.0, match_type="EXACT"))),
        "response_match_score": RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8)),
        **{name: DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(EvalMetric(metric_name=name)) for name in EFFICIENCY},
    }
    for name, evaluator in evaluators.items():
        found = evaluator.evaluate_invocations(actual, expected)
        out[name] = (found.overall_score, [r.score for r in found.per_invocation_results])
    return out


def _levelfield_run() -> lf.EvalResult:
    rows = [{"case_id": "march", "prompt": QUESTION, "reference": ANSWER,
             "reference_trajectory": [{"tool_name": "call_db_agent", "tool_input": {"question": QUESTION}}]}]
    metrics = ["tool_trajectory_avg_score", "response_match_score", *EFFICIENCY, "tool_call_count", "model_call_count",
               "trajectory_exact_match"]
    return lf.evaluate(rows, data_science_agent(), metrics=metrics, **FAST)


def test_every_adk_named_metric_and_efficiency_criterion_is_what_google_adk_gives():
    adk = _adk_scores()
    result = _levelfield_run()
    assert not result.runs[0].failure, result.runs[0].error
    scores = result.metrics_table.iloc[0]
    for name, (overall, _) in adk.items():
        assert scores[f"{name}/score"] == pytest.approx(overall), name
    # The sample's own eval passes: the trajectory ADK records is [call_db_agent].
    assert adk["tool_trajectory_avg_score"][0] == 1.0
    assert adk["tool_call_count_v1"][0] == 1.0 and adk["inference_call_count_v1"][0] == 2.0
    assert adk["token_usage_v1"][0] == 26.0  # the root agent's two model calls, 13 tokens each


def test_the_agent_tools_inner_call_is_kept_apart_and_shown_as_the_sub_agents():
    result = _levelfield_run()
    calls = result.runs[0].output.trajectory
    assert [(c.tool_name, c.agent, c.within) for c in calls] == [
        ("call_db_agent", "root_agent", None), ("run_sql", "database_agent", calls[0].id)]
    assert calls[0].id
    scores = result.metrics_table.iloc[0]
    # levelfield's own metrics count what every agent of the run did; ADK's count what ADK's events hold.
    assert scores["tool_call_count/score"] == 2.0 and scores["tool_call_count_v1/score"] == 1.0
    assert scores["model_call_count/score"] == 4.0 and scores["inference_call_count_v1/score"] == 2.0
    assert scores["trajectory_exact_match/score"] == 0.0 and scores["tool_trajectory_avg_score/score"] == 1.0


def test_the_mark_survives_the_run_record(tmp_path):
    rows = [{"case_id": "march", "prompt": QUESTION,
             "reference_trajectory": [{"tool_name": "call_db_agent", "tool_input": {"question": QUESTION}}]}]
    lf.evaluate(rows, data_science_agent(), metrics=["tool_trajectory_avg_score"], out=str(tmp_path / "o"), **FAST)
    again = lf.EvalResult.load(tmp_path / "o")
    assert [c.within is not None for c in again.runs[0].output.trajectory] == [False, True]
    assert again.runs[0].output.inner_model_calls == 2


def test_adks_judged_criteria_show_their_judge_the_calls_adk_shows():
    from levelfield._core.score.metrics.base import TurnContext
    from levelfield.judge.adk.hallucinations import Hallucinations

    calls = _levelfield_run().runs[0].output.trajectory
    context = Hallucinations.context(TurnContext(prompt=QUESTION, predicted_trajectory=calls))
    assert '"tool": "call_db_agent"' in context and "run_sql" not in context
