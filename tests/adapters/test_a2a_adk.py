"""A2A against ADK's own client and server, all on 127.0.0.1.

- ADK's ``to_a2a`` serves ADK agents driven by ``StepLlm``, a scripted ADK ``BaseLlm``:
  one agent, a root that transfers to a sub-agent, parallel calls, two turns of one session.
  ``A2AAgent`` must recover each trajectory exactly, with the sub-agent that made each call.
- ADK's ``RemoteA2aAgent``, inside an ADK ``Runner``, calls ``levelfield serve``'s server and
  must see the final answer and the tool calls.
- A 0.3 client (raw JSON-RPC ``message/send``, and the 0.3 card model) is answered too.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import AsyncGenerator
from typing import Any

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("google.adk.a2a")

import httpx  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.genai import types  # noqa: E402

import levelfield as lf  # noqa: E402
from levelfield._core.data.dataset import EvalCase, EvalDataset, Turn  # noqa: E402
from levelfield.adapters import A2AAgent  # noqa: E402
from levelfield.adapters.a2a.server import start_asgi, start_server  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent  # noqa: E402

# The adapter is under test here; the preflight before the first case has tests of its own.
FAST = {"progress": False, "retries": 0, "timeout": 60, "a2a_preflight": False}

# ADK marks its A2A code experimental and says so on every call.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")



def _is_prompt(content: types.Content) -> bool:
    # ADK shows a sub-agent what other agents did as user text starting "For context:".
    return content.role == "user" and any(
        p.text and not p.text.startswith("For context:") for p in content.parts or []
    )


class StepLlm(BaseLlm):
    """An ADK model that plays a script: step i of a turn is its i-th answer since the user's prompt.

    A step is a final text, a list of ``(tool, args)`` calls made at once, or a function of the
    request's contents returning a text.
    """

    model: str = "scripted"
    steps: list[Any] = []

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted.*"]

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        start = max((i for i, c in enumerate(contents) if _is_prompt(c)), default=-1)
        step = sum(1 for c in contents[start + 1 :] if c.role == "model")
        spec = self.steps[min(step, len(self.steps) - 1)]
        if callable(spec):
            spec = spec(contents)
        if isinstance(spec, str):
            parts = [types.Part(text=spec)]
        else:
            parts = [types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in spec]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "temperature": 21, "sky": "晴れ"}


def get_time(city: str) -> str:
    """The local time in a city."""
    return "12:00"


def set_thermostat(room: str, degrees: int) -> str:
    """Set a room's thermostat."""
    return f"{room} set to {degrees}"


def _adk_server(agent: Any):
    from google.adk.a2a.utils.agent_to_a2a import to_a2a

    def make(url: str) -> Any:
        return to_a2a(agent, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]))

    return start_asgi(make)


def _one(prompt: str) -> EvalDataset:
    return EvalDataset([EvalCase(case_id="c1", prompt=prompt)])


def _calls(run: lf.AgentRun) -> list[tuple[str, dict[str, Any], Any, str | None]]:
    return [(c.tool_name, c.tool_input, c.tool_output, c.agent) for c in run.output.trajectory]


# -- ADK's to_a2a server -------------------------------------------------------------------------


def _thermostat_agent() -> LlmAgent:
    return LlmAgent(
        name="thermostat_agent",
        model=StepLlm(steps=[[("set_thermostat", {"room": "Wohnzimmer", "degrees": 22})], "Das Wohnzimmer ist auf 22 Grad."]),
        tools=[set_thermostat],
    )


@pytest.mark.parametrize("streaming", [True, False])
def test_single_adk_agent_trajectory_and_response_arrive(streaming):
    with _adk_server(_thermostat_agent()) as server:
        run = lf.evaluate(_one("Stell das Wohnzimmer auf 22 Grad."), A2AAgent(server.url, streaming=streaming), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert run.output.response == "Das Wohnzimmer ist auf 22 Grad."
    assert [c[:3] for c in _calls(run)] == [("set_thermostat", {"room": "Wohnzimmer", "degrees": 22}, "Wohnzimmer set to 22")]
    assert type(run.output.trajectory[0].tool_input["degrees"]) is int


def test_single_adk_agent_calls_are_attributed_to_it_when_streaming():
    # ADK names the author on each streamed event; a non-streamed task's history drops it.
    with _adk_server(_thermostat_agent()) as server:
        run = lf.evaluate(_one("Stell das Wohnzimmer auf 22 Grad."), A2AAgent(server.url), metrics=[], **FAST).runs[0]
    assert [c.agent for c in run.output.trajectory] == ["thermostat_agent"]


def test_adk_server_agent_is_named_after_its_card():
    agent = LlmAgent(name="thermostat_agent", model=StepLlm(steps=["ok"]))
    with _adk_server(agent) as server:
        assert A2AAgent(server.url).name == "thermostat_agent"


def _weather_team() -> LlmAgent:
    weather = LlmAgent(
        name="weather_agent",
        description="Answers weather and time questions.",
        model=StepLlm(steps=[[("get_weather", {"city": "東京"}), ("get_time", {"city": "東京"})], "東京は晴れ、21度、12時です。"]),
        tools=[get_weather, get_time],
    )
    return LlmAgent(
        name="root_agent",
        model=StepLlm(steps=[[("transfer_to_agent", {"agent_name": "weather_agent"})], "unused"]),
        sub_agents=[weather],
    )


@pytest.fixture(scope="module")
def team_url():
    with _adk_server(_weather_team()) as server:
        yield server.url


def test_multi_agent_transfer_attributes_each_call_to_the_agent_that_made_it(team_url):
    run = lf.evaluate(_one("東京の天気は？"), A2AAgent(team_url), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert [(name, agent) for name, _, _, agent in _calls(run)] == [
        ("transfer_to_agent", "root_agent"),
        ("get_weather", "weather_agent"),
        ("get_time", "weather_agent"),
    ]
    assert run.output.response == "東京は晴れ、21度、12時です。"


def test_multi_agent_transfer_is_a_handoff_when_streaming_and_scores_by_agent(team_url):
    dataset = lf.load_dataset([{
        "case_id": "c1", "prompt": "東京の天気は？", "reference_handoffs": ["weather_agent"],
        "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "東京"}, "agent": "weather_agent"}],
    }])
    result = lf.evaluate(dataset, A2AAgent(team_url), metrics=["handoff_match", "tool_attribution"], **FAST)
    run = result.runs[0]
    assert [(h.from_agent, h.to_agent) for h in run.output.handoffs] == [("root_agent", "weather_agent")]
    assert result.summary_metrics["handoff_match/mean"] == 1.0
    assert result.summary_metrics["tool_attribution/mean"] == 1.0


def test_a_non_streamed_adk_task_names_no_author_so_it_shows_no_handoffs(team_url):
    # The known gap: ADK's non-streamed task history carries no author, so attribution needs streaming.
    run = lf.evaluate(_one("東京の天気は？"), A2AAgent(team_url, streaming=False), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert run.output.handoffs == [] and {c.agent for c in run.output.trajectory} == {None}


def test_parallel_calls_keep_their_order_and_each_gets_its_own_output(team_url):
    run = lf.evaluate(_one("東京の天気は？"), A2AAgent(team_url), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert _calls(run)[1:] == [
        ("get_weather", {"city": "東京"}, {"city": "東京", "temperature": 21, "sky": "晴れ"}, "weather_agent"),
        ("get_time", {"city": "東京"}, "12:00", "weather_agent"),
    ]
    assert len({c.id for c in run.output.trajectory}) == 3  # ADK's call ids, each call once


def test_adk_trajectory_scores_like_the_reference_with_sub_agent_calls(team_url):
    reference = [
        {"tool_name": "transfer_to_agent", "tool_input": {"agent_name": "weather_agent"}},
        {"tool_name": "get_weather", "tool_input": {"city": "東京"}},
        {"tool_name": "get_time", "tool_input": {"city": "東京"}},
    ]
    dataset = lf.load_dataset([{"case_id": "c1", "prompt": "東京の天気は？", "reference_trajectory": reference}])
    result = lf.evaluate(dataset, A2AAgent(team_url), metrics=["trajectory_exact_match"], **FAST)
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


def _turn_counter(contents: list[types.Content]) -> str:
    prompts = [p.text for c in contents if _is_prompt(c) for p in c.parts or [] if p.text]
    return f"Turn {len(prompts)}; you first said: {prompts[0]}"


def test_two_turns_share_one_adk_session():
    agent = LlmAgent(name="memory_agent", model=StepLlm(steps=[_turn_counter]))
    dataset = EvalDataset(
        [EvalCase(case_id="m", prompt="Olá", turns=[Turn(prompt="Olá"), Turn(prompt="Você lembra de mim?")])]
    )
    with _adk_server(agent) as server:
        run = lf.evaluate(dataset, A2AAgent(server.url), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert [t.response for t in run.turns] == ["Turn 1; you first said: Olá", "Turn 2; you first said: Olá"]


# -- ADK's RemoteA2aAgent against levelfield serve ----------------------------------------------


async def _ask_remote(url: str, prompt: str) -> list[Any]:
    from google.adk.a2a.agent._remote_a2a_agent import RemoteA2aAgent
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        remote = RemoteA2aAgent(name="home", agent_card=f"{url}/.well-known/agent-card.json")
    runner = Runner(app_name="levelfield-test", agent=remote, session_service=InMemorySessionService(), auto_create_session=True)
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    try:
        events = [e async for e in runner.run_async(user_id="u", session_id=uuid.uuid4().hex, new_message=message)]
    finally:
        await runner.close()
        await remote.cleanup()  # the httpx client the remote agent made for itself (the runner leaves it open)
    return events


@pytest.fixture(scope="module")
def careful_url():
    with start_server(careful_agent) as server:
        yield server.url


def test_remote_a2a_agent_in_an_adk_runner_sees_the_final_answer(careful_url):
    events = asyncio.run(_ask_remote(careful_url, "Turn on device_1 in the Living Room."))
    finals = [
        p.text
        for e in events
        if e.is_final_response() and e.content
        for p in e.content.parts or []
        if p.text and not p.thought
    ]
    assert finals == ["device_1 in the Living Room is now on."]


def test_remote_a2a_agent_sees_the_tool_call_and_its_structured_result(careful_url):
    events = asyncio.run(_ask_remote(careful_url, "Set the temperature to my preferred level in the Living Room. I am user_y."))
    parts = [p for e in events if e.content for p in e.content.parts or []]
    calls = [(p.function_call.name, p.function_call.args) for p in parts if p.function_call]
    results = [p.function_response.response for p in parts if p.function_response]
    assert calls == [("get_user_preferences", {"user_id": "user_y"}), ("set_temperature", {"location": "Living Room", "temperature": 23})]
    # The tool returned JSON text; ADK's side gets the object, not {"result": "<json>"}.
    assert results[0] == {"user_id": "user_y", "preferred_temperature": 23, "wake_time": "06:30"}


# -- A2A 0.3 clients ------------------------------------------------------------------------------


def test_the_served_card_parses_as_an_a2a_0_3_card(careful_url):
    from a2a.compat.v0_3.types import AgentCard as AgentCard03

    card = AgentCard03.model_validate(httpx.get(f"{careful_url}/.well-known/agent-card.json").json())
    assert card.url == careful_url and card.preferred_transport == "JSONRPC"


def _message_03(method: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {
            "message": {
                "kind": "message",
                "role": "user",
                "messageId": uuid.uuid4().hex,
                "parts": [{"kind": "text", "text": "Turn on device_1 in the Living Room."}],
            }
        },
    }


def test_a_raw_0_3_message_send_is_answered_with_a_0_3_task(careful_url):
    reply = httpx.post(f"{careful_url}/", json=_message_03("message/send"), timeout=30).json()
    assert "error" not in reply, reply
    task = reply["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "device_1 in the Living Room is now on."}]
    call = next(p for m in task["history"] for p in m["parts"] if p.get("metadata", {}).get("adk_type") == "function_call")
    assert call["data"]["name"] == "set_device_info"


def test_a_raw_0_3_message_stream_ends_with_a_final_completed_status(careful_url):
    import json

    with httpx.stream("POST", f"{careful_url}/", json=_message_03("message/stream"), timeout=30) as response:
        events = [json.loads(line[5:])["result"] for line in response.iter_lines() if line.startswith("data:")]
    artifact = next(e for e in events if e.get("kind") == "artifact-update")
    assert artifact["lastChunk"] is True
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True
    assert events[-1]["status"]["state"] == "completed"


def test_a_raw_0_3_rest_message_send_is_answered_under_v1(careful_url):
    # A2A 0.3's REST binding: proto JSON, the message under "request", its parts under "content".
    body = {"request": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "content": [{"text": "Turn on device_1 in the Living Room."}]}}
    task = httpx.post(f"{careful_url}/v1/message:send", json=body, timeout=30).json()["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "device_1 in the Living Room is now on."}]
