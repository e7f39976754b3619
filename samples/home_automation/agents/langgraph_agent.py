"""A LangGraph agent over the home-automation tools, driven by a scripted chat model.

The graph is the classic tool-calling loop built by hand: a model node, a ``ToolNode`` and a
conditional edge (``tools_condition``). The model is levelfield's ``ScriptedChatModel`` whose
policy is the samples' shared ``decide`` rules, so this agent takes the same steps as
``careful_agent`` (or ``hasty_agent``) and runs offline.

``agent`` is the graph for the careful style; ``make_graph("hasty")`` builds the other one.
Serve it with ``levelfield serve samples.home_automation.agents.langgraph_agent:agent``, or
evaluate it with ``lf.evaluate(dataset, agent, metrics=[...])``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from levelfield.testing import ScriptedChatModel, last_human_text, tool_outputs_by_turn

from ..policy import decide
from ..tools import TOOLS

__all__ = ["make_model", "make_graph", "agent"]


def make_model(style: str = "careful") -> ScriptedChatModel:
    """A scripted chat model that follows the samples' ``decide`` rules in the given style."""

    def policy(messages: list[BaseMessage]) -> str | list[tuple[str, dict[str, Any]]]:
        return decide(last_human_text(messages), tool_outputs_by_turn(messages), style)

    return ScriptedChatModel(policy, model_name=f"home-automation-{style}")


def _tool_error_text(error: Exception) -> str:
    # The text every sample framework hands back to the model when a tool fails (see call_tool).
    return f"Error: {error}"


def make_graph(style: str = "careful", *, checkpointer: Any = None, name: str | None = None) -> Any:
    """The compiled tool-calling graph over ``TOOLS`` for the given policy style."""
    model = make_model(style).bind_tools(TOOLS)

    def call_model(state: MessagesState) -> dict[str, list[AIMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    async def acall_model(state: MessagesState) -> dict[str, list[AIMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", RunnableLambda(call_model, afunc=acall_model, name="agent"))
    builder.add_node("tools", ToolNode(TOOLS, handle_tool_errors=_tool_error_text))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer, name=name or f"langgraph_{style}")


agent = make_graph()
