"""ADK teams of agents through the Agent Engine AdkApp template, offline: transfers, AgentTool
inner calls (which ADK's event stream drops), parallel sub-agents, session state and hand-off scores."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from vertexai import agent_engines

import levelfield as lf
from levelfield._core.data.protocol import AgentRequest
from levelfield.adapters import AgentEngineAgent
from samples.home_automation.agents import agent_engine_agent as sample

FAST = {"progress": False, "retries": 0}
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class StepLlm(BaseLlm):
    """An ADK model playing a script: step i of a turn is its i-th answer since the user's prompt."""

    model: str = "scripted"
    steps: list[Any] = []

    async def generate_content_async(self, llm_request, stream: bool = False):
        contents = llm_request.contents
        start = max(
            (i for i, c in enumerate(contents)
             if c.role == "user" and any(p.text and not p.text.startswith("For context:") for p in c.parts or [])),
            default=-1,
        )
        spec = self.steps[min(sum(1 for c in contents[start + 1:] if c.role == "model"), len(self.steps) - 1)]
        parts = ([types.Part(text=spec)] if isinstance(spec, str)
                 else [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in spec])
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=3, candidates_token_count=2, total_token_count=5)
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage, model_version=self.model)


def refund(invoice: int, tool_context: ToolContext) -> str:
    """Refund an invoice."""
    tool_context.state["refunded"] = invoice
    tool_context.state["temp:scratch"] = "gone after the turn"
    return f"Rechnung {invoice} erstattet"


def lookup(query: str) -> str:
    """Look something up."""
    return f"gefunden: {query}"


def desk_app() -> agent_engines.AdkApp:
    """desk asks the researcher (an AgentTool), then transfers to billing, which refunds."""
    sample.init_vertex()
    billing = LlmAgent(name="billing", description="Refunds invoices.",
                       model=StepLlm(steps=[[("refund", {"invoice": 7})], "Rechnung 7 erstattet."]), tools=[refund])
    researcher = LlmAgent(name="researcher", description="Looks things up.",
                          model=StepLlm(steps=[[("lookup", {"query": "請求書 7"})], "gefunden"]), tools=[lookup])
    desk = LlmAgent(
        name="desk",
        model=StepLlm(steps=[[("researcher", {"request": "請求書 7"})], [("transfer_to_agent", {"agent_name": "billing"})], "-"]),
        sub_agents=[billing],
        tools=[AgentTool(researcher)],
    )
    return agent_engines.AdkApp(agent=desk)


def run(app, prompt: str = "Geld zurück für Rechnung 7", **kwargs) -> lf.AgentOutput:
    request = AgentRequest(prompt=prompt, case_id="c", session_id="s", **kwargs)
    return asyncio.run(AgentEngineAgent(app).arun(request))


def test_transfer_and_agent_tool_inner_calls_are_attributed_to_the_agent_that_made_them():
    output = run(desk_app())
    assert [(c.tool_name, c.agent) for c in output.trajectory] == [
        ("researcher", "desk"),
        ("lookup", "researcher"),  # made inside the AgentTool: not in ADK's event stream
        ("transfer_to_agent", "desk"),
        ("refund", "billing"),
    ]
    assert output.trajectory[1].tool_input == {"query": "請求書 7"}
    assert output.trajectory[1].tool_output == "gefunden: 請求書 7"


def test_handoffs_follow_the_agent_tool_and_the_transfer_in_order():
    output = run(desk_app())
    assert [(h.from_agent, h.to_agent) for h in output.handoffs] == [
        ("desk", "researcher"), ("researcher", "desk"), ("desk", "billing"),
    ]
    assert output.model_calls == 6  # desk 2, researcher 2 (inside the AgentTool), billing 2


def test_the_final_session_state_holds_the_initial_state_and_every_change_but_temp_keys():
    output = run(desk_app(), state={"kunde": "Müller"})
    assert output.state == {"kunde": "Müller", "refunded": 7}


def test_parallel_sub_agents_each_get_one_handoff_however_their_events_interleave():
    sample.init_vertex()
    a = LlmAgent(name="stock", model=StepLlm(steps=[[("lookup", {"query": "在庫"})], "ok"]), tools=[lookup])
    b = LlmAgent(name="price", model=StepLlm(steps=[[("lookup", {"query": "Preis"})], "ok"]), tools=[lookup])
    summary = LlmAgent(name="summary", model=StepLlm(steps=["fertig"]))
    app = agent_engines.AdkApp(agent=SequentialAgent(name="pipeline", sub_agents=[ParallelAgent(name="both", sub_agents=[a, b]), summary]))
    output = run(app)
    assert {(c.tool_name, c.agent) for c in output.trajectory} == {("lookup", "stock"), ("lookup", "price")}
    # The first parallel agent to act has control from the start; the other gets it once, then summary.
    first = output.trajectory[0].agent
    second = ({"stock", "price"} - {first}).pop()
    assert [(h.from_agent, h.to_agent) for h in output.handoffs] == [(first, second), (second, "summary")]


def test_a_compare_scores_handoffs_attribution_and_the_final_state():
    rows = [{
        "case_id": "refund", "prompt": "Geld zurück für Rechnung 7",
        "reference_handoffs": ["researcher", "billing"],
        "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"query": "請求書 7"}, "agent": "researcher"},
                                 {"tool_name": "refund", "tool_input": {"invoice": 7}, "agent": "billing"}],
    }]
    metrics = ["handoff_in_order_match", "handoff_match", "tool_attribution", lf.metrics.TrajectoryRecall(agent="billing"),
               "model_call_count", "token_count", lf.metrics.StateCheck(lambda s, c: s.get("refunded") == 7, name="refunded")]
    row = lf.evaluate(rows, desk_app(), metrics=metrics, **FAST).metrics_table.iloc[0]
    assert row["handoff_in_order_match/score"] == 1.0
    assert row["handoff_match/score"] == 0.0  # the hand-back from the researcher is not in the reference
    assert row["tool_attribution/score"] == 1.0
    assert row["trajectory_recall_billing/score"] == 1.0
    assert row["model_call_count/score"] == 6.0
    assert row["token_count/score"] == 20.0  # the stream reports the four outer model calls' usage
    assert row["refunded/score"] == 1.0
