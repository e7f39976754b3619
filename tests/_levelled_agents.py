"""Three agents from three frameworks, each with its own tool implementations that return a
timestamp and fail at random when live: a LangGraph agent (langchain's create_agent), an ADK agent
run by ADK's own runner with a scripted local model, and a function agent. Each answers with what
its tool said, so a run's response is the tool output it saw."""

from __future__ import annotations

import random
import time
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from langchain.agents import create_agent
from langchain_core.tools import tool

from levelfield.testing import ScriptedChatModel, last_human_text, tool_outputs_by_turn

_live = random.Random()  # unseeded on purpose: live tools differ from run to run


class LiveToolError(RuntimeError):
    """What a live tool raises at random."""


def _stamp(city: str, who: str) -> str:
    if _live.random() < 0.25:
        raise LiveToolError(f"clock service for {city} unavailable")
    return f"{who}:{city}:{time.time_ns()}"


def dataset(n: int = 20) -> list[dict[str, Any]]:
    return [{"case_id": f"c{i}", "prompt": f"city{i}", "reference": "",
             "reference_trajectory": [{"tool_name": "get_time", "tool_input": {"city": f"city{i}"}}]} for i in range(n)]


# -- LangGraph ------------------------------------------------------------------------------


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return _stamp(city, "lc")


def _lc_policy(messages: list[Any]) -> Any:
    outputs = tool_outputs_by_turn(messages)
    if not outputs or not outputs[-1]:
        return [("get_time", {"city": last_human_text(messages)})]
    return str(outputs[-1][-1])


def langgraph_agent() -> Any:
    return create_agent(ScriptedChatModel(_lc_policy), tools=[get_time], name="lg")


# -- ADK ------------------------------------------------------------------------------------


def adk_get_time(city: str) -> str:
    """The time in a city."""
    return _stamp(city, "adk")


adk_get_time.__name__ = "get_time"


class EchoLlm(BaseLlm):
    """Calls get_time for the user's city, then answers with what the tool returned."""

    model: str = "echo"

    async def generate_content_async(self, llm_request: Any, stream: bool = False):
        last = llm_request.contents[-1]
        response = next((p.function_response for p in last.parts or [] if p.function_response), None)
        if response is None:
            city = next(p.text for c in reversed(llm_request.contents) if c.role == "user" for p in c.parts if p.text)
            parts = [types.Part(function_call=types.FunctionCall(name="get_time", args={"city": city}))]
        else:
            body = response.response or {}
            parts = [types.Part(text=str(body.get("result", body)))]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def adk_agent() -> LlmAgent:
    return LlmAgent(name="adk", model=EchoLlm(), tools=[adk_get_time], instruction="tell the time")


# -- function agent -------------------------------------------------------------------------


def fn_get_time(city: str) -> str:
    return _stamp(city, "fn")


def function_agent(prompt: str, tools: Any = {"get_time": fn_get_time}) -> dict[str, Any]:  # noqa: B006 (levelfield passes tools=; the default is the real one)
    output = tools["get_time"](city=prompt)
    return {"response": output, "predicted_trajectory": [{"tool_name": "get_time", "tool_input": {"city": prompt},
                                                          "tool_output": output}]}
