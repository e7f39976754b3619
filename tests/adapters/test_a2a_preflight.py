"""The A2A conformance preflight against real servers on 127.0.0.1, and against broken ones.

Conformant: ``levelfield serve`` (1.0 and 0.3), a plain a2a-sdk server (the shape of a2a-sdk's
hello-world sample: it answers with a message), ADK's ``to_a2a`` and the hand-written wire server
the broken ones are made from. Broken: the wire server with one defect each; the preflight must
fail the check that names that defect.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

from a2a.helpers import new_text_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

import _a2a_wire as wire  # noqa: E402
from levelfield._core.errors import AdapterError  # noqa: E402
from levelfield.adapters import A2AAgent  # noqa: E402
from levelfield.adapters.a2a.preflight import Preflight, preflight  # noqa: E402
from levelfield.adapters.a2a.server import start_asgi, start_server  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _statuses(found: Preflight) -> dict[tuple[str, str], str]:
    return {(c.name, c.version): c.status for c in found.checks}


def _not_passed(found: Preflight) -> list[tuple[str, str, str]]:
    return [(c.name, c.status, c.detail) for c in found.checks if c.status in ("fail", "warn")]


# -- conformant servers pass ----------------------------------------------------------------------


def test_levelfield_serve_passes_its_own_preflight_in_1_0_and_0_3():
    with start_server(careful_agent) as server:
        found = preflight(server.url, prompt="Set the Bedroom temperature to 19.", timeout=10)
    assert found.ok and not found.warnings, _not_passed(found)
    assert found.versions == ["1.0", "0.3"]
    statuses = _statuses(found)
    for version in ("1.0", "0.3"):
        for name in ("send", "send.parts", "send.final_state", "get_task", "stream", "stream.final_state", "cancel", "errors"):
            assert statuses[(name, version)] == "pass", (name, version)
    assert found.tool_calls == "adk" and found.agent == "careful_agent"
    assert statuses[("retry_after", "")] == "skip"


class HelloWorld(AgentExecutor):
    """a2a-sdk's hello-world sample, 1.x API: every message is answered with one agent message."""

    async def execute(self, context, event_queue) -> None:
        await event_queue.enqueue_event(new_text_message("Hello World", role=Role.ROLE_AGENT))

    async def cancel(self, context, event_queue) -> None:
        raise NotImplementedError


def _hello_world_app(url: str) -> Starlette:
    card = AgentCard(
        name="Hello World Agent", description="Just a hello world agent", version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True), default_input_modes=["text"], default_output_modes=["text"],
        skills=[AgentSkill(id="hello_world", name="Returns hello world", description="just returns hello world",
                           tags=["hello world"])],
    )
    handler = DefaultRequestHandler(agent_executor=HelloWorld(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def test_a_plain_a2a_sdk_server_answering_with_a_message_passes():
    with start_asgi(_hello_world_app) as server:
        found = preflight(server.url, timeout=10)
    assert found.ok, _not_passed(found)
    assert found.check("send", "1.0").detail.startswith("answered with a message")
    # Its card declares no tools (no skill tagged 'tools'): no call to expose, so the check skips, saying why.
    assert found.tool_calls == "none" and found.check("tool_calls").status == "skip"
    assert "declares no tools" in found.check("tool_calls").detail


def test_an_agent_whose_card_declares_tools_but_exposes_no_calls_gets_the_warning(monkeypatch):
    from levelfield.adapters.a2a import preflight as module

    monkeypatch.setattr(module, "declares_tools", lambda card: True)
    with start_asgi(_hello_world_app) as server:
        found = preflight(server.url, timeout=10)
    assert found.tool_calls == "none" and found.check("tool_calls").status == "warn"


def test_declares_tools_reads_adks_tools_tag():
    from levelfield.adapters.a2a.preflight import declares_tools

    assert declares_tools({"skills": [{"id": "a-get_weather", "tags": ["llm", "tools"]}]})
    assert not declares_tools({"skills": [{"id": "hello_world", "tags": ["hello world"]}]})
    assert not declares_tools({"skills": "nonsense"}) and not declares_tools({})


@pytest.mark.filterwarnings("ignore::UserWarning")  # ADK marks its A2A code experimental
def test_adk_to_a2a_server_passes():
    pytest.importorskip("google.adk.a2a")
    from tests.adapters.test_a2a_adk import _adk_server, _thermostat_agent

    with _adk_server(_thermostat_agent()) as server:
        found = preflight(server.url, prompt="Stell das Wohnzimmer auf 22 Grad.", timeout=10)
    assert found.ok and not found.warnings, _not_passed(found)
    assert found.versions == ["1.0"] and found.tool_calls == "adk"


def test_the_hand_written_wire_server_is_conformant():
    # The control for the broken servers below: without a defect, nothing fails or warns.
    with wire.start() as server:
        found = preflight(server.url, timeout=5)
    assert found.ok and not found.warnings, _not_passed(found)
    assert found.tool_calls == "adk"


# -- each broken server is named by its defect ----------------------------------------------------


@pytest.mark.parametrize("defect", sorted(wire.DEFECTS))
def test_a_broken_server_fails_the_check_that_names_its_defect(defect):
    with wire.start(defect) as server:
        found = preflight(server.url, timeout=1.0)
    assert not found.ok
    named = [c for c in found.checks if c.name == wire.DEFECTS[defect]]
    assert named and named[0].status == "fail", _not_passed(found)
    assert named[0].section and named[0].detail


def test_defect_details_say_what_was_wrong():
    cases = {
        "no_final_state": ("send.final_state", "never reached a final state"),
        "wrong_part_kind": ("send", "kind"),
        "stream_not_served": ("stream", "claims streaming but the stream was not served"),
        "no_retry_after": ("retry_after", "without a usable Retry-After"),
        "error_as_completed": ("errors", "answered with a result instead of a JSON-RPC error"),
        "state_after_final": ("stream.final_state", "left the final state completed for working"),
    }
    for defect, (name, words) in cases.items():
        with wire.start(defect) as server:
            found = preflight(server.url, timeout=1.0)
        assert words in found.check(name).detail, (defect, found.check(name))


def test_tool_calls_in_plain_data_parts_are_a_warning_naming_the_fix():
    with wire.start(wire.PLAIN_TOOL_CALLS) as server:
        found = preflight(server.url, timeout=5)
    assert found.ok and found.tool_calls == "data"
    check = found.check("tool_calls")
    assert check.status == "warn" and "trajectory_extractor" in check.detail


def test_a_defect_free_server_that_is_not_there_is_an_error_not_a_table():
    with wire.nobody_listening() as url, pytest.raises(AdapterError, match="connection refused"):
        preflight(url, timeout=2)


def test_the_preflight_round_trips_through_a_dict():
    with wire.start("get_task_lost") as server:
        found = preflight(server.url, timeout=2)
    again = Preflight.from_dict(json.loads(json.dumps(found.to_dict())))
    assert again.checks == found.checks and again.ok is False and again.tool_calls == found.tool_calls


def test_a2a_agent_preflight_sends_its_headers():
    with start_server(careful_agent, auth_token="tok-12345678") as server:
        found = A2AAgent(server.url, headers={"Authorization": "Bearer tok-12345678"}).preflight(timeout=10)
        with pytest.raises(AdapterError, match="HTTP 401.*credentials"):
            A2AAgent(server.url).preflight(timeout=10)
    assert found.ok, _not_passed(found)


# -- the command --------------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "levelfield", "a2a-check", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def test_cli_exits_0_on_a_conformant_server_and_prints_the_table():
    with wire.start() as server:
        done = _cli(server.url, "--timeout", "5")
    assert done.returncode == 0, done.stderr
    assert "card.required_fields" in done.stdout and "conforms" in done.stdout


def test_cli_exits_1_when_a_check_fails_and_names_it():
    with wire.start("stream_not_served") as server:
        done = _cli(server.url, "--timeout", "2", "--json")
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["ok"] is False
    assert any(c["name"] == "stream" and c["status"] == "fail" for c in payload["checks"])


def test_cli_exits_2_with_one_line_on_an_unreachable_url_or_a_bad_one():
    with wire.nobody_listening() as url:
        done = _cli(url, "--timeout", "2")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "connection refused" in done.stderr
    bad = _cli("localhost:9999")
    assert bad.returncode == 2 and "not an http(s):// URL" in bad.stderr and bad.stderr.count("\n") == 1


def test_cli_exits_2_naming_both_card_paths_on_a_host_that_answers_http_without_a_card():
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def hello(request):
        return PlainTextResponse("a web site, no agent here")

    with start_asgi(lambda url: Starlette(routes=[Route("/", hello)])) as server:
        done = _cli(server.url, "--timeout", "5")
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1
    assert "/.well-known/agent-card.json" in done.stderr and "/.well-known/agent.json" in done.stderr
    assert "HTTP 404" in done.stderr


def test_a_card_claiming_0_3_that_a_server_does_not_serve_is_named():
    # A real a2a-sdk server whose card lists 0.3 interfaces, without the 0.3 routes: 1.0 passes, 0.3 fails.
    from a2a.server.routes import create_rest_routes

    from levelfield.adapters.a2a.server import build_agent_card
    from tests.adapters.test_a2a import Scripted

    async def done(updater, context, queue):
        await updater.complete(updater.new_agent_message([new_text_part("ok")]))

    def app(url: str) -> Starlette:
        card = build_agent_card("claims-0.3", url)
        handler = DefaultRequestHandler(agent_executor=Scripted(done), task_store=InMemoryTaskStore(), agent_card=card)
        return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/"),
                                 *create_rest_routes(handler)])

    with start_asgi(app) as server:
        found = preflight(server.url, timeout=5)
    assert found.check("send", "1.0").status == "pass"
    zero3 = found.check("send", "0.3")
    assert zero3.status == "fail" and "-32601" in zero3.detail and not found.ok


def test_a_credential_a_server_echoes_into_a_check_is_never_shown():
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    token = "s3cret-token-9f8e7d"

    def app(url: str) -> Starlette:
        agent = wire.WireAgent(url, None)

        async def echo(request):
            return PlainTextResponse(f"bad auth {request.headers.get('authorization')}", status_code=500)

        return Starlette(routes=[Route("/.well-known/agent-card.json", agent.card_route), Route("/", echo, methods=["POST"])])

    with start_asgi(app) as server:
        found = A2AAgent(server.url, headers={"Authorization": f"Bearer {token}"}).preflight(timeout=5)
        done = _cli(server.url, "-H", f"Authorization: Bearer {token}", "--timeout", "5")
    send = found.check("send", "1.0")
    assert send.status == "fail" and "bad auth" in send.detail and "***" in send.detail
    assert token not in json.dumps(found.to_dict())
    assert done.returncode == 1 and "bad auth" in done.stdout and token not in done.stdout
