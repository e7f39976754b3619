"""A2AAgent against real a2a-sdk servers on 127.0.0.1: success, failures, multi-turn, extractors."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

import levelfield as lf  # noqa: E402
from levelfield._core.data.dataset import EvalCase, EvalDataset, Turn  # noqa: E402
from levelfield._core.data.types import AgentOutput, ToolCall  # noqa: E402
from levelfield.adapters import A2AAgent
from levelfield.adapters.a2a import adk_trajectory, restore_ints  # noqa: E402
from levelfield.adapters.a2a.server import build_agent_card, build_app, start_asgi, start_server  # noqa: E402
from levelfield.adapters.a2a.task_executor import _data_part  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent  # noqa: E402

# The adapter is under test here; the preflight before the first case has tests of its own.
FAST = {"progress": False, "retries": 0, "a2a_preflight": False}


def _case(prompt: str = "Turn on device_1 in the Living Room.", case_id: str = "c1") -> lf.EvalDataset:
    return lf.load_dataset([{"case_id": case_id, "prompt": prompt}])


def _raw_app(executor: AgentExecutor, url: str, *, streaming: bool = True) -> Starlette:
    card = build_agent_card("stand-in", url, streaming=streaming)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/"), *create_rest_routes(handler)]
    )


class Scripted(AgentExecutor):
    """A hand-written A2A agent: ``script(updater, context)`` publishes whatever the test needs."""

    def __init__(self, script) -> None:
        self.script = script

    async def execute(self, context, event_queue) -> None:
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        await self.script(TaskUpdater(event_queue, task.id, task.context_id), context, event_queue)

    async def cancel(self, context, event_queue) -> None:  # pragma: no cover - not exercised
        pass


def _call_part(name: str, args: dict[str, Any], call_id: str) -> Any:
    return _data_part({"name": name, "args": args, "id": call_id}, {"adk_type": "function_call"})


def _run(agent: Any, dataset: lf.EvalDataset | None = None, **kwargs: Any) -> lf.AgentRun:
    result = lf.evaluate(dataset or _case(), agent, metrics=[], **{**FAST, **kwargs})
    return result.runs[0]


@pytest.fixture(scope="module")
def careful_server() -> Iterator[str]:
    with start_server(careful_agent) as server:
        yield server.url


@pytest.fixture
def scripted_server():
    servers = []

    def start(script, *, streaming: bool = True) -> str:
        server = start_asgi(lambda url: _raw_app(Scripted(script), url, streaming=streaming))
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.stop()


# -- success over every transport -------------------------------------------------------------


@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize("streaming", [True, False])
def test_served_agent_trajectory_and_response_arrive_over_each_transport(careful_server, transport, streaming):
    agent = A2AAgent(careful_server, transport=transport, streaming=streaming)
    run = _run(agent, _case("Set the temperature to my preferred level in the Living Room. I am user_y."))
    assert not run.failure, run.error
    assert [(c.tool_name, c.tool_input) for c in run.output.trajectory] == [
        ("get_user_preferences", {"user_id": "user_y"}),
        ("set_temperature", {"location": "Living Room", "temperature": 23}),
    ]
    # The served tool returned JSON text: it travels, and comes back, as the structured value.
    assert run.output.trajectory[0].tool_output == {"user_id": "user_y", "preferred_temperature": 23, "wake_time": "06:30"}
    assert run.output.response == "The Living Room temperature is now set to your preferred 23 degrees."


def test_whole_numbers_in_tool_inputs_come_back_as_ints(careful_server):
    run = _run(A2AAgent(careful_server), _case("Set the Bedroom temperature to 19."))
    temperature = run.output.trajectory[0].tool_input["temperature"]
    assert temperature == 19 and type(temperature) is int


def test_a_url_string_is_wrapped_as_an_a2a_agent_named_after_its_card(careful_server):
    result = lf.evaluate(_case(), careful_server, metrics=[], **FAST)
    assert result.runs[0].agent_name == "careful_agent"
    assert result.runs[0].output.response == "device_1 in the Living Room is now on."


def test_an_agent_card_object_is_accepted_and_names_the_agent(careful_server):
    agent = lf.as_agent(build_agent_card("home-card", careful_server))
    assert isinstance(agent, A2AAgent) and agent.name == "home-card"
    assert _run(agent).output.response == "device_1 in the Living Room is now on."


def test_two_evaluations_with_one_agent_each_get_a_working_client(careful_server):
    agent = A2AAgent(careful_server)
    first, second = _run(agent), _run(agent)  # each evaluate() runs its own event loop
    assert not first.failure and not second.failure, (first.error, second.error)


# -- failures: recorded runs, never crashes ---------------------------------------------------


@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON"])
def test_agent_crash_is_a_failed_run_with_the_a2a_error_type(scripted_server, transport):
    async def crash(updater, context, queue):
        raise RuntimeError("the agent blew up")

    run = _run(A2AAgent(scripted_server(crash), transport=transport))
    assert run.failure and run.error_type == "internal_error"


def test_agent_crash_message_reaches_the_run_over_json_rpc(scripted_server):
    async def crash(updater, context, queue):
        raise RuntimeError("the agent blew up")

    assert "the agent blew up" in _run(A2AAgent(scripted_server(crash))).error


def test_slow_agent_past_the_adapter_timeout_is_a_timeout_run():
    async def slow(prompt: str) -> str:
        await asyncio.sleep(3)
        return "too late"

    with start_server(slow) as server:
        run = _run(A2AAgent(server.url, timeout=0.3, streaming=False))
    assert run.failure and run.error_type == "timeout" and "0.3" in run.error


def test_slow_agent_past_the_runner_timeout_keeps_what_it_streamed(scripted_server):
    async def call_then_hang(updater, context, queue):
        await updater.update_status(
            lf_state("WORKING"), message=updater.new_agent_message([_call_part("get_temperature", {"location": "Kitchen"}, "c1")])
        )
        await asyncio.sleep(120)

    # The call must reach the client before the run's timeout: 5 s, not 0.5, for a loaded machine.
    run = _run(A2AAgent(scripted_server(call_then_hang)), timeout=5)
    assert run.failure and run.error_type == "timeout"
    assert [c.tool_name for c in run.partial_output.trajectory] == ["get_temperature"]


def test_refused_connection_is_transient_and_retried():
    # A port bound but not listening refuses connections, and stays ours meanwhile (a port closed
    # again could be taken by another process before the agent connects).
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        run = _run(A2AAgent(f"http://127.0.0.1:{bound.getsockname()[1]}"), retries=2, backoff=0.01)
    assert run.failure and run.error_type == "connection_refused"
    assert "connection refused: is the server running at http://127.0.0.1:" in run.error
    assert "RuntimeError" not in run.error
    assert run.attempts == 3


def test_an_a2a_agent_made_from_a_url_inside_evaluate_closes_its_connections(careful_server):
    import gc
    import warnings

    # The agent evaluate() wraps the URL in is dropped as the evaluation ends, before its loop does:
    # its connections are closed all the same, none left to the garbage collector.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        result = lf.evaluate(_case(), careful_server, metrics=[], **FAST)
        gc.collect()
    assert not result.runs[0].failure
    assert not [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]


def _status_app(status: int):
    def make(url: str) -> Starlette:
        card = build_agent_card("broken", url)
        from a2a.server.request_handlers.response_helpers import agent_card_to_dict
        from starlette.responses import JSONResponse

        async def card_ep(request):
            return JSONResponse(agent_card_to_dict(card))

        async def fail(request):
            return PlainTextResponse("kaput", status_code=status)

        return Starlette(routes=[Route("/.well-known/agent-card.json", card_ep), Route("/", fail, methods=["POST"])])

    return make


def test_http_500_is_a_failed_run_that_is_not_retried():
    with start_asgi(_status_app(500)) as server:
        run = _run(A2AAgent(server.url), retries=2, backoff=0.01)
    assert run.failure and run.error_type == "http_error" and "HTTP 500" in run.error
    assert run.attempts == 1


def test_http_503_is_transient_and_retried():
    with start_asgi(_status_app(503)) as server:
        run = _run(A2AAgent(server.url), retries=1, backoff=0.01)
    assert run.failure and run.error_type == "http_503" and run.attempts == 2


def test_malformed_agent_card_is_a_bad_card_run():
    async def garbage(request):
        return PlainTextResponse("this is not a card")

    with start_asgi(lambda url: Starlette(routes=[Route("/.well-known/agent-card.json", garbage)])) as server:
        run = _run(A2AAgent(server.url))
    assert run.failure and run.error_type == "bad_card" and "agent card" in run.error


def lf_state(name: str) -> Any:
    from a2a.types.a2a_pb2 import TaskState

    return TaskState.Value(f"TASK_STATE_{name}")


def test_failed_task_is_a_failed_run_with_the_servers_message_and_partial_trajectory(scripted_server):
    async def fail(updater, context, queue):
        call = _call_part("get_device_info", {"device_id": "device_9"}, "c1")
        await updater.update_status(lf_state("WORKING"), message=updater.new_agent_message([call]))
        await updater.failed(updater.new_agent_message([new_text_part("no such device: device_9")]))

    run = _run(A2AAgent(scripted_server(fail)))
    assert run.failure and run.error_type == "task_failed"
    assert "no such device: device_9" in run.error
    assert [c.tool_input for c in run.partial_output.trajectory] == [{"device_id": "device_9"}]


def test_rejected_task_is_a_failed_run_saying_rejected(scripted_server):
    async def reject(updater, context, queue):
        await updater.reject(updater.new_agent_message([new_text_part("not my job")]))

    run = _run(A2AAgent(scripted_server(reject), streaming=False))
    assert run.failure and run.error_type == "task_rejected" and "not my job" in run.error


def test_input_required_is_a_failed_run_saying_the_agent_asked_for_input(scripted_server):
    async def ask(updater, context, queue):
        await updater.requires_input(updater.new_agent_message([new_text_part("Which room do you mean?")]))

    run = _run(A2AAgent(scripted_server(ask)))
    assert run.failure and run.error_type == "input_required"
    assert "asked for input" in run.error and "Which room do you mean?" in run.error


def test_text_only_message_server_gives_the_response_and_an_empty_trajectory(scripted_server):
    async def say(updater, context, queue):
        pass

    class MessageOnly(AgentExecutor):
        async def execute(self, context, event_queue):
            await event_queue.enqueue_event(new_text_message(f"you said: {context.get_user_input()}"))

        async def cancel(self, context, event_queue):  # pragma: no cover
            pass

    with start_asgi(lambda url: _raw_app(MessageOnly(), url)) as server:
        run = _run(A2AAgent(server.url), _case("hello"))
    assert not run.failure, run.error
    assert run.output.response == "you said: hello" and run.output.trajectory == []


def test_text_status_updates_become_intermediate_responses_and_the_artifact_the_response(scripted_server):
    async def talk(updater, context, queue):
        await updater.update_status(lf_state("WORKING"), message=updater.new_agent_message([new_text_part("Let me look.")]))
        await updater.add_artifact([new_text_part("All done.")], name="answer")
        await updater.complete()

    run = _run(A2AAgent(scripted_server(talk)))
    assert run.output.response == "All done."
    assert run.output.intermediate_responses == ["Let me look."]


def test_custom_trajectory_extractor_reads_calls_marked_another_way(scripted_server):
    async def tools(updater, context, queue):
        part = _data_part({"tool": "list_devices", "input": {"room": "Kitchen"}}, {"kind": "tool"})
        await updater.update_status(lf_state("WORKING"), message=updater.new_agent_message([part]))
        await updater.add_artifact([new_text_part("done")])
        await updater.complete()

    def extractor(parts: list[dict[str, Any]]) -> list[ToolCall]:
        return [
            ToolCall(tool_name=p["data"]["tool"], tool_input=p["data"]["input"])
            for p in parts
            if (p.get("metadata") or {}).get("kind") == "tool"
        ]

    url = scripted_server(tools)
    assert _run(A2AAgent(url)).output.trajectory == []
    run = _run(A2AAgent(url, trajectory_extractor=extractor))
    assert [(c.tool_name, c.tool_input) for c in run.output.trajectory] == [("list_devices", {"room": "Kitchen"})]


@pytest.mark.parametrize("key", ["adk_author", "agent_name", "author"])
def test_the_author_a_server_names_on_a_message_attributes_its_tool_calls(scripted_server, key):
    async def planner(updater, context, queue):
        message = updater.new_agent_message([_call_part("plan_route", {"to": "Köln"}, "p1")], metadata={key: "planner"})
        await updater.update_status(lf_state("WORKING"), message=message)
        await updater.add_artifact([new_text_part("Route geplant.")], last_chunk=True)
        await updater.complete()

    run = _run(A2AAgent(scripted_server(planner)))
    assert [(c.tool_name, c.agent) for c in run.output.trajectory] == [("plan_route", "planner")]


def test_an_author_on_the_part_itself_wins_over_its_message(scripted_server):
    async def two(updater, context, queue):
        part = _data_part({"name": "lookup", "args": {}, "id": "l1"}, {"adk_type": "function_call", "adk_author": "searcher"})
        message = updater.new_agent_message([part], metadata={"adk_author": "root"})
        await updater.update_status(lf_state("WORKING"), message=message)
        await updater.add_artifact([new_text_part("ok")])
        await updater.complete()

    run = _run(A2AAgent(scripted_server(two)))
    assert [c.agent for c in run.output.trajectory] == ["searcher"]


# -- auth ---------------------------------------------------------------------------------


class _RequireBearer:
    """ASGI middleware: every request but the agent card needs ``Authorization: Bearer s3cret``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != b"Bearer s3cret":
                await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[str]:
    with start_asgi(lambda url: _RequireBearer(build_app(careful_agent, url=url))) as server:
        yield server.url


def test_missing_auth_header_is_an_unauthorized_run(guarded_server):
    run = _run(A2AAgent(guarded_server))
    assert run.failure and run.error_type == "unauthorized" and "headers=" in run.error


def test_auth_header_given_is_sent_with_every_request(guarded_server):
    run = _run(A2AAgent(guarded_server, headers={"Authorization": "Bearer s3cret"}))
    assert not run.failure, run.error
    assert run.output.response == "device_1 in the Living Room is now on."


# -- multi-turn ---------------------------------------------------------------------------


def test_multi_turn_case_keeps_one_context_per_case_and_trial():
    seen: list[tuple[str | None, int]] = []

    def chatty(prompt: str, history: list, session_id: str | None) -> dict[str, Any]:
        seen.append((session_id, len(history)))
        return {
            "response": f"heard {prompt} after {len(history)} messages",
            "predicted_trajectory": [{"tool_name": "note", "tool_input": {"text": prompt}}],
        }

    dataset = EvalDataset(
        [
            EvalCase(case_id=case_id, prompt=first, turns=[Turn(prompt=first), Turn(prompt=second)])
            for case_id, first, second in [("a", "one", "two"), ("b", "uno", "dos")]
        ]
    )
    with start_server(chatty) as server:
        result = lf.evaluate(dataset, A2AAgent(server.url), metrics=[], trials=2, concurrency=1, **FAST)
    run = result.runs[0]
    assert [t.response for t in run.turns] == ["heard one after 0 messages", "heard two after 2 messages"]
    assert [t.trajectory[0].tool_input for t in run.turns] == [{"text": "one"}, {"text": "two"}]
    contexts = [s for s, _ in seen]
    assert len(contexts) == 8 and len(set(contexts)) == 4  # 2 cases x 2 trials, 2 turns each
    assert all(contexts[i] == contexts[i + 1] for i in range(0, 8, 2))


# -- pure helpers ---------------------------------------------------------------------------


def test_adk_trajectory_deduplicates_by_call_id_and_attaches_outputs():
    call = {"data": {"name": "get_temperature", "args": {"location": "Kitchen"}, "id": "x1"}, "metadata": {"adk_type": "function_call"}}
    resp = {
        "data": {"name": "get_temperature", "response": {"result": "21"}, "id": "x1"},
        "metadata": {"adk_type": "function_response"},
    }
    calls = adk_trajectory([call, {"text": "hmm"}, call, resp, resp])
    assert [(c.tool_name, c.tool_output, c.id) for c in calls] == [("get_temperature", "21", "x1")]


def test_adk_trajectory_pairs_responses_without_ids_by_name_and_order():
    def part(kind: str, **data: Any) -> dict[str, Any]:
        return {"data": data, "metadata": {"adk_type": kind}}

    calls = adk_trajectory(
        [
            part("function_call", name="t", args={"n": 1}),
            part("function_call", name="t", args={"n": 2}),
            part("function_response", name="t", response={"result": "first"}),
            part("function_response", name="t", response={"result": "second"}),
        ]
    )
    assert [(c.tool_input["n"], c.tool_output) for c in calls] == [(1, "first"), (2, "second")]


def test_restore_ints_turns_whole_floats_into_ints_only():
    assert restore_ints({"a": 23.0, "b": [1.5, 2.0], "c": "3.0"}) == {"a": 23, "b": [1.5, 2], "c": "3.0"}
    assert type(restore_ints({"a": 23.0})["a"]) is int


def test_a2a_agent_rejects_a_string_that_is_not_a_url():
    with pytest.raises(ValueError, match="http"):
        A2AAgent("localhost:9999")


def test_a_non_url_string_that_may_hold_a_credential_is_not_echoed():
    with pytest.raises(ValueError) as caught:
        A2AAgent("admin:hunter22@agents.example")
    assert "hunter22" not in str(caught.value) and "http(s)://" in str(caught.value)


def test_a2a_agent_rejects_an_unknown_transport():
    with pytest.raises(ValueError, match="transport"):
        A2AAgent("http://127.0.0.1:1", transport="grpc-ish")


def test_output_type_is_agent_output(careful_server):
    out = asyncio.run(A2AAgent(careful_server).arun(lf.AgentRequest(prompt="Turn on device_1 in the Living Room.")))
    assert isinstance(out, AgentOutput) and out.trajectory[0].tool_name == "set_device_info"
