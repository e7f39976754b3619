"""Serve any agent levelfield can wrap over A2A (agent card, JSON-RPC and REST, streaming).

Each tool call and tool response of the agent's trajectory goes out as a data part marked the
way ADK marks them (``metadata["adk_type"]`` = ``function_call`` / ``function_response``) and
the final response as one complete artifact (``lastChunk``), so ``A2AAgent`` — or any client
that reads ADK's convention, ADK's ``RemoteA2aAgent`` included — gets the trajectory and the
answer back exactly. A2A 1.0 and 0.3 clients are both answered (JSON-RPC at ``/``, REST at ``/``
and ``/v1/``). ``levelfield serve module:agent`` runs it (the command is ``levelfield.cli.serve``).

What a server left running must survive: finished tasks are kept up to ``max_tasks`` (oldest
evicted first), a request body over ``max_body`` bytes is answered 413 unread, a body that is not
JSON is a JSON-RPC parse error (-32700) and a notification (no ``id``) gets no answer, an
``auth_token`` requires ``Authorization: Bearer <token>`` (401 otherwise; the card stays public
and declares it), and the agent runs as the evaluation runner runs it: anything it raises,
``SystemExit`` included, is a failed task, and ``isolation="process"`` runs it in worker
processes, so even ``os._exit`` fails one task, not the server.

This module builds and runs the server; the agent's side of a2a-sdk (the executor that runs it per
message, the bounded task store) is ``task_executor``, the HTTP guard in front is ``guard``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._core.data.config import ISOLATION_MODES
from ..._core.errors import ConfigError, MissingExtraError
from ..._serving import BackgroundServer, bind, is_loopback, run_in_thread, url_of
from .guard import _Guard
from .task_executor import _executor_class, _task_store_class

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import AgentCard

__all__ = [
    "build_agent_card",
    "build_app",
    "serve",
    "start_server",
    "start_asgi",
    "RunningServer",
]

MAX_TASKS = 1_000
"""Finished tasks the server keeps for clients that ask for them again (``GetTask``), newest first."""
MAX_BODY = 4 * 1024 * 1024
"""The largest request body the server reads by default (4 MiB); a larger one is answered 413."""
TOKEN_ENV = "LEVELFIELD_SERVE_TOKEN"
"""The environment variable ``levelfield serve`` reads its bearer token from (``--auth-token`` wins)."""


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
    app = _Guard(starlette, max_body=max_body, token=auth_token)  # type: ignore[arg-type]  # an ASGI app, typed by Starlette its own way
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
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=0.5)  # type: ignore[arg-type]  # uvicorn waits with asyncio, which takes a float
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
