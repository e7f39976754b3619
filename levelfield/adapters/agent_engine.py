"""Vertex AI Agent Engine agents: deployed agents, resource names and the local templates.

``AgentEngineAgent`` calls whatever operation the agent registered (``query``, ``async_query``,
``stream_query``, ``async_stream_query``), with one session per case for ADK-style agents, and
reads what it returned with ``levelfield.adapters.agent_engine_output`` (each template's shape:
``LangchainAgent``, ``LanggraphAgent``, ``AdkApp``).

A resource name ``projects/P/locations/L/reasoningEngines/ID`` is resolved with
``vertexai.agent_engines.get`` on first use, never at construction. vertexai is imported only
here, and only when needed.
"""

from __future__ import annotations

import inspect
import re
import threading
import warnings
from collections.abc import Mapping
from typing import Any

from .._core.data.protocol import AgentRequest
from .._core.data.types import AgentOutput
from .._core.errors import (
    AdapterError,
    ConfigError,
    ConfigTypeError,
    MissingExtraError,
    TransientAgentError,
    exception_text,
)
from .._core.run.threads import run_sync
from .adk_events import (
    CURRENT_RUN,
    RunCalls,
    install_inner_calls,
    is_adk_event,
    is_transient,
    output_from_events,
    quiet_adk_errors,
    session_state,
    with_inner_calls,
)
from .agent_engine_output import parse_agent_engine_output

__all__ = ["AgentEngineAgent", "OPERATIONS"]

OPERATIONS = ("async_query", "query", "async_stream_query", "stream_query")
"""The operations levelfield can call, in the order it prefers them when not told which."""

_RESOURCE = re.compile(r"^projects/[^/]+/locations/[^/]+/reasoningEngines/[^/]+$")


# --- calls inside AgentTools (see adk_events) and errors -------------------------------------


def _install_inner_calls_plugin(app: Any) -> bool:
    """Register the AgentTool plugin on a local AdkApp's runners; False when it has none."""
    attrs = getattr(app, "_tmpl_attrs", None)
    runners = [attrs.get(k) for k in ("runner", "in_memory_runner")] if isinstance(attrs, dict) else []
    quiet_adk_errors()  # a failed run records ADK's traceback; ADK's log of it would repeat it on the terminal
    return install_inner_calls([getattr(r, "plugin_manager", None) for r in runners if r is not None])


def _failure(exc: Exception, agent: str, operation: str, partial: AgentOutput | None) -> AdapterError:
    if isinstance(exc, AdapterError):
        return exc
    text = f"agent {agent!r} failed in {operation}(): {exception_text(exc)}"
    if is_transient(exc):
        return TransientAgentError(text, partial=partial)
    return AdapterError(text, error_type=type(exc).__name__, partial=partial)


# --- the adapter ----------------------------------------------------------------------------


def _require_vertex(what: str) -> None:
    try:
        import vertexai  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("vertex", "google-cloud-aiplatform", what) from exc


class AgentEngineAgent:
    """Evaluates a Vertex AI Agent Engine agent: deployed, by resource name, or a local template.

    ``operation`` picks the operation to call (default: the first of ``async_query``, ``query``,
    ``async_stream_query``, ``stream_query`` the agent has). ADK-style agents (operations taking
    ``message`` and ``user_id``) get one session per case and trial, created with the agent's
    ``async_create_session`` / ``create_session`` and reused for that case's turns, under
    ``user_id``. Query-style agents get ``config={"configurable": {"thread_id", "session_id"}}``
    when they accept a config, and, for later turns, the prior turns as ``history``/``messages``
    unless ``send_history=False`` (set it for a deployed graph that keeps its own state; local
    templates with a checkpointer or chat history are detected).
    """

    def __init__(
        self,
        agent_or_resource_name: Any,
        *,
        name: str | None = None,
        user_id: str = "levelfield",
        operation: str | None = None,
        send_history: bool | None = None,
    ) -> None:
        self.user_id = user_id
        self.send_history = send_history
        self._lock = threading.Lock()
        self._sessions: dict[str, str] = {}
        self._states: dict[str, dict[str, Any]] = {}
        self._inner_calls = False
        self._progress: dict[tuple[str | None, int], list[Any]] = {}
        self._warned: set[str] = set()
        self._ready = False
        if isinstance(agent_or_resource_name, str):
            if not _RESOURCE.match(agent_or_resource_name):
                raise ConfigError(
                    f"AgentEngineAgent needs an agent or a resource name projects/P/locations/L/reasoningEngines/ID, "
                    f"got {agent_or_resource_name!r}"
                )
            _require_vertex("AgentEngineAgent")
            self.resource_name: str | None = agent_or_resource_name
            self.agent: Any = None
            self.name = name or agent_or_resource_name
            self._operation_request = operation
            self.operation: str | None = operation
            return
        self.resource_name = getattr(agent_or_resource_name, "resource_name", None) if _is_deployed(agent_or_resource_name) else None
        self.agent = agent_or_resource_name
        self.name = name or _default_name(agent_or_resource_name)
        self._operation_request = operation
        self.operation = self._pick_operation(operation)

    # -- setup ------------------------------------------------------------------------------

    def _pick_operation(self, operation: str | None) -> str:
        available = [op for op in OPERATIONS if callable(getattr(self.agent, op, None))]
        if operation is not None:
            if not callable(getattr(self.agent, operation, None)):
                raise ConfigTypeError(
                    f"agent {self.name!r} has no operation {operation!r}; it has {available or 'none of ' + str(list(OPERATIONS))}"
                )
            return operation
        if not available:
            raise ConfigTypeError(
                f"agent {self.name!r} ({type(self.agent).__name__}) has none of the operations {list(OPERATIONS)}; "
                "pass operation='<method name>' or an Agent Engine template / deployed agent"
            )
        return available[0]

    def _resolve(self) -> None:
        """Get the deployed agent of a resource name (once) and set up a local template (once)."""
        with self._lock:
            if self._ready:
                return
            if self.agent is None:
                from vertexai import agent_engines

                self.agent = agent_engines.get(self.resource_name)
                self.operation = self._pick_operation(self._operation_request)
            if not _is_deployed(self.agent) and callable(getattr(self.agent, "set_up", None)):
                attrs = getattr(self.agent, "_tmpl_attrs", None)
                # Set up once, before concurrent runs, so they do not race to build it.
                if not (isinstance(attrs, dict) and (attrs.get("runnable") or attrs.get("runner"))):
                    self.agent.set_up()
                self._inner_calls = _install_inner_calls_plugin(self.agent)
            self._ready = True

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        try:
            await run_sync(self._resolve)
        except Exception as exc:
            what = f"could not get Agent Engine {self.resource_name!r}" if self.agent is None else f"could not set up agent {self.name!r}"
            text = f"{what}: {exception_text(exc)}"
            if is_transient(exc):
                raise TransientAgentError(text) from exc
            raise AdapterError(text, error_type="setup_error") from exc

    def _params(self, operation: str) -> set[str] | None:
        """Parameter names of an operation; None when unknown (``**kwargs`` only, or no schema)."""
        schemas = getattr(self.agent, "operation_schemas", None)
        if _is_deployed(self.agent) and callable(schemas):
            try:
                for schema in schemas() or []:
                    if schema.get("name") == operation:
                        props = (schema.get("parameters") or {}).get("properties")
                        return set(props) if props else None
            except Exception:
                return None
            return None
        try:
            params = inspect.signature(getattr(self.agent, operation)).parameters
        except (TypeError, ValueError):
            return None
        names = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        return names or None

    def _adk_style(self, params: set[str] | None) -> bool:
        if params is not None:
            return "message" in params
        return "stream" in (self.operation or "") and any(
            callable(getattr(self.agent, op, None)) for op in ("async_create_session", "create_session")
        )

    def _stateful(self) -> bool:
        if self.send_history is not None:
            return not self.send_history
        attrs = getattr(self.agent, "_tmpl_attrs", None)
        return isinstance(attrs, dict) and bool(attrs.get("checkpointer_builder") or attrs.get("chat_history"))

    async def _session(self, request: AgentRequest) -> str | None:
        if request.session_id is not None and request.session_id in self._sessions:
            return self._sessions[request.session_id]
        created: Any = None
        # The case's initial state goes into the session, as ADK's own eval does with session_input.
        extra: dict[str, Any] = {"state": dict(request.state)} if request.state else {}
        if callable(getattr(self.agent, "async_create_session", None)):
            created = self.agent.async_create_session(user_id=self.user_id, **extra)
            if inspect.isawaitable(created):
                created = await created
        elif callable(getattr(self.agent, "create_session", None)):
            created = await run_sync(self.agent.create_session, user_id=self.user_id, **extra)
        else:
            if request.state:
                self._warn_once(
                    "no-session-state",
                    f"agent {self.name!r} has no create_session operation: the cases' session state cannot reach it",
                )
            if request.turn > 0:
                self._warn_once(
                    "no-session",
                    f"agent {self.name!r} has no create_session operation: each turn starts a new session, "
                    "so multi-turn cases lose their earlier turns",
                )
            return None
        session_id = created.get("id") if isinstance(created, Mapping) else getattr(created, "id", None)
        if not session_id:
            raise AdapterError(f"agent {self.name!r} created a session without an id: {created!r:.200}", error_type="session_error")
        if request.session_id is not None:
            self._sessions[request.session_id] = session_id
        return str(session_id)

    async def _kwargs(self, request: AgentRequest) -> dict[str, Any]:
        params = self._params(self.operation or "")
        if self._adk_style(params):
            kwargs: dict[str, Any] = {"message": request.prompt, "user_id": self.user_id}
            session_id = await self._session(request)
            if session_id is not None:
                kwargs["session_id"] = session_id
            return kwargs
        key = "input" if params is None or "input" in params else next(
            (p for p in ("message", "prompt", "query") if p in params), "input"
        )
        value: Any = request.prompt
        if request.history and key == "input" and not self._stateful():
            history = [{"role": m.role, "content": m.content} for m in request.history]
            # LangchainAgent reads "input" (and "history" when its prompt has one); LanggraphAgent
            # reads "messages". Each ignores the other's keys.
            value = {
                "input": request.prompt,
                "history": history,
                "messages": history + [{"role": "user", "content": request.prompt}],
            }
        kwargs = {key: value}
        if params is not None and "config" in params and request.session_id is not None:
            kwargs["config"] = {"configurable": {"thread_id": request.session_id, "session_id": request.session_id}}
        return kwargs

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, stacklevel=3)

    # -- running ----------------------------------------------------------------------------

    def _call_blocking(self, method: Any, kwargs: dict[str, Any], sink: list[Any]) -> Any:
        value = method(**kwargs)
        if inspect.isgenerator(value) or (
            hasattr(value, "__next__") and not isinstance(value, (str, bytes, Mapping, list))
        ):
            for item in value:  # drained here, in the worker thread, as the stream arrives
                sink.append(item)
            return sink
        return value

    async def _call(self, kwargs: dict[str, Any], sink: list[Any]) -> Any:
        method = getattr(self.agent, self.operation or "")
        if inspect.isasyncgenfunction(method) or inspect.iscoroutinefunction(method):
            value = method(**kwargs)
        else:
            value = await run_sync(self._call_blocking, method, kwargs, sink)
        if inspect.isawaitable(value):
            value = await value
        if hasattr(value, "__aiter__"):
            async for item in value:
                sink.append(item)
            return sink
        return value

    async def arun(self, request: AgentRequest) -> AgentOutput:
        await self._ensure_ready()
        operation = self.operation or ""
        key = (request.session_id, request.turn)
        sink: list[Any] = []
        # Kept if the run is cancelled (timeout), so partial_output() can read what arrived.
        self._progress[key] = sink
        inner: RunCalls | None = None
        try:
            kwargs = await self._kwargs(request)
            if self._inner_calls:
                inner = RunCalls(kwargs.get("session_id"))
                CURRENT_RUN.set(inner)  # this task's context: ADK's tasks for this run copy it
            value = await self._call(kwargs, sink)
        except Exception as exc:
            self._progress.pop(key, None)
            partial = output_from_events(sink, self.name, strict=False) if any(map(is_adk_event, sink)) else None
            raise _failure(exc, self.name, operation, partial) from exc
        self._progress.pop(key, None)
        output = parse_agent_engine_output(value, self.name)
        if isinstance(value, list) and any(map(is_adk_event, value)):
            output.state = self._session_state(request, output.state or {})
            if inner is not None:
                output = with_inner_calls(output, inner)
        if (
            isinstance(value, Mapping)
            and "output" in value
            and "intermediate_steps" not in value
        ):
            self._warn_once(
                "no-steps",
                f"agent {self.name!r} returns no intermediate_steps, so its trajectory is unknown (recorded as empty); "
                "build the LangchainAgent with agent_executor_kwargs={'return_intermediate_steps': True}",
            )
        return output

    def _session_state(self, request: AgentRequest, delta: Mapping[str, Any]) -> dict[str, Any]:
        """The ADK session's state after this turn: the case's initial state, then every turn's changes."""
        key = request.session_id
        state = session_state(self._states.get(key, request.state) if key is not None else request.state, delta)
        if key is not None:
            self._states[key] = state
        return state

    def partial_output(self, request: AgentRequest) -> AgentOutput | None:
        """What a timed-out streaming run had produced (ADK events received so far)."""
        events = list(self._progress.pop((request.session_id, request.turn), None) or [])
        if events and any(map(is_adk_event, events)):
            return output_from_events(events, self.name, strict=False)
        return None

    def __repr__(self) -> str:
        return f"AgentEngineAgent({self.name!r}, operation={self.operation!r})"


def _is_deployed(obj: Any) -> bool:
    """A deployed agent (``agent_engines.get``) rather than a local template or object."""
    return callable(getattr(obj, "operation_schemas", None)) and not callable(getattr(obj, "register_operations", None))


def _default_name(obj: Any) -> str:
    if _is_deployed(obj):
        # vertexai's AgentEngine has display_name / resource_name; agentplatform's Runtime (and
        # vertexai.Client's AgentEngine) hold them in api_resource.
        holders = [obj, getattr(obj, "api_resource", None)]
        for holder, attr in [(h, a) for h in holders if h is not None for a in ("display_name", "resource_name", "name")]:
            try:
                value = getattr(holder, attr, None)
            except Exception:  # a property that needs the network
                value = None
            if isinstance(value, str) and value:
                return value
    return type(obj).__name__
