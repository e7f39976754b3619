"""A case's initial session state (a ``state`` column, ADK ``session_input.state``) reaches the
agent: function agents with a ``state`` parameter, LangGraph graphs whose state has those keys,
and ADK sessions on the Agent Engine local template."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

import levelfield as lf


def _evalset(path: Path, state: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [{
        "eval_id": "greet",
        "conversation": [{"user_content": {"parts": [{"text": "Hello"}], "role": "user"},
                          "final_response": {"parts": [{"text": "Hello Ana"}], "role": "model"}}],
        "session_input": {"app_name": "app", "user_id": "u", "state": state},
    }]}), encoding="utf-8")
    return path


def test_state_column_reaches_a_function_agent_that_takes_state(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "Hello", "state": {"user_name": "Ana"}}) + "\n", encoding="utf-8")

    def agent(prompt: str, state: dict) -> str:
        return f"{prompt} {state['user_name']}"

    result = lf.evaluate(path, agent, ["exact_match"], progress=False)
    assert result.runs[0].output.response == "Hello Ana"


def test_state_given_as_json_text_in_a_csv_cell_is_parsed(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('prompt,state\nHello,"{""user_name"": ""Ana""}"\n', encoding="utf-8")
    assert lf.load_dataset(path)[0].state == {"user_name": "Ana"}


def test_state_that_is_not_an_object_names_the_row_and_field():
    with pytest.raises(lf.DatasetError, match=r"dataset row 1, field 'state': expected an object"):
        lf.load_dataset([{"prompt": "Hello", "state": [1, 2]}])


def test_adk_session_input_state_reaches_a_function_agent(tmp_path):
    seen = []

    def agent(prompt: str, state: dict) -> str:
        seen.append(state)
        return "Hello Ana"

    lf.evaluate(_evalset(tmp_path / "s.evalset.json", {"user_name": "Ana"}), agent, ["exact_match"], progress=False)
    assert seen == [{"user_name": "Ana"}]


def test_every_turn_gets_its_own_copy_of_the_initial_state():
    def agent(prompt: str, state: dict) -> str:
        state["visits"] = state.get("visits", 0) + 1  # an agent that mutates what it was given
        return str(state["visits"])

    rows = [{"case_id": "c", "turns": [{"prompt": "a"}, {"prompt": "b"}], "state": {"visits": 0}}]
    result = lf.evaluate(rows, agent, ["exact_match"], progress=False)
    assert [t.response for t in result.runs[0].turns] == ["1", "1"]


def test_langgraph_graph_gets_the_state_keys_its_schema_declares():
    pytest.importorskip("langgraph")
    from langchain_core.messages import SystemMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from levelfield.testing import ScriptedChatModel

    class GreetState(MessagesState):
        user_name: str

    model = ScriptedChatModel(lambda messages: f"Hello {messages[0].content}")

    def respond(state: GreetState) -> dict:
        return {"messages": [model.invoke([SystemMessage(state.get("user_name", "stranger")), *state["messages"]])]}

    builder = StateGraph(GreetState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    graph = builder.compile()
    rows = [{"prompt": "Hi", "state": {"user_name": "Ana", "not_in_schema": 1}}]
    result = lf.evaluate(rows, graph, ["exact_match"], progress=False)
    assert (result.runs[0].failure, result.runs[0].output.response) == (False, "Hello Ana")


def test_agent_engine_adk_session_is_created_with_the_state(tmp_path):
    pytest.importorskip("vertexai")
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from vertexai import agent_engines

    from samples.home_automation.agents import agent_engine_agent as sample

    class EchoInstruction(BaseLlm):
        """Answers with its system instruction, in which ADK has filled in the session state."""

        model: str = "echo"

        async def generate_content_async(self, llm_request, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
            text = str(llm_request.config.system_instruction or "")
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))

    sample.init_vertex()
    app = agent_engines.AdkApp(agent=LlmAgent(name="greeter", model=EchoInstruction(), instruction="Hello {user_name}"))
    result = lf.evaluate(_evalset(tmp_path / "s.evalset.json", {"user_name": "Ana"}), app, ["response_match_score"],
                         progress=False)
    assert result.runs[0].error is None
    assert "Hello Ana" in result.runs[0].output.response
