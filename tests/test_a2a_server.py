"""Serving agents over A2A: the wire convention, round trips through A2AAgent, the CLI command."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

import levelfield as lf  # noqa: E402
from levelfield.adapters.a2a import A2AAgent  # noqa: E402
from levelfield.adapters.a2a_server import add_serve_command, start_server  # noqa: E402
from levelfield.core.data.dataset import EvalCase, EvalDataset  # noqa: E402
from levelfield.core.errors import AdapterError  # noqa: E402
from samples.home_automation import DATASET  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent  # noqa: E402

FAST = {"progress": False, "retries": 0}


def _one(prompt: str = "Turn on device_1 in the Living Room.") -> EvalDataset:
    return EvalDataset([EvalCase(case_id="c1", prompt=prompt)])


def _structured(value: Any) -> Any:
    # Tool outputs that are JSON text travel as the structured value they encode.
    if isinstance(value, str) and value[:1] in "{[":
        return json.loads(value)
    return value


def _seen(run: lf.AgentRun) -> tuple[str, list[dict[str, Any]]]:
    # Everything levelfield scores on, plus tool errors; ids are the framework's, not compared.
    calls = [
        {k: (_structured(v) if k == "tool_output" else v) for k, v in c.to_vertex().items() if k != "id"}
        for c in run.output.trajectory
    ]
    return run.output.response, calls


@pytest.fixture(scope="module")
def careful_url() -> Iterator[str]:
    with start_server(careful_agent) as server:
        yield server.url


def test_serve_round_trip_equals_the_direct_run_on_the_whole_sample_dataset(careful_url):
    dataset = lf.load_dataset(DATASET)
    direct = lf.evaluate(dataset, careful_agent, metrics=[], **FAST)
    remote = lf.evaluate(dataset, A2AAgent(careful_url), metrics=[], **FAST)
    assert len(remote.runs) == 18 and not any(r.failure for r in remote.runs)
    assert [_seen(r) for r in remote.runs] == [_seen(r) for r in direct.runs]


def test_serve_round_trip_scores_like_the_direct_run(careful_url):
    dataset = lf.load_dataset(DATASET)
    metrics = ["trajectory_exact_match", "trajectory_precision", "exact_match"]
    direct = lf.evaluate(dataset, careful_agent, metrics=metrics, **FAST).summary_metrics
    remote = lf.evaluate(dataset, careful_url, metrics=metrics, **FAST).summary_metrics
    assert {m: remote[f"{m}/mean"] for m in metrics} == {m: direct[f"{m}/mean"] for m in metrics}


def test_served_langgraph_agent_round_trips_its_direct_run():
    sample = pytest.importorskip("samples.home_automation.agents.langgraph_agent")
    dataset = lf.load_dataset(DATASET)
    direct = lf.evaluate(dataset, sample.agent, metrics=[], **FAST)
    with start_server(sample.agent) as server:
        remote = lf.evaluate(dataset, A2AAgent(server.url), metrics=[], **FAST)
    assert not any(r.failure for r in remote.runs)
    assert [_seen(r) for r in remote.runs] == [_seen(r) for r in direct.runs]


def test_agent_card_offers_json_rpc_and_rest_with_streaming(careful_url):
    card = httpx.get(f"{careful_url}/.well-known/agent-card.json").json()
    assert card["name"] == "careful_agent" and card["capabilities"]["streaming"] is True
    assert {(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]} == {
        ("JSONRPC", careful_url),
        ("HTTP+JSON", careful_url),
    }


def test_tool_calls_go_out_as_adk_function_call_and_function_response_parts(careful_url):
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest
    from google.protobuf.json_format import MessageToDict

    async def parts() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=10) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(careful_url)
            message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text="Turn on device_1 in the Living Room.")])
            out = []
            async for event in client.send_message(SendMessageRequest(message=message)):
                if event.HasField("status_update") and event.status_update.status.HasField("message"):
                    out += [MessageToDict(p) for p in event.status_update.status.message.parts]
            return out

    call, response = asyncio.run(parts())
    assert call["metadata"] == {"adk_type": "function_call"}
    assert call["data"] == {"name": "set_device_info", "args": {"device_id": "device_1", "updates": {"status": "ON"}}}
    assert response["metadata"] == {"adk_type": "function_response"}
    assert response["data"] == {"name": "set_device_info", "response": {"result": "Device device_1 updated: status=ON."}}


def test_tool_call_ids_usage_and_intermediate_texts_round_trip():
    async def rich(prompt: str) -> lf.AgentOutput:
        return lf.AgentOutput(
            response="done",
            trajectory=[lf.ToolCall(tool_name="lookup", tool_input={"n": 2}, tool_output={"rows": [1, 2]}, id="call_7")],
            intermediate_responses=["working on it"],
            usage=lf.Usage(input_tokens=10, output_tokens=5, total_tokens=15),
        )

    with start_server(rich) as server:
        out = lf.evaluate(_one(), A2AAgent(server.url), metrics=[], **FAST).runs[0].output
    assert out.trajectory == [lf.ToolCall(tool_name="lookup", tool_input={"n": 2}, tool_output={"rows": [1, 2]}, id="call_7")]
    assert out.intermediate_responses == ["working on it"]
    assert out.usage == lf.Usage(input_tokens=10, output_tokens=5, total_tokens=15)


def test_sub_agent_attribution_round_trips():
    async def team(prompt: str) -> lf.AgentOutput:
        return lf.AgentOutput(
            response="fertig",
            trajectory=[
                lf.ToolCall(tool_name="delegate", tool_input={"to": "researcher"}, agent="lead"),
                lf.ToolCall(tool_name="search", tool_input={"q": "Zürich"}, agent="researcher"),
            ],
        )

    with start_server(team) as server:
        out = lf.evaluate(_one(), A2AAgent(server.url), metrics=[], **FAST).runs[0].output
    assert [(c.tool_name, c.agent) for c in out.trajectory] == [("delegate", "lead"), ("search", "researcher")]


def test_served_agent_that_raises_is_a_failed_run_with_its_error():
    def broken(prompt: str) -> str:
        raise ValueError("thermostat offline")

    with start_server(broken) as server:
        run = lf.evaluate(_one(), A2AAgent(server.url), metrics=[], **FAST).runs[0]
    assert run.failure and run.error_type == "ValueError" and "thermostat offline" in run.error


def test_served_agent_failure_keeps_the_partial_trajectory_it_reported():
    async def half(prompt: str) -> str:
        partial = lf.AgentOutput(response="", trajectory=[lf.ToolCall(tool_name="list_devices", tool_input={"room": "Kitchen"})])
        raise AdapterError("gave up half way", error_type="recursion_limit", partial=partial)

    with start_server(half) as server:
        run = lf.evaluate(_one(), A2AAgent(server.url), metrics=[], **FAST).runs[0]
    assert run.failure and run.error_type == "recursion_limit"
    assert [c.tool_name for c in run.partial_output.trajectory] == ["list_devices"]


def test_dataset_history_reaches_the_served_agent_on_the_first_turn():
    seen: list[list[str]] = []

    def remembers(prompt: str, history: list) -> str:
        seen.append([m.content for m in history])
        return "ok"

    dataset = EvalDataset(
        [EvalCase(case_id="h", prompt="and now?", history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])]
    )
    with start_server(remembers) as server:
        run = lf.evaluate(dataset, A2AAgent(server.url), metrics=[], **FAST).runs[0]
    assert not run.failure, run.error
    assert seen == [["hi", "hello"]]


# -- the CLI command ----------------------------------------------------------------------------


def _parser():
    import argparse

    parser = argparse.ArgumentParser(prog="levelfield")
    add_serve_command(parser.add_subparsers(dest="command"))
    return parser


def test_serve_command_defaults_to_localhost_port_9999():
    args = _parser().parse_args(["serve", "pkg.mod:agent"])
    assert (args.spec, args.host, args.port, args.name) == ("pkg.mod:agent", "127.0.0.1", 9999, None)


def test_serve_command_with_a_bad_spec_exits_2_naming_it(capsys):
    args = _parser().parse_args(["serve", "no_such_module_xyz:agent"])
    assert args.func(args) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err


def test_serve_command_on_a_busy_port_exits_1_naming_the_port(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = _parser().parse_args(["serve", "samples.home_automation.agents.function_agents:careful_agent", "--port", str(port)])
        assert args.func(args) == 1
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


def test_levelfield_cli_has_the_serve_command():
    from levelfield.cli.main import build_parser

    args = build_parser().parse_args(["serve", "pkg.mod:agent", "--port", "8123", "--name", "remote"])
    assert (args.command, args.port, args.name) == ("serve", 8123, "remote")
