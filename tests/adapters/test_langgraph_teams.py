"""LangGraph teams of agents: who made each call, the hand-offs, and the final state, on real
graphs driven by the scripted chat model (a supervisor with hand-off tools, a ``Send`` fan-out)."""

from __future__ import annotations

from typing import Annotated

from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send

import levelfield as lf
from levelfield.testing import ScriptedChatModel, last_human_text, tool_outputs_by_turn

FAST = {"progress": False, "retries": 0}


def _handoff_tool(agent: str):
    @tool(f"transfer_to_{agent}")
    def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the conversation to a worker agent."""
        done = ToolMessage(f"transferred to {agent}", tool_call_id=tool_call_id)
        return Command(goto=agent, graph=Command.PARENT, update={"messages": [done]})

    return transfer


@tool
def refund(invoice: int) -> str:
    """Refund an invoice."""
    return f"Rechnung {invoice} erstattet"


@tool
def open_ticket(topic: str) -> str:
    """Open a support ticket."""
    return f"工单已创建: {topic}"


def _supervisor_policy(messages):
    # First the billing worker; when it has answered (its text is the last message), finish.
    if "erstattet" in str(messages[-1].content):
        return "Erledigt: Rechnung 7 erstattet."
    return [("transfer_to_billing", {})]


def _worker(name: str, tool_call: tuple[str, dict], answer: str):
    def policy(messages):
        if not any(isinstance(m, ToolMessage) and m.name == tool_call[0] for m in messages):
            return [tool_call]
        return answer

    tools = [refund] if name == "billing" else [open_ticket]
    return create_agent(ScriptedChatModel(policy, model_name=name), tools=tools, name=name)


def supervisor_team():
    supervisor = create_agent(
        ScriptedChatModel(_supervisor_policy, model_name="supervisor"),
        tools=[_handoff_tool("billing"), _handoff_tool("support")],
        name="supervisor",
    )
    graph = StateGraph(MessagesState)
    graph.add_node("supervisor", supervisor, destinations=("billing", "support", END))
    graph.add_node("billing", _worker("billing", ("refund", {"invoice": 7}), "Rechnung 7 erstattet"))
    graph.add_node("support", _worker("support", ("open_ticket", {"topic": "退款"}), "ticket open"))
    graph.add_edge(START, "supervisor")
    graph.add_edge("billing", "supervisor")
    graph.add_edge("support", "supervisor")
    return graph.compile(name="desk")


def test_supervisor_calls_are_attributed_to_the_agent_that_made_them():
    run = lf.evaluate([{"case_id": "c", "prompt": "Bitte Rechnung 7 erstatten"}], supervisor_team(), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert [(c.tool_name, c.agent) for c in run.output.trajectory] == [
        ("transfer_to_billing", "supervisor"),
        ("refund", "billing"),
    ]
    assert run.output.response == "Erledigt: Rechnung 7 erstattet."


def test_supervisor_handoffs_are_recorded_in_order_and_scored():
    rows = [
        {"case_id": "right", "prompt": "Bitte Rechnung 7 erstatten", "reference_handoffs": ["billing", "supervisor"],
         "reference_trajectory": [{"tool_name": "refund", "tool_input": {"invoice": 7}, "agent": "billing"}]},
        {"case_id": "wrong", "prompt": "Bitte Rechnung 7 erstatten", "reference_handoffs": ["support"],
         "reference_trajectory": [{"tool_name": "refund", "tool_input": {"invoice": 7}, "agent": "support"}]},
    ]
    metrics = ["handoff_match", "tool_attribution", lf.metrics.TrajectoryRecall(agent="billing")]
    result = lf.evaluate(rows, supervisor_team(), metrics=metrics, **FAST)
    run = result.runs[0]
    assert [(h.from_agent, h.to_agent) for h in run.output.handoffs] == [("supervisor", "billing"), ("billing", "supervisor")]
    table = result.metrics_table.set_index("case_id")
    assert table.loc["right", "handoff_match/score"] == 1.0
    assert table.loc["right", "tool_attribution/score"] == 1.0
    assert table.loc["right", "trajectory_recall_billing/score"] == 1.0
    assert table.loc["wrong", "handoff_match/score"] == 0.0
    assert "agent 'support' never appears in this run" in table.loc["wrong", "handoff_match/explanation"]
    assert "refund expected from 'support' was made by 'billing'" in table.loc["wrong", "tool_attribution/explanation"]
    assert run.output.model_calls == 4  # supervisor twice, billing twice


class DeskState(MessagesState):
    routed: list[str]


def fan_out_team():
    def router(state):
        return {"routed": ["billing", "support"]}

    def fan_out(state):
        return [Send(name, {"messages": state["messages"]}) for name in state["routed"]]

    graph = StateGraph(DeskState)
    graph.add_node("router", router)
    graph.add_node("billing", _worker("billing", ("refund", {"invoice": 7}), "erstattet"))
    graph.add_node("support", _worker("support", ("open_ticket", {"topic": "退款"}), "ticket open"))
    graph.add_edge(START, "router")
    graph.add_conditional_edges("router", fan_out, ["billing", "support"])
    graph.add_edge("billing", END)
    graph.add_edge("support", END)
    return graph.compile(name="fan_out")


def test_send_fan_out_hands_off_to_each_worker_in_one_deterministic_order():
    rows = [{"case_id": f"c{i}", "prompt": "refund and ticket", "reference_handoffs": ["support", "billing"]} for i in range(6)]
    result = lf.evaluate(rows, fan_out_team(), metrics=["handoff_any_order_match", "handoff_match"], concurrency=6, **FAST)
    orders = {tuple((h.from_agent, h.to_agent) for h in r.output.handoffs) for r in result.runs}
    # Parallel workers finish in any order; hand-offs are ordered by step, then node name.
    assert orders == {(("router", "billing"), ("billing", "support"))}
    assert result.summary_metrics["handoff_any_order_match/mean"] == 1.0
    assert result.summary_metrics["handoff_match/mean"] == 0.0
    calls = {(c.tool_name, c.agent) for c in result.runs[0].output.trajectory}
    assert calls == {("refund", "billing"), ("open_ticket", "support")}


def test_the_final_graph_state_reaches_state_check_without_its_messages():
    seen = {}

    def routed_both(state, case):
        seen.update(state)
        return sorted(state.get("routed", [])) == ["billing", "support"]

    result = lf.evaluate([{"case_id": "c", "prompt": "x"}], fan_out_team(), metrics=[lf.metrics.StateCheck(routed_both)], **FAST)
    assert result.metrics_table.iloc[0]["state_check/score"] == 1.0
    assert seen == {"routed": ["billing", "support"]}


def test_a_single_agent_graph_has_no_handoffs_and_names_itself_on_its_calls():
    def policy(messages):
        return [("refund", {"invoice": 1})] if not tool_outputs_by_turn(messages) else last_human_text(messages)

    graph = create_agent(ScriptedChatModel(policy), tools=[refund], name="solo")
    run = lf.evaluate([{"case_id": "c", "prompt": "x"}], graph, metrics=[], **FAST).runs[0]
    assert run.output.handoffs == []
    assert [c.agent for c in run.output.trajectory] == ["solo"]
    assert run.output.model_calls == 2
