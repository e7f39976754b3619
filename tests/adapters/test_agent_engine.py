"""AgentEngineAgent on the real Agent Engine local templates (AdkApp, LanggraphAgent, LangchainAgent).

Every template runs for real, offline: ADK's runner with a ``BaseLlm`` subclass as the model,
LangGraph and LangChain with the scripted chat model; only Gemini is replaced.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.api_core import exceptions as google_exceptions
from google.genai import types
from vertexai import agent_engines

import levelfield as lf
from levelfield._core.data.dataset import EvalCase, EvalDataset, Turn
from levelfield._core.data.protocol import AgentRequest
from levelfield.adapters import AgentEngineAgent
from samples.home_automation.agents import agent_engine_agent as sample
from samples.home_automation.agents.function_agents import careful_agent

DATASET = Path(__file__).resolve().parents[2] / "samples" / "home_automation" / "dataset.jsonl"
PREFERRED = "Set the temperature to my preferred level in the Living Room. I am user_y."


def run(agent: AgentEngineAgent, prompt: str, session_id: str = "s", turn: int = 0, history=()):
    return asyncio.run(agent.arun(AgentRequest(prompt=prompt, session_id=session_id, turn=turn, history=list(history))))


class ScriptedLlm(BaseLlm):
    """An ADK model answering each call with the next item of ``script`` (an LlmResponse, an exception, or a delay)."""

    model: str = "scripted"
    script: list = []
    calls: int = 0

    async def generate_content_async(self, llm_request, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        item = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, float):
            await asyncio.sleep(item)
            item = LlmResponse(content=types.Content(role="model", parts=[types.Part(text="late")]))
        yield item


def adk_app(script: list) -> agent_engines.AdkApp:
    sample.init_vertex()
    root = LlmAgent(name="scripted_agent", model=ScriptedLlm(script=script), tools=sample.safe_tools())
    return agent_engines.AdkApp(agent=root)


def call(name: str, **args) -> LlmResponse:
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args=args))])
    )


def say(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


@pytest.mark.parametrize("make", [sample.make_adk_app, sample.make_langgraph_agent, sample.make_langchain_agent])
def test_each_template_matches_every_reference_trajectory_of_the_sample_dataset(make):
    result = lf.evaluate(str(DATASET), make(), metrics=["trajectory_exact_match"], progress=False)

    assert result.summary_metrics["failure/count"] == 0
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


@pytest.mark.parametrize("make", [sample.make_adk_app, sample.make_langgraph_agent, sample.make_langchain_agent])
def test_each_template_gives_the_response_the_function_agent_gives(make):
    output = run(AgentEngineAgent(make()), PREFERRED)

    assert output.response == careful_agent(PREFERRED)["response"]


def test_as_agent_wraps_each_local_template_in_agent_engine_agent():
    for template in (sample.make_adk_app(), sample.make_langgraph_agent(), sample.make_langchain_agent()):
        assert isinstance(lf.as_agent(template), AgentEngineAgent)


def test_adk_tool_calls_name_the_agent_that_made_them_and_carry_the_tool_output():
    output = run(AgentEngineAgent(sample.make_adk_app()), PREFERRED)

    assert [(c.tool_name, c.agent) for c in output.trajectory] == [
        ("get_user_preferences", "home_automation_careful"),
        ("set_temperature", "home_automation_careful"),
    ]
    assert output.trajectory[1].tool_output == "Temperature in Living Room set to 23 degrees."


def test_adk_usage_is_the_sum_over_the_model_calls_of_the_stream():
    output = run(AgentEngineAgent(sample.make_adk_app()), PREFERRED)

    per_call = [e["usage_metadata"] for e in output.raw if "usage_metadata" in e]
    assert len(per_call) == 3
    assert output.usage.input_tokens == sum(u["prompt_token_count"] for u in per_call)
    assert output.usage.total_tokens == sum(u["total_token_count"] for u in per_call)


def test_adk_texts_before_the_last_become_intermediate_responses():
    app = adk_app([say("Let me look."), call("get_temperature", location="Kitchen"), say("It is 21 degrees.")])
    # The first text ends the model's turn in ADK; a second prompt continues the session.
    agent = AgentEngineAgent(app)
    first = run(agent, "Kitchen temperature?", turn=0)
    second = run(agent, "And now?", turn=1)

    assert first.response == "Let me look."
    assert second.response == "It is 21 degrees."
    assert [c.tool_name for c in second.trajectory] == ["get_temperature"]


def test_adk_session_is_created_once_per_case_and_reused_for_its_turns():
    app = sample.make_adk_app()
    dataset = EvalDataset(
        [
            EvalCase(case_id=case_id, prompt=prompts[0], turns=[Turn(prompt=p) for p in prompts])
            for case_id, prompts in (
                ("a", ["What is the status of device_3?", "Turn on device_1."]),
                ("b", ["Turn off device_2.", "What is the status of device_2?"]),
            )
        ]
    )
    lf.evaluate(dataset, app, metrics=[], progress=False, concurrency=2)

    sessions = asyncio.run(app.async_list_sessions(user_id="levelfield")).sessions
    assert len(sessions) == 2
    for session in sessions:
        full = asyncio.run(app.async_get_session(user_id="levelfield", session_id=session.id))
        user_texts = [e.content.parts[0].text for e in full.events if e.author == "user" and e.content.parts[0].text]
        assert len(user_texts) == 2


def test_adk_error_event_fails_the_run_with_the_event_reason():
    app = adk_app([LlmResponse(error_code="SAFETY", error_message="response blocked")])
    result = lf.evaluate([{"case_id": "c", "prompt": "hi"}], app, metrics=[], progress=False)

    run_ = result.runs[0]
    assert run_.failure
    assert run_.error_type == "agent_error"
    assert "SAFETY" in run_.error and "response blocked" in run_.error


def test_adk_model_exception_fails_the_run_naming_the_exception():
    app = adk_app([ValueError("model exploded")])
    result = lf.evaluate([{"case_id": "c", "prompt": "hi"}], app, metrics=[], progress=False)

    run_ = result.runs[0]
    assert run_.failure and run_.error_type == "ValueError"
    assert "model exploded" in run_.error


def test_adk_google_503_is_retried():
    app = adk_app([google_exceptions.ServiceUnavailable("overloaded"), say("fine")])
    result = lf.evaluate([{"case_id": "c", "prompt": "hi"}], app, metrics=[], progress=False, backoff=0.01)

    run_ = result.runs[0]
    assert not run_.failure
    assert run_.attempts == 2
    assert run_.output.response == "fine"


def test_adk_timed_out_run_keeps_the_events_streamed_before_the_timeout():
    app = adk_app([call("get_temperature", location="Kitchen"), 30.0])
    # The call is streamed before the timeout: 5 s for the ADK runner's start on a loaded machine.
    result = lf.evaluate([{"case_id": "c", "prompt": "hi"}], app, metrics=[], progress=False, timeout=5, retries=0)

    run_ = result.runs[0]
    assert run_.failure and run_.error_type == "timeout"
    assert [c.tool_name for c in run_.partial_output.trajectory] == ["get_temperature"]


# What vertexai.preview.evaluation.utils.parse_intermediate_steps returns for the real output of
# this query (it reads step[0]["kwargs"]["tool"] and ["tool_input"] of each step). Pinned from a
# run of Vertex's parser in a subprocess (importing it here would silence warnings process-wide);
# bench/bench_agent_engine.py re-runs that comparison.
VERTEX_PARSED_KITCHEN_OFF = [
    {"tool_name": "list_devices", "tool_input": {"room": "Kitchen"}},
    {"tool_name": "set_device_info", "tool_input": {"device_id": "device_3", "updates": {"status": "OFF"}}},
    {"tool_name": "set_device_info", "tool_input": {"device_id": "device_4", "updates": {"status": "OFF"}}},
]


def test_langchain_agent_trajectory_is_what_vertex_own_parser_reads_from_intermediate_steps():
    output = run(AgentEngineAgent(sample.make_langchain_agent()), "Turn off all the devices in the Kitchen.")

    assert len(output.raw["intermediate_steps"]) == 3
    assert [{"tool_name": c.tool_name, "tool_input": c.tool_input} for c in output.trajectory] == VERTEX_PARSED_KITCHEN_OFF


def test_langchain_agent_response_is_its_output_field():
    output = run(AgentEngineAgent(sample.make_langchain_agent()), "What is the status of device_3?")

    assert output.response == output.raw["output"] == "device_3 (Kitchen light) is OFF."


def test_langchain_agent_without_intermediate_steps_warns_that_its_trajectory_is_unknown():
    agent = AgentEngineAgent(sample.make_langchain_agent(intermediate_steps=False))

    with pytest.warns(UserWarning, match="return_intermediate_steps"):
        output = run(agent, "What is the status of device_3?")
    assert output.trajectory == []


def test_langgraph_later_turn_gets_prior_turns_and_reports_only_its_own_calls():
    agent = AgentEngineAgent(sample.make_langgraph_agent())
    history = [
        lf.Message(role="user", content="What is the status of device_3?"),
        lf.Message(role="assistant", content="device_3 (Kitchen light) is OFF."),
    ]
    output = run(agent, "Turn on device_1.", turn=1, history=history)

    humans = [m["kwargs"]["content"] for m in output.raw if m["id"][-1] == "HumanMessage"]
    assert humans == ["What is the status of device_3?", "Turn on device_1."]
    assert [c.tool_input for c in output.trajectory] == [{"device_id": "device_1", "updates": {"status": "ON"}}]


def test_langgraph_stream_query_gives_the_same_trajectory_as_query():
    template = sample.make_langgraph_agent()
    by_query = run(AgentEngineAgent(template), "Turn off all the devices in the Kitchen.")
    by_stream = run(AgentEngineAgent(template, operation="stream_query"), "Turn off all the devices in the Kitchen.")

    assert [c.to_vertex() for c in by_stream.trajectory] == [c.to_vertex() for c in by_query.trajectory]
    assert by_stream.response == by_query.response


def test_langchain_stream_query_gives_the_same_trajectory_as_query():
    template = sample.make_langchain_agent()
    by_query = run(AgentEngineAgent(template), "Turn off all the devices in the Kitchen.")
    by_stream = run(AgentEngineAgent(template, operation="stream_query"), "Turn off all the devices in the Kitchen.")

    assert [(c.tool_name, c.tool_input) for c in by_stream.trajectory] == [
        (c.tool_name, c.tool_input) for c in by_query.trajectory
    ]
    assert by_stream.response == by_query.response


def test_unknown_operation_is_refused_naming_the_ones_available():
    with pytest.raises(TypeError, match="stream_query"):
        AgentEngineAgent(sample.make_adk_app(), operation="query")
