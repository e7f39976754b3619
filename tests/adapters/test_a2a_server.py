"""Serving agents over A2A: the wire convention, round trips through A2AAgent, the CLI command."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

import levelfield as lf  # noqa: E402
from levelfield._core.data.dataset import EvalCase, EvalDataset  # noqa: E402
from levelfield._core.errors import AdapterError  # noqa: E402
from levelfield.adapters import A2AAgent  # noqa: E402
from levelfield.adapters.a2a.server import start_server  # noqa: E402
from levelfield.cli.serve import add_parser as add_serve_command  # noqa: E402
from samples.home_automation import DATASET  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent  # noqa: E402

# The adapter is under test here; the preflight before the first case has tests of its own.
FAST = {"progress": False, "retries": 0, "a2a_preflight": False}


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


def test_no_adapter_builds_a_command_line():
    """Commands live in levelfield.cli (``serve`` in cli/serve.py); an adapter is what they call."""
    import ast
    from pathlib import Path

    import levelfield.adapters as adapters

    builders = [str(p.relative_to(Path(adapters.__file__).parent)) for p in Path(adapters.__file__).parent.rglob("*.py")
                if any(isinstance(n, (ast.Import, ast.ImportFrom)) and "argparse" in ([a.name for a in n.names] if isinstance(n, ast.Import) else [n.module])
                       for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert builders == []


def test_levelfield_cli_has_the_serve_command():
    from levelfield.cli.main import build_parser

    args = build_parser().parse_args(["serve", "pkg.mod:agent", "--port", "8123", "--name", "remote"])
    assert (args.command, args.port, args.name) == ("serve", 8123, "remote")


# -- a server left running: bounded, guarded, never brought down by its agent ---------------------

V1 = {"A2A-Version": "1.0"}


def echo_agent(prompt: str) -> str:
    """Module level: a worker process imports it from here (isolation="process")."""
    return f"echo: {prompt}"


def exiting_agent(prompt: str) -> str:
    if prompt == "exit":
        os._exit(3)  # in the server's own process this would end the server
    return f"still here: {prompt}"


def _send(prompt: str, **extra: Any) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": prompt}]}
    return {"jsonrpc": "2.0", "method": "SendMessage", "params": {"message": message}, **extra}


def _post(url: str, body: Any, **kwargs: Any) -> httpx.Response:
    content = body if isinstance(body, (bytes, Iterator)) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **V1, **kwargs.pop("headers", {})}
    return httpx.post(f"{url}/", content=content, headers=headers, timeout=30, **kwargs)


def test_finished_tasks_beyond_max_tasks_are_evicted_oldest_first():
    with start_server(echo_agent, max_tasks=3) as server:
        ids = [_post(server.url, _send(f"Frage {i}", id=i)).json()["result"]["task"]["id"] for i in range(5)]
        found = [
            "result" in _post(server.url, {"jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {"id": t}}).json()
            for t in ids
        ]
    assert found == [False, False, True, True, True]


def test_a_body_over_max_body_is_answered_413_unread():
    with start_server(echo_agent, max_body=1024) as server:
        announced = _post(server.url, _send("x" * 5000, id=1))
        unannounced = _post(server.url, iter([b'{"jsonrpc": "2.0", "id": 1, ', b" " * 4096, b"}"]))
        fine = _post(server.url, _send("ça va, 你好", id=2))
    for response in (announced, unannounced):
        assert response.status_code == 413
        assert "larger than 1024 bytes" in response.json()["error"]["message"]
    assert fine.json()["result"]["task"]["artifacts"][0]["parts"][0]["text"] == "echo: ça va, 你好"


@pytest.mark.parametrize("body", [b"\xff\xfe\x00", b"{not json", "{\"prompt\": \"caf\xe9\"}".encode("latin-1")])
def test_a_body_that_is_not_json_is_a_json_rpc_parse_error(body):
    with start_server(echo_agent) as server:
        response = _post(server.url, body)
    error = response.json()["error"]
    assert error["code"] == -32700 and error["message"].startswith("Parse error")
    assert "codec" not in error["message"]  # no Python text


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod"}, -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}, -32602),
        ({"jsonrpc": "2.0", "id": 1}, -32600),
        ([], -32600),
    ],
)
def test_json_rpc_errors_carry_the_codes_of_the_spec(body, code):
    with start_server(echo_agent) as server:
        assert _post(server.url, body).json()["error"]["code"] == code


def test_a_notification_is_not_answered_and_runs_nothing():
    calls: list[str] = []

    def counting(prompt: str) -> str:
        calls.append(prompt)
        return "ok"

    with start_server(counting) as server:
        response = _post(server.url, _send("Benachrichtigung"))  # no "id": a JSON-RPC notification
        answered = _post(server.url, _send("Anfrage", id=None))  # "id": null is a request
    assert response.status_code == 204 and response.content == b""
    assert "result" in answered.json() and calls == ["Anfrage"]


def test_an_auth_token_is_required_on_every_call_but_the_card():
    with start_server(echo_agent, auth_token="t0ken-9f8e") as server:  # noqa: S106 - a test token
        card = httpx.get(f"{server.url}/.well-known/agent-card.json").json()
        missing = _post(server.url, _send("hi", id=1))
        wrong = _post(server.url, _send("hi", id=1), headers={"Authorization": "Bearer t0ken-x"})
        rest = httpx.post(f"{server.url}/message:send", json={}, headers=V1)
        ok = lf.evaluate(_one("Olá"), A2AAgent(server.url, headers={"Authorization": "Bearer t0ken-9f8e"}), metrics=[], **FAST)
        refused = lf.evaluate(_one("Olá"), A2AAgent(server.url), metrics=[], **FAST)
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    for response in (missing, wrong, rest):
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
    assert ok.runs[0].output.response == "echo: Olá"
    assert refused.runs[0].error_type == "unauthorized"


def test_a_served_async_agent_raising_system_exit_fails_its_task_and_the_server_goes_on():
    class Quitter:
        name = "quitter"

        async def arun(self, request: Any) -> lf.AgentOutput:
            if request.prompt == "quit":
                raise SystemExit(4)
            return lf.AgentOutput(response="weiter")

    with start_server(Quitter()) as server:
        agent = A2AAgent(server.url, timeout=20)
        quit_run = lf.evaluate(_one("quit"), agent, metrics=[], **FAST).runs[0]
        next_run = lf.evaluate(_one("und jetzt?"), agent, metrics=[], **FAST).runs[0]
    assert quit_run.failure and quit_run.error_type == "SystemExit", quit_run.error
    assert not next_run.failure and next_run.output.response == "weiter"


def test_os_exit_in_a_process_isolated_served_agent_fails_one_task_not_the_server():
    with start_server(exiting_agent, isolation="process") as server:
        agent = A2AAgent(server.url, timeout=60)
        died = lf.evaluate(_one("exit"), agent, metrics=[], **FAST).runs[0]
        alive = lf.evaluate(_one("こんにちは"), agent, metrics=[], **FAST).runs[0]
    assert died.failure and died.error_type == "worker_died" and "exit code 3" in died.error
    assert not alive.failure and alive.output.response == "still here: こんにちは"


def test_serve_on_all_interfaces_warns_shows_the_real_address_and_takes_the_token_from_the_env():
    import subprocess
    import sys

    env = {**os.environ, "LEVELFIELD_SERVE_TOKEN": "env-t0ken"}
    cmd = [sys.executable, "-m", "levelfield", "serve", f"{__name__}:echo_agent", "--host", "0.0.0.0", "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=os.path.dirname(__file__))
    guard = threading.Timer(60, proc.kill)  # a banner that never comes fails the test, never hangs it
    guard.start()
    try:
        banner = proc.stdout.readline()
        card_line = proc.stdout.readline()
        proc.stdout.readline()
        port = int(banner.rsplit(":", 1)[1].split()[0])
        url = f"http://127.0.0.1:{port}"
        refused = _post(url, _send("hi", id=1))
        accepted = _post(url, _send("hi", id=1), headers={"Authorization": "Bearer env-t0ken"})
    finally:
        guard.cancel()
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert f"listening on 0.0.0.0:{port} (every IPv4 interface)" in banner
    assert f"http://127.0.0.1:{port}" in card_line
    assert "warning: listening beyond this machine" in stderr and "--auth-token" not in stderr.split("warning")[1]
    assert refused.status_code == 401 and accepted.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_token_that_no_http_client_can_send_is_refused():
    from levelfield._core.errors import ConfigError
    from levelfield.adapters.a2a.server import build_app

    for token in ("Schlüssel", "two words", ""):
        with pytest.raises(ConfigError, match="auth_token"):
            build_app(echo_agent, url="http://127.0.0.1:1", auth_token=token)


def test_serve_on_loopback_gives_no_warning_and_the_cli_knows_the_new_options():
    from levelfield._serving import is_loopback as _loopback

    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("localhost")
    assert not _loopback("0.0.0.0") and not _loopback("192.168.1.5") and not _loopback("my-host")
    args = _parser().parse_args(["serve", "pkg.mod:agent", "--max-body", "512KB", "--auth-token", "t", "--isolation", "process"])
    assert (args.max_body, args.auth_token, args.isolation) == (512 * 1024, "t", "process")
