"""Serve any agent levelfield can wrap over A2A (agent card, JSON-RPC and REST, streaming).

Each tool call and tool response of the agent's trajectory goes out as a data part marked the
way ADK marks them (``metadata["adk_type"]`` = ``function_call`` / ``function_response``) and
the final response as one complete artifact (``lastChunk``), so ``A2AAgent`` — or any client
that reads ADK's convention, ADK's ``RemoteA2aAgent`` included — gets the trajectory and the
answer back exactly. A2A 1.0 and 0.3 clients are both answered (JSON-RPC at ``/``, REST at ``/``
and ``/v1/``). ``levelfield serve module:agent`` runs it.

What a server left running must survive: finished tasks are kept up to ``max_tasks`` (oldest
evicted first), a request body over ``max_body`` bytes is answered 413 unread, a body that is not
JSON is a JSON-RPC parse error (-32700) and a notification (no ``id``) gets no answer, an
``auth_token`` requires ``Authorization: Bearer <token>`` (401 otherwise; the card stays public
and declares it), and the agent runs as the evaluation runner runs it: anything it raises,
``SystemExit`` included, is a failed task, and ``isolation="process"`` runs it in worker
processes, so even ``os._exit`` fails one task, not the server.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import hmac
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..._core.data.config import ISOLATION_MODES, parse_size
from ..._core.errors import ConfigError, MissingExtraError
from ..._core.run.failures import cancelled_from_outside as _cancelled_from_outside
from ..._core.run.failures import describe_error
from ..._serving import BackgroundServer, bind, is_loopback, replay_body, run_in_thread, url_of

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import AgentCard

    from ..._core.data.protocol import AgentRunnable
    from ..._core.data.types import ToolCall

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
MAX_TASKS = 1_000
"""Finished tasks the server keeps for clients that ask for them again (``GetTask``), newest first."""
MAX_BODY = 4 * 1024 * 1024
"""The largest request body the server reads by default (4 MiB); a larger one is answered 413."""
TOKEN_ENV = "LEVELFIELD_SERVE_TOKEN"
"""The environment variable ``levelfield serve`` reads its bearer token from (``--auth-token`` wins)."""
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""Where clients read the card: public even with a token, so they learn how to authenticate."""


def _require() -> None:
    try:
        import a2a.server.request_handlers  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("a2a", "a2a-sdk[http-server] and uvicorn", "levelfield serve") from exc


def build_agent_card(
    name: str, url: str, *, description: str | None = None, streaming: bool = True, bearer: bool = False
) -> AgentCard:
    """The card of a served agent: JSON-RPC and HTTP+JSON at ``url`` in A2A 1.0 and 0.3, text in and out.

    The 0.3 interfaces make the served card carry the 0.3 fields (``url``, ``preferredTransport``)
    that 0.3 clients need to parse it; 1.x clients pick the 1.0 interfaces. ``bearer``: the card
    declares that every call needs ``Authorization: Bearer <token>``.
    """
    _require()
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    description = description or f"{name}, served over A2A by levelfield"
    card = AgentCard(
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
    if bearer:
        from a2a.types.a2a_pb2 import HTTPAuthSecurityScheme, SecurityScheme, StringList

        card.security_schemes["bearer"].CopyFrom(SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")))
        card.security_requirements.add().schemes["bearer"].CopyFrom(StringList())
    return card


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
    from .events import ADK_TYPE_KEY, FUNCTION_CALL, FUNCTION_RESPONSE, TOOL_ERROR_KEY

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

    from ..._core.data.protocol import AgentRequest
    from ..._core.data.types import AgentOutput, Message
    from .events import ERROR_TYPE_KEY, LEVELFIELD_KEY, USAGE_KEY, restore_ints

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
            except asyncio.CancelledError:
                if _cancelled_from_outside():
                    raise  # the client cancelled the task, or the server is stopping
                output, error = None, sys.exc_info()[1]
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: the task fails, the server goes on
                output, error = None, exc
            else:
                error = None
            if error is not None:
                text, error_type = describe_error(error)
                partial = getattr(error, "partial", None)
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
                # Gemini's names and meaning (what ADK's clients read): the prompt count includes
                # cache reads; the candidates count leaves thoughts out.
                counts: dict[str, Any] = {
                    "promptTokenCount": usage.input_tokens,
                    "candidatesTokenCount": usage.output_tokens - (usage.reasoning_tokens or 0),
                    "totalTokenCount": usage.total_tokens,
                }
                if usage.cache_read_tokens is not None:
                    counts["cachedContentTokenCount"] = usage.cache_read_tokens
                if usage.reasoning_tokens is not None:
                    counts["thoughtsTokenCount"] = usage.reasoning_tokens
                if usage.cache_write_tokens is not None:
                    counts["cache_write_tokens"] = usage.cache_write_tokens  # Gemini has no name for it
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


@functools.cache
def _task_store_class() -> type:
    from a2a.server.tasks import InMemoryTaskStore, TaskStore
    from a2a.types.a2a_pb2 import TaskState

    finished_states = {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }

    class BoundedTaskStore(TaskStore):
        """a2a-sdk's in-memory task store keeping at most ``max_finished`` finished tasks (oldest
        evicted first); tasks still running are always kept."""

        def __init__(self, max_finished: int) -> None:
            self._tasks = InMemoryTaskStore()
            self._max_finished = max_finished
            self._finished: collections.OrderedDict[str, Any] = collections.OrderedDict()  # id -> its call context

        async def save(self, task: Any, context: Any) -> None:
            await self._tasks.save(task, context)
            if task.status.state in finished_states:
                self._finished[task.id] = context  # the context names the owner the store files it under
                self._finished.move_to_end(task.id)
                while len(self._finished) > self._max_finished:
                    old_id, old_context = self._finished.popitem(last=False)
                    await self._tasks.delete(old_id, old_context)

        async def get(self, task_id: str, context: Any) -> Any:
            return await self._tasks.get(task_id, context)

        async def list(self, params: Any, context: Any) -> Any:
            return await self._tasks.list(params, context)

        async def delete(self, task_id: str, context: Any) -> None:
            self._finished.pop(task_id, None)
            await self._tasks.delete(task_id, context)

    return BoundedTaskStore


ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


class _Guard:
    """ASGI middleware in front of a2a-sdk's routes: the bearer token, the body size limit, and the
    JSON-RPC answers a2a-sdk does not give (-32700 for any unreadable body, silence for notifications)."""

    def __init__(self, app: ASGIApp, *, max_body: int, token: str | None, rpc_path: str = "/") -> None:
        self.app = app
        self.max_body = max_body
        self.token = token.encode() if token else None
        self.rpc_path = rpc_path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rpc = scope["path"] == self.rpc_path and scope["method"] == "POST"
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if self.token is not None and scope["path"] not in CARD_PATHS and not self._authorized(headers):
            await _reply(send, 401, _error_body(rpc, -32600, "unauthorized: send 'Authorization: Bearer <token>'"),
                         [(b"www-authenticate", b'Bearer realm="levelfield"')])
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        announced = headers.get("content-length", b"")
        if announced.isdigit() and int(announced) > self.max_body:
            await self._too_large(send, rpc)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await self._too_large(send, rpc)
                return
            if not message.get("more_body"):
                break
        if rpc:
            try:
                payload = json.loads(bytes(body))
            except ValueError as exc:  # not JSON, or not UTF-8/16/32 text at all
                reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not valid JSON"
                await _reply(send, 200, _error_body(True, -32700, f"Parse error: the request body is {reason}"))
                return
            if isinstance(payload, dict) and "id" not in payload and "method" in payload:
                # A JSON-RPC notification is never answered; every A2A method expects an answer, so none is run.
                await _reply(send, 204, b"")
                return
        await self.app(scope, replay_body(bytes(body), receive), send)

    def _authorized(self, headers: dict[str, bytes]) -> bool:
        scheme, _, given = headers.get("authorization", b"").partition(b" ")
        # compare_digest: the time taken does not tell how much of the token was right.
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token or b"")

    async def _too_large(self, send: Any, rpc: bool) -> None:
        text = f"the request body is larger than {self.max_body} bytes (levelfield serve --max-body)"
        await _reply(send, 413, _error_body(rpc, -32600, text))


def _error_body(rpc: bool, code: int, message: str) -> bytes:
    if rpc:
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    return json.dumps({"error": {"message": message}}).encode()


async def _reply(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    if status == 204:
        head = []
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def build_app(
    agent: Any,
    *,
    url: str,
    name: str | None = None,
    description: str | None = None,
    max_body: int = MAX_BODY,
    auth_token: str | None = None,
    isolation: str = "none",
    max_tasks: int = MAX_TASKS,
) -> Any:
    """An ASGI app serving ``agent`` (anything ``as_agent`` accepts) over A2A at ``url``.

    The card is at ``/.well-known/agent-card.json``; JSON-RPC at ``/``; REST (HTTP+JSON) at
    ``/message:send``, ``/message:stream``, ``/tasks/...``. ``max_body``: the largest request
    body read (413 beyond); ``auth_token``: every call but the card's needs ``Authorization:
    Bearer <auth_token>``; ``isolation="process"``: the agent runs in worker processes (it must be
    picklable or a ``SpecAgent``); ``max_tasks``: finished tasks kept for ``GetTask``.
    """
    _require()
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
    from starlette.applications import Starlette

    from ..auto import as_agent

    if isolation not in ISOLATION_MODES:
        raise ConfigError(f"isolation={isolation!r}: must be 'none' (the agent runs in the server's process) or "
                          "'process' (in worker processes, so a crash fails one task, not the server)")
    if auth_token is not None and not (auth_token.isascii() and auth_token.isprintable() and auth_token.split() == [auth_token]):
        raise ConfigError("auth_token: a bearer token must be non-empty printable ASCII without spaces "
                          "(HTTP clients send header values as ASCII)")
    if max_body < 1 or max_tasks < 1:
        raise ConfigError(f"max_body={max_body!r}, max_tasks={max_tasks!r}: each must be at least 1")
    runnable = as_agent(agent, name=name)
    workers = None
    if isolation == "process":
        from ..._core.run.isolation import ProcessIsolation

        workers = ProcessIsolation([runnable])  # checks now that the agent can be sent to a worker
        runnable = workers.wrap(runnable)
    card = build_agent_card(name or runnable.name, url, description=description, bearer=bool(auth_token))
    handler = DefaultRequestHandler(
        agent_executor=_executor_class()(runnable), task_store=_task_store_class()(max_tasks), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        yield
        await handler.aclose()
        if workers is not None:
            await workers.aclose()

    # The card route goes first: the REST routes mount a catch-all "/{tenant}" prefix.
    # 0.3 compatibility: the same JSON-RPC endpoint answers message/send and message/stream,
    # REST 0.3 lives under /v1/ (what ADK's own server and 0.3 clients expect).
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        *create_rest_routes(handler, enable_v0_3_compat=True),
    ]
    starlette = Starlette(routes=routes, lifespan=lifespan)
    starlette.state.agent_card = card
    app = _Guard(starlette, max_body=max_body, token=auth_token)
    app.state = starlette.state  # type: ignore[attr-defined]
    return app


# One class for every background server levelfield starts; the old name stays for callers.
RunningServer = BackgroundServer


def start_asgi(make_app: Callable[[str], Any], *, host: str = "127.0.0.1", port: int = 0) -> RunningServer:
    """Run the ASGI app ``make_app(url)`` with uvicorn in a background thread; port 0 picks a free port."""
    _require()
    import uvicorn

    sock = bind(host, port)
    url = url_of(host, sock.getsockname()[1])
    try:
        app = make_app(url)
    except BaseException:
        sock.close()
        raise
    # A background server is for notebooks and tests: don't wait long for runs still going.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=0.5)
    return run_in_thread(uvicorn.Server(config), sock, url, what="A2A server")


def start_server(
    agent: Any, *, host: str = "127.0.0.1", port: int = 0, name: str | None = None, **options: Any
) -> RunningServer:
    """Serve ``agent`` over A2A in a background thread (for notebooks and tests); returns its URL.

    ``options`` are :func:`build_app`'s: ``max_body``, ``auth_token``, ``isolation``, ``max_tasks``.
    """
    return start_asgi(lambda url: build_app(agent, url=url, name=name, **options), host=host, port=port)


def _listening_on(host: str, port: int) -> str:
    where = {"0.0.0.0": "every IPv4 interface", "": "every interface", "::": "every interface"}.get(host)
    address = f"[{host}]" if ":" in host else host or "0.0.0.0"
    return f"{address}:{port}" + (f" ({where})" if where else "")


def serve(
    agent: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 9999,
    name: str | None = None,
    url: str | None = None,
    **options: Any,
) -> None:
    """Serve ``agent`` over A2A until interrupted. ``url`` is the address the card advertises;
    ``options`` are :func:`build_app`'s (``max_body``, ``auth_token``, ``isolation``, ``max_tasks``)."""
    _require()
    import uvicorn

    sock = bind(host, port)
    bound = sock.getsockname()[1]
    public = (url or url_of(host, bound)).rstrip("/")
    try:
        app = build_app(agent, url=public, name=name, **options)
    except BaseException:
        sock.close()
        raise
    card = app.state.agent_card
    print(f"levelfield: serving {card.name!r} over A2A, listening on {_listening_on(host, bound)}")
    print(f"levelfield: the card at {public}/.well-known/agent-card.json gives clients the address {public}")
    guarded = "a bearer token is required" if options.get("auth_token") else "no authentication"
    print(f"levelfield: JSON-RPC and HTTP+JSON, streaming; {guarded}; Ctrl-C to stop", flush=True)
    if not is_loopback(host):
        advice = "" if options.get("auth_token") else f"; require a token with --auth-token or {TOKEN_ENV}"
        print(f"levelfield serve: warning: listening beyond this machine ({_listening_on(host, bound)}): anyone who "
              f"can reach it can run the agent{advice}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="info", lifespan="on", timeout_graceful_shutdown=2)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _serve_command(args: argparse.Namespace) -> int:
    from ..spec import AgentSpecError, agent_from_spec

    token = args.auth_token if args.auth_token is not None else os.environ.get(TOKEN_ENV) or None
    try:
        agent = agent_from_spec(args.spec, name=args.name, isolation=args.isolation)
    except (AgentSpecError, TypeError, MissingExtraError) as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 2
    try:
        serve(agent, host=args.host, port=args.port, name=args.name, url=args.url,
              max_body=args.max_body, auth_token=token, isolation=args.isolation)
    except ConfigError as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _body_size(text: str) -> int:
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_serve_command(subparsers: Any, *, port_reader: Callable[[str], int] = int,
                      url_reader: Callable[[str], str] = str) -> argparse.ArgumentParser:
    """Add ``levelfield serve SPEC [--host] [--port] [--name] [--url] [--max-body] [--auth-token]
    [--isolation]`` to the CLI's subparsers; ``port_reader`` and ``url_reader`` check ``--port`` and
    ``--url`` (the CLI's shared readers, which live above the adapters)."""
    parser = subparsers.add_parser(
        "serve",
        help="serve an agent over A2A (agent card, JSON-RPC and REST, streaming)",
        description="Serve any agent levelfield can wrap over A2A, so A2AAgent or any A2A client can call it.",
    )
    parser.add_argument("spec", metavar="SPEC", help="the agent: module:attr (e.g. mypkg.agents:agent)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1, this machine only; another address "
                             "is warned about: use --auth-token there)")
    parser.add_argument("--port", type=port_reader, default=9999, help="port to listen on (default 9999)")
    parser.add_argument("--name", default=None, help="the agent's name on its card (default: the agent's own)")
    parser.add_argument("--url", type=url_reader, default=None, help="the URL the card advertises (default http://HOST:PORT; 127.0.0.1 for --host 0.0.0.0)")
    parser.add_argument("--max-body", type=_body_size, default=MAX_BODY, metavar="SIZE",
                        help=f"the largest request body read, e.g. 1MB; larger ones get HTTP 413 (default {MAX_BODY >> 20}MB)")
    parser.add_argument("--auth-token", default=None, metavar="TOKEN",
                        help=f"require 'Authorization: Bearer TOKEN' on every call but the card's (HTTP 401 otherwise); "
                             f"default: the {TOKEN_ENV} environment variable, which keeps the token out of the process list")
    parser.add_argument("--isolation", choices=ISOLATION_MODES, default="none",
                        help="'process': run the agent in worker processes, so a crash (os._exit, a segfault) fails "
                             "that task only, not the server (default none)")
    parser.set_defaults(func=_serve_command)
    return parser
