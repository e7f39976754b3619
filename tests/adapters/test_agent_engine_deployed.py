"""AgentEngineAgent on deployed agents and resource names.

A deployed agent cannot be reached offline, so these tests use real ``AgentEngine`` objects
(the class ``agent_engines.get`` returns, with operations registered by the SDK) whose execution
clients are served in process by the real local templates (see ``fixtures_agent_engine``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from google.api_core import exceptions as google_exceptions

import levelfield as lf
from fixtures_agent_engine.standins import RESOURCE, deployed
from levelfield._core.data.protocol import AgentRequest
from levelfield._core.errors import MissingExtraError
from levelfield.adapters import AgentEngineAgent
from samples.home_automation.agents import agent_engine_agent as sample

DATASET = Path(__file__).resolve().parents[2] / "samples" / "home_automation" / "dataset.jsonl"
PREFERRED = "Set the temperature to my preferred level in the Living Room. I am user_y."


def run(agent: AgentEngineAgent, prompt: str, session_id: str = "s", turn: int = 0):
    return asyncio.run(agent.arun(AgentRequest(prompt=prompt, session_id=session_id, turn=turn)))


def one_case(agent, **kwargs):
    result = lf.evaluate([{"case_id": "c", "prompt": PREFERRED}], agent, metrics=[], progress=False, **kwargs)
    return result.runs[0]


@pytest.mark.parametrize("make", [sample.make_adk_app, sample.make_langgraph_agent, sample.make_langchain_agent])
def test_deployed_template_matches_every_reference_trajectory_when_passed_to_evaluate(make):
    engine, _ = deployed(make())

    result = lf.evaluate(str(DATASET), engine, metrics=["trajectory_exact_match"], progress=False)

    assert result.summary_metrics["failure/count"] == 0
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_deployed_adk_app_is_called_through_async_stream_query_in_its_own_session():
    engine, service = deployed(sample.make_adk_app())

    output = run(AgentEngineAgent(engine), PREFERRED)

    methods = [method for method, _ in service.requests]
    assert methods == ["async_create_session", "async_stream_query"]
    assert service.requests[1][1]["user_id"] == "levelfield"
    assert [c.agent for c in output.trajectory] == ["home_automation_careful"] * 2


def test_deployed_adk_session_is_reused_for_later_turns_of_the_same_case():
    engine, service = deployed(sample.make_adk_app())
    agent = AgentEngineAgent(engine, user_id="evaluator")

    run(agent, "What is the status of device_3?", session_id="case-1", turn=0)
    run(agent, "Turn on device_1.", session_id="case-1", turn=1)
    run(agent, "Turn on device_1.", session_id="case-2", turn=0)

    queries = [kwargs for method, kwargs in service.requests if method == "async_stream_query"]
    assert [m for m, _ in service.requests].count("async_create_session") == 2
    assert queries[0]["session_id"] == queries[1]["session_id"] != queries[2]["session_id"]
    assert {q["user_id"] for q in queries} == {"evaluator"}


def test_deployed_query_output_has_float_numbers_which_still_match_integer_references():
    engine, _ = deployed(sample.make_langgraph_agent())

    output = run(AgentEngineAgent(engine), PREFERRED)

    assert output.trajectory[1].tool_input == {"location": "Living Room", "temperature": 23.0}
    assert isinstance(output.trajectory[1].tool_input["temperature"], float)
    result = lf.evaluate(
        [{"case_id": "c", "prompt": PREFERRED, "reference_trajectory": [
            {"tool_name": "get_user_preferences", "tool_input": {"user_id": "user_y"}},
            {"tool_name": "set_temperature", "tool_input": {"location": "Living Room", "temperature": 23}},
        ]}],
        engine, metrics=["trajectory_exact_match"], progress=False,
    )
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_deployed_query_agent_gets_the_case_session_as_its_thread():
    engine, service = deployed(sample.make_langgraph_agent())

    run(AgentEngineAgent(engine), PREFERRED, session_id="case-7")

    assert service.requests[-1][1]["config"] == {"configurable": {"thread_id": "case-7", "session_id": "case-7"}}


def test_explicit_operation_is_the_one_called():
    engine, service = deployed(sample.make_langgraph_agent())

    output = run(AgentEngineAgent(engine, operation="stream_query"), PREFERRED)

    assert service.requests[-1][0] == "stream_query"
    assert [c.tool_name for c in output.trajectory] == ["get_user_preferences", "set_temperature"]


def test_deployed_agent_is_named_after_its_display_name():
    engine, _ = deployed(sample.make_langgraph_agent(), display_name="home-graph")

    assert lf.as_agent(engine).name == "home-graph"


def test_google_503_from_the_service_is_retried():
    engine, service = deployed(
        sample.make_langgraph_agent(), fail_with=[google_exceptions.ServiceUnavailable("try later")]
    )

    run_ = one_case(engine, backoff=0.01)

    assert not run_.failure
    assert run_.attempts == 2


def test_google_429_and_deadline_are_retried_too():
    engine, _ = deployed(
        sample.make_langgraph_agent(),
        fail_with=[google_exceptions.TooManyRequests("quota"), google_exceptions.DeadlineExceeded("slow")],
    )

    run_ = one_case(engine, backoff=0.01, retries=2)

    assert not run_.failure
    assert run_.attempts == 3


def test_permission_denied_fails_the_run_without_retry():
    engine, _ = deployed(sample.make_langgraph_agent(), fail_with=[google_exceptions.PermissionDenied("no access")])

    run_ = one_case(engine, backoff=0.01)

    assert run_.failure and run_.attempts == 1
    assert run_.error_type == "PermissionDenied"
    assert "no access" in run_.error and "query()" in run_.error


def test_resource_name_is_resolved_on_first_run_and_only_once(monkeypatch):
    from vertexai import agent_engines

    engine, _ = deployed(sample.make_langgraph_agent())
    asked: list[str] = []
    monkeypatch.setattr(agent_engines, "get", lambda name: asked.append(name) or engine)

    agent = lf.as_agent(RESOURCE)
    assert isinstance(agent, AgentEngineAgent) and asked == []

    result = lf.evaluate(str(DATASET), agent, metrics=["trajectory_exact_match"], progress=False)

    assert asked == [RESOURCE]
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_resource_name_that_cannot_be_resolved_is_a_failed_run_naming_it(monkeypatch):
    from vertexai import agent_engines

    def not_found(name):
        raise google_exceptions.NotFound(f"{name} does not exist")

    monkeypatch.setattr(agent_engines, "get", not_found)

    run_ = one_case(AgentEngineAgent(RESOURCE))

    assert run_.failure and run_.error_type == "setup_error"
    assert f"could not get Agent Engine '{RESOURCE}'" in run_.error


def test_malformed_resource_name_is_refused_at_construction():
    with pytest.raises(ValueError, match="reasoningEngines"):
        AgentEngineAgent("projects/p/reasoningEngines/1")


def test_resource_name_without_vertexai_installed_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vertexai", None)

    with pytest.raises(MissingExtraError, match=r"levelfield\[vertex\]"):
        AgentEngineAgent(RESOURCE)


class CustomAgent:
    """A custom Agent Engine agent (any class with set_up / query / register_operations)."""

    def __init__(self, answer):
        self.answer = answer

    def set_up(self):
        pass

    def query(self, *, input):
        return self.answer

    def register_operations(self):
        return {"": ["query"]}


def test_custom_agent_engine_class_is_detected_and_its_vertex_shaped_answer_read():
    answer = {"response": "done", "predicted_trajectory": [{"tool_name": "get_temperature", "tool_input": {"location": "Kitchen"}}]}
    engine, _ = deployed(CustomAgent(answer))

    for agent in (CustomAgent(answer), engine):
        output = run(lf.as_agent(agent), "hi")
        assert output.response == "done"
        assert [c.tool_name for c in output.trajectory] == ["get_temperature"]


def test_unknown_output_shape_is_a_failed_run_naming_the_keys_received():
    engine, _ = deployed(CustomAgent({"answer": "42", "score": 1}))

    run_ = one_case(engine)

    assert run_.failure and run_.error_type == "bad_output"
    assert "['answer', 'score']" in run_.error


def test_error_answer_from_a_deployed_agent_is_a_failed_run_with_its_message():
    engine, _ = deployed(CustomAgent({"error": {"code": 500, "message": "tool backend down"}}))

    run_ = one_case(engine)

    assert run_.failure and "tool backend down" in run_.error
