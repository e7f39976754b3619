"""Serve any agent levelfield can wrap over A2A (agent card, JSON-RPC and REST, streaming).

Each tool call and tool response of the agent's trajectory goes out as a data part marked the
way ADK marks them (``metadata["adk_type"]`` = ``function_call`` / ``function_response``) and
the final response as one complete artifact (``lastChunk``), so ``A2AAgent`` — or any client
that reads ADK's convention, ADK's ``RemoteA2aAgent`` included — gets the trajectory and the
answer back exactly. A2A 1.0 and 0.3 clients are both answered (JSON-RPC at ``/``, REST at ``/``
and ``/v1/``). ``levelfield serve module:agent`` runs it.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.errors import MissingExtraError
from ..core.data.protocol import AgentRequest, AgentRunnable
from ..core.run.failures import describe_error
from ..core.data.types import AgentOutput, Message, ToolCall
from .a2a import (
    ADK_TYPE_KEY,
    ERROR_TYPE_KEY,
    FUNCTION_CALL,
    FUNCTION_RESPONSE,
    LEVELFIELD_KEY,
    TOOL_ERROR_KEY,
    USAGE_KEY,
    restore_ints,
)

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import AgentCard

__all__ = [
    "build_agent_card",
    "build_app",
    "serve",
    "start_server",
    "start_asgi",
    "RunningServer",
    "add_serve_command",
]

MAX_CONTEXTS = 10_000
"""Conversations (context ids) whose history the server keeps, most recent first."""


def _require() -> None:
    try:
        import a2a.server.request_handlers  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("a2a", "a2a-sdk[http-server] and uvicorn", "levelfield serve") from exc


def build_agent_card(name: str, url: str, *, description: str | None = None, streaming: bool = True) -> AgentCard:
    """The card of a served agent: JSON-RPC and HTTP+JSON at ``url`` in A2A 1.0 and 0.3, text in and out.

    The 0.3 interfaces make the served card carry the 0.3 fields (``url``, ``preferredTransport``)
    that 0.3 clients need to parse it; 1.x clients pick the 1.0 interfaces.
    """
    _require()
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    description = description or f"{name}, served over A2A by levelfield"
    return AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        capabilities=AgentCapabilities(streaming=streaming),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
            AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version="0.3"),
        ],
        skills=[AgentSkill(id="run", name=name, description=description, tags=["levelfield"])],
    )


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


def _data_part(data: dict[str, Any], metadata: dict[str, Any]) -> Any:
    from a2a.helpers import new_data_part

    part = new_data_part(_jsonable(data))
    part.metadata.update(_jsonable(metadata))
    return part


def _structured(value: Any) -> Any:
    """``value``, or what it encodes when it is the JSON text of an object or an array."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _tool_call_parts(call: ToolCall) -> tuple[Any, Any]:
    """The ADK-convention ``function_call`` and ``function_response`` parts of one tool call.

    A call without an id is sent without one (the client pairs it with its response by order),
    so the trajectory comes back exactly as the agent reported it.
    """
    meta: dict[str, Any] = {}
    if call.agent:
        meta["levelfield_agent"] = call.agent
    ident = {"id": call.id} if call.id else {}
    request = _data_part({"name": call.tool_name, "args": call.tool_input, **ident}, {ADK_TYPE_KEY: FUNCTION_CALL, **meta})
    # Send the structured value: a tool output that is JSON text (LangChain tools return text)
    # goes out parsed. ADK wraps a non-dict result as {"result": value}; do the same so ADK
    # clients read it.
    value = _structured(call.tool_output)
    output = value if isinstance(value, dict) else {"result": value}
    response_meta = {ADK_TYPE_KEY: FUNCTION_RESPONSE, **meta}
    if call.error:
        response_meta[TOOL_ERROR_KEY] = call.error
    response = _data_part({"name": call.tool_name, "response": output, **ident}, response_meta)
    return request, response


@functools.cache
def _executor_class() -> type:
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater
    from a2a.types.a2a_pb2 import TaskState
    from google.protobuf.json_format import MessageToDict

    class LevelfieldExecutor(AgentExecutor):
        """Runs a levelfield ``AgentRunnable`` for each A2A message; history kept per context id."""

        def __init__(self, agent: AgentRunnable) -> None:
            self.agent = agent
            self.histories: collections.OrderedDict[str, list[Message]] = collections.OrderedDict()

        def _request(self, context: Any) -> AgentRequest:
            extra: dict[str, Any] = {}
            if context.message is not None and context.message.HasField("metadata"):
                extra = MessageToDict(context.message.metadata).get(LEVELFIELD_KEY) or {}
            context_id = context.context_id or ""
            history = self.histories.get(context_id)
            if history is None:
                history = [Message.model_validate(m) for m in extra.get("history") or []]
            turn = extra.get("turn")
            state = extra.get("state")  # the case's initial session state, from A2AAgent
            return AgentRequest(
                prompt=context.get_user_input(),
                history=list(history),
                case_id=str(extra.get("case_id") or ""),
                session_id=context_id or None,
                turn=int(turn) if isinstance(turn, (int, float)) else len(history) // 2,
                state=restore_ints(state) if isinstance(state, dict) else {},
            )

        def _remember(self, request: AgentRequest, response: str) -> None:
            key = request.session_id or ""
            self.histories[key] = [
                *request.history,
                Message(role="user", content=request.prompt),
                Message(role="assistant", content=response),
            ]
            self.histories.move_to_end(key)
            while len(self.histories) > MAX_CONTEXTS:
                self.histories.popitem(last=False)

        async def _emit_trajectory(self, updater: Any, output: AgentOutput | None) -> None:
            if output is None:
                return
            for call in output.trajectory:
                request_part, response_part = _tool_call_parts(call)
                for part in (request_part, response_part):
                    await updater.update_status(TaskState.TASK_STATE_WORKING, message=updater.new_agent_message([part]))
            for text in output.intermediate_responses:
                message = updater.new_agent_message([new_text_part(text)])
                await updater.update_status(TaskState.TASK_STATE_WORKING, message=message)

        async def execute(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            request = self._request(context)
            try:
                output = await self.agent.arun(request)
            except Exception as exc:  # the agent's failure is the task's failure, told to the client
                text, error_type = describe_error(exc)
                partial = getattr(exc, "partial", None)
                await self._emit_trajectory(updater, partial if isinstance(partial, AgentOutput) else None)
                message = updater.new_agent_message([new_text_part(text)], metadata={ERROR_TYPE_KEY: error_type})
                await updater.failed(message)
                return
            if not isinstance(output, AgentOutput):
                message = updater.new_agent_message(
                    [new_text_part(f"agent {self.agent.name!r} returned {type(output).__name__}, not AgentOutput")],
                    metadata={ERROR_TYPE_KEY: "bad_output"},
                )
                await updater.failed(message)
                return
            await self._emit_trajectory(updater, output)
            metadata = None
            if output.usage is not None:
                usage = output.usage
                counts: dict[str, Any] = {
                    "promptTokenCount": usage.input_tokens,
                    "candidatesTokenCount": usage.output_tokens,
                    "totalTokenCount": usage.total_tokens,
                }
                # Which model spent them, so the client can price them (A2A has no field for it).
                if usage.model is not None:
                    counts["model"] = usage.model
                if usage.by_model is not None:
                    counts["by_model"] = {k: v.model_dump(exclude_none=True) for k, v in usage.by_model.items()}
                metadata = {USAGE_KEY: counts}
            # last_chunk: the answer is whole. ADK's RemoteA2aAgent treats an artifact without it
            # as a partial event and its session then has no final response.
            await updater.add_artifact(
                [new_text_part(output.response)], name="response", metadata=metadata, last_chunk=True
            )
            self._remember(request, output.response)
            await updater.complete()

        async def cancel(self, context: Any, event_queue: Any) -> None:
            task = context.current_task
            if task is not None:
                await TaskUpdater(event_queue, task.id, task.context_id).cancel()

    return LevelfieldExecutor


def build_app(agent: Any, *, url: str, name: str | None = None, description: str | None = None) -> Any:
    """A Starlette app serving ``agent`` (anything ``as_agent`` accepts) over A2A at ``url``.

    The card is at ``/.well-known/agent-card.json``; JSON-RPC at ``/``; REST (HTTP+JSON) at
    ``/message:send``, ``/message:stream``, ``/tasks/...``.
    """
    _require()
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    from .auto import as_agent

    runnable = as_agent(agent, name=name)
    card = build_agent_card(name or runnable.name, url, description=description)
    handler = DefaultRequestHandler(
        agent_executor=_executor_class()(runnable), task_store=InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        yield
        await handler.aclose()

    # The card route goes first: the REST routes mount a catch-all "/{tenant}" prefix.
    # 0.3 compatibility: the same JSON-RPC endpoint answers message/send and message/stream,
    # REST 0.3 lives under /v1/ (what ADK's own server and 0.3 clients expect).
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        *create_rest_routes(handler, enable_v0_3_compat=True),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.agent_card = card
    return app


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY only then
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    return sock


def _url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


class RunningServer:
    """A server running in a background thread; ``stop()`` (or leaving ``with``) shuts it down."""

    def __init__(self, server: Any, thread: threading.Thread, url: str) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        """The base URL, with the port the OS picked when asked for port 0."""

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_asgi(make_app: Callable[[str], Any], *, host: str = "127.0.0.1", port: int = 0) -> RunningServer:
    """Run the ASGI app ``make_app(url)`` with uvicorn in a background thread; port 0 picks a free port."""
    _require()
    import uvicorn

    sock = _bind(host, port)
    url = _url(host, sock.getsockname()[1])
    try:
        app = make_app(url)
    except BaseException:
        sock.close()
        raise
    # A background server is for notebooks and tests: don't wait long for runs still going.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=0.5)
    server = uvicorn.Server(config)

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()

    thread = threading.Thread(target=run, name=f"levelfield-a2a-{url}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the A2A server at {url} did not start")
        time.sleep(0.005)
    return RunningServer(server, thread, url)


def start_server(agent: Any, *, host: str = "127.0.0.1", port: int = 0, name: str | None = None) -> RunningServer:
    """Serve ``agent`` over A2A in a background thread (for notebooks and tests); returns its URL."""
    return start_asgi(lambda url: build_app(agent, url=url, name=name), host=host, port=port)


def serve(agent: Any, *, host: str = "127.0.0.1", port: int = 9999, name: str | None = None, url: str | None = None) -> None:
    """Serve ``agent`` over A2A until interrupted. ``url`` is the address the card advertises."""
    _require()
    import uvicorn

    sock = _bind(host, port)
    public = (url or _url(host, sock.getsockname()[1])).rstrip("/")
    app = build_app(agent, url=public, name=name)
    card = app.state.agent_card
    print(f"levelfield: serving {card.name!r} over A2A at {public} (card: {public}/.well-known/agent-card.json)")
    print("levelfield: JSON-RPC and HTTP+JSON, streaming; Ctrl-C to stop", flush=True)
    config = uvicorn.Config(app, log_level="info", lifespan="on", timeout_graceful_shutdown=2)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _serve_command(args: argparse.Namespace) -> int:
    from .auto import as_agent
    from .spec import AgentSpecError, load_agent_spec

    try:
        obj = load_agent_spec(args.spec)
        agent = as_agent(obj, name=args.name)
    except (AgentSpecError, TypeError, MissingExtraError) as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 2
    try:
        serve(agent, host=args.host, port=args.port, name=args.name, url=args.url)
    except OSError as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def add_serve_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``levelfield serve SPEC [--host] [--port] [--name] [--url]`` to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "serve",
        help="serve an agent over A2A (agent card, JSON-RPC and REST, streaming)",
        description="Serve any agent levelfield can wrap over A2A, so A2AAgent or any A2A client can call it.",
    )
    parser.add_argument("spec", metavar="SPEC", help="the agent: module:attr (e.g. mypkg.agents:agent)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9999, help="port to listen on (default 9999)")
    parser.add_argument("--name", default=None, help="the agent's name on its card (default: the agent's own)")
    parser.add_argument("--url", default=None, help="the URL the card advertises (default http://HOST:PORT; 127.0.0.1 for --host 0.0.0.0)")
    parser.set_defaults(func=_serve_command)
    return parser
